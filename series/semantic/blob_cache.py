"""The semantic check's disk cache (series.semantic.breaks): answers that depend only on
blob contents, one small JSON file per key under the user's cache (series.cache; the
SERIES_BREAKS_CACHE variable overrides). A key names the code that computed the answer
(`version`: a hash of its source files), so an answer written by another version of the
check is never read; a damaged or unreadable file is computed again, never trusted, and a
cache that cannot be written costs time, never the answer.

The folder is bounded (MAX_BYTES, MAX_FILES): a process's first write, and every
PRUNE_EVERY-th after it, removes the least recently used entries (a hit refreshes an
entry's mtime) down to 80% of the bound. Each entry is written whole by one rename and
removed by one unlink, so a reader, or another process pruning at the same time, sees an
entry whole or not at all (and computes it again).

A compute runs with the cyclic garbage collector paused (`_collection_paused`): it parses a
file and walks the tree, and a tree of vLLM's size is 10^5 new objects, each of which the
collector would otherwise scan once per generation it is promoted through (about 45% of
ast.parse's time, measured: issue 34). The tree dies by reference count when the compute
returns (the answer is small, plain data); the collector only reclaims cycles, so pausing
it changes no answer.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from series.cache import user_cache
from series.ops.fs import write_atomically

T = TypeVar("T")

_VERSIONS: dict[tuple[str, ...], str] = {}
MAX_BYTES = 200 * 1024 * 1024
MAX_FILES = 30_000
PRUNE_EVERY = 1000
_WRITES: dict[Path, int] = {}  # per folder: the entries this process wrote


def version(*sources: str) -> str:
    """A hash of these source files (read once per process)."""
    if sources not in _VERSIONS:
        digest = hashlib.sha256()
        for source in sources:
            digest.update(Path(source).read_bytes())
        _VERSIONS[sources] = digest.hexdigest()[:16]
    return _VERSIONS[sources]


def folder() -> Path:
    return user_cache("breaks", "SERIES_BREAKS_CACHE")


def cached(
    key: tuple[str, ...], compute: Callable[[], object], decode: Callable[[object], T], where: Path | None = None
) -> T:
    """decode(the stored answer) for `key`, else compute() stored (JSON-able) and returned
    decoded; `decode` raises ValueError, TypeError or KeyError on a value it cannot read."""
    base = where if where is not None else folder()
    file = base / f"{hashlib.sha256(' '.join(key).encode()).hexdigest()[:40]}.json"
    try:
        answer = decode(json.loads(file.read_bytes()))
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        pass
    else:
        try:
            os.utime(file)  # recently used: the last to be pruned
        except OSError:
            pass
        return answer
    with _collection_paused():
        value = compute()
    try:
        base.mkdir(parents=True, exist_ok=True)
        write_atomically(file, json.dumps(value))
        written = _WRITES[base] = _WRITES.get(base, 0) + 1
        if written % PRUNE_EVERY == 1:
            prune(base, MAX_BYTES, MAX_FILES)
    except OSError:
        pass
    return decode(value)


@contextmanager
def _collection_paused() -> Iterator[None]:
    """No cyclic collection inside (module docstring); nests, and restores what it found."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def prune(base: Path, max_bytes: int, max_files: int) -> int:
    """Remove the least recently used entries of `base` while it holds more than
    `max_bytes` or `max_files`, down to 80% of each; how many went."""
    entries = []
    with os.scandir(base) as listing:
        for entry in listing:
            if entry.name.endswith(".json") and not entry.name.startswith("."):
                try:
                    st = entry.stat()
                except OSError:
                    continue  # pruned by another process meanwhile
                entries.append((st.st_mtime_ns, entry.name, st.st_size))
    total = sum(size for _, _, size in entries)
    if total <= max_bytes and len(entries) <= max_files:
        return 0
    entries.sort()
    count, removed = len(entries), 0
    for _, name, size in entries:
        if total <= max_bytes * 0.8 and count <= max_files * 0.8:
            break
        try:
            (base / name).unlink()
        except FileNotFoundError:
            pass
        total, count, removed = total - size, count - 1, removed + 1
    return removed
