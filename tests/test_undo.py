"""`series undo` and `series log` after real rebases."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_series, sh
from tests.test_rebase import refs_of, snapshot

SKIP = ("--skip-topic", "offload-evict-fix")


def test_undo_restores_refs_and_series_yaml_byte_for_byte(fork: Path) -> None:
    before = snapshot(fork)
    run_series("rebase", "--onto", "v0.31.0", *SKIP, cwd=fork)
    assert snapshot(fork) != before
    proc = run_series("undo", cwd=fork)
    assert "undid" in proc.stdout and "rebase: onto v0.31.0" in proc.stdout, proc.stdout
    refs_after, yaml_after = snapshot(fork)
    assert yaml_after == before[1]
    # the integration branch did not exist before: undo deletes it
    assert refs_after == before[0], (refs_after, before[0])
    proc = run_series("undo", cwd=fork, expect=1)
    assert "nothing to undo" in proc.stderr, proc.stderr
    rows = json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"]
    assert [r["command"] for r in rows] == ["undo", "rebase"], rows
    assert rows[1]["undone_by"] == rows[0]["id"] and rows[0]["undoes"] == rows[1]["id"]
    text = run_series("log", cwd=fork).stdout
    assert "undone by" in text and "rebase" in text, text
    backups = sh("git for-each-ref --format='%(refname)' refs/series/backup", fork)
    assert f"refs/series/backup/{rows[1]['id']}/heads/topic/api-hello" in backups, backups


def test_undo_twice_goes_back_two_operations(fork: Path) -> None:
    start = snapshot(fork)
    run_series("rebase", "--onto", "v0.31.0", *SKIP, cwd=fork)
    middle = snapshot(fork)
    sh("git tag v0.32.0 v0.31.0", fork)
    run_series("rebase", "--onto", "v0.32.0", *SKIP, cwd=fork)
    run_series("undo", cwd=fork)
    refs_now, yaml_now = snapshot(fork)
    assert yaml_now == middle[1]
    run_series("undo", cwd=fork)
    refs_now, yaml_now = snapshot(fork)
    assert yaml_now == start[1]
    assert {k: v for k, v in refs_now.items() if k != "refs/tags/v0.32.0"} == start[0]


def test_undo_is_refused_while_a_rebase_is_halted(fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", *SKIP, cwd=fork)
    sh("git tag v0.32.0 v0.31.0", fork)
    run_series("rebase", "--onto", "v0.32.0", cwd=fork, expect=3)  # offload conflicts
    proc = run_series("undo", cwd=fork, expect=1)
    assert "rebase is in progress" in proc.stderr, proc.stderr


def test_undo_updates_a_clean_checkout(fork: Path) -> None:
    sh("git checkout -q topic/sched-note", fork)
    run_series("rebase", "--onto", "v0.31.0", *SKIP, cwd=fork)
    assert "(v0.31)" in (fork / "vllm/v1/core/sched/scheduler.py").read_text()
    run_series("undo", cwd=fork)
    assert "(v0.31)" not in (fork / "vllm/v1/core/sched/scheduler.py").read_text()
    assert sh("git status --porcelain --untracked-files=no", fork).strip() == ""


def test_log_with_no_operations(fork: Path) -> None:
    assert "no operations yet" in run_series("log", cwd=fork).stdout
    assert json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"] == []


def test_undo_run_again_after_a_killed_undo_finishes_that_undo_and_no_more(fork: Path) -> None:
    """A user who saw `series undo` die runs it again: the interrupted undo is completed,
    and the operation before it (here the build that made the integration branch) is left
    alone, so every ref, series/integration included, is as one completed undo leaves it."""
    from tests.test_write_faults import killed

    run_series("build", cwd=fork)
    after_build = snapshot(fork)
    assert "refs/heads/series/integration" in after_build[0]
    run_series("rebase", "--onto", "v0.31.0", *SKIP, cwd=fork)
    killed(fork, ["undo"], "after-refs")
    proc = run_series("undo", cwd=fork)
    assert "rebase: onto v0.31.0" in proc.stdout and "interrupted" in proc.stdout, proc.stdout
    assert snapshot(fork) == after_build
    rows = json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"]
    assert [r["command"] for r in rows] == ["undo", "rebase", "build"], rows
    assert "build" in run_series("undo", cwd=fork).stdout, "run again, it goes further back"
    assert "refs/heads/series/integration" not in refs_of(fork)
