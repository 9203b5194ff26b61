"""While a rebase is halted on a conflict, commands that move refs refuse and say why."""
from __future__ import annotations

from pathlib import Path

from tests.conftest import run_series, sh


def test_import_refuses_while_a_rebase_is_halted(fork: Path, tmp_path: Path) -> None:
    run_series("export", str(tmp_path / "patches"), cwd=fork)
    sh("git branch -f topic/api-hello topic/sched-note", fork)  # so import would move it
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    before = sh("git for-each-ref refs/heads", fork)
    proc = run_series("import", str(tmp_path / "patches"), "--force", cwd=fork, expect=1)
    assert "rebase --continue" in proc.stderr or "--abort" in proc.stderr, proc.stderr
    assert sh("git for-each-ref refs/heads", fork) == before
    run_series("rebase", "--abort", cwd=fork)
    run_series("import", str(tmp_path / "patches"), "--force", cwd=fork)


def test_status_says_a_rebase_is_halted_and_how_to_go_on(fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    text = run_series("status", cwd=fork).stdout
    assert "series rebase --continue" in text and ".git/series/rebase/worktree" in text, text
    run_series("rebase", "--abort", cwd=fork)
    assert "--continue" not in run_series("status", cwd=fork).stdout
