"""Tests that fail when the rebase engine is wrong in small, realistic ways (issue 37:
each one kills a mutant that survived the whole suite; tools/mutate.py finds more)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import sh
from tests.test_rebase import LRU, rebase_json, resolve_lru, rev, show, topics


def test_a_stack_three_deep_waits_at_every_level_behind_a_conflict(fork: Path) -> None:
    """offload-evict-fix conflicts; evict-more waits for it, and evict-most waits for
    evict-more (which waits itself): replayed now it would land on the new base, where its
    dependency is not."""
    sh(
        """
    git checkout -q -B topic/evict-more topic/offload-evict-fix
    echo "# more tests" >> tests/v1/kv_offload/test_lru.py
    git commit -qam "more lru tests"
    git checkout -q -B topic/evict-most topic/evict-more
    echo "# most tests" >> tests/v1/kv_offload/test_lru.py
    git commit -qam "most lru tests"
    git checkout -q --detach v0.30.0
    cat >> series.yaml <<'EOF2'
  - name: evict-more
    branch: topic/evict-more
    depends_on: [offload-evict-fix]
  - name: evict-most
    branch: topic/evict-most
    depends_on: [evict-more]
EOF2
    """,
        fork,
    )
    report = rebase_json(fork, "--onto", "v0.31.0", expect=3)
    rows = topics(report)
    assert rows["evict-more"]["outcome"] == "blocked", rows["evict-more"]
    assert rows["evict-most"]["outcome"] == "blocked" and "evict-more" in rows["evict-most"]["reason"], rows[
        "evict-most"
    ]
    resolve_lru(fork / ".git/series/rebase/worktree")
    report = rebase_json(fork, "--continue")
    assert [topics(report)[n]["outcome"] for n in ("evict-more", "evict-most")] == ["clean", "clean"], report
    assert rev(fork, "topic/evict-more~1") == rev(fork, "topic/offload-evict-fix")
    assert rev(fork, "topic/evict-most~1") == rev(fork, "topic/evict-more")
    assert "# keep request order" in show(fork, f"topic/evict-most:{LRU}")


def test_a_commit_already_on_its_new_base_is_kept_not_rewritten(fork: Path) -> None:
    """As git rebase does: a commit whose parent is already where it goes is kept as it is,
    even when replaying it would stamp another committer date."""
    from tests.conftest import run_series

    run_series("rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", cwd=fork)
    before = rev(fork, "topic/api-hello")
    later = {"GIT_COMMITTER_DATE": "2030-01-01T00:00:00Z"}
    proc = run_series("rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", cwd=fork, env=later)
    assert "already up to date" in proc.stdout, proc.stdout
    assert rev(fork, "topic/api-hello") == before


def test_a_topic_left_out_says_so(fork: Path) -> None:
    report = rebase_json(fork, "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", "--dry-run")
    row = topics(report)["offload-evict-fix"]
    assert (row["outcome"], row["reason"]) == ("skipped", "left out, as asked"), row


def test_a_conflict_resolved_from_memory_keeps_the_files_executable_bit(fork: Path) -> None:
    """The new base made the conflicting file executable: the resolved file keeps the mode
    git's merge gives it (ours changed it), whether resolved by hand or from memory."""
    from tests.conftest import run_series
    from tests.test_resolutions import _resolve_in_worktree, _worktree

    sh(
        f"""
    git checkout -q --detach v0.31.0
    chmod +x {LRU}
    git commit -qam "make lru executable"
    git tag v0.31.1
    git checkout -q --detach v0.30.0
    """,
        fork,
    )
    first = run_series("rebase", "--onto", "v0.31.1", cwd=fork, expect=3)
    _resolve_in_worktree(_worktree(first.stdout + first.stderr), "keep request order")
    run_series("rebase", "--continue", cwd=fork)
    by_hand = sh(f"git ls-tree topic/offload-evict-fix~1 -- {LRU}", fork)
    kept = {f: f.read_bytes() for f in (fork / "resolutions").rglob("*.txt")}
    run_series("undo", cwd=fork)  # takes the recorded resolution back too: put it back as a clone has it
    for f, data in kept.items():
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data)
    again = run_series("rebase", "--onto", "v0.31.1", cwd=fork).stdout
    assert "resolved from memory" in again, again
    from_memory = sh(f"git ls-tree topic/offload-evict-fix~1 -- {LRU}", fork)
    assert by_hand.startswith("100755 ") and from_memory == by_hand, (by_hand, from_memory)


def _counts(range_diff: str) -> dict[str, int]:
    marks = [line.split()[2] for line in range_diff.splitlines() if line[:1].isdigit() or line.startswith("-:")]
    return {mark: marks.count(mark) for mark in "=!<>"}


@pytest.mark.parametrize("chmod_in_topic", [True, False])
def test_a_patch_replayed_onto_a_file_made_executable_upstream_is_counted_as_git_range_diff_does(
    fork: Path, chmod_in_topic: bool
) -> None:
    """The file the topic edits became executable on the new base. If the topic's commit
    made it executable itself, the replayed one no longer does: a changed patch ("!"),
    which git range-diff shows. If not, the patch is the same ("=")."""
    sched = "vllm/v1/core/sched/scheduler.py"
    sh(
        f"""
    git checkout -q --detach v0.31.0
    chmod +x {sched}
    git commit -qam "make the scheduler executable"
    git tag v0.31.1
    git checkout -q topic/sched-note
    {"chmod +x " + sched + " && git commit -q --amend --no-edit -a" if chmod_in_topic else ":"}
    git checkout -q --detach v0.30.0
    """,
        fork,
    )
    row = topics(rebase_json(fork, "--onto", "v0.31.1", "--skip-topic", "offload-evict-fix"))["sched-note"]
    git_says = sh(
        f"git range-diff --no-color v0.30.0..{row['old_head']} v0.31.1..{rev(fork, 'topic/sched-note')}", fork
    )
    assert row["range_diff"] == _counts(git_says), (row["range_diff"], git_says)
    assert row["range_diff"]["!" if chmod_in_topic else "="] == 1, row["range_diff"]


def test_a_continue_the_door_refused_leaves_the_rebase_halted_on_its_conflict(fork: Path) -> None:
    """A dirty checkout of the integration branch stops --continue when the refs would
    move: nothing moved, and the rebase is back where it was (a topic can still be left
    out), not 'committing' (where every topic counts as replayed)."""
    from tests.conftest import run_series

    run_series("build", cwd=fork)
    integ = fork.parent / "integ"
    sh(f"git worktree add -q {integ} series/integration", fork)
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    resolve_lru(fork / ".git/series/rebase/worktree")
    (integ / "README.md").write_text("local change\n")
    proc = run_series("rebase", "--continue", cwd=fork, expect=1)
    assert "series/integration is checked out in" in proc.stderr, proc.stderr
    sh("git checkout -q -- README.md", integ)
    report = rebase_json(fork, "--skip-topic", "offload-evict-fix")
    assert topics(report)["offload-evict-fix"]["outcome"] == "skipped", topics(report)


def test_a_dry_run_while_a_rebase_is_halted_leaves_the_halt_as_it_was(fork: Path) -> None:
    from tests.conftest import run_series

    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    kept = sh("git for-each-ref refs/series/rebase", fork)
    run_series("rebase", "--onto", "v0.31.0", "--dry-run", cwd=fork, expect=None)
    assert sh("git for-each-ref refs/series/rebase", fork) == kept
    resolve_lru(fork / ".git/series/rebase/worktree")
    assert topics(rebase_json(fork, "--continue"))["offload-evict-fix"]["outcome"] == "clean"


def test_a_diff3_conflict_names_its_base_as_git_rebase_does(fork: Path) -> None:
    """With merge.conflictStyle=diff3 the file left to resolve labels its base section as
    git rebase does ("parent of <commit> (<subject>)"), not with merge-ort's bare id."""
    from tests.conftest import run_series

    sh("git config merge.conflictStyle diff3", fork)
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    text = (fork / ".git/series/rebase/worktree" / LRU).read_text()
    (theirs,) = [line[len(">>>>>>> ") :] for line in text.splitlines() if line.startswith(">>>>>>> ")]
    base = [line for line in text.splitlines() if line.startswith("||||||| ")]
    assert base == [f"||||||| parent of {theirs}"], (base, theirs)  # git rebase's words (sequencer.c)
