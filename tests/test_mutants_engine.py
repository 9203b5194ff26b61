"""Tests that fail when the rebase engine is wrong in small, realistic ways (issue 37:
each one kills a mutant that survived the whole suite; tools/mutate.py finds more)."""
from __future__ import annotations

from pathlib import Path

from tests.conftest import sh
from tests.test_rebase import LRU, rebase_json, resolve_lru, rev, show, topics


def test_a_stack_three_deep_waits_at_every_level_behind_a_conflict(fork: Path) -> None:
    """offload-evict-fix conflicts; evict-more waits for it, and evict-most waits for
    evict-more (which waits itself): replayed now it would land on the new base, where its
    dependency is not."""
    sh("""
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
    """, fork)
    report = rebase_json(fork, "--onto", "v0.31.0", expect=3)
    rows = topics(report)
    assert rows["evict-more"]["outcome"] == "blocked", rows["evict-more"]
    assert rows["evict-most"]["outcome"] == "blocked" and "evict-more" in rows["evict-most"]["reason"], \
        rows["evict-most"]
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
