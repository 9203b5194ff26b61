"""Issue 33: a resolution is checked before it is taken or recorded (markers, Python that
parses), the conflict memory replays nothing that fails the same check, and what a
resolution brings in is read by the semantic check like a clean topic's code."""
from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_series, sh
from tests.test_rebase import LRU, resolve_lru, snapshot

WORKTREE = Path(".git/series/rebase/worktree")


def _halt(fork: Path) -> Path:
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    return fork / WORKTREE


def _state(fork: Path) -> bytes:
    return (fork / ".git/series/rebase/state.json").read_bytes()


def test_a_resolution_that_does_not_parse_is_refused_until_fixed(fork: Path) -> None:
    before = snapshot(fork)
    worktree = _halt(fork)
    halted = _state(fork)
    resolve_lru(worktree)
    good = (worktree / LRU).read_text()
    broken = good.replace("move_to_end(key)\n", "move_to_end(key)\n          touched = True\n")
    (worktree / LRU).write_text(broken)
    sh(f"git add {LRU}", worktree)
    line = broken.splitlines().index("          touched = True") + 1
    proc = run_series("rebase", "--continue", cwd=fork, expect=1)
    assert f"{LRU}:{line}: unindent does not match any outer indentation level" in proc.stderr, proc.stderr
    assert "nothing moved" in proc.stderr and "Traceback" not in proc.stderr
    assert f"hint: fix it in {worktree}, 'git add' it, then 'series rebase --continue'" in proc.stderr, proc.stderr
    assert snapshot(fork) == before and _state(fork) == halted, "nothing moved, the halt is as it was"
    assert not (fork / "resolutions").exists(), "a refused resolution is not recorded"
    assert not json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"]

    (worktree / LRU).write_text(good)
    sh(f"git add {LRU}", worktree)
    run_series("rebase", "--continue", cwd=fork)
    assert "base: v0.31.0" in (fork / "series.yaml").read_text()
    assert "# keep request order" in sh(f"git show topic/offload-evict-fix~1:{LRU}", fork)
    assert len(list((fork / "resolutions").glob("*/*.txt"))) == 1


def test_leftover_conflict_markers_are_refused(fork: Path) -> None:
    before = snapshot(fork)
    worktree = _halt(fork)
    text = (worktree / LRU).read_text()
    sh(f"git add {LRU}", worktree)  # marked resolved with git's markers still in it
    line = text.splitlines().index("<<<<<<< HEAD") + 1
    proc = run_series("rebase", "--continue", cwd=fork, expect=1)
    assert f"{LRU}:{line}: conflict markers left in the file" in proc.stderr, proc.stderr
    assert snapshot(fork) == before
    resolve_lru(worktree)
    run_series("rebase", "--continue", cwd=fork)
