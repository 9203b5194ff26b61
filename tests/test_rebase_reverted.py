"""A PR topic whose squash upstream merged AND reverted is not "merged upstream".

Seen on a real fork: PR #8760 was squash-merged upstream, then reverted by #8810; a rebase
onto a release holding both retired the PR topic as merged, and the fork silently lost the
change upstream no longer has. The rule (series.engine.merged.landed_verdict): a squash the
new base also reverts is no evidence; the topic is replayed as `git rebase --onto NEW OLD`
replays it (which keeps its commits: git's patch-id skipping looks at OLD...topic only) and
the report says why. A revert reverted (a reland), or the same squash landing again, makes
it merged again, by the files (compare_files).

Small real repositories: upstream tags v0.30.1 on v0.30.0 with PR #61050's squash, its
revert (in each shape GitHub and git write one) and what follows; the fork adopted the PR
as topic pr-61050.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence

import pygit2
import pytest
from pytest_httpserver import HTTPServer

from series.engine.merged import RetireKind, RetireVerdict, pr_verdict
from series.forge.github import GitHubForge
from series.forge.retire import check
from series.model import PRNumber, Topic
from series.seriesfile import config
from tests.conftest import run_series, sh
from tests.repos import LRU_FIXED, LRU_V030, TEST_LRU_ORDER, add_pull_request, commit_files, git, github_fixture

LRU = "vllm/v1/kv_offload/cpu/policies/lru.py"
TEST = "tests/v1/kv_offload/test_lru.py"
TEST_V030 = "def test_lru():\n    assert True\n"
TITLE = "[Bugfix][KV offload] Fix eviction order of touched blocks"
SQUASH = f"{TITLE} (#61050)"
TOPIC = Topic(name="pr-61050", branch="topic/pr-61050", upstream_pr=PRNumber(61050))
ADOPTED = "  - name: pr-61050\n    branch: topic/pr-61050\n    upstream_pr: 61050\n"
FIXED = {LRU: LRU_FIXED, TEST: TEST_LRU_ORDER}
UNDONE: dict[str, str | None] = {LRU: LRU_V030, TEST: TEST_V030}

# the revert's message, as each tool writes it ({squash}: the squash commit's sha)
REVERTS = {
    "quoted-subject": f'Revert "{SQUASH}" (#61070)\n\nThis reverts #61050.',
    "title-only": f'Revert "{TITLE}" (#61070)',  # GitHub's Revert button: the title, no number
    "reverts-commit": "[Misc] back out the LRU order change (#61070)\n\nThis reverts commit {squash}.",
}


@pytest.fixture
def adopted(fork: Path, upstream: Path) -> Path:
    """The fork carries PR #61050 (its two commits) as topic pr-61050 over v0.30.0."""
    head = add_pull_request(upstream)
    sh(
        f"git fetch -q upstream +refs/pull/61050/head:refs/remotes/upstream/pr/61050 && git branch topic/pr-61050 {head}",
        fork,
    )
    with (fork / "series.yaml").open("a") as f:
        f.write(ADOPTED)
    return fork


def release(
    fork: Path, upstream: Path, steps: Sequence[tuple[Mapping[str, str | None], str]], tag: str = "v0.30.1"
) -> list[str]:
    """Upstream lands `steps` (files, message) in order on v0.30.0 and tags `tag` on a release
    commit after them; the fork fetches it. Returns the steps' shas. '{squash}' in a message is
    the first step's sha."""
    shas: list[str] = []
    parent = "v0.30.0"
    for i, (files, text) in enumerate(steps):
        text = text.replace("{squash}", shas[0]) if shas else text
        parent = commit_files(upstream, parent, dict(files), text, f"2026-02-1{i}T00:00:00Z")
        shas.append(parent)
    git(
        upstream,
        "tag",
        tag,
        commit_files(upstream, parent, {"README.md": f"# vLLM {tag}\n"}, f"Release {tag}", "2026-02-21T00:00:00Z"),
    )
    sh("git fetch -q upstream --tags", fork)
    return shas


def verdict_of(fork: Path, new: str = "v0.30.1") -> RetireVerdict | None:
    repo = pygit2.Repository(str(fork))
    old_c, new_c = (repo.revparse_single(r).peel(pygit2.Commit) for r in ("v0.30.0", new))
    return pr_verdict(repo, TOPIC, old_c, new_c, github="vllm-project/vllm")


@pytest.mark.parametrize("shape", sorted(REVERTS))
def test_a_squash_the_new_base_reverts_is_replayed_not_retired(adopted: Path, upstream: Path, shape: str) -> None:
    squash, revert = release(adopted, upstream, [(FIXED, SQUASH), (UNDONE, REVERTS[shape])])
    old_head = sh("git rev-parse topic/pr-61050", adopted).strip()
    text = run_series("rebase", "--onto", "v0.30.1", "--dry-run", cwd=adopted).stdout
    line = next(x for x in text.splitlines() if x.lstrip().startswith("pr-61050"))
    assert line.split()[1] == "clean", text
    assert f"PR #61050 was merged upstream as {squash[:12]}" in text, text
    assert f"reverted by #61070 ({revert[:12]}" in text and "not merged" in text, text
    assert "series drop pr-61050" in text, text

    report = json.loads(run_series("rebase", "--onto", "v0.30.1", "--json", cwd=adopted).stdout)
    row = next(t for t in report["topics"] if t["name"] == "pr-61050")
    assert row["outcome"] == "clean" and "merged_in" not in row, row
    assert "reverted by #61070" in row["reason"] and squash[:12] in row["reason"], row
    pr = config.load(adopted / "series.yaml").topic("pr-61050")
    assert pr.active and pr.merged_in is None, pr
    # git-exact: what `git rebase --onto v0.30.1 v0.30.0` makes of the same commits (it keeps
    # both: its patch-id skipping compares v0.30.0...topic, not the squash in v0.30.1)
    sh(f"git branch by-git {old_head} && git rebase -q --onto v0.30.1 v0.30.0 by-git", adopted)
    ours, by_git = (sh(f"git rev-parse {b}^{{tree}}", adopted).strip() for b in ("topic/pr-61050", "by-git"))
    assert ours == by_git, "the branch is what git rebase makes"
    assert sh("git rev-list --count v0.30.1..topic/pr-61050", adopted).strip() == "2"
    assert sh(f"git show topic/pr-61050:{LRU}", adopted) == LRU_FIXED, "the fork keeps the change"


def test_a_revert_without_the_squash_subject_in_the_range_is_no_merge(adopted: Path, upstream: Path) -> None:
    """A revert typed without its own number ('Revert "x (#N)', quote unclosed) ends in
    "(#N)" too: it is not read as the PR's squash."""
    release(adopted, upstream, [(FIXED, SQUASH), (UNDONE, f'Revert "{SQUASH}')])
    verdict = verdict_of(adopted)
    assert verdict is not None and verdict.kind is RetireKind.REVERTED, verdict


@pytest.mark.parametrize(
    "reland",
    [
        f'Revert "Revert "{SQUASH}" (#61070)" (#61080)',  # GitHub's Revert button on the revert
        SQUASH,  # the same squash landing again
        "[Bugfix][KV offload] Reland the eviction order fix (#61080)",  # named by no revert: the files say
    ],
)
def test_a_reverted_squash_relanded_is_merged_again(adopted: Path, upstream: Path, reland: str) -> None:
    release(adopted, upstream, [(FIXED, SQUASH), (UNDONE, REVERTS["quoted-subject"]), (FIXED, reland)])
    verdict = verdict_of(adopted)
    assert verdict is not None and verdict.kind is RetireKind.MERGED, verdict
    proc = run_series("rebase", "--onto", "v0.30.1", "--json", cwd=adopted)
    pr = config.load(adopted / "series.yaml").topic("pr-61050")
    assert (pr.status.value, pr.merged_in) == ("merged", "v0.30.1"), proc.stdout


def test_relanded_in_a_form_no_revert_names_and_files_disagree_is_not_merged(adopted: Path, upstream: Path) -> None:
    reworked = LRU_FIXED.replace("# keep request order", "# reland: keep request order")
    release(
        adopted,
        upstream,
        [(FIXED, SQUASH), (UNDONE, REVERTS["title-only"]), ({LRU: reworked}, "[KV offload] LRU order, again (#61080)")],
    )
    verdict = verdict_of(adopted)
    assert verdict is not None and verdict.kind is RetireKind.REVERTED, "what relands it is not known: no claim"


def test_a_replay_that_comes_out_empty_after_a_revert_is_empty_not_merged(adopted: Path, upstream: Path) -> None:
    """Another PR brings the lines back with more (files disagree): the replay comes out empty,
    as git's does, but the topic is not retired as merged: #61050 itself was reverted."""
    more = LRU_FIXED + "\n# tuned later\n"
    release(
        adopted,
        upstream,
        [
            (FIXED, SQUASH),
            (UNDONE, REVERTS["quoted-subject"]),
            ({LRU: more, TEST: TEST_LRU_ORDER}, "[KV offload] rework (#61090)"),
        ],
    )
    text = run_series("rebase", "--onto", "v0.30.1", cwd=adopted).stdout
    line = next(x for x in text.splitlines() if x.lstrip().startswith("pr-61050"))
    assert line.split()[1] == "empty" and "after resolution" not in line, text
    assert "reverted by #61070" in line and "merged upstream (" not in line, text
    pr = config.load(adopted / "series.yaml").topic("pr-61050")
    assert pr.active, "not retired"
    new_head = sh("git rev-parse topic/pr-61050", adopted).strip()
    assert new_head == sh("git rev-parse v0.30.1", adopted).strip(), "where git's replay puts it"


def test_the_api_merge_commit_reverted_in_the_new_base_is_not_merged(
    adopted: Path, upstream: Path, httpserver: HTTPServer
) -> None:
    # the squash names no PR, so only the API knows; GitHub says merged all the same
    squash, _ = release(adopted, upstream, [(FIXED, TITLE), (UNDONE, REVERTS["reverts-commit"])])
    httpserver.expect_request("/repos/vllm-project/vllm/pulls/61050").respond_with_json(
        github_fixture("pull-61050-merged", MERGE_SHA=squash)
    )
    forge = GitHubForge("vllm-project/vllm", httpserver.url_for("").rstrip("/"), None)
    repo = pygit2.Repository(str(adopted))
    old, new = (repo.revparse_single(r).peel(pygit2.Commit) for r in ("v0.30.0", "v0.30.1"))
    verdict = check(repo, TOPIC, old, new, forge, github="vllm-project/vllm")
    assert verdict is not None and verdict.kind is RetireKind.REVERTED and not verdict.retires, verdict
    assert "reverted by #61070" in verdict.reason, verdict
