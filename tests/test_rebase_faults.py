"""A rebase killed at each step (SERIES_FAULT=<point> makes the process exit 99 there),
then recovered with --continue or --abort: nothing lost, nothing half-done."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_series, sh
from tests.test_rebase import LRU, refs_of, resolve_lru, snapshot

WORKTREE = ".git/series/rebase/worktree"
SKIP = ("--skip-topic", "offload-evict-fix")


def killed(fork: Path, point: str, *args: str) -> None:
    proc = run_series("rebase", *args, cwd=fork, expect=None, env={"SERIES_FAULT": point})
    assert proc.returncode == 99, f"not killed at {point}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"


@pytest.mark.parametrize(
    "point", ["halted-before-temporary-refs", "rebase-after-state", "rebase-mid-worktree", "rebase-after-worktree"]
)
def test_killed_while_halting_then_continue(fork: Path, point: str) -> None:
    before = snapshot(fork)
    killed(fork, point, "--onto", "v0.31.0")
    assert snapshot(fork) == before
    if point == "halted-before-temporary-refs":  # killed before the state was saved: nothing halted
        assert not (fork / ".git/series/rebase/state.json").exists()
        run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    elif point != "rebase-after-worktree":
        # the worktree was never laid out: --continue does it now
        proc = run_series("rebase", "--continue", cwd=fork, expect=3)
        assert "resolve offload-evict-fix" in proc.stdout, proc.stdout
    resolve_lru(fork / WORKTREE)
    run_series("rebase", "--continue", cwd=fork)
    assert "# keep request order" in sh(f"git show topic/offload-evict-fix~1:{LRU}", fork)
    assert "base: v0.31.0" in (fork / "series.yaml").read_text()


@pytest.mark.parametrize(
    "point", ["halted-before-temporary-refs", "rebase-after-state", "rebase-mid-worktree", "rebase-after-worktree"]
)
def test_killed_while_halting_then_abort(fork: Path, point: str) -> None:
    before = snapshot(fork)
    killed(fork, point, "--onto", "v0.31.0")
    if point == "halted-before-temporary-refs":  # nothing halted: the next rebase starts afresh
        run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    run_series("rebase", "--abort", cwd=fork)
    assert snapshot(fork) == before
    assert sh("git worktree list", fork).count("\n") == 1
    assert not sh("git for-each-ref refs/series/rebase", fork).strip()


@pytest.mark.parametrize(
    "point", ["rebase-before-transaction", "after-journal", "after-backup", "after-refs", "rebase-after-transaction"]
)
def test_killed_while_committing_then_continue_finishes(fork: Path, point: str) -> None:
    killed(fork, point, "--onto", "v0.31.0", *SKIP)
    run_series("rebase", "--continue", cwd=fork)
    text = (fork / "series.yaml").read_text()
    assert "base: v0.31.0" in text and "merged_in: v0.31.0" in text, text
    assert sh("git rev-parse topic/api-hello~1", fork) == sh("git rev-parse v0.31.0", fork)
    assert not (fork / ".git/series/rebase").exists()
    log = run_series("log", cwd=fork).stdout
    assert log.count(" rebase ") == 1 and "pending" not in log, log


@pytest.mark.parametrize(
    "point", ["rebase-before-transaction", "after-journal", "after-refs", "rebase-after-transaction"]
)
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
    assert not (fork / "resolutions").exists(), "recorded through the transaction: written when it commits"
    run_series("rebase", "--continue", cwd=fork)
    assert "# keep request order" in sh(f"git show topic/offload-evict-fix~1:{LRU}", fork)
    # the state kept what the recorder wrote: the next step's transaction wrote it with the rebase
    recorded = list((fork / "resolutions").glob("*/*.txt"))
    assert len(recorded) == 1, recorded
    rows = json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"]
    assert [r["command"] for r in rows] == ["rebase"], rows
    assert any(
        f["path"].startswith("resolutions/")
        for f in json.loads((fork / ".git/series/journal" / f"{rows[0]['id']}.json").read_text())["files"]
    )


@pytest.mark.parametrize(
    "point",
    [
        "rebase-after-state",
        "rebase-mid-worktree",
        "rebase-after-worktree",
        "rebase-before-transaction",
        "after-journal",
        "after-backup",
        "after-refs",
        "after-config",
        "rebase-after-transaction",
    ],
)
def test_the_whole_process_group_killed_at_each_rebase_step_then_abort(fork: Path, point: str) -> None:
    """As a CI cancellation does: SIGKILL to the process group, git children included."""
    import os

    from tests.harness import series_process

    before = snapshot(fork)
    args = (
        ("--onto", "v0.31.0")
        if point.startswith("rebase-after-state") or "worktree" in point
        else ("--onto", "v0.31.0", *SKIP)
    )
    env = dict(os.environ, SERIES_FAULT=point, SERIES_FAULT_GROUP="1")
    proc = series_process(["rebase", *args], fork, env, new_session=True)
    assert proc.returncode == -9, (point, proc.returncode, proc.stderr)
    run_series("rebase", "--abort", cwd=fork)
    assert snapshot(fork) == before, point
    assert not list((fork / ".git/refs").rglob("*.lock"))
    assert "pending" not in run_series("log", cwd=fork).stdout


def _all_refs(fork: Path) -> str:
    return sh("git for-each-ref --format='%(refname) %(objectname)'", fork)


def _immutable(path: Path) -> bool:
    """chattr +i: a rename over the file fails even as root (where chmod does not count)."""
    return subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0


@pytest.mark.parametrize("how", ["ebusy:series.yaml", "eperm:series.yaml", "immutable"])
def test_series_yaml_that_cannot_be_replaced_rolls_the_refs_back(fork: Path, how: str) -> None:
    run_series("build", cwd=fork)  # an integration branch to move as well
    refs, text = _all_refs(fork), (fork / "series.yaml").read_bytes()
    env = {} if how == "immutable" else {"SERIES_FAULT": how}
    if how == "immutable" and not _immutable(fork / "series.yaml"):
        pytest.skip("chattr +i is not possible here")
    try:
        proc = run_series("rebase", "--onto", "v0.31.0", *SKIP, cwd=fork, expect=1, env=env)
    finally:
        subprocess.run(["chattr", "-i", str(fork / "series.yaml")], capture_output=True)
    assert proc.stderr.count("\n") == 1 and "cannot replace it" in proc.stderr, proc.stderr
    assert "every ref was put back, nothing was changed" in proc.stderr, proc.stderr
    # refs (backups too) and series.yaml as before; no staged copy, no halted rebase
    assert _all_refs(fork) == refs and (fork / "series.yaml").read_bytes() == text
    assert sorted(p.name for p in fork.iterdir() if p.name.startswith(".series.yaml")) == []
    assert not (fork / ".git/series/rebase").exists()
    assert "rebase" not in run_series("log", cwd=fork).stdout
    assert list((fork / ".git/series/journal/rolled-back").glob("*.json")), "the journal keeps it, rolled back"
    # and it is simply run again
    run_series("rebase", "--onto", "v0.31.0", *SKIP, cwd=fork)
    assert "base: v0.31.0" in (fork / "series.yaml").read_text()


def test_killed_after_staging_series_yaml_leaves_no_copy(fork: Path) -> None:
    killed(fork, "after-backup", "--onto", "v0.31.0", *SKIP)
    assert list(fork.glob(".series.yaml.*.tmp")), "staged before the refs move"
    run_series("rebase", "--abort", cwd=fork)
    assert not list(fork.glob(".series.yaml.*")), "the repair removes it"


def test_a_refused_commit_leaves_no_halted_rebase(fork: Path) -> None:
    """A dirty checkout of the integration branch is found only when the refs would move:
    nothing moved, and the rebase is not left 'committing' (which reads as a halt)."""
    run_series("build", cwd=fork)
    sh(f"git worktree add -q {fork.parent / 'integ'} series/integration", fork)
    (fork.parent / "integ/README.md").write_text("local change\n")
    before = _all_refs(fork)
    proc = run_series("rebase", "--onto", "v0.31.0", *SKIP, cwd=fork, expect=1)
    assert "series/integration is checked out in" in proc.stderr, proc.stderr
    assert _all_refs(fork) == before and not (fork / ".git/series/rebase").exists()
    assert "in progress" not in run_series("status", cwd=fork).stdout
    sh("git checkout -q -- README.md", fork.parent / "integ")
    run_series("rebase", "--onto", "v0.31.0", *SKIP, cwd=fork)


def test_a_killed_git_left_a_temporary_ref_locked_the_next_halt_goes_on(fork: Path) -> None:
    """The temporary refs that keep a halted operation's commits are written by git's
    update-ref (series.git.refs, the one writer of refs); a lock file a killed one left is
    removed first (under the series lock nothing else writes refs/series/rebase/)."""
    (fork / ".git/refs/series/rebase").mkdir(parents=True)
    for topic in ("sched-note", "offload-evict-fix", "ipc-backport", "api-hello"):
        (fork / f".git/refs/series/rebase/{topic}.lock").write_text("0" * 40 + "\n")
    proc = run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    assert "resolve offload-evict-fix" in proc.stdout, proc.stdout
    assert "refs/series/rebase/" in sh("git for-each-ref --format='%(refname)' refs/series/rebase", fork)
    assert not list((fork / ".git/refs/series/rebase").rglob("*.lock"))
    run_series("rebase", "--abort", cwd=fork)
    assert not sh("git for-each-ref refs/series/rebase", fork).strip()
