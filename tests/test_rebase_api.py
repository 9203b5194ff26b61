"""The rebase's public API, in process: replay_commits, the resolver/recorder protocol,
merged rules, build_integration; and --fetch through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
import pytest

from series.verbs.rebase import ending
from series.engine import rebase
from series.engine.merged import MergedContext, MergedVerdict
from series.engine.replay import replay_commits
from series.engine.resolve import ReplayConflict, Hooks
from series.git.repo import commits_between
from series.workspace import open_workspace
from tests.conftest import run_series, sh
from tests.test_rebase import LRU, resolve_lru, topics

REBASE = ending()  # the rebase verb's words


def commits(repo: pygit2.Repository, base: str, branch: str) -> list[pygit2.Commit]:
    return commits_between(repo, repo.revparse_single(base).id, repo.branches[branch].target)


def test_replay_commits_keeps_authorship_rewrites_messages_and_reports_drops(fork: Path) -> None:
    repo = pygit2.Repository(str(fork))
    onto = repo.revparse_single("v0.31.0").peel(pygit2.Commit)
    picks = commits(repo, "v0.30.0", "topic/api-hello") + commits(repo, "v0.30.0", "topic/ipc-backport")
    me = pygit2.Signature("Committer", "c@example.com", 1770000000, 60)
    result = replay_commits(
        repo, picks, onto, committer=me, rewrite_message=lambda c: c.message + "\n(cherry picked from commit X)\n"
    )
    assert result.ok and result.dropped == (picks[1].id,), result
    new = repo[result.head].peel(pygit2.Commit)  # persisted: readable right away
    assert new.parents[0].id == onto.id
    old = picks[0]
    assert (new.author.name, new.author.email, new.author.time, new.author.offset) == (
        old.author.name,
        old.author.email,
        old.author.time,
        old.author.offset,
    )
    assert (new.committer.name, new.committer.time, new.committer.offset) == ("Committer", 1770000000, 60)
    assert new.message == old.message + "\n(cherry picked from commit X)\n"
    assert dict(result.mapping) == {old.id: new.id}


def test_replay_commits_conflict_carries_all_three_sides(fork: Path) -> None:
    repo = pygit2.Repository(str(fork))
    onto = repo.revparse_single("v0.31.0").peel(pygit2.Commit)
    picks = commits(repo, "v0.30.0", "topic/offload-evict-fix")
    result = replay_commits(repo, picks, onto)
    stop = result.conflict
    assert stop is not None and stop.commit == picks[0].id and stop.head == onto.id and stop.index == 0
    (conflict,) = stop.conflicts
    assert conflict.path == LRU and conflict.kind == "content"
    assert b"reversed(list(keys))" in conflict.ancestor and b"keys[::-1]" in conflict.ours
    assert b"keep request order" in conflict.theirs
    assert conflict.merged.count(b"<<<<<<< HEAD\n") == 1 and b">>>>>>> " in conflict.merged
    assert result.head == onto.id and result.done == 0


def test_a_resolver_answer_is_used_and_reported_recorder_sees_the_human_fix(fork: Path) -> None:
    seen: list[tuple[str, str, ReplayConflict]] = []

    def resolver(topic: str, path: str, conflict: ReplayConflict) -> bytes | None:
        seen.append((topic, path, conflict))
        return conflict.ours.replace(b"        for key in keys", b"        # remembered\n        for key in keys")

    ws = open_workspace(None, fork)
    outcome = rebase.start(ws, "v0.31.0", REBASE, hooks=Hooks(resolver=resolver), dry_run=True)
    run = outcome.state.topic("offload-evict-fix")
    assert run.outcome == "clean" and run.resolved == ((run.commits[0], LRU),), run
    assert [(t, p) for t, p, _ in seen] == [("offload-evict-fix", LRU)]
    recorded: list[tuple[str, str, bytes]] = []
    ws = open_workspace(None, fork)
    with ws.transaction("rebase") as tx:  # the caller opens the transaction, as a verb does
        outcome = rebase.start(ws, "v0.31.0", REBASE, tx=tx)
    assert outcome.worktree is not None
    resolve_lru(outcome.worktree)
    ws = open_workspace(None, fork)
    with ws.transaction("rebase", resumes="rebase") as tx:
        rebase.continue_rebase(
            ws, REBASE, tx=tx, hooks=Hooks(recorder=lambda t, p, c, resolved: recorded.append((t, p, resolved)))
        )
    assert [(t, p) for t, p, _ in recorded] == [("offload-evict-fix", LRU)]
    assert b"# keep request order" in recorded[0][2] and b"<<<<<<<" not in recorded[0][2]


def test_an_extra_merged_rule_retires_a_topic_without_replaying_it(fork: Path) -> None:
    def rule(ctx: MergedContext) -> MergedVerdict | None:
        if ctx.topic.name == "offload-evict-fix":
            return MergedVerdict(f"upstream {ctx.new_base_name} carries it", modified=True)
        return None

    ws = open_workspace(None, fork)
    with ws.transaction("rebase") as tx:
        outcome = rebase.start(ws, "v0.31.0", REBASE, merged=[rule], tx=tx)
    assert outcome.finished and not outcome.conflicts
    text = (fork / "series.yaml").read_text()
    assert text.count("status: merged") == 2 and text.count("merged_in: v0.31.0") == 2, text


def test_build_integration_of_the_current_branches(fork: Path) -> None:
    ws = open_workspace(None, fork)
    result = rebase.build_integration(ws)
    assert result.ok and result.topics == ("sched-note", "offload-evict-fix", "ipc-backport", "api-hello")
    repo = ws.repo
    head = repo[result.head].peel(pygit2.Commit)
    tree = head.tree
    assert b"# fork note" in repo[tree["vllm/v1/core/sched/scheduler.py"].id].data
    assert b"def hello" in repo[tree["vllm/entrypoints/openai/api_server.py"].id].data
    assert len(sh("git rev-list --first-parent v0.30.0.." + str(head.id), fork).split()) == 4


def test_fetch_first_then_rebase_onto_a_new_release(fork: Path, upstream: Path) -> None:
    sh("git commit -q --allow-empty -m 'Release v0.32.0' && git tag v0.32.0", upstream)
    proc = run_series("rebase", "--onto", "v0.32", "--dry-run", cwd=fork, expect=1)
    assert "no release tag matches 'v0.32'" in proc.stderr
    report = json.loads(
        run_series(
            "rebase", "--onto", "v0.32", "--fetch", "--dry-run", "--json", "--skip-topic", "offload-evict-fix", cwd=fork
        ).stdout
    )
    assert report["onto"]["name"] == "v0.32.0" and report["status"] == "dry-run", report
    assert topics(report)["sched-note"]["outcome"] == "clean"


def test_build_integration_is_deterministic(fork: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = rebase.build_integration(open_workspace(None, fork)).head
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2030-01-01T00:00:00Z")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Someone Else")
    again = rebase.build_integration(open_workspace(None, fork)).head
    assert first == again, "the same base and topic heads give the same integration commit"


def test_a_path_resolved_from_memory_stays_resolved_in_the_worktree(fork: Path) -> None:
    sched = "vllm/v1/core/sched/scheduler.py"
    sh(
        f"""
    git checkout -q -B topic/both topic/offload-evict-fix~1
    sed -i 's/# scheduler line 38$/# scheduler line 38 (fork)/' {sched}
    git commit -q --amend --no-edit -a
    git checkout -q --detach v0.30.0
    cat >> series.yaml <<'EOF2'
  - name: both
    branch: topic/both
EOF2
    """,
        fork,
    )

    def resolver(topic: str, path: str, conflict: ReplayConflict) -> bytes | None:
        return conflict.ours + b"# remembered\n" if path == LRU and conflict.ours else None

    ws = open_workspace(None, fork)
    with ws.transaction("rebase") as tx:
        outcome = rebase.start(
            ws, "v0.31.0", REBASE, skip=("offload-evict-fix",), hooks=Hooks(resolver=resolver), tx=tx
        )
    assert outcome.worktree is not None
    status = sh("git status --porcelain --untracked-files=no", outcome.worktree)
    assert f"UU {sched}" in status and f"M  {LRU}" in status, status
    run = outcome.state.topic("both")
    assert run.conflict is not None and run.conflict.files == (sched,) and [p for _, p in run.resolved] == [LRU], run
