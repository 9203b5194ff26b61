"""series adopt-upstream on a PR that conflicts with upstream.base: halted in the rebase
engine's worktree flow, then --continue / --abort, a process killed half-way, undo.

The PRs are made upstream on v0.31.0 and edit the LRU lines v0.31.0 rewrote; the fork's
base is v0.30.0, so their first commit conflicts. #61300: that commit, then a clean one
by another author. #61301: the same two, then a third that conflicts again.
"""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
import pytest

from series.seriesfile import config
from tests.conftest import from_template, run_series, sh
from tests.repos import LRU_V031, build_fork, build_upstream, commit_files, git
from tests.test_adopt import branch, repo_of, serve

LRU = "vllm/v1/kv_offload/cpu/policies/lru.py"
TEST = "tests/v1/kv_offload/test_lru.py"
WORKTREE = ".git/series/rebase/worktree"
ADA = {"GIT_AUTHOR_NAME": "Ada Upstream", "GIT_AUTHOR_EMAIL": "ada@example.com"}
BOB = {"GIT_AUTHOR_NAME": "Bob Reviewer", "GIT_AUTHOR_EMAIL": "bob@example.org"}
ANNOTATED = LRU_V031.replace("if key in self.blocks:", "if key in self.blocks:  # skip unknown keys")
TEST_TEXT = "def test_lru():\n    assert True\n\n\ndef test_unknown_key():\n    assert True\n"
ADOPT = ("adopt-upstream", "61300", "--replaces", "offload-evict-fix", "--offline")


@pytest.fixture(autouse=True)
def no_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERIES_GITHUB_API", "http://127.0.0.1:9")


def _layout(root: Path) -> Path:
    work = build_upstream(root / "upstream-work")
    first = commit_files(
        work,
        "v0.31.0",
        {LRU: ANNOTATED},
        "[KV offload] skip unknown keys on touch\n\nSigned-off-by: Ada Upstream <ada@example.com>",
        "2026-02-12T08:15:00+01:00",
        author=ADA,
    )
    second = commit_files(
        work, first, {TEST: TEST_TEXT}, "[Test] unknown keys are skipped", "2026-02-13T09:00:00-07:00", author=BOB
    )
    third = commit_files(
        work,
        second,
        {LRU: ANNOTATED.replace("# skip unknown keys", "# ignore unknown keys")},
        "[KV offload] wording",
        "2026-02-14T10:00:00+05:30",
        author=ADA,
    )
    git(work, "update-ref", "refs/pull/61300/head", second)
    git(work, "update-ref", "refs/pull/61301/head", third)
    bare = root / "upstream.git"
    serve(work, bare)
    return build_fork(bare, root / "fork")


@pytest.fixture
def fork(tmp_path: Path) -> Path:
    return from_template("adopt-conflict", _layout, tmp_path)


def snapshot(fork: Path) -> tuple[str, bytes]:
    """Every ref but the fetched PR heads (a fetch cache, as after 'git fetch'), and series.yaml."""
    out = sh("git for-each-ref --format='%(refname) %(objectname)'", fork)
    kept = "\n".join(l for l in out.splitlines() if not l.startswith("refs/remotes/upstream/pr/"))
    return kept, (fork / "series.yaml").read_bytes()


def resolve(fork: Path, text: str) -> None:
    worktree = fork / WORKTREE
    assert "<<<<<<< HEAD" in (worktree / LRU).read_text()
    (worktree / LRU).write_text(text)
    sh(f"git add {LRU}", worktree)


RESOLVED = LRU_V031.replace("for key in keys[::-1]:", "for key in reversed(list(keys)):")
RESOLVED_AGAIN = RESOLVED.replace("self.blocks.move_to_end(key)", "self.blocks.move_to_end(key)  # unknown: skipped")


def test_conflict_halts_in_the_worktree_then_continue_adopts_with_authorship(fork: Path) -> None:
    ours = branch(fork, "topic/offload-evict-fix")
    before = snapshot(fork)
    proc = run_series(*ADOPT, cwd=fork, expect=3)
    assert snapshot(fork) == before, "nothing moves on a conflict"
    worktree = fork / WORKTREE
    assert "halted on a conflict" in proc.stdout and f"conflicts in {LRU} (content)" in proc.stdout, proc.stdout
    assert str(worktree) in proc.stdout and "'series adopt-upstream --continue'" in proc.stdout, proc.stdout
    assert sh("git status --porcelain", worktree).strip() == f"UU {LRU}"
    assert sh("git rev-parse HEAD", worktree).strip() == sh("git rev-parse v0.30.0^{commit}", fork).strip()

    proc = run_series("adopt-upstream", "--continue", cwd=fork, expect=1)
    assert f"unresolved conflicts in {LRU}" in proc.stderr and "series adopt-upstream --continue" in proc.stderr, (
        proc.stderr
    )
    resolve(fork, RESOLVED)
    proc = run_series("adopt-upstream", "--continue", "--json", cwd=fork)
    report = json.loads(proc.stdout)
    assert report["worktree"] is None and report["operation"] and len(report["commits"]) == 2, report
    assert f"{LRU}: resolved by hand in {report['commits'][0]['upstream'][:12]}" in report["notes"], report

    repo = repo_of(fork)
    pr_head = repo.references["refs/remotes/upstream/pr/61300"].peel(pygit2.Commit)
    originals = [pr_head.parents[0], pr_head]
    head = repo.references["refs/heads/topic/pr-61300"].peel(pygit2.Commit)
    adopted = [head.parents[0], head]
    assert adopted[0].parents[0].id == repo.revparse_single("v0.30.0").peel(pygit2.Commit).id
    for old, new in zip(originals, adopted):
        assert (new.author.name, new.author.email) == (old.author.name, old.author.email)
        assert (new.author.time, new.author.offset) == (old.author.time, old.author.offset)
        assert (new.committer.name, new.committer.email) == ("Fork Maintainer", "fork@example.com")
        assert new.message.endswith(f"Upstream-PR: #61300\n(cherry picked from commit {old.id})\n"), new.message
    assert [o.author.name for o in originals] == ["Ada Upstream", "Bob Reviewer"]
    assert [o.author.offset for o in originals] == [60, -420]
    assert "Signed-off-by: Ada Upstream <ada@example.com>\nUpstream-PR: #61300" in adopted[0].message
    assert head.tree[LRU].data.decode() == RESOLVED and head.tree[TEST].data.decode() == TEST_TEXT

    assert branch(fork, "topic/offload-evict-fix") == ours, "the superseded branch is untouched"
    series = config.load(fork / "series.yaml")
    assert [t.name for t in series.topics] == [
        "sched-note",
        "pr-61300",
        "offload-evict-fix",
        "ipc-backport",
        "api-hello",
    ]
    assert (series.topic("pr-61300").upstream_pr, series.topic("pr-61300").upstream_head) == (61300, str(pr_head.id))
    old = series.topic("offload-evict-fix")
    assert (old.status.value, old.superseded_by) == ("superseded", "pr-61300"), old
    assert not worktree.exists() and not (fork / ".git/series/rebase").exists()
    assert sh("git worktree list", fork).count("\n") == 1
    assert not sh("git for-each-ref refs/series/rebase", fork).strip()
    log = run_series("log", cwd=fork).stdout
    assert "adopt-upstream" in log and "pending" not in log, log


def test_the_next_conflict_halts_again(fork: Path) -> None:
    proc = run_series(
        "adopt-upstream", "61301", "--replaces", "offload-evict-fix", "--offline", "--json", cwd=fork, expect=3
    )
    halted = json.loads(proc.stdout)
    assert halted["worktree"] == str(fork / WORKTREE) and halted["conflict"]["files"] == [LRU], halted
    assert halted["operation"] is None and halted["commits"] == [], halted
    resolve(fork, RESOLVED)
    proc = run_series("adopt-upstream", "--continue", cwd=fork, expect=3)
    assert "[KV offload] wording" in proc.stdout and "2 commit(s) before it replayed" in proc.stdout, proc.stdout
    assert branch(fork, "topic/pr-61301") is None
    resolve(fork, RESOLVED_AGAIN)
    proc = run_series("adopt-upstream", "--continue", cwd=fork)
    assert "adopted PR #61301" in proc.stdout, proc.stdout
    head = repo_of(fork).references["refs/heads/topic/pr-61301"].peel(pygit2.Commit)
    assert head.tree[LRU].data.decode() == RESOLVED_AGAIN
    assert [c.author.name for c in (head.parents[0].parents[0], head.parents[0], head)] == [
        "Ada Upstream",
        "Bob Reviewer",
        "Ada Upstream",
    ]


def test_abort_restores_everything_and_halted_adoption_blocks_other_commands(fork: Path) -> None:
    before = snapshot(fork)
    run_series(*ADOPT, cwd=fork, expect=3)
    for args in (
        ("rebase", "--onto", "v0.31.0"),
        ("rebase", "--continue"),
        ("undo",),
        ("supersede", "sched-note", "--by", "api-hello"),
        ("adopt-upstream", "61301", "--offline"),
    ):
        proc = run_series(*args, cwd=fork, expect=1)
        assert "adoption of PR #61300 is halted" in proc.stderr and "adopt-upstream --abort" in proc.stderr, (
            args,
            proc.stderr,
        )
    proc = run_series("adopt-upstream", "--abort", cwd=fork)
    assert "adoption of PR #61300 aborted" in proc.stdout, proc.stdout
    assert snapshot(fork) == before
    assert sh("git worktree list", fork).count("\n") == 1
    assert not (fork / ".git/series/rebase").exists()
    for flag in ("--continue", "--abort"):
        proc = run_series("adopt-upstream", flag, cwd=fork, expect=1)
        assert "no adoption is halted" in proc.stderr, proc.stderr


def test_a_halted_rebase_is_not_continued_by_adopt(fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    proc = run_series("adopt-upstream", "--continue", cwd=fork, expect=1)
    assert "series: error: a series rebase is in progress, not an adoption" in proc.stderr.splitlines(), proc.stderr
    assert "hint: 'series rebase --continue' or 'series rebase --abort'" in proc.stderr.splitlines(), proc.stderr
    proc = run_series(*ADOPT, cwd=fork, expect=1)
    assert "series rebase --abort" in proc.stderr, proc.stderr


def test_usage(fork: Path) -> None:
    proc = run_series("adopt-upstream", "--continue", "--name", "x", cwd=fork, expect=2)
    assert "take no other arguments (got --name)" in proc.stderr, proc.stderr
    proc = run_series("adopt-upstream", cwd=fork, expect=2)
    assert "missing the PR number" in proc.stderr, proc.stderr
    help_text = run_series("adopt-upstream", "--help", cwd=fork).stdout
    assert "adopt-upstream --continue" in help_text and "--abort" in help_text, help_text


def killed(fork: Path, point: str, *args: str) -> None:
    proc = run_series(*args, cwd=fork, expect=None, env={"SERIES_FAULT": point})
    assert proc.returncode == 99, f"not killed at {point}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"


@pytest.mark.parametrize("point", ["rebase-after-state", "rebase-mid-worktree", "rebase-after-worktree"])
def test_killed_while_halting_then_continue(fork: Path, point: str) -> None:
    before = snapshot(fork)
    killed(fork, point, *ADOPT)
    assert snapshot(fork) == before
    if point != "rebase-after-worktree":
        proc = run_series("adopt-upstream", "--continue", cwd=fork, expect=3)  # lays it out now
        assert "halted on a conflict" in proc.stdout, proc.stdout
    resolve(fork, RESOLVED)
    run_series("adopt-upstream", "--continue", cwd=fork)
    assert repo_of(fork).references["refs/heads/topic/pr-61300"].peel(pygit2.Commit).tree[LRU].data.decode() == RESOLVED
    assert config.load(fork / "series.yaml").topic("offload-evict-fix").status.value == "superseded"


@pytest.mark.parametrize(
    "point,then",
    [
        ("rebase-before-transaction", "--continue"),
        ("after-journal", "--continue"),
        ("after-refs", "--continue"),
        ("rebase-after-transaction", "--continue"),
        ("after-refs", "--abort"),
        ("rebase-before-transaction", "--abort"),
    ],
)
def test_killed_while_committing_then_recovered(fork: Path, point: str, then: str) -> None:
    before = snapshot(fork)
    run_series(*ADOPT, cwd=fork, expect=3)
    resolve(fork, RESOLVED)
    killed(fork, point, "adopt-upstream", "--continue")
    run_series("adopt-upstream", then, cwd=fork)
    if then == "--abort":
        # the journal keeps what the half-done transaction and its revert moved (backup
        # refs); every branch, tag and series.yaml is as before
        refs_now, yaml_now = snapshot(fork)
        kept = "\n".join(l for l in refs_now.splitlines() if not l.startswith("refs/series/backup/"))
        assert (kept, yaml_now) == before, point
    else:
        assert branch(fork, "topic/pr-61300") is not None
        assert config.load(fork / "series.yaml").topic("pr-61300").upstream_pr == 61300
        log = run_series("log", cwd=fork).stdout
        assert log.count("adopt-upstream") == 1 and "pending" not in log, log
    assert not (fork / ".git/series/rebase").exists()
    assert sh("git worktree list", fork).count("\n") == 1


def test_undo_after_a_continued_adoption(fork: Path) -> None:
    before = snapshot(fork)
    run_series(*ADOPT, cwd=fork, expect=3)
    resolve(fork, RESOLVED)
    run_series("adopt-upstream", "--continue", cwd=fork)
    assert branch(fork, "topic/pr-61300") is not None
    run_series("undo", cwd=fork)
    refs_now, yaml_now = snapshot(fork)
    assert yaml_now == before[1]
    heads = lambda text: [l for l in text.splitlines() if l.startswith(("refs/heads/", "refs/tags/"))]  # noqa: E731
    assert heads(refs_now) == heads(before[0])


def test_refresh_halts_too_and_reuses_the_recorded_resolution(fork: Path, tmp_path: Path) -> None:
    run_series(*ADOPT, cwd=fork, expect=3)
    resolve(fork, RESOLVED)
    run_series("adopt-upstream", "--continue", cwd=fork)
    first = branch(fork, "topic/pr-61300")
    # the PR gains the third commit; its first one conflicts again, and is resolved from the
    # resolution recorded at --continue (the series' conflict memory); the new one halts
    work = tmp_path / "upstream-work"
    git(work, "update-ref", "refs/pull/61300/head", "refs/pull/61301/head")
    serve(work, tmp_path / "upstream.git")
    proc = run_series("adopt-upstream", "61300", "--refresh", "--offline", cwd=fork, expect=3)
    assert "[KV offload] wording" in proc.stdout and "2 commit(s) before it replayed" in proc.stdout, proc.stdout
    assert branch(fork, "topic/pr-61300") == first
    resolve(fork, RESOLVED_AGAIN)
    proc = run_series("adopt-upstream", "--continue", cwd=fork)
    assert "re-adopted PR #61300" in proc.stdout and "range-diff" in proc.stdout, proc.stdout
    assert f"note: {LRU}: resolved from memory" in proc.stdout, proc.stdout
    head = repo_of(fork).references["refs/heads/topic/pr-61300"].peel(pygit2.Commit)
    assert head.parents[0].parents[0].parents[0].id == repo_of(fork).revparse_single("v0.30.0").peel(pygit2.Commit).id
    assert head.tree[LRU].data.decode() == RESOLVED_AGAIN
    assert (
        config.load(fork / "series.yaml").topic("pr-61300").upstream_head
        == sh("git rev-parse refs/remotes/upstream/pr/61300", fork).strip()
    )
    run_series("undo", cwd=fork)
    assert branch(fork, "topic/pr-61300") == first


def test_killed_while_laying_out_then_abort(fork: Path) -> None:
    before = snapshot(fork)
    killed(fork, "rebase-mid-worktree", *ADOPT)
    run_series("adopt-upstream", "--abort", cwd=fork)
    assert snapshot(fork) == before
    assert sh("git worktree list", fork).count("\n") == 1 and not (fork / ".git/series/rebase").exists()
