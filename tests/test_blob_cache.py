"""The semantic check's disk cache (series.semantic.blob_cache) stays bounded: a write prunes
the least recently used entries, and a hit counts as a use."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from series.semantic import blob_cache


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "cache"  # tmp_path holds the sealed environment's home too
    folder.mkdir()
    return folder


def _entries(folder: Path, n: int, size: int = 10) -> list[Path]:
    """n entries, the first the oldest (mtimes a minute apart)."""
    made = []
    for i in range(n):
        path = folder / f"{i:040x}.json"
        path.write_text('"' + "x" * (size - 2) + '"')
        os.utime(path, (1_700_000_000 + 60 * i, 1_700_000_000 + 60 * i))
        made.append(path)
    return made


def test_a_write_prunes_the_least_recently_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _folder(tmp_path)
    monkeypatch.setattr(blob_cache, "MAX_FILES", 10)
    old = _entries(folder, 10)
    (folder / ".x.json.tmp-1").write_text("a write under way")
    assert blob_cache.cached(("a",), lambda: "a", str, folder) == "a"
    left = sorted(p.name for p in folder.iterdir())
    assert len([n for n in left if n.endswith(".json") and not n.startswith(".")]) == 8, left
    assert ".x.json.tmp-1" in left  # not an entry: never pruned
    assert not old[0].exists() and not old[1].exists() and not old[2].exists() and old[3].exists()


def test_a_hit_keeps_an_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _folder(tmp_path)
    monkeypatch.setattr(blob_cache, "MAX_FILES", 10)
    _entries(folder, 9)
    assert blob_cache.cached(("used",), lambda: "v", str, folder) == "v"  # entry 10, the newest
    used = next(p for p in folder.iterdir() if p.read_text() == '"v"')
    os.utime(used, (1_600_000_000, 1_600_000_000))  # older than all the others
    assert blob_cache.cached(("used",), lambda: "recomputed", str, folder) == "v"  # a hit: used now
    monkeypatch.setitem(blob_cache._WRITES, folder, 0)  # the next write prunes
    assert blob_cache.cached(("new",), lambda: "n", str, folder) == "n"
    assert used.exists(), "the entry just read was pruned as the oldest"
    assert len(list(folder.iterdir())) == 8


def test_the_byte_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _folder(tmp_path)
    monkeypatch.setattr(blob_cache, "MAX_BYTES", 1000)
    old = _entries(folder, 6, size=200)
    assert blob_cache.cached(("b",), lambda: "b", str, folder) == "b"
    assert sum(p.stat().st_size for p in folder.iterdir()) <= 800
    assert not old[0].exists() and old[-1].exists()


def test_a_compute_runs_without_cyclic_collection(tmp_path: Path) -> None:
    """A compute parses and walks a file: 10^5 new objects the collector would scan again and
    again (issue 34). It runs paused; what the caller had is restored, an error too."""
    import gc

    folder = _folder(tmp_path)
    assert gc.isenabled()
    assert blob_cache.cached(("paused",), lambda: gc.isenabled(), bool, folder) is False
    assert gc.isenabled()

    def fails() -> object:
        raise RuntimeError("compute failed")

    with pytest.raises(RuntimeError):
        blob_cache.cached(("fails",), fails, str, folder)
    assert gc.isenabled()
    gc.disable()
    try:  # a caller that paused it itself keeps it paused
        assert blob_cache.cached(("nested",), lambda: gc.isenabled(), bool, folder) is False
        assert not gc.isenabled()
    finally:
        gc.enable()
