"""One pytest process over the layout (series.evidence.testrun), and trees side by side.

Per-test outcomes come from pytest's JUnit XML (xunit1, which names each test's file);
a small plugin streams outcomes as they happen, for live progress and for the partial
table when a run is interrupted. The child runs in its own session so that a Ctrl-C or a
kill of `series` ends the whole pytest process group.

Trees run side by side (side_by_side): each tree's pytest is its own process, watched by
a thread of ours. Their cost is CPU in pytest (upstream's conftest collects garbage after
every test over the heap torch and vLLM leave), so on N cores N trees take about the time
of one. A signal reaches the main thread only; it stops every tree through one JobControl,
and the trees' progress lines are written from the main thread too.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from xml.etree import ElementTree
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence, TypeVar

from series.evidence.interpreter import Environment
from series.evidence.testrun import CaseOutcome


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
        outcome = (
            CaseOutcome.FAILED
            if "failure" in tags
            else CaseOutcome.ERROR
            if "error" in tags
            else CaseOutcome.SKIPPED
            if "skipped" in tags
            else CaseOutcome.PASSED
        )
        out[test_id(case.get("file"), case.get("classname", ""), case.get("name", ""))] = outcome
    return out


def test_id(file: str | None, classname: str, name: str) -> str:
    """pytest's node id (tests/x/test_a.py::TestC::test_b[1]) from a JUnit test case."""
    if not classname:  # a collection error names the module
        return file or name.replace(".", "/") + ".py"
    if file is None:
        return f"{classname}::{name}"
    module = file[:-3].replace("/", ".") if file.endswith(".py") else file
    rest = classname[len(module) + 1 :] if classname.startswith(module + ".") else ""
    return "::".join([file, *(p for p in rest.split(".") if p), name])


def run_pytest(
    env: Environment,
    layout: Path,
    args: list[str],
    *,
    pythonpath: list[Path],
    workdir: Path,
    extra_env: Mapping[str, str] | None = None,
    report: Path,
    progress: Callable[[Progress], None] = lambda _: None,
    cancel: "JobControl | None" = None,
) -> PytestResult:
    """One pytest process over `args` (paths relative to `workdir`); ids relative to `layout`.
    A signal (in the main thread) or `cancel` (in any) stops it: Interrupted, with what
    it had reported."""
    stream = report.with_suffix(".jsonl")
    log = report.with_suffix(".log")
    child_env = dict(os.environ)
    # The child's temporary files live in the run's scratch, which the run removes: a
    # child stopped mid-write leaves nothing in the user's TMPDIR, and the tests' tmp_path
    # never prunes the user's own pytest-of-USER directories. Short: sockets go there too.
    temp = report.parent / "t"
    temp.mkdir(exist_ok=True)
    inherited = [
        p
        for p in child_env.get("PYTHONPATH", "").split(os.pathsep)
        if p and not (Path(p) / env.package_dir.name).is_dir()
    ]  # a source tree would shadow
    child_env.update(
        {
            "PYTHONPATH": os.pathsep.join([*map(str, pythonpath), str(report.parent.parent / "plugin"), *inherited]),
            "PYTHONDONTWRITEBYTECODE": "1",
            "SERIES_PROGRESS": str(stream),
            "TMPDIR": str(temp),
        }
    )
    # No network here or in most CI runners: a Hugging Face lookup should fail fast, offline.
    child_env.setdefault("HF_HUB_OFFLINE", "1")
    child_env.setdefault("TRANSFORMERS_OFFLINE", "1")
    child_env.update(extra_env or {})
    argv = [
        env.python,
        "-m",
        "pytest",
        *args,
        "-p",
        "series_progress",
        "-p",
        "no:cacheprovider",
        "--continue-on-collection-errors",
        "-o",
        "junit_family=xunit1",
        f"--rootdir={layout}",
        f"--junitxml={report}",
    ]
    seen = Progress()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            argv, cwd=workdir, env=child_env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        previous = _trap_signals()
        try:
            position = 0
            while True:
                code = proc.poll()
                position = _read_stream(stream, position, seen)
                progress(seen)
                if code is not None:
                    break
                if cancel is not None and cancel.stopped:
                    raise Stopped(cancel.signum)
                # woken by the child's exit, not at the next tick: a tree's run ends when it ends
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=0.3 if cancel is None else 0.05)
        except Stopped as sig:
            stop_group(proc)
            _read_stream(stream, position, seen)
            raise Interrupted(sig.signum, dict(seen.outcomes)) from None
        except BaseException:
            stop_group(proc)
            raise
        finally:
            _restore_signals(previous)
        end_leftovers(proc)
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


def end_leftovers(proc: subprocess.Popen[bytes]) -> None:
    """After the child (pytest, a workload) has exited and been reaped: end what it started
    in its session and left running (a test's server, a workload's engine process). Left
    alone, such a process holds its GPU memory and CPU through the next tree's run, so the
    trees would not be measured alike, and it outlives series. While any of them lives the
    group keeps its id, so the id cannot have been handed to another process meanwhile; a
    process that called setsid() itself has left the group and is not reached."""
    pgid = proc.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return  # nothing left: the usual case
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs. An orphan that has exited stays a zombie
    until init reaps it, and a container's init may never do so: where /proc tells, a
    zombie does not count."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()  # after the command's name, which may hold spaces
        except OSError:
            continue
        if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] != b"Z":
            return True
    return False


def python_default() -> str:
    return sys.executable


# --- trees side by side ------------------------------------------------------------------


class JobControl:
    """What the jobs of one side_by_side() share. The stop: set once (a signal, or a job's
    error), it ends every running pytest at its next poll (run_pytest's `cancel`). The
    output: a job's lines are written by the main thread, in the order they came."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signum = int(signal.SIGTERM)  # an error stops the others as a kill would
        self.lines: queue.Queue[str] = queue.Queue()

    def stop(self, signum: int) -> None:
        if not self._event.is_set():
            self.signum = signum
            self._event.set()

    def wait(self, seconds: float) -> bool:
        return self._event.wait(seconds)

    @property
    def stopped(self) -> bool:
        return self._event.is_set()

    def say(self, line: str) -> None:
        self.lines.put(line)


T = TypeVar("T")


def side_by_side(
    jobs: Sequence[Callable[[JobControl], T]], width: int, say: Callable[[str], None] = lambda _: None
) -> tuple[list[T | BaseException | None], int | None]:
    """Run `jobs`, at most `width` at once (each in a thread; its pytest is a process), and
    return each one's value or exception in order (None: never started), and the signal
    that stopped them (None when none came).

    A signal in the main thread (trapped() makes it Stopped) stops every job: each raises
    Interrupted with its partial outcomes, and the jobs not started yet are not started.
    A job's error other than Interrupted stops the others the same way; the caller reports
    the error. Returns only when every started job has ended (its pytest too).
    """
    results: list[T | BaseException | None] = [None] * len(jobs)
    cancel = JobControl()

    def tell() -> None:
        while not cancel.lines.empty():
            say(cancel.lines.get())

    signum: int | None = None

    finished = [False] * len(jobs)

    def work(index: int) -> None:
        try:
            _signals_released()
            results[index] = jobs[index](cancel)
        except BaseException as exc:  # handed to the caller, in the main thread
            results[index] = exc
            if not isinstance(exc, Interrupted):
                cancel.stop(cancel.signum)
        finally:
            finished[index] = True

    # Our own flags, and sleep, not Thread.join(timeout): a signal raising in join() makes
    # CPython 3.11 mark the joined thread stopped while it runs (the bpo-45274 handling),
    # and its pytest would be left behind.
    waiting = list(range(len(jobs)))
    running: list[int] = []
    while waiting or running:
        try:
            while waiting and len(running) < max(1, width) and not cancel.stopped:
                with _signals_held():  # started and listed as one step: none unwatched
                    threading.Thread(target=work, args=(waiting[0],), daemon=True).start()
                    running.append(waiting.pop(0))
            if cancel.stopped:
                waiting.clear()
            time.sleep(0.02)  # a finished job is seen within 20 ms
            running = [i for i in running if not finished[i]]
            tell()
        except Stopped as stop:
            signum = signum or stop.signum
            cancel.stop(stop.signum)
    tell()
    return results, signum


def _signals_released() -> None:
    """Unblock the trapped signals in a job's thread: it inherits the mask _signals_held()
    set, and a process it starts would inherit it too (a mask survives fork and exec), so
    its pytest could not be stopped but by SIGKILL. The handler still runs in the main
    thread, whichever thread the signal arrives in."""
    release = getattr(signal, "pthread_sigmask", None)
    if release is not None:
        release(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """The trapped signals wait (pending) until the block ends; a thread started inside
    inherits the mask, so those signals always reach the main thread."""
    hold = getattr(signal, "pthread_sigmask", None)
    if hold is None:
        yield
        return
    previous = hold(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
    try:
        yield
    finally:
        hold(signal.SIG_SETMASK, previous)
