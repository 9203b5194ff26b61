"""retire.check: is an adopted PR topic merged upstream, exactly or in modified form?"""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from pytest_httpserver import HTTPServer

from series.forge.github import GitHubForge
from series.forge.retire import RetireKind, check
from series.model import PRNumber, Topic
from tests.conftest import sh
from tests.repos import LRU_FIXED, TEST_LRU_ORDER, add_pull_request, commit_files, git, github_fixture

LRU = "vllm/v1/kv_offload/cpu/policies/lru.py"
TEST = "tests/v1/kv_offload/test_lru.py"
TOPIC = Topic(name="pr-61050", branch="topic/pr-61050", upstream_pr=PRNumber(61050))


@pytest.fixture
def adopted(fork: Path, upstream: Path) -> Path:
    """The fork carries PR #61050 as topic/pr-61050 over v0.30.0."""
    head = add_pull_request(upstream)
    sh(
        f"git fetch -q upstream +refs/pull/61050/head:refs/remotes/upstream/pr/61050 && "
        f"git branch topic/pr-61050 {head}",
        fork,
    )
    return fork


def release(fork: Path, upstream: Path, files: dict[str, str], subject: str, tag: str = "v0.30.1") -> str:
    """Upstream tags a release on v0.30.0 that squash-merges with `files`; fetched into the fork."""
    squash = commit_files(upstream, "v0.30.0", files, subject, "2026-02-20T00:00:00Z")
    rel = commit_files(upstream, squash, {"README.md": f"# vLLM {tag}\n"}, f"Release {tag}", "2026-02-21T00:00:00Z")
    git(upstream, "tag", tag, rel)
    sh("git fetch -q upstream --tags", fork)
    return squash


def commits(fork: Path, old: str, new: str) -> tuple[pygit2.Repository, pygit2.Commit, pygit2.Commit]:
    repo = pygit2.Repository(str(fork))
    return repo, repo.revparse_single(old).peel(pygit2.Commit), repo.revparse_single(new).peel(pygit2.Commit)


def test_squash_subject_with_the_same_files_is_merged(adopted: Path, upstream: Path) -> None:
    squash = release(
        adopted,
        upstream,
        {LRU: LRU_FIXED, TEST: TEST_LRU_ORDER},
        "[Bugfix][KV offload] Fix eviction order of touched blocks (#61050)",
    )
    repo, old, new = commits(adopted, "v0.30.0", "v0.30.1")
    verdict = check(repo, TOPIC, old, new)
    assert verdict is not None and verdict.kind == RetireKind.MERGED, verdict
    assert verdict.merge_commit == squash and "(#61050)" in verdict.reason, verdict
    assert verdict.diff == ""


def test_squash_in_modified_form_is_noticed_with_the_difference(adopted: Path, upstream: Path) -> None:
    reworded = LRU_FIXED.replace(
        "# keep request order: the first key is evicted last",
        "# touch in reverse: a request's first block is evicted last",
    )
    release(
        adopted, upstream, {LRU: reworded, TEST: TEST_LRU_ORDER}, "[Bugfix][KV offload] Fix eviction order (#61050)"
    )
    repo, old, new = commits(adopted, "v0.30.0", "v0.30.1")
    verdict = check(repo, TOPIC, old, new)
    assert verdict is not None and verdict.kind == RetireKind.MODIFIED, verdict
    assert verdict.kind == "merged upstream in modified form"
    assert f"--- a/adopted/{LRU}" in verdict.diff and f"+++ b/upstream/{LRU}" in verdict.diff, verdict.diff
    assert "-        # keep request order" in verdict.diff and "+        # touch in reverse" in verdict.diff
    assert TEST not in verdict.diff, "files upstream took as they were are not part of the difference"


def test_no_evidence_no_verdict(adopted: Path, upstream: Path) -> None:
    release(adopted, upstream, {LRU: LRU_FIXED}, "[Bugfix] another fix (#61051)")
    repo, old, new = commits(adopted, "v0.30.0", "v0.30.1")
    assert check(repo, TOPIC, old, new) is None, "(#61051) is not (#61050)"
    topic = Topic(name="sched-note", branch="topic/sched-note")
    assert check(repo, topic, old, new) is None, "not a PR topic"
    verdict = check(repo, TOPIC, old, new, replay_empty=True)
    assert verdict is not None and verdict.kind == RetireKind.MERGED and "already in the new base" in verdict.reason


def test_the_api_merge_commit_contained_in_the_new_base(adopted: Path, upstream: Path, httpserver: HTTPServer) -> None:
    # upstream merged with a subject that does not name the PR: only the API knows
    squash = release(adopted, upstream, {LRU: LRU_FIXED, TEST: TEST_LRU_ORDER}, "Fix eviction order")
    httpserver.expect_request("/repos/vllm-project/vllm/pulls/61050").respond_with_json(
        github_fixture("pull-61050-merged", MERGE_SHA=squash)
    )
    forge = GitHubForge("vllm-project/vllm", httpserver.url_for("").rstrip("/"), None)
    repo, old, new = commits(adopted, "v0.30.0", "v0.30.1")
    assert check(repo, TOPIC, old, new) is None
    verdict = check(repo, TOPIC, old, new, forge)
    assert verdict is not None and verdict.kind == RetireKind.MERGED, verdict
    assert verdict.reason.startswith("GitHub: PR #61050 merged as"), verdict
    # the same merge commit already in the old base is not news for this rebase
    repo, old, new = commits(adopted, "v0.30.1", "v0.30.1")
    assert check(repo, TOPIC, old, new, forge) is None


def test_an_unreachable_api_still_uses_the_git_evidence(adopted: Path, upstream: Path) -> None:
    release(adopted, upstream, {LRU: LRU_FIXED, TEST: TEST_LRU_ORDER}, "Fix (#61050)")
    forge = GitHubForge("vllm-project/vllm", "http://127.0.0.1:9", None, timeout=2)
    repo, old, new = commits(adopted, "v0.30.0", "v0.30.1")
    verdict = check(repo, TOPIC, old, new, forge)
    assert verdict is not None and verdict.kind == RetireKind.MERGED, verdict
