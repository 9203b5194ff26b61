"""What the semantic check reads of one version of a Python file, kept on disk per blob.

The full reading (series.semantic.breaks._file) parses up to three versions of a file (the
base's, the topic's, the rebased one) and walks each: its upstream uses, the names it binds
and defines, its module-level imports, how often each bare name is read. That is the check's
cost onto a far upstream (more of the topics' files changed upstream too: onto upstream/main
of the realistic history, 33 readings and most of the dry run). It depends only on the bytes,
the file's package and, for the uses, the other version's top-level names: so it is computed
once per (blob, path's package, those names) and kept in the check's disk cache
(series.semantic.blob_cache), which a nightly over the same topics then only reads.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import pygit2

from series.semantic import blob_cache, one_pass
from series.semantic.module_api import module_name
from series.semantic.uses import BUILTINS, Use, imported_top, parse, top_names, uses, uses_from_json, uses_to_json


@dataclass(frozen=True)
class FileReading:
    top: frozenset[str]  # defined at top level (uses.top_names)
    bound: frozenset[str]  # bound anywhere (uses.bound)
    imported: frozenset[str]  # bound by module-level imports (uses.imported_top)
    loads: Mapping[str, int]  # how often each bare name is read (uses.loads)
    first_line: Mapping[str, int]  # the first line a bare name appears on
    uses: tuple[Use, ...]  # uses.uses(tree, path, also_top)


def read(
    path: str, source: bytes, also_top: frozenset[str] = frozenset(), cache: Path | None = None
) -> FileReading | None:
    """The reading of `source` as the file `path`; None when it does not parse. `also_top`:
    the other version's top-level names (uses.uses)."""
    from series.semantic import class_reading, module_api, upstream_api, uses as uses_module

    # every module the reading's answer comes from: another version of any is another answer
    code = blob_cache.version(
        __file__,
        uses_module.__file__,
        class_reading.__file__,
        upstream_api.__file__,
        module_api.__file__,
        one_pass.__file__,
    )
    names = hashlib.sha256("\n".join(sorted(also_top)).encode()).hexdigest()[:16]
    key = ("reading", code, module_name(path)[1], str(pygit2.hash(source)), names)
    return blob_cache.cached(key, lambda: _encode(_compute(path, source, also_top)), _decode, cache)


def read_unbound(source: bytes, cache: Path | None = None) -> frozenset[str] | None:
    """The bare names `source` reads and binds nowhere (not builtins): the only names a
    LOCAL use or a removed import can break on (series.semantic.breaks, checker.local).
    A walk of the file without the uses, for a file upstream changed too (issue 34); None
    when it does not parse."""
    from series.semantic import uses as uses_module

    code = blob_cache.version(__file__, uses_module.__file__, one_pass.__file__)
    return blob_cache.cached(
        ("unbound", code, str(pygit2.hash(source))), lambda: _unbound(source), _decode_names, cache
    )


def _decode_names(raw: object) -> frozenset[str] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise ValueError("not a list")
    return frozenset(map(str, raw))


def _unbound(source: bytes) -> list[str] | None:
    tree = parse(source)
    if tree is None:
        return None
    facts = one_pass.walk(tree)
    names = facts.bound.keys() | top_names(tree)
    return sorted(n for n, times in facts.loads.items() if times and n not in names and n not in BUILTINS)


def _compute(path: str, source: bytes, also_top: frozenset[str]) -> FileReading | None:
    tree = parse(source)
    if tree is None:
        return None
    facts = one_pass.walk(tree)  # every node once, for all of the reading (issue 34)
    return FileReading(
        frozenset(top_names(tree)),
        frozenset(facts.bound),
        frozenset(imported_top(tree)),
        facts.loads,
        facts.first_line,
        tuple(uses(tree, path, also_top, facts)),
    )


def _encode(found: FileReading | None) -> object:
    if found is None:
        return None
    return {
        "top": sorted(found.top),
        "bound": sorted(found.bound),
        "imported": sorted(found.imported),
        "loads": dict(found.loads),
        "first_line": dict(found.first_line),
        "uses": uses_to_json(found.uses),
    }


def _decode(raw: object) -> FileReading | None:
    """The cached answer; a ValueError (or TypeError, KeyError) when it is not one."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError("not an object")
    return FileReading(
        frozenset(map(str, raw["top"])),
        frozenset(map(str, raw["bound"])),
        frozenset(map(str, raw["imported"])),
        {str(k): int(v) for k, v in raw["loads"].items()},
        {str(k): int(v) for k, v in raw["first_line"].items()},
        tuple(uses_from_json(raw["uses"])),
    )
