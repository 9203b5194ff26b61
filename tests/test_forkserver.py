"""The fork server (tests/forkserver.py) gives what `python -m series` gives: the same exit
codes, output and process groups; it refuses what it could not make the same."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests import forkserver
from tests.harness import _read, series_process


def served(argv: list[str], cwd: Path, env: dict[str, str], new_session: bool = False) -> tuple[int, str, str]:
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    child = forkserver.spawn(argv, str(cwd), env, (0, out.fileno(), err.fileno()), new_session)
    assert child is not None, "the fork server refused a run it can serve"
    code = child.wait()
    return code, _read(out), _read(err)


def started(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "series", *argv], cwd=cwd, env=env, capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def test_a_served_run_answers_as_a_started_one(fork: Path, tmp_path: Path) -> None:
    env = dict(os.environ)
    for argv, cwd in [
        (["--version"], fork),
        (["status"], fork),
        (["log", "--json"], fork),
        (["no-such-verb"], fork),
        (["status"], tmp_path),  # no series.yaml: an error, exit 1
        (["tag", "--help"], fork),
    ]:
        assert served(argv, cwd, env) == started(argv, cwd, env), argv
    env["NO_COLOR"] = "1"
    env["HOME"] = str(tmp_path)
    assert served(["status"], fork, env) == started(["status"], fork, env)


def test_a_fault_exits_or_kills_its_process_group(fork: Path) -> None:
    env = dict(os.environ, SERIES_FAULT="after-journal")
    proc = series_process(["drop", "api-hello", "--reason", "x"], fork, env)
    assert proc.returncode == 99, proc.stderr
    env["SERIES_FAULT_GROUP"] = "1"
    proc = series_process(["drop", "api-hello", "--reason", "x"], fork, env, new_session=True)
    assert proc.returncode == -9, proc.stderr


def test_a_child_is_in_the_callers_process_group_or_a_session_of_its_own(fork: Path, tmp_path: Path) -> None:
    for new_session in (False, True):
        pause = tmp_path / f"pause-{new_session}"
        pause.write_text("")
        env = dict(os.environ, SERIES_PAUSE="after-journal", SERIES_PAUSE_FILE=str(pause))
        out = tempfile.TemporaryFile()
        child = forkserver.spawn(
            ["drop", "api-hello", "--reason", "x"], str(fork), env, (0, out.fileno(), out.fileno()), new_session
        )
        assert child is not None
        reached = tmp_path / f"{pause.name}.reached"
        deadline = time.monotonic() + 30
        while not reached.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert int(reached.read_text()) == child.pid
        if new_session:
            assert os.getsid(child.pid) == child.pid and os.getpgid(child.pid) == child.pid
        else:
            assert os.getpgid(child.pid) == os.getpgrp() and os.getsid(child.pid) == os.getsid(0)
        pause.unlink()
        assert child.wait() == 0, _read(out)
        series_process(["undo"], fork, dict(os.environ))  # api-hello back, for the next round


def test_what_it_cannot_make_the_same_is_refused(fork: Path, tmp_path: Path) -> None:
    env = dict(os.environ)
    shadow = tmp_path / "shadow"
    (shadow / "series").mkdir(parents=True)
    (shadow / "series" / "__init__.py").write_text("")
    assert forkserver.spawn(["--version"], str(shadow), env, (0, 1, 2)) is None  # cwd first on sys.path
    (tmp_path / "plain").mkdir()
    assert (
        forkserver.spawn(["--version"], str(tmp_path / "plain"), dict(env, PYTHONPATH=str(shadow)), (0, 1, 2)) is None
    )
    assert forkserver.spawn(["--version"], str(fork), dict(env, PYTHONHASHSEED="1"), (0, 1, 2)) is None
    assert forkserver.spawn(["--version"], str(fork), dict(env, LC_ALL="C"), (0, 1, 2)) is None
    # and series_process then starts `python -m series`: the shadowing package answers
    (shadow / "series" / "__main__.py").write_text("print('shadow')\n")
    assert series_process(["--version"], shadow, env).stdout == "shadow\n"
