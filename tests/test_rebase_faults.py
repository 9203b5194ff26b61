"""A rebase killed at each step (SERIES_FAULT=<point> makes the process exit 99 there),
then recovered with --continue or --abort: nothing lost, nothing half-done."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_series, sh
from tests.test_rebase import LRU, refs_of, resolve_lru, snapshot

WORKTREE = ".git/series/rebase/worktree"
SKIP = ("--skip-topic", "offload-evict-fix")


def killed(fork: Path, point: str, *args: str) -> None:
    proc = run_series("rebase", *args, cwd=fork, expect=None, env={"SERIES_FAULT": point})
    assert proc.returncode == 99, f"not killed at {point}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"


@pytest.mark.parametrize("point", ["rebase-after-state", "rebase-mid-worktree", "rebase-after-worktree"])
def test_killed_while_halting_then_continue(fork: Path, point: str) -> None:
    before = snapshot(fork)
    killed(fork, point, "--onto", "v0.31.0")
    assert snapshot(fork) == before
    if point != "rebase-after-worktree":
        # the worktree was never laid out: --continue does it now
        proc = run_series("rebase", "--continue", cwd=fork, expect=3)
        assert "resolve offload-evict-fix" in proc.stdout, proc.stdout
    resolve_lru(fork / WORKTREE)
    run_series("rebase", "--continue", cwd=fork)
    assert "# keep request order" in sh(f"git show topic/offload-evict-fix~1:{LRU}", fork)
    assert "base: v0.31.0" in (fork / "series.yaml").read_text()


@pytest.mark.parametrize("point", ["rebase-after-state", "rebase-mid-worktree", "rebase-after-worktree"])
def test_killed_while_halting_then_abort(fork: Path, point: str) -> None:
    before = snapshot(fork)
    killed(fork, point, "--onto", "v0.31.0")
    run_series("rebase", "--abort", cwd=fork)
    assert snapshot(fork) == before
    assert sh("git worktree list", fork).count("\n") == 1
    assert not sh("git for-each-ref refs/series/rebase", fork).strip()


@pytest.mark.parametrize("point", ["rebase-before-transaction", "after-journal", "after-backup",
                                   "after-refs", "rebase-after-transaction"])
def test_killed_while_committing_then_continue_finishes(fork: Path, point: str) -> None:
    killed(fork, point, "--onto", "v0.31.0", *SKIP)
    run_series("rebase", "--continue", cwd=fork)
    text = (fork / "series.yaml").read_text()
    assert "base: v0.31.0" in text and "merged_in: v0.31.0" in text, text
    assert sh("git rev-parse topic/api-hello~1", fork) == sh("git rev-parse v0.31.0", fork)
    assert not (fork / ".git/series/rebase").exists()
    log = run_series("log", cwd=fork).stdout
    assert log.count(" rebase ") == 1 and "pending" not in log, log


@pytest.mark.parametrize("point", ["rebase-before-transaction", "after-journal", "after-refs",
                                   "rebase-after-transaction"])
def test_killed_while_committing_then_abort_restores(fork: Path, point: str) -> None:
    before = snapshot(fork)
    killed(fork, point, "--onto", "v0.31.0", *SKIP)
    run_series("rebase", "--abort", cwd=fork)
    assert snapshot(fork) == before, point


def test_killed_after_a_resolution_then_continue(fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    resolve_lru(fork / WORKTREE)
    proc = run_series("rebase", "--continue", cwd=fork, expect=None, env={"SERIES_FAULT": "continue-after-commit"})
    assert proc.returncode == 99
    assert "refs/heads/topic/offload-evict-fix" in refs_of(fork)
    run_series("rebase", "--continue", cwd=fork)
    assert "# keep request order" in sh(f"git show topic/offload-evict-fix~1:{LRU}", fork)


@pytest.mark.parametrize("point", ["rebase-after-state", "rebase-mid-worktree", "rebase-after-worktree",
                                   "rebase-before-transaction", "after-journal", "after-backup",
                                   "after-refs", "after-config", "rebase-after-transaction"])
def test_the_whole_process_group_killed_at_each_rebase_step_then_abort(fork: Path, point: str) -> None:
    """As a CI cancellation does: SIGKILL to the process group, git children included."""
    import os
    import subprocess
    import sys

    before = snapshot(fork)
    args = ("--onto", "v0.31.0") if point.startswith("rebase-after-state") or "worktree" in point else \
        ("--onto", "v0.31.0", *SKIP)
    proc = subprocess.run([sys.executable, "-m", "series", "rebase", *args], cwd=fork, capture_output=True,
                          text=True, start_new_session=True,
                          env=dict(os.environ, SERIES_FAULT=point, SERIES_FAULT_GROUP="1"))
    assert proc.returncode == -9, (point, proc.returncode, proc.stderr)
    run_series("rebase", "--abort", cwd=fork)
    assert snapshot(fork) == before, point
    assert not list((fork / ".git/refs").rglob("*.lock"))
    assert "pending" not in run_series("log", cwd=fork).stdout
