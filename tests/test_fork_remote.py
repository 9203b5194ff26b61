"""A fork whose `upstream` remote carries the fork's own branches and tags (issue 33, as
seen on HabanaAI/vllm-fork: its main follows vLLM, habana_main and master carry Habana's
work, its tag v0.6.6.post2 sits on a branch of its own).

Upstream's history is its line (main, releases/*) and its tags (series.git.releases):
the fork's integration branch on that remote must not make a topic empty (`touches` exit
1, "not touched", `init` 0 commits), and the fork's own version tag is no release.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import run_series, sh

TOPICS = ("sched-note", "offload-evict-fix", "ipc-backport", "api-hello")
COMMITS = {"sched-note": 1, "offload-evict-fix": 2, "ipc-backport": 1, "api-hello": 1}


def _carry_the_forks_branches(fork: Path, upstream: Path) -> None:
    """The upstream remote gets the fork's integration branch (habana_main, and master a
    copy of it, as HabanaAI has) and its topic branches, as a fork cloned as `upstream`."""
    merge = " ".join(f"topic/{t}" for t in TOPICS[1:])
    sh(
        f"git checkout -q -B habana_main topic/{TOPICS[0]} && git merge -q --no-edit {merge} && "
        "git checkout -q --detach v0.30.0 && "
        "git push -q upstream habana_main habana_main:master 'refs/heads/topic/*:refs/heads/topic/*' && "
        "git branch -q -D habana_main && git fetch -q upstream",
        fork,
    )
    assert "upstream/habana_main" in sh("git branch -r --contains topic/api-hello", fork)


def _commits(fork: Path) -> dict[str, int]:
    rows = json.loads(run_series("status", "--json", cwd=fork).stdout)["topics"]
    return {t["name"]: t["commits"] for t in rows}


def test_a_fork_branch_on_the_upstream_remote_leaves_each_topic_its_commits(fork: Path, upstream: Path) -> None:
    _carry_the_forks_branches(fork, upstream)
    assert _commits(fork) == COMMITS
    proc = run_series("touches", "vllm/entrypoints", cwd=fork)  # exit 0: api-hello touches it
    assert "api-hello" in proc.stdout, proc.stdout
    proc = run_series("touches", "--json", "vllm", cwd=fork)
    assert len(json.loads(proc.stdout)["topics"]) == 4, proc.stdout

    (fork / "series.yaml").unlink()
    out = run_series("init", "--base", "v0.30.0", cwd=fork).stdout
    counted = dict(re.findall(r"^  (\S+)\s+topic/\S+\s+(\d+) commits?$", out, re.MULTILINE))
    assert {k: int(v) for k, v in counted.items()} == COMMITS, out
    assert _commits(fork) == COMMITS, "status agrees with init"


def test_a_blobless_clone_of_the_forks_server_finds_every_topic(fork: Path, upstream: Path, tmp_path: Path) -> None:
    """A clone with --filter=blob:none of a server carrying the fork's branches: the
    topics' files are found, their blobs fetched through git, never 'not touched'."""
    _carry_the_forks_branches(fork, upstream)
    bare = tmp_path / "server.git"
    sh(f"git clone -q --mirror {upstream} {bare} && git -C {bare} config uploadpack.allowFilter true", tmp_path)
    part = tmp_path / "part"
    sh(f"git clone -q --no-checkout --filter=blob:none -o upstream file://{bare} {part}", tmp_path)
    for topic in TOPICS:
        sh(f"git branch -q topic/{topic} upstream/topic/{topic}", part)
    (part / "series.yaml").write_text((fork / "series.yaml").read_text())
    assert "?" in sh("git rev-list --objects --missing=print --all", part), "blobs are missing"
    full = run_series("touches", "vllm", cwd=fork)
    got = run_series("touches", "vllm", cwd=part)  # exit 0, not 1
    assert got.stdout == full.stdout and "touched by 4 of 4 active topics" in got.stdout, got.stdout
    assert _commits(part) == COMMITS


def test_a_fork_tag_newer_than_upstreams_is_no_release(fork: Path, upstream: Path) -> None:
    """v0.31.0.post2 made on the fork's branch (as HabanaAI's v0.6.6.post2): PEP 440 puts it
    after upstream's v0.31.0, but it is the fork's; named exactly it is still itself."""
    sh(
        "git checkout -q -B fork/rh_sec v0.31.0 && git commit -q --allow-empty -m 'backport' && "
        "git tag v0.31.0.post2 && git checkout -q --detach v0.30.0",
        fork,
    )
    for name in ("latest", "v0.31", "0.31"):
        assert run_series("release", name, cwd=fork).stdout.strip() == "v0.31.0", name
    assert run_series("release", cwd=fork).stdout.split() == ["v0.31.0", "v0.30.0"]
    listed = json.loads(run_series("release", "--all", "--json", cwd=fork).stdout)
    assert listed["fork_tags"] == ["v0.31.0.post2"], listed
    assert "the fork's own tags" in run_series("release", "--all", cwd=fork).stdout
    assert run_series("release", "v0.31.0.post2", cwd=fork).stdout.strip() == "v0.31.0.post2"
    report = json.loads(
        run_series(
            "rebase", "--onto", "latest", "--dry-run", "--json", "--skip-topic", "offload-evict-fix", cwd=fork
        ).stdout
    )
    assert report["onto"]["name"] == "v0.31.0", report["onto"]

    # the same tag on a branch the upstream remote carries (the fork cloned as upstream):
    # still not upstream's line, so still the fork's
    sh("git push -q upstream fork/rh_sec && git branch -q -D fork/rh_sec && git fetch -q upstream", fork)
    assert run_series("release", "latest", cwd=fork).stdout.strip() == "v0.31.0"
    # on upstream's release branch it is upstream's post release
    sh("git update-ref refs/remotes/upstream/releases/v0.31.0 upstream/fork/rh_sec", fork)
    assert run_series("release", "latest", cwd=fork).stdout.strip() == "v0.31.0.post2"
