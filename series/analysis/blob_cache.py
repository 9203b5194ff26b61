"""The semantic check's disk cache (series.analysis.breaks): answers that depend only on
blob contents, one small JSON file per key under the user's cache (series.cache; the
SERIES_BREAKS_CACHE variable overrides). A key names the code that computed the answer
(`version`: a hash of its source files), so an answer written by another version of the
check is never read; a damaged or unreadable file is computed again, never trusted, and a
cache that cannot be written costs time, never the answer.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable, TypeVar

from series.cache import user_cache
from series.fs import write_atomically

T = TypeVar("T")

_VERSIONS: dict[tuple[str, ...], str] = {}


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


def cached(key: tuple[str, ...], compute: Callable[[], object], decode: Callable[[object], T],
           where: Path | None = None) -> T:
    """decode(the stored answer) for `key`, else compute() stored (JSON-able) and returned
    decoded; `decode` raises ValueError, TypeError or KeyError on a value it cannot read."""
    base = where if where is not None else folder()
    file = base / f"{hashlib.sha256(' '.join(key).encode()).hexdigest()[:40]}.json"
    try:
        return decode(json.loads(file.read_bytes()))
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        pass
    value = compute()
    try:
        base.mkdir(parents=True, exist_ok=True)
        write_atomically(file, json.dumps(value))
    except OSError:
        pass
    return decode(value)
