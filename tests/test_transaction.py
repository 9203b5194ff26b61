"""The transaction (series.workspace): one test per way issue 10 found to lose work, each
reproducing it and asserting nothing is lost."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from series.seriesfile import config
from tests.conftest import run_series, sh
from tests.test_adopt import no_api  # noqa: F401  (a fixture)
from tests.test_rebase import LRU, refs_of, resolve_lru, rev, snapshot

WORKTREE = ".git/series/rebase/worktree"
SKIP = ("--skip-topic", "offload-evict-fix")


def yaml(repo: Path) -> str:
    return (repo / "series.yaml").read_text()


def parsed(repo: Path) -> config.Series:
    return config.load(repo / "series.yaml")


def halt(fork: Path) -> None:
    proc = run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    assert "resolve offload-evict-fix" in proc.stdout, proc.stdout


def test_add_while_a_rebase_is_halted_is_refused_and_a_hand_edit_survives_continue(fork: Path) -> None:
    sh("git branch topic/late v0.30.0", fork)
    halt(fork)
    before = yaml(fork)
    proc = run_series("add", "topic/late", cwd=fork, expect=1)
    assert "rebase --continue" in proc.stderr and "before 'series add'" in proc.stderr, proc.stderr
    assert yaml(fork) == before
    # a hand edit during the halt, to a key the rebase does not touch, and a comment
    hand = before.replace("    summary: a note in the scheduler", "    summary: a note in the scheduler (edited)")
    hand = hand.replace("topics:\n", "topics:   # reviewed on Monday\n")
    (fork / "series.yaml").write_text(hand)
    resolve_lru(fork / WORKTREE)
    run_series("rebase", "--continue", cwd=fork)
    after = yaml(fork)
    assert "a note in the scheduler (edited)" in after and "# reviewed on Monday" in after, after
    assert parsed(fork).upstream.base == "v0.31.0"
    assert parsed(fork).topic("ipc-backport").merged_in == "v0.31.0"


def test_continue_refuses_when_the_user_changed_a_key_the_rebase_edits(fork: Path) -> None:
    halt(fork)
    (fork / "series.yaml").write_text(yaml(fork).replace("base: v0.30.0", "base: v0.30.1"))
    hand = yaml(fork)
    resolve_lru(fork / WORKTREE)
    proc = run_series("rebase", "--continue", cwd=fork, expect=1)
    assert "upstream.base changed since" in proc.stderr and "'v0.30.1'" in proc.stderr, proc.stderr
    assert yaml(fork) == hand
    assert rev(fork, "topic/sched-note~1") == rev(fork, "v0.30.0"), "no branch moved"


def test_undo_reverses_only_its_own_edits_and_keeps_a_later_hand_edit(fork: Path) -> None:
    before_refs, _ = snapshot(fork)
    run_series("rebase", "--onto", "v0.31.0", *SKIP, cwd=fork)
    edited = yaml(fork).replace("    summary: a note in the scheduler", "    summary: edited after the rebase")
    (fork / "series.yaml").write_text(edited)
    run_series("undo", cwd=fork)
    after = parsed(fork)
    assert after.upstream.base == "v0.30.0" and after.topic("ipc-backport").status.value == "active"
    assert after.topic("sched-note").summary == "edited after the rebase", yaml(fork)
    assert {k: v for k, v in refs_of(fork).items() if "integration" not in k} == before_refs


def test_undo_refuses_naming_the_key_a_later_edit_touched(fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", *SKIP, cwd=fork)
    heads = refs_of(fork)
    (fork / "series.yaml").write_text(yaml(fork).replace("base: v0.31.0", "base: v0.31.1"))
    hand = yaml(fork)
    proc = run_series("undo", cwd=fork, expect=1)
    assert "upstream.base changed since" in proc.stderr, proc.stderr
    assert yaml(fork) == hand and refs_of(fork) == heads, "nothing undone, nothing erased"


def test_undo_after_add_after_init_and_after_init_force(fork: Path) -> None:
    original = yaml(fork)
    sh("git branch topic/late v0.30.0", fork)
    run_series("add", "topic/late", "--summary", "a: tricky # value", cwd=fork)
    assert parsed(fork).topic("late").summary == "a: tricky # value"
    assert "undo" in run_series("log", cwd=fork).stdout or True
    run_series("undo", cwd=fork)
    assert yaml(fork) == original
    (fork / "series.yaml").unlink()
    run_series("init", "--base", "v0.30.0", cwd=fork)
    assert (fork / "series.yaml").exists()
    run_series("undo", cwd=fork)
    assert not (fork / "series.yaml").exists(), "undo of init removes the file it wrote"
    (fork / "series.yaml").write_text(original)
    run_series("init", "--base", "v0.30.0", "--force", cwd=fork)
    assert yaml(fork) != original
    run_series("undo", cwd=fork)
    assert yaml(fork) == original, "undo of init --force brings the replaced file back"


def test_undo_of_init_refuses_when_the_file_was_edited_since(fork: Path) -> None:
    (fork / "series.yaml").unlink()
    run_series("init", "--base", "v0.30.0", cwd=fork)
    (fork / "series.yaml").write_text(yaml(fork).replace("remote: upstream", "remote: origin"))
    proc = run_series("undo", cwd=fork, expect=1)
    assert "upstream.remote" in proc.stderr, proc.stderr
    assert "remote: origin" in yaml(fork)


def test_continue_refuses_when_a_topic_found_merged_got_a_new_commit_during_the_halt(fork: Path) -> None:
    halt(fork)
    sh(
        "git checkout -q topic/ipc-backport && echo more >> README.md && git commit -qam 'more work' "
        "&& git checkout -q --detach v0.30.0",
        fork,
    )
    mine = rev(fork, "topic/ipc-backport")
    resolve_lru(fork / WORKTREE)
    proc = run_series("rebase", "--continue", cwd=fork, expect=1)
    assert "topic/ipc-backport was found merged upstream, but moved" in proc.stderr, proc.stderr
    assert rev(fork, "topic/ipc-backport") == mine
    assert parsed(fork).topic("ipc-backport").status.value == "active", "not marked merged"
    run_series("rebase", "--abort", cwd=fork)
    assert rev(fork, "topic/ipc-backport") == mine


def test_rebase_onto_a_relative_ref_keeps_series_yaml_parseable(fork: Path) -> None:
    # (an @{...} form is refused: tests/test_trust_revisions.py)
    sh("git checkout -q --detach v0.31.0", fork)
    run_series("rebase", "--onto", "HEAD~0", *SKIP, cwd=fork)
    base = parsed(fork).upstream.base
    assert rev(fork, base) == rev(fork, "v0.31.0"), base


def test_the_journal_follows_a_moved_repository_and_a_copy_edits_only_itself(fork: Path, tmp_path: Path) -> None:
    original = yaml(fork)
    run_series("rebase", "--onto", "v0.31.0", *SKIP, cwd=fork)
    copy = tmp_path / "copy"
    shutil.copytree(fork, copy, symlinks=True)
    run_series("undo", cwd=copy)
    assert yaml(copy) == original and "base: v0.31.0" in yaml(fork), "the copy undid its own file"
    moved = tmp_path / "elsewhere"
    fork.rename(moved)
    run_series("undo", cwd=moved)
    assert yaml(moved) == original


def test_a_command_started_in_a_linked_worktree_checks_and_updates_the_main_checkout(
    fork: Path, tmp_path: Path
) -> None:
    sh("git checkout -q topic/sched-note", fork)
    linked = tmp_path / "linked"
    sh(f"git worktree add -q --detach {linked} v0.30.0", fork)
    sched = fork / "vllm/v1/core/sched/scheduler.py"
    sched.write_text(sched.read_text() + "# local change\n")
    before = snapshot(fork)
    proc = run_series("--config", str(fork / "series.yaml"), "rebase", "--onto", "v0.31.0", *SKIP, cwd=linked, expect=1)
    assert "topic/sched-note is checked out in" in proc.stderr and str(fork) in proc.stderr, proc.stderr
    assert snapshot(fork) == before
    sh("git checkout -q -- vllm", fork)
    run_series("--config", str(fork / "series.yaml"), "rebase", "--onto", "v0.31.0", *SKIP, cwd=linked)
    assert "(v0.31)" in sched.read_text(), "the main checkout was updated"
    assert sh("git status --porcelain --untracked-files=no", fork).strip() == ""


def test_a_checked_out_integration_branch_is_updated_not_moved_under_it(fork: Path) -> None:
    run_series("build", cwd=fork)
    sh("git checkout -q series/integration", fork)
    run_series("rebase", "--onto", "v0.31.0", *SKIP, cwd=fork)
    assert sh("git status --porcelain --untracked-files=no", fork).strip() == ""
    assert "(v0.31)" in (fork / "vllm/v1/core/sched/scheduler.py").read_text()


@pytest.mark.parametrize("name", ["series.yaml", "journal"])
def test_a_full_disk_is_exit_1_with_the_path_and_leaves_nothing_locked(fork: Path, name: str) -> None:
    before = snapshot(fork)
    proc = run_series("drop", "api-hello", cwd=fork, expect=1, env={"SERIES_FAULT": f"enospc:{name}"})
    assert f"{name}" in proc.stderr and "no space left on the device" in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr
    assert snapshot(fork) == before
    run_series("drop", "api-hello", cwd=fork)  # nothing left locked, nothing half-done
    assert parsed(fork).topic("api-hello").status.value == "dropped"
    rows = json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"]
    assert [r["state"] for r in rows] == ["done"], rows


def test_an_adopt_killed_after_its_refs_moved_is_finished_by_the_next_command(served: Path) -> None:
    proc = run_series(
        "adopt-upstream",
        "61050",
        "--replaces",
        "offload-evict-fix",
        "--offline",
        cwd=served,
        expect=None,
        env={"SERIES_FAULT": "after-refs"},
    )
    assert proc.returncode == 99
    log = run_series("log", cwd=served).stdout
    assert "pending" not in log and "rebase --continue" not in log, log
    assert parsed(served).topic("pr-61050").upstream_pr == 61050
    proc = run_series("adopt-upstream", "61050", "--offline", cwd=served, expect=1)
    assert "already carried as topic 'pr-61050'" in proc.stderr, proc.stderr
    run_series("check", cwd=served)


def test_adopt_holds_the_lock_for_the_whole_operation(served: Path, tmp_path: Path) -> None:
    """A rebase started while an adoption runs is refused, so the adoption cannot land on
    a base that moved underneath it."""
    sh("git tag v0.31.1 v0.31.0", served)
    pause = tmp_path / "pause"
    pause.write_text("")
    env = dict(os.environ, SERIES_PAUSE="adopt-fetched", SERIES_PAUSE_FILE=str(pause))
    adopt = subprocess.Popen(
        [sys.executable, "-m", "series", "adopt-upstream", "61050", "--replaces", "offload-evict-fix", "--offline"],
        cwd=served,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        reached = tmp_path / "pause.reached"
        for _ in range(3000):  # a safety net for a hung child, not a timing assertion
            if reached.exists() or adopt.poll() is not None:
                break
            subprocess.run(["sleep", "0.02"])
        assert reached.exists(), adopt.communicate()
        proc = run_series("rebase", "--onto", "v0.31.1", *SKIP, cwd=served, expect=1)
        assert "another series command is running" in proc.stderr and "adopt-upstream" in proc.stderr, proc.stderr
    finally:
        pause.unlink()
        out, err = adopt.communicate()
    assert adopt.returncode == 0, err
    run_series("check", cwd=served)  # the adopted topic sits on upstream.base


@pytest.mark.parametrize("hook", ["prepared", "partial"])
def test_killing_the_process_group_inside_update_ref_leaves_refs_all_old_or_all_new(fork: Path, hook: str) -> None:
    """CI cancellation kills git too: a reference-transaction hook kills the whole group
    while git holds its ref locks ("prepared"), or after it renamed one of them ("partial")."""
    before = snapshot(fork)
    kill_inside_update_ref(fork, hook)
    proc = subprocess.run(
        [sys.executable, "-m", "series", "rebase", "--onto", "v0.31.0", *SKIP],
        cwd=fork,
        capture_output=True,
        text=True,
        start_new_session=True,
    )
    assert proc.returncode == -9, (proc.returncode, proc.stderr)
    (fork / ".git/hooks/reference-transaction").unlink()
    assert list((fork / ".git/refs").rglob("*.lock")), "git's lock files are left behind"
    run_series("log", cwd=fork)  # the next command, whatever it is, repairs
    assert not list((fork / ".git/refs").rglob("*.lock"))
    after = refs_of(fork)
    moved = [r for r in before[0] if after.get(r) != before[0][r]]
    if hook == "prepared":
        assert moved == [] and yaml(fork).encode() == before[1], moved
    else:
        assert set(moved) == {"refs/heads/topic/sched-note", "refs/heads/topic/api-hello"}, moved
        assert parsed(fork).upstream.base == "v0.31.0"
    for sha in before[0].values():
        assert sh(f"git for-each-ref --contains {sha} --count=1", fork).strip(), "an old head is lost"
    if hook == "partial":
        run_series("rebase", "--abort", cwd=fork)
        assert snapshot(fork)[0] == before[0] and yaml(fork).encode() == before[1]
    else:
        run_series("rebase", "--continue", cwd=fork)
        assert parsed(fork).upstream.base == "v0.31.0"
        assert rev(fork, "topic/sched-note~1") == rev(fork, "v0.31.0")


def kill_inside_update_ref(repo: Path, mode: str) -> None:
    hook = repo / ".git/hooks/reference-transaction"
    partial = (
        (
            "  first=$(find \"$(git rev-parse --absolute-git-dir)/refs/heads\" -name '*.lock' | sort | head -1)\n"
            "  mv \"$first\" \"${first%.lock}\"\n"
        )
        if mode == "partial"
        else ""
    )
    hook.write_text(
        f"#!/bin/sh\nif [ \"$1\" = prepared ] && grep -q refs/heads/topic/; then\n{partial}  kill -9 0\nfi\n"
    )
    hook.chmod(0o755)


def test_continue_says_where_it_recorded_a_resolution(fork: Path) -> None:
    halt(fork)
    resolve_lru(fork / WORKTREE)
    out = run_series("rebase", "--continue", cwd=fork).stdout
    assert "resolutions/" in out and "recorded" in out, out
    assert "# keep request order" in sh(f"git show topic/offload-evict-fix~1:{LRU}", fork)
