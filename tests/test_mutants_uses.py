"""Tests that fail when series.semantic.uses reads a file wrong in small ways (issue 37:
each kills a mutant that survived; tools/mutate.py finds more). At the level of `uses`:
what a file uses is that module's whole answer, and the check judges exactly those uses."""

from __future__ import annotations

from series.semantic.uses import UseKind, parse, uses


def _uses(source: str) -> set[tuple[UseKind, str, str]]:
    tree = parse(source.encode())
    assert tree is not None
    return {u.key for u in uses(tree, "vllm/fork.py")}


def test_only_a_string_that_is_a_qualified_name_reads_as_one() -> None:
    """A registry imports "vllm.utils.old_helper" or "vllm.utils:old_helper" by name; a glob,
    a sentence or a call written in a string names nothing. A glob would even resolve (the
    function, then any member of it), and so report a break of a string nothing imports."""
    found = _uses(
        'import vllm\n'
        'A = "vllm.utils.old_helper"\nB = "vllm.utils:old_helper"\n'
        'C = "vllm.utils.old_helper.*"\nD = "vllm.utils.old_helper is gone"\n'
        'E = "vllm.utils.old_helper()"\nF = "vllm.utils.old_helper.\\n"\n'
    )
    assert {u for u in found if u[0] == UseKind.QUALNAME} == {(UseKind.QUALNAME, "vllm.utils.old_helper", "")}


def test_a_local_bound_to_an_upstream_chain_means_nothing_outside_its_function() -> None:
    """`c = config.CacheConfig` in f reads `c.block_size` as the config's field; g's own
    parameter `c` is not that class, so `c.swap_space` there is no use of it."""
    found = _uses(
        'from vllm import config\n\n'
        'def f():\n    c = config.CacheConfig\n    return c.block_size\n\n'
        'def g(c):\n    return c.swap_space\n'
    )
    assert (UseKind.NAME, "vllm.config.CacheConfig.block_size", "") in found
    assert not any(target.endswith("swap_space") for _, target, _ in found), found
