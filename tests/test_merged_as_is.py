"""A topic's own commits that upstream merged as they are (a merge commit: its second
parent is the topic's head), then reverted, or in a release the rebase does not go to.

`git rebase --onto NEW v0.30.0 BRANCH` replays them: onto a release without the merge they
apply, onto one that reverts it they apply again, onto one that has it they come out empty.
series gives git's answer and keeps counting them as the topic's (status, touches): they
are not upstream history under the branch, as a hand rebase onto a newer release puts there.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_series, sh
from tests.repos import commit_files, git

TOPIC = "topic/api-hello"
API = "vllm/entrypoints/openai/api_server.py"


@pytest.fixture
def merged(fork: Path) -> dict[str, str]:
    """Upstream's v0.30.x line: U (its own work), M merging api-hello's head as it is,
    R reverting M; tags v0.30.1 at U, v0.30.2 at M, v0.30.3 at R."""
    base = git(fork, "rev-parse", "v0.30.0").strip()
    head = git(fork, "rev-parse", TOPIC).strip()
    u = commit_files(fork, base, {"vllm/other.py": "X = 1\n"}, "[Core] other (#61001)", "2026-02-01T00:00:00Z")
    tree = git(fork, "merge-tree", "--write-tree", u, head).split()[0]
    env = {"GIT_AUTHOR_DATE": "2026-02-02T00:00:00Z", "GIT_COMMITTER_DATE": "2026-02-02T00:00:00Z"}
    m = git(
        fork, "commit-tree", tree, "-p", u, "-p", head, "-m", "Merge pull request #61002 from ada/api-hello", env=env
    ).strip()
    r = git(
        fork,
        "commit-tree",
        f"{u}^{{tree}}",
        "-p",
        m,
        "-m",
        'Revert "Merge pull request #61002 from ada/api-hello"',
        env=env,
    ).strip()
    for tag, at in (("v0.30.1", u), ("v0.30.2", m), ("v0.30.3", r)):
        git(fork, "tag", tag, at)
    git(fork, "update-ref", "refs/remotes/upstream/releases/v0.30", r)
    return {"U": u, "M": m, "R": r}


def _git_rebase(fork: Path, onto: str, tmp: Path) -> tuple[str, int]:
    """git's answer: the branch's tree after `git rebase --onto ONTO v0.30.0`, and how many
    commits it kept over ONTO."""
    copy = tmp / f"git-{onto}"
    shutil.copytree(fork, copy, symlinks=True)
    sh(f"git checkout -q {TOPIC} && git rebase -q --onto {onto} v0.30.0 {TOPIC}", copy)
    return git(copy, "rev-parse", f"{TOPIC}^{{tree}}").strip(), int(
        git(copy, "rev-list", "--count", f"{onto}..{TOPIC}")
    )


def _topic_row(report: dict, name: str = "api-hello") -> dict:  # type: ignore[type-arg]
    return next(t for t in report["topics"] if t["name"] == name)


def test_status_and_touches_count_them_as_the_topics(fork: Path, merged: dict[str, str]) -> None:
    status = json.loads(run_series("status", "--json", cwd=fork).stdout)
    assert _topic_row(status)["commits"] == 1, _topic_row(status)
    run_series("touches", API, cwd=fork)  # exit 0: api-hello touches it


@pytest.mark.parametrize("onto", ["v0.30.1", "v0.30.3", "v0.30.2"], ids=["without-merge", "reverted", "merged"])
def test_the_rebase_gives_gits_answer(fork: Path, merged: dict[str, str], onto: str, tmp_path: Path) -> None:
    tree, kept = _git_rebase(fork, onto, tmp_path)
    before = git(fork, "rev-parse", TOPIC).strip()
    run_series("rebase", "--onto", onto, cwd=fork)
    if onto == "v0.30.2":  # git drops the commit (empty); series retires the topic, its branch kept
        assert kept == 0 and git(fork, "rev-parse", TOPIC).strip() == before
        assert (
            "  - name: api-hello\n    branch: topic/api-hello\n    scope: [vllm/entrypoints/]\n    status: merged\n"
            in (fork / "series.yaml").read_text()
        )
        return
    ours = git(fork, "rev-parse", f"{TOPIC}^{{tree}}").strip()
    assert kept == 1 and (ours, int(git(fork, "rev-list", "--count", f"{onto}..{TOPIC}"))) == (tree, kept), onto
