"""Release wheels: `--wheel vllm==0.31.0` is fetched once with pip into a cache and reused.

pip, not our own HTTP: it honours the user's index (PIP_INDEX_URL, pip.conf), proxies and
credentials, and picks the wheel for this platform. `--only-binary=:all:` because a
source distribution would need vLLM's whole CUDA build; `--no-deps` because we only want
the file (vLLM's dependencies, torch first, are gigabytes).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable

from series.errors import SeriesError

Runner = Callable[[list[str]], subprocess.CompletedProcess]
_SPEC = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!_-]+)$")


def cache_dir() -> Path:
    explicit = os.environ.get("SERIES_WHEEL_CACHE")
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "series" / "wheels"


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    """On a terminal pip shows its own progress bar (a 320 MB download takes a while)."""
    if sys.stderr.isatty():
        return subprocess.run(cmd, stdout=sys.stderr, stderr=sys.stderr, text=True)
    return subprocess.run(cmd, capture_output=True, text=True)


def pip_command(spec: str, directory: Path) -> list[str]:
    return [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--dest", str(directory), spec]


def cached(spec: str, directory: Path) -> Path | None:
    m = _SPEC.match(spec)
    if not m:
        return None
    stem = re.sub(r"[-_.]+", "_", m["name"]).lower()
    found = sorted(p for p in directory.glob("*.whl")
                   if p.name.lower().startswith(f"{stem}-{m['version'].lower()}-"))
    return found[0] if found else None


def planned(wheel: str, cache: Path | None = None) -> tuple[Path, bool]:
    """For --dry-run: the wheel if it is here already, else a stand-in name; never downloads.

    Returns (path, present)."""
    if wheel.endswith(".whl"):
        return resolve_wheel(wheel, cache)[0], True
    m = _SPEC.match(wheel)
    if not m:
        raise SeriesError(f"--wheel {wheel}: expected a .whl path or NAME==VERSION, e.g. vllm==0.31.0")
    directory = cache or cache_dir()
    hit = cached(wheel, directory)
    if hit is not None:
        return hit, True
    stem = re.sub(r"[-_.]+", "_", m["name"]).lower()
    return directory / f"{stem}-{m['version']}-PY-ABI-PLATFORM.whl", False


def resolve_wheel(wheel: str, cache: Path | None = None, runner: Runner = _run) -> tuple[Path, bool]:
    """A wheel path, or NAME==VERSION fetched into the cache. Returns (path, fetched_now)."""
    if wheel.endswith(".whl"):
        path = Path(wheel).expanduser()
        if not path.is_file():
            raise SeriesError(f"{wheel}: no such wheel file (pass a .whl path or vllm==VERSION)")
        return path.resolve(), False
    if not _SPEC.match(wheel):
        raise SeriesError(f"--wheel {wheel}: expected a .whl path or NAME==VERSION, e.g. vllm==0.31.0")
    directory = cache or cache_dir()
    hit = cached(wheel, directory)
    if hit is not None:
        return hit, False
    directory.mkdir(parents=True, exist_ok=True)
    proc = runner(pip_command(wheel, directory))
    if proc.returncode != 0:
        lines = ((proc.stderr or "") + (proc.stdout or "")).strip().splitlines()
        last = lines[-1] if lines else f"exit {proc.returncode}, see pip's output above"
        raise SeriesError(f"pip download {wheel} failed: {last} "
                          "(check the version and your index, or pass --wheel PATH.whl)")
    hit = cached(wheel, directory)
    if hit is None:
        raise SeriesError(f"pip download {wheel} left no matching wheel in {directory}")
    return hit, True
