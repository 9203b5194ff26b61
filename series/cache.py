"""The one answer to "where does series keep a cache of kind X": $OVERRIDE when set, else
$XDG_CACHE_HOME/series/X (~/.cache/series/X)."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache(kind: str, override: str | None = None) -> Path:
    explicit = os.environ.get(override) if override else None
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "series" / kind
