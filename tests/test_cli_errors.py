"""Exit codes and messages: user errors are one line, bugs get exit 4 and a log file."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import run_series

BUG_SCRIPT = """
import sys
import series.verbs.status as status
def broken(ws):
    raise RuntimeError("boom from a test")
status.run = broken
from series.cli import main
sys.argv = ["series", "status"]
main()
"""


def test_a_bug_exits_4_and_names_a_log_with_the_traceback(fork: Path, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", BUG_SCRIPT], cwd=fork, capture_output=True, text=True)
    assert proc.returncode == 4, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    logs = list((tmp_path / "logs").glob("series-*.log"))
    assert len(logs) == 1 and str(logs[0]) in proc.stderr, (logs, proc.stderr)
    text = logs[0].read_text()
    assert "boom from a test" in text and "Traceback" in text and "pygit2" in text, text


def test_the_bug_log_never_holds_the_environment(fork: Path, tmp_path: Path) -> None:
    secret = "ghp_" + "x" * 36
    subprocess.run([sys.executable, "-c", BUG_SCRIPT], cwd=fork, capture_output=True, text=True,
                   env={**__import__("os").environ, "GITHUB_TOKEN": secret})
    for log in (tmp_path / "logs").glob("*.log"):
        assert secret not in log.read_text(), log


def test_usage_error_exits_2(fork: Path) -> None:
    proc = run_series("status", "--no-such-flag", cwd=fork, expect=2)
    assert "no such option" in proc.stderr.lower(), proc.stderr


def test_help_teaches(fork: Path) -> None:
    out = run_series("--help", cwd=fork).stdout
    assert "series.yaml" in out and "rebase --onto" in out, out
