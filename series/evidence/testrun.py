"""The layout upstream's tests run in over an installed release build, and a tree's shadow.

The layout is what makes the run test the build and not the source: a scratch directory
holds only `tests/` (and the root pytest configuration) written from git blobs, so
pytest's rootdir insertion (upstream's tests/__init__.py makes it put the directory above
tests/ first on sys.path) finds no `vllm/` there. The tree's changes to the package
become a *shadow* of the installed package: a directory of symlinks to the installed
files (compiled extensions included) with the changed files written in and deleted ones
left out, first on PYTHONPATH. Nothing in the environment is written: bytecode writing is
off and no installed `__pycache__` is linked into a directory that holds a changed file.

Running pytest in that layout is series.evidence.pytestrun.
"""

from __future__ import annotations

import enum
import fcntl
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Mapping


class CaseOutcome(str, enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # setup/teardown or collection: kept apart from failures
    SKIPPED = "skipped"  # xfail included, as JUnit reports it

    @property
    def bad(self) -> bool:
        return self in (CaseOutcome.FAILED, CaseOutcome.ERROR)


# --- the layout ------------------------------------------------------------------------

ROOT_CONFIG = ("pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini", "conftest.py")

PLUGIN = r'''
"""series: stream each test's outcome as one JSON line (progress and partial results)."""
import gc, json, os

_out = open(os.environ["SERIES_PROGRESS"], "a", buffering=1)
_state = {}


def _emit(nodeid, outcome):
    _out.write(json.dumps({"id": nodeid, "outcome": outcome}) + "\n")


def pytest_collection_finish(session):
    if os.environ.get("SERIES_GC_FREEZE", "1") != "0":
        _freeze_imports()
    _out.write(json.dumps({"collected": len(session.items)}) + "\n")


def _freeze_imports():
    """What collection imported (torch, vLLM: ~630k objects) lives for the whole run, and
    upstream's cleanup fixture runs gc.unfreeze(); gc.collect() after every test, which
    walks all of it (~0.4 s a test on a CPU machine). Frozen, the collector skips it; each
    test's own garbage is collected as before. Upstream's unfreeze releases what its own
    code froze (vLLM freezes the heap around CUDA graph capture): so it stays a real
    unfreeze once anything but this plugin has called gc.freeze(), and leaves only this
    freeze in place otherwise."""
    real_freeze, real_unfreeze = gc.freeze, gc.unfreeze
    others = []

    def freeze():
        others.append(True)
        real_freeze()

    def unfreeze():
        if others:
            real_unfreeze()

    gc.collect()
    real_freeze()
    gc.freeze, gc.unfreeze = freeze, unfreeze


def pytest_collectreport(report):
    if report.failed:
        _emit(report.nodeid, "error")


def pytest_runtest_logreport(report):
    seen = _state.setdefault(report.nodeid, None)
    if report.when == "setup":
        _state[report.nodeid] = "error" if report.failed else "skipped" if report.skipped else None
    elif report.when == "call":
        _state[report.nodeid] = "failed" if report.failed else "skipped" if report.skipped else "passed"
    elif report.when == "teardown":
        outcome = seen
        if report.failed and outcome in (None, "passed", "skipped"):
            outcome = "error"
        _emit(report.nodeid, outcome or "passed")
        _state.pop(report.nodeid, None)
'''


SCRATCH_PREFIX = "series-evidence-"
SCRATCH_LOCK = "owner.lock"


class Scratch:
    """One temporary directory for a whole run: the tests layout, the shadows, the reports.

    `close()` removes it; callers use it as a context manager so an interrupted run
    leaves nothing behind. A SIGKILL skips that: the directory is named with its owner's
    pid and holds a lock file the owner keeps flock'd, and each new run removes the ones
    whose lock is free and whose owner is gone (series-evidence-PID-XXXX).
    """

    def __init__(self) -> None:
        temp = Path(tempfile.gettempdir())
        remove_stale(temp)
        self.root = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-", dir=temp))
        self._lock = os.open(self.root / SCRATCH_LOCK, os.O_WRONLY | os.O_CREAT, 0o600)
        fcntl.flock(self._lock, fcntl.LOCK_EX)  # held until close(), or the kernel drops it at death
        self.tests_root = self.root / "layout"
        self.tests_root.mkdir()
        plugin_dir = self.root / "plugin"
        plugin_dir.mkdir()
        (plugin_dir / "series_progress.py").write_text(PLUGIN)
        self.plugin_dir = plugin_dir
        self._count = 0
        self._counting = threading.Lock()  # trees run side by side ask for directories

    def __enter__(self) -> "Scratch":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        os.close(self._lock)

    def fresh(self, what: str) -> Path:
        with self._counting:
            self._count += 1
            path = self.root / f"{self._count}-{what}"
        path.mkdir()
        return path

    def write_tests(self, files: Mapping[str, bytes], into: Path | None = None) -> Path:
        """tests/** and the root pytest configuration; returns the layout root (`into`: a
        second layout, for trees whose tests are another tree's, e.g. upstream's main)."""
        root = into if into is not None else self.tests_root
        for rel, data in files.items():
            if not (rel.startswith("tests/") or rel in ROOT_CONFIG):
                continue
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return root


def remove_stale(temp: Path) -> list[Path]:
    """Remove the scratch directories killed runs left in `temp`; never a live run's: its
    lock is held (a directory without one yet is a run starting: its pid is alive)."""
    removed = []
    for path in temp.glob(f"{SCRATCH_PREFIX}*"):
        pid = path.name[len(SCRATCH_PREFIX) :].partition("-")[0]
        if not pid.isdigit() or path.is_symlink() or not path.is_dir() or _alive(int(pid)):
            continue
        try:
            fd = os.open(path / SCRATCH_LOCK, os.O_RDONLY)
        except FileNotFoundError:
            fd = -1  # an owner killed before it locked: its pid is gone all the same
        except OSError:
            continue  # someone else's: not ours to judge
        try:
            if fd >= 0:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # held: a live run whose pid we cannot see (another pid namespace)
        finally:
            if fd >= 0:
                os.close(fd)
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def shadow(installed: Path, changes: Mapping[str, bytes | None], into: Path) -> Path:
    """A copy of the installed package made of symlinks, with `changes` applied.

    `changes` maps paths relative to the package directory to new bytes (None: deleted).
    Returns the directory to put first on PYTHONPATH.
    """
    root = into / installed.name
    _shadow_dir(installed, root, {k.strip("/"): v for k, v in changes.items()})
    return into


def _shadow_dir(src: Path, dst: Path, changes: dict[str, bytes | None]) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    here = {name: data for name, data in changes.items() if "/" not in name}
    below: dict[str, dict[str, bytes | None]] = {}
    for name, data in changes.items():
        if "/" in name:
            head, rest = name.split("/", 1)
            below.setdefault(head, {})[rest] = data
    names = set(os.listdir(src)) if src.is_dir() else set()
    for name in sorted(names | set(here) | set(below)):
        if name == "__pycache__" and (here or below):
            continue  # stale bytecode for a changed module must not be found, nor written
        if name in below:
            _shadow_dir(src / name, dst / name, below[name])
        elif name in here:
            data = here[name]
            if data is not None:
                (dst / name).write_bytes(data)
        else:
            os.symlink(src / name, dst / name)
