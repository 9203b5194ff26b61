"""The PR lifecycle end to end: adopt PR #61050 -> upstream releases it -> `series rebase`
retires the PR topic as merged (or merged in modified form, with the difference shown)."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
import pytest

from series.seriesfile import config
from tests.conftest import run_series, sh
from tests.repos import LRU_FIXED, TEST_LRU_ORDER, build_fork, commit_files, git

LRU = "vllm/v1/kv_offload/cpu/policies/lru.py"
TEST = "tests/v1/kv_offload/test_lru.py"


@pytest.fixture(autouse=True)
def no_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERIES_OFFLINE", "1")


@pytest.fixture
def adopted(tmp_path: Path, work: Path) -> Path:
    bare = tmp_path / "upstream.git"
    sh(f"git clone -q --mirror {work} {bare}", tmp_path)
    fork = build_fork(bare, tmp_path / "fork")
    run_series("adopt-upstream", "61050", "--replaces", "offload-evict-fix", cwd=fork)
    return fork


def release(work: Path, fork: Path, lru: str, subject: str, tag: str = "v0.30.1") -> None:
    squash = commit_files(work, "v0.30.0", {LRU: lru, TEST: TEST_LRU_ORDER}, subject, "2026-02-20T00:00:00Z")
    git(
        work,
        "tag",
        tag,
        commit_files(work, squash, {"README.md": f"# vLLM {tag}\n"}, f"Release {tag}", "2026-02-21T00:00:00Z"),
    )
    sh(f"git --git-dir={fork.parent / 'upstream.git'} fetch -q {work} '+refs/*:refs/*'", fork)


def test_adopt_then_a_release_with_the_pr_retires_it_as_merged(adopted: Path, work: Path) -> None:
    pr_branch = sh("git rev-parse topic/pr-61050", adopted).strip()
    ours = sh("git rev-parse topic/offload-evict-fix", adopted).strip()
    release(work, adopted, LRU_FIXED, "[Bugfix][KV offload] Fix eviction order of touched blocks (#61050)")
    proc = run_series("rebase", "--onto", "v0.30.1", "--fetch", "--json", cwd=adopted)
    series = config.load(adopted / "series.yaml")
    pr = series.topic("pr-61050")
    assert (pr.status.value, pr.merged_in) == ("merged", "v0.30.1"), proc.stdout
    assert series.upstream.base == "v0.30.1"
    report = json.loads(proc.stdout)
    text = json.dumps(report)
    assert "(#61050)" in text and "modified" not in text.replace('"modified": false', ""), text
    squash = sh("git rev-parse v0.30.1~1", adopted).strip()
    row = next(t for t in report["topics"] if t["name"] == "pr-61050")
    assert [(e["pr"], e["sha"]) for e in row["evidence"]] == [(61050, squash)], row
    # branches kept: the retired PR topic and the topic it superseded
    assert sh("git rev-parse topic/pr-61050", adopted).strip() == pr_branch
    assert sh("git rev-parse topic/offload-evict-fix", adopted).strip() == ours
    assert config.load(adopted / "series.yaml").topic("sched-note").active


def test_a_squash_merged_in_modified_form_is_reported_with_the_difference(adopted: Path, work: Path) -> None:
    reworded = LRU_FIXED.replace(
        "# keep request order: the first key is evicted last",
        "# touch in reverse: a request's first block is evicted last",
    )
    release(work, adopted, reworded, "[Bugfix][KV offload] Fix eviction order (#61050)")
    proc = run_series("rebase", "--onto", "v0.30.1", "--fetch", cwd=adopted)
    assert "merged upstream in modified form" in proc.stdout, proc.stdout
    assert "+        # touch in reverse" in proc.stdout and "-        # keep request order" in proc.stdout, proc.stdout
    pr = config.load(adopted / "series.yaml").topic("pr-61050")
    assert (pr.status.value, pr.merged_in) == ("merged", "v0.30.1"), proc.stdout


def test_a_release_without_the_pr_keeps_carrying_it(adopted: Path, work: Path) -> None:
    git(
        work,
        "tag",
        "v0.30.1",
        commit_files(work, "v0.30.0", {"README.md": "# vLLM v0.30.1\n"}, "Release v0.30.1", "2026-02-21T00:00:00Z"),
    )
    sh(f"git --git-dir={adopted.parent / 'upstream.git'} fetch -q {work} '+refs/*:refs/*'", adopted)
    run_series("rebase", "--onto", "v0.30.1", "--fetch", cwd=adopted)
    repo = pygit2.Repository(str(adopted))
    pr = config.load(adopted / "series.yaml").topic("pr-61050")
    assert pr.active, pr
    head = repo.references["refs/heads/topic/pr-61050"].peel(pygit2.Commit)
    assert head.parents[0].parents[0].id == repo.revparse_single("v0.30.1").id
    assert head.author.name == "Ada Upstream", "the rebase keeps the PR's authorship too"
