"""Run upstream's tests over an installed release build, with a tree's changes laid over it.

The layout is what makes the run test the build and not the source: a scratch directory
holds only `tests/` (and the root pytest configuration) written from git blobs, so
pytest's rootdir insertion (upstream's tests/__init__.py makes it put the directory above
tests/ first on sys.path) finds no `vllm/` there. The tree's changes to the package
become a *shadow* of the installed package: a directory of symlinks to the installed
files (compiled extensions included) with the changed files written in and deleted ones
left out, first on PYTHONPATH. Nothing in the environment is written: bytecode writing is
off and no installed `__pycache__` is linked into a directory that holds a changed file.

Per-test outcomes come from pytest's JUnit XML (xunit1, which names each test's file);
a small plugin streams outcomes as they happen, for live progress and for the partial
table when a run is interrupted. The child runs in its own session so that a Ctrl-C or a
kill of `series` ends the whole pytest process group.
"""
from __future__ import annotations

import contextlib
import enum
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from xml.etree import ElementTree
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Mapping

from series.ship.interpreter import Environment


class CaseOutcome(str, enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"       # setup/teardown or collection: kept apart from failures
    SKIPPED = "skipped"   # xfail included, as JUnit reports it

    @property
    def bad(self) -> bool:
        return self in (CaseOutcome.FAILED, CaseOutcome.ERROR)


# --- the layout ------------------------------------------------------------------------

ROOT_CONFIG = ("pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini", "conftest.py")

PLUGIN = r'''
"""series: stream each test's outcome as one JSON line (progress and partial results)."""
import json, os

_out = open(os.environ["SERIES_PROGRESS"], "a", buffering=1)
_state = {}


def _emit(nodeid, outcome):
    _out.write(json.dumps({"id": nodeid, "outcome": outcome}) + "\n")


def pytest_collection_finish(session):
    _out.write(json.dumps({"collected": len(session.items)}) + "\n")


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

    def __enter__(self) -> "Scratch":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        os.close(self._lock)

    def fresh(self, what: str) -> Path:
        self._count += 1
        path = self.root / f"{self._count}-{what}"
        path.mkdir()
        return path

    def write_tests(self, files: Mapping[str, bytes]) -> Path:
        """tests/** and the root pytest configuration; returns the layout root."""
        for rel, data in files.items():
            if not (rel.startswith("tests/") or rel in ROOT_CONFIG):
                continue
            target = self.tests_root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return self.tests_root


def remove_stale(temp: Path) -> list[Path]:
    """Remove the scratch directories killed runs left in `temp`; never a live run's: its
    lock is held (a directory without one yet is a run starting: its pid is alive)."""
    removed = []
    for path in temp.glob(f"{SCRATCH_PREFIX}*"):
        pid = path.name[len(SCRATCH_PREFIX):].partition("-")[0]
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


# --- running pytest --------------------------------------------------------------------


@dataclass
class Progress:
    """What a running pytest has reported so far (from the plugin's stream)."""

    collected: int | None = None
    outcomes: dict[str, CaseOutcome] = field(default_factory=dict)

    def line(self) -> str:
        done = len(self.outcomes)
        failed = sum(1 for o in self.outcomes.values() if o is CaseOutcome.FAILED)
        errors = sum(1 for o in self.outcomes.values() if o is CaseOutcome.ERROR)
        total = f"/{self.collected}" if self.collected is not None else ""
        return f"{done}{total} tests, {failed} failed, {errors} errors"


class Interrupted(Exception):
    """Ctrl-C or a kill arrived while a tree's tests ran; carries what was seen of it."""

    def __init__(self, signum: int, partial: dict[str, CaseOutcome]):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.partial = partial


@dataclass(frozen=True)
class PytestResult:
    outcomes: dict[str, CaseOutcome]
    returncode: int
    log_tail: str


def junit_outcomes(path: Path) -> dict[str, CaseOutcome]:
    """{test id: outcome} from a JUnit XML report (xunit1: each case names its file)."""
    if not path.exists():
        return {}
    try:
        root = ElementTree.parse(path).getroot()
    except ElementTree.ParseError:
        return {}
    out: dict[str, CaseOutcome] = {}
    for case in root.iter("testcase"):
        tags = {child.tag for child in case}
        outcome = (CaseOutcome.FAILED if "failure" in tags else CaseOutcome.ERROR if "error" in tags
                   else CaseOutcome.SKIPPED if "skipped" in tags else CaseOutcome.PASSED)
        out[test_id(case.get("file"), case.get("classname", ""), case.get("name", ""))] = outcome
    return out


def test_id(file: str | None, classname: str, name: str) -> str:
    """pytest's node id (tests/x/test_a.py::TestC::test_b[1]) from a JUnit test case."""
    if not classname:  # a collection error names the module
        return file or name.replace(".", "/") + ".py"
    if file is None:
        return f"{classname}::{name}"
    module = file[:-3].replace("/", ".") if file.endswith(".py") else file
    rest = classname[len(module) + 1:] if classname.startswith(module + ".") else ""
    return "::".join([file, *(p for p in rest.split(".") if p), name])


def run_pytest(env: Environment, layout: Path, args: list[str], *, pythonpath: list[Path],
               workdir: Path, extra_env: Mapping[str, str] | None = None, report: Path,
               progress: Callable[[Progress], None] = lambda _: None) -> PytestResult:
    """One pytest process over `args` (paths relative to `workdir`); ids relative to `layout`."""
    stream = report.with_suffix(".jsonl")
    log = report.with_suffix(".log")
    child_env = dict(os.environ)
    inherited = [p for p in child_env.get("PYTHONPATH", "").split(os.pathsep)
                 if p and not (Path(p) / env.package_dir.name).is_dir()]  # a source tree would shadow
    child_env.update({
        "PYTHONPATH": os.pathsep.join([*map(str, pythonpath), str(report.parent.parent / "plugin"),
                                       *inherited]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "SERIES_PROGRESS": str(stream),
    })
    # No network here or in most CI runners: a Hugging Face lookup should fail fast, offline.
    child_env.setdefault("HF_HUB_OFFLINE", "1")
    child_env.setdefault("TRANSFORMERS_OFFLINE", "1")
    child_env.update(extra_env or {})
    argv = [env.python, "-m", "pytest", *args, "-p", "series_progress", "-p", "no:cacheprovider",
            "--continue-on-collection-errors", "-o", "junit_family=xunit1",
            f"--rootdir={layout}", f"--junitxml={report}"]
    seen = Progress()
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, cwd=workdir, env=child_env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        previous = _trap_signals()
        try:
            position = 0
            while True:
                code = proc.poll()
                position = _read_stream(stream, position, seen)
                progress(seen)
                if code is not None:
                    break
                time.sleep(0.3)
        except Stopped as sig:
            stop_group(proc)
            _read_stream(stream, position, seen)
            raise Interrupted(sig.signum, dict(seen.outcomes)) from None
        except BaseException:
            stop_group(proc)
            raise
        finally:
            _restore_signals(previous)
    outcomes = junit_outcomes(report) or dict(seen.outcomes)
    text = log.read_text(errors="replace").strip().splitlines()
    return PytestResult(outcomes, proc.returncode, "\n".join(text[-15:]))


def _read_stream(stream: Path, position: int, seen: Progress) -> int:
    if not stream.exists():
        return position
    with open(stream) as f:
        f.seek(position)
        chunk = f.read()
    complete, _, _ = chunk.rpartition("\n")
    for raw in complete.splitlines():
        try:
            item = json.loads(raw)
        except ValueError:
            continue
        if "collected" in item:
            seen.collected = (seen.collected or 0) + int(item["collected"])
        elif item.get("outcome") in CaseOutcome._value2member_map_:
            seen.outcomes[str(item["id"])] = CaseOutcome(item["outcome"])
    return position + len(complete) + (1 if complete else 0)


class Stopped(BaseException):
    """A trapped SIGINT/SIGTERM/SIGHUP, raised where the process was (see trapped())."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum: int, _frame: object) -> None:
    raise Stopped(signum)


def _trap_signals() -> dict[int, object]:
    previous: dict[int, object] = {}
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            previous[signum] = signal.signal(signum, _raise)
        except ValueError:  # not the main thread: leave signals alone
            pass
    return previous


def _restore_signals(previous: dict[int, object]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)  # type: ignore[arg-type]


@contextlib.contextmanager
def trapped() -> Iterator[None]:
    """Turn a kill (SIGTERM, SIGHUP) into an exception like Ctrl-C, so `finally` blocks
    (the scratch directory's removal) run however the run is stopped."""
    previous = _trap_signals()
    try:
        yield
    finally:
        _restore_signals(previous)


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """End the child (pytest, a workload) and everything it started (its own session: one process group)."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGINT, 5.0), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def python_default() -> str:
    return sys.executable
