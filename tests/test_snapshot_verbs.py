"""Whole-output snapshots of the core verbs, text and --json, on the tests' fork
(tests/repos.py: four topics over v0.30.0; v0.31.0 conflicts with offload-evict-fix).

Each expected output is a file under tests/snapshots/ (<test>.<label>.txt|.json; a text
snapshot is stdout, then '--- stderr' and stderr if any, then '--- exit N' if not 0). A
change fails with a unified diff. To accept a change on purpose, rerun with
`pytest tests/test_snapshot_*.py --snapshot-update` (or SERIES_SNAPSHOT_UPDATE=1), read
`git diff tests/snapshots`, and give the reason in the commit message. The mechanism, and
what it normalizes (only the test's temporary directory, and what a test names), is in
tests/snapshots.py.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_series, sh
from tests.snapshots import LOG_TIME, WALL_CLOCK, Snapshot, Volatile

LRU = "vllm/v1/kv_offload/cpu/policies/lru.py"


# What a rebase prints of the wall clock: its operation's id and report's name, the log's time.
CLOCK = (WALL_CLOCK, LOG_TIME)


def both(
    snapshot: Snapshot, label: str, *args: str, cwd: Path, expect: int = 0, volatile: tuple[Volatile, ...] = ()
) -> None:
    """`series ARGS` as text and as --json, each against its snapshot."""
    snapshot.run(run_series(*args, cwd=cwd, expect=expect), label, volatile=volatile)
    snapshot(run_series(*args, "--json", cwd=cwd, expect=expect).stdout, label, json=True, volatile=volatile)


def test_status(fork: Path, snapshot: Snapshot) -> None:
    both(snapshot, "status", "status", cwd=fork)


def test_check(fork: Path, snapshot: Snapshot) -> None:
    both(snapshot, "check", "check", cwd=fork, expect=1)  # a file outside its scope


def test_touches(fork: Path, snapshot: Snapshot) -> None:
    both(snapshot, "path", "touches", "vllm/v1/kv_offload", "tests", cwd=fork)
    both(snapshot, "none", "touches", "vllm/v1/kv", cwd=fork, expect=1)
    both(snapshot, "matrix", "touches", cwd=fork)
    both(snapshot, "between", "touches", "--between", "v0.30.0..v0.31.0", cwd=fork)


def test_release(fork: Path, snapshot: Snapshot) -> None:
    both(snapshot, "name", "release", "v0.31", cwd=fork)
    both(snapshot, "all", "release", "--all", cwd=fork)


def test_rebase_dry_run_clean(fork: Path, snapshot: Snapshot) -> None:
    both(
        snapshot,
        "dry",
        "rebase",
        "--onto",
        "v0.31.0",
        "--dry-run",
        "--skip-topic",
        "offload-evict-fix",
        cwd=fork,
        volatile=CLOCK,
    )


def test_rebase_dry_run_conflict(fork: Path, snapshot: Snapshot) -> None:
    both(snapshot, "dry", "rebase", "--onto", "v0.31.0", "--dry-run", cwd=fork, expect=3, volatile=CLOCK)


def _resolve_lru(worktree: Path) -> None:
    text = (worktree / LRU).read_text()
    before, rest = text.split("<<<<<<< HEAD\n", 1)
    head = rest.split("=======\n", 1)[0]
    after = rest.split(">>>>>>> ", 1)[1].split("\n", 1)[1]
    (worktree / LRU).write_text(before + "        # keep request order: the first key is evicted last\n" + head + after)
    sh(f"git add {LRU}", worktree)


def test_rebase_halt_continue_log_resolutions(fork: Path, snapshot: Snapshot) -> None:
    snapshot.run(run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3), "halt", volatile=CLOCK)
    snapshot.run(run_series("rebase", "--continue", cwd=fork, expect=1), "unresolved", volatile=CLOCK)
    _resolve_lru(fork / ".git/series/rebase/worktree")
    snapshot.run(run_series("rebase", "--continue", cwd=fork), "continue", volatile=CLOCK)
    both(snapshot, "log", "log", cwd=fork, volatile=CLOCK)
    both(snapshot, "resolutions", "resolutions", cwd=fork)
    both(snapshot, "status-after", "status", cwd=fork)


def test_rebase_continue_json(fork: Path, snapshot: Snapshot) -> None:
    snapshot(
        run_series("rebase", "--onto", "v0.31.0", "--json", cwd=fork, expect=3).stdout,
        "halt",
        json=True,
        volatile=CLOCK,
    )
    _resolve_lru(fork / ".git/series/rebase/worktree")
    snapshot(run_series("rebase", "--continue", "--json", cwd=fork).stdout, "continue", json=True, volatile=CLOCK)


def test_rebase_abort(fork: Path, snapshot: Snapshot) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    snapshot.run(run_series("rebase", "--abort", cwd=fork), "abort", volatile=CLOCK)


def test_rebase_abort_json(fork: Path, snapshot: Snapshot) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    snapshot(run_series("rebase", "--abort", "--json", cwd=fork).stdout, "abort", json=True, volatile=CLOCK)


def test_export_and_diff(fork: Path, tmp_path: Path, snapshot: Snapshot) -> None:
    both(snapshot, "export", "export", str(tmp_path / "one"), cwd=fork)
    patch = tmp_path / "one/offload-evict-fix/0001-Bugfix-KV-offload-keep-request-order-on-touch.patch"
    snapshot(patch.read_text(), "patch")
    snapshot((tmp_path / "one/order").read_text(), "order")
    sh("git branch -f topic/offload-evict-fix topic/offload-evict-fix~1", fork)
    (fork / "series.yaml").write_text(
        (fork / "series.yaml")
        .read_text()
        .replace("    branch: topic/api-hello\n", "    branch: topic/api-hello\n    status: dropped\n")
    )
    run_series("export", str(tmp_path / "two"), cwd=fork)
    both(snapshot, "diff", "diff", str(tmp_path / "one"), str(tmp_path / "two"), cwd=fork)
