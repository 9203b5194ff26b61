"""Tests that fail when the semantic check is wrong in small ways (issue 37: each kills a
mutant that survived; tools/mutate.py finds more)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.harness import run_series
from tests.repos import git
from tests.test_breaks import FILES_V030, TOPICS, UTIL_V031, _pr, fork_of, rebase_breaks


def test_the_pr_that_removed_a_keyword_is_blamed_not_a_later_one_touching_the_file(tmp_path: Path) -> None:
    """#101 renames scale's factor and drops old_helper; #113, later, only adds a line to
    the same file. The culprit is the commit after which the name stops being accepted,
    not the newest one touching the file."""
    up = tmp_path / "upstream"
    up.mkdir()
    git(up, "init", "-q", "-b", "main")
    _pr(up, FILES_V030, "v0.30.0", "2026-01-01T00:00:00Z")
    git(up, "tag", "v0.30.0")
    _pr(
        up, {"vllm/utils.py": UTIL_V031}, "[Core] drop old_helper, rename scale's factor (#101)", "2026-01-05T00:00:00Z"
    )
    _pr(up, {"vllm/utils.py": UTIL_V031 + "\n\nLATER = 1\n"}, "[Core] a later constant (#113)", "2026-01-06T00:00:00Z")
    git(up, "tag", "v0.31.0")
    fork = fork_of(tmp_path, up, {name: TOPICS[name] for name in ("kw-renamed", "uses-removed")})
    found = rebase_breaks(fork, "--dry-run")
    (kw,) = found["kw-renamed"]
    (removed,) = found["uses-removed"]
    assert kw["upstream"]["pr"] == 101 and "renamed in #101" in str(kw["fix"]), kw  # type: ignore[index]
    assert removed["upstream"]["pr"] == 101, removed  # type: ignore[index]
    assert removed["upstream"]["date"] == "2026-01-05", removed  # type: ignore[index]   # the report's own field


PLUGINS_V030 = '''\
__path__ = __import__("pkgutil").extend_path(__path__, __name__)


def load():
    found = []
    for name in ("a", "b"):
        found.append(name)
    return found
'''


def test_a_package_reading_its_own_path_after_upstream_dropped_extend_path_is_no_break(tmp_path: Path) -> None:
    """`__path__` is bound by the import system in every package's __init__.py: when
    upstream drops its `__path__ = extend_path(...)` line, the topic's reading of
    `__path__` still works, and no "undefined" break may be reported for it: not by the
    rebase, nor by status against the new base (series.semantic.base_breaks)."""
    up = tmp_path / "upstream"
    up.mkdir()
    git(up, "init", "-q", "-b", "main")
    _pr(up, {**FILES_V030, "vllm/plugins/__init__.py": PLUGINS_V030}, "v0.30.0", "2026-01-01T00:00:00Z")
    git(up, "tag", "v0.30.0")
    _pr(
        up,
        {"vllm/plugins/__init__.py": PLUGINS_V030.split("\n", 1)[1]},
        "[Core] plain plugins package (#120)",
        "2026-01-05T00:00:00Z",
    )
    git(up, "tag", "v0.31.0")
    topic = {"vllm/plugins/__init__.py": PLUGINS_V030 + "\n\ndef plugin_dirs():\n    return list(__path__)\n"}
    fork = fork_of(tmp_path, up, {"plugin-dirs": topic})
    assert rebase_breaks(fork) == {"plugin-dirs": []}
    status = json.loads(run_series("status", "--json", cwd=fork).stdout)
    assert [t["breaks"] for t in status["topics"]] == [[]], status
