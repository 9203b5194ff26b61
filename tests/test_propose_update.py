"""series propose TOPIC --update: after review starts the PR branch only grows.

The PR is opened by the real `series propose` (test_propose's upstream, fork and GitHub
stand-in); the fork remote is a bare repository. Where no force-push may happen, the
remote has `receive.denyNonFastForwards` set: git itself refuses a non-fast-forward
there, --force or not, so a passing update proves none was sent.
"""

from __future__ import annotations

import json
from pathlib import Path

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from tests.conftest import run_series
from tests.repos import commit_all, git, write
from tests.test_propose import ME, SERVING, SLUG, _api, _serve, proposal  # noqa: F401 (the fixture)

BRANCH = "refs/heads/pr/serving-fix"
TEST_FILE = "tests/entrypoints/openai/test_serving.py"


def _fork_remote(fork: Path) -> Path:
    return fork.parent / "my-fork.git"


def _remote_head(fork: Path) -> str:
    return git(_fork_remote(fork), "rev-parse", BRANCH).strip()


def _opened(
    fork: Path,
    server: HTTPServer,
    reviews: int = 1,
    comments: int = 0,
    deny: bool = True,
    review_items: list[object] | None = None,
    signoff: bool = False,
) -> str:
    """Propose serving-fix for real (PR #62000), then serve the PR and its review state."""
    _serve(server, fork, [])
    run_series(
        "propose", "serving-fix", "--despite", "50001", *(["--signoff"] if signoff else []), cwd=fork, env=_api(server)
    )
    if deny:
        git(_fork_remote(fork), "config", "receive.denyNonFastForwards", "true")

    def pull(request: Request) -> Response:
        return Response(
            json.dumps(
                {
                    "number": 62000,
                    "title": "[Bugfix][Frontend] Keep the request order when serving",
                    "state": "open",
                    "user": {"login": "forkdev"},
                    "html_url": "https://github.com/vllm-project/vllm/pull/62000",
                    "updated_at": "2026-03-02T00:00:00Z",
                    "closed_at": None,
                    "merged_at": None,
                    "head": {"sha": _remote_head(fork)},
                    "base": {"sha": "2" * 40},
                }
            ),
            content_type="application/json",
        )

    server.expect_request(f"{SLUG}/pulls/62000", method="GET").respond_with_handler(pull)
    server.expect_request(f"{SLUG}/pulls/62000/reviews").respond_with_json(
        review_items
        if review_items is not None
        else [{"id": 900 + i, "state": "COMMENTED", "user": {"login": "DarkLight1337"}} for i in range(reviews)]
    )
    server.expect_request(f"{SLUG}/pulls/62000/comments").respond_with_json(
        [{"id": 800 + i, "body": "why this order?"} for i in range(comments)]
    )
    return _remote_head(fork)


def _topic_commit(fork: Path, files: dict[str, str], message: str, amend: bool = False) -> None:
    git(fork, "checkout", "-q", "topic/serving-fix")
    write(fork, files)
    if amend:
        git(fork, "add", "-A")
        git(fork, "commit", "-q", "--amend", "--no-edit", env=ME)
    else:
        commit_all(fork, message, "2026-03-03T00:00:00Z", env=ME)
    git(fork, "checkout", "-q", "--detach")


def _is_ancestor(fork: Path, old: str, new: str) -> bool:
    return git(_fork_remote(fork), "merge-base", old, new).strip() == old


def test_new_commits_are_added_on_top_without_force(proposal: Path, httpserver: HTTPServer) -> None:
    old = _opened(proposal, httpserver, reviews=1)
    git(proposal, "checkout", "-q", "topic/serving-fix")
    tests = (proposal / TEST_FILE).read_text()
    _topic_commit(
        proposal,
        {TEST_FILE: tests + "\n\ndef test_order_when_full():\n    assert True\n"},
        "[Bugfix][Frontend] Test the order when the queue is full",
    )
    proc = run_series("propose", "serving-fix", "--update", "--json", cwd=proposal, env=_api(httpserver))
    data = json.loads(proc.stdout)
    assert data["mode"] == "added" and data["force"] is False and data["pushed"], data
    new = _remote_head(proposal)
    assert new == data["new_head"] and len(data["commits"]) == 1, data
    assert git(proposal, "rev-parse", f"{new}^").strip() == old  # one commit added on the PR head
    assert (
        git(proposal, "log", "-1", "--format=%s", new).strip()
        == "[Bugfix][Frontend] Test the order when the queue is full"
    )
    # the range-diff: the PR's commit unchanged (=), the new one added (>)
    assert "1:  " in data["range_diff"] and " = " in data["range_diff"], data["range_diff"]
    assert "-:  ------- > 2:" in data["range_diff"], data["range_diff"]
    assert data["review"] == {"reviews": 1, "comments": 0, "started": True}, data
    # journaled: the local PR branch moved; undo moves it back and says the push stays
    assert git(proposal, "rev-parse", BRANCH).strip() == new
    undo = run_series("undo", cwd=proposal).stdout
    assert git(proposal, "rev-parse", BRANCH).strip() == old
    assert "the push is not undone" in undo and _remote_head(proposal) == new, undo
    # run again with nothing new: nothing to push
    again = run_series("propose", "serving-fix", "--update", cwd=proposal, env=_api(httpserver)).stdout
    assert "current: the PR branch already holds the topic" in again, again


def test_a_rewritten_topic_becomes_one_update_commit_without_force(proposal: Path, httpserver: HTTPServer) -> None:
    old = _opened(proposal, httpserver, reviews=0, comments=2)
    git(proposal, "checkout", "-q", "topic/serving-fix")
    serving = (proposal / SERVING).read_text()
    _topic_commit(
        proposal, {SERVING: serving.replace("lee 8 (fixed)\n", "lee 8 (fixed, as review asked)\n")}, "", amend=True
    )
    dry = run_series("propose", "serving-fix", "--update", "--dry-run", cwd=proposal, env=_api(httpserver)).stdout
    assert _remote_head(proposal) == old, dry  # --dry-run pushes nothing
    assert (
        "would run (--dry-run: nothing pushed): git push origin" in dry and "force" not in dry.split("would run")[1]
    ), dry
    assert (
        "range-diff (what the PR holds -> what would be pushed):" in dry and "lee 8 (fixed, as review asked)" in dry
    ), dry  # the range-diff shows the rewritten line
    assert "1:  " in dry and " ! 1:  " in dry, dry
    proc = run_series("propose", "serving-fix", "--update", "--json", cwd=proposal, env=_api(httpserver))
    data = json.loads(proc.stdout)
    assert data["mode"] == "update" and data["force"] is False, data
    new = _remote_head(proposal)
    assert git(proposal, "rev-parse", f"{new}^").strip() == old  # added on top: the old head is kept
    assert git(proposal, "log", "-1", "--format=%s", new).strip() == "Update: serving-fix rebased onto v0.30.0"
    # the branch ends with the topic's content: the topic replayed onto the PR's base, by git
    base = data["base"]
    assert git(proposal, "merge-base", old, "upstream/main").strip() == base
    replayed = git(proposal, "merge-tree", "--write-tree", base, "topic/serving-fix")  # merge base: v0.30.0
    assert git(proposal, "rev-parse", f"{new}^{{tree}}").strip() == replayed.split()[0]
    assert "fixed, as review asked" in git(proposal, "show", f"{new}:{SERVING}")


def test_squash_force_pushes_only_when_asked(proposal: Path, httpserver: HTTPServer) -> None:
    old = _opened(proposal, httpserver, reviews=2, deny=False, signoff=True)
    _topic_commit(proposal, {"vllm/entrypoints/openai/queue.py": "FULL = 8\n"}, "[Frontend] name the queue size")
    unsigned = run_series(
        "propose", "serving-fix", "--update", "--squash", "--dry-run", cwd=proposal, env=_api(httpserver)
    ).stdout
    assert "carry Signed-off-by but --signoff was not given" in unsigned, unsigned
    proc = run_series(
        "propose", "serving-fix", "--update", "--squash", "--signoff", "--json", cwd=proposal, env=_api(httpserver)
    )
    data = json.loads(proc.stdout)
    assert data["mode"] == "squash" and data["force"] is True, data
    assert f"--force-with-lease={BRANCH}:{old}" in data["command"], data
    new = _remote_head(proposal)
    assert not _is_ancestor(proposal, old, new)  # the old head is gone from the branch
    main = git(proposal, "rev-parse", "upstream/main").strip()
    assert git(proposal, "rev-list", "--count", f"{main}..{new}").strip() == "1"
    assert git(proposal, "rev-parse", f"{new}^").strip() == main
    assert "FULL = 8" in git(proposal, "show", f"{new}:vllm/entrypoints/openai/queue.py")
    body = git(proposal, "log", "-1", "--format=%B", new)
    assert "* [Frontend] name the queue size" in body and body.rstrip().endswith(
        "Signed-off-by: Fork Maintainer <fork@example.com>"
    ), body
    assert data["notes"] == [], data
    usage = run_series("propose", "serving-fix", "--squash", cwd=proposal, expect=2)
    assert "--squash goes with --update" in usage.stderr, usage.stderr


def test_before_any_review_a_plain_update_replaces_the_branch(proposal: Path, httpserver: HTTPServer) -> None:
    old = _opened(proposal, httpserver, reviews=0, comments=0, deny=False)
    git(proposal, "checkout", "-q", "topic/serving-fix")
    serving = (proposal / SERVING).read_text()
    _topic_commit(proposal, {SERVING: serving.replace("kay 3 (fixed)\n", "kay 3 (fixed again)\n")}, "", amend=True)
    out = run_series("propose", "serving-fix", "--update", cwd=proposal, env=_api(httpserver)).stdout
    assert "review: 0 review(s), 0 review comment(s)" in out and "no review yet" in out, out
    assert "(forced, with lease)" in out, out
    new = _remote_head(proposal)
    assert not _is_ancestor(proposal, old, new)
    assert git(proposal, "rev-parse", f"{new}^").strip() == git(proposal, "rev-parse", "upstream/main").strip()


def test_after_review_a_denying_remote_takes_the_update_and_a_force_would_be_refused(
    proposal: Path, httpserver: HTTPServer
) -> None:
    """The deny setting is real: the same rewrite pushed as a plain replacement is refused."""
    old = _opened(proposal, httpserver, reviews=1)
    git(proposal, "checkout", "-q", "topic/serving-fix")
    serving = (proposal / SERVING).read_text()
    _topic_commit(proposal, {SERVING: serving.replace("kay 3 (fixed)\n", "kay 3 (fixed again)\n")}, "", amend=True)
    refused = run_series("propose", "serving-fix", "--update", "--squash", cwd=proposal, env=_api(httpserver), expect=1)
    assert "git push to origin failed" in refused.stderr and _remote_head(proposal) == old, refused.stderr
    run_series("propose", "serving-fix", "--update", cwd=proposal, env=_api(httpserver))
    assert _is_ancestor(proposal, old, _remote_head(proposal))


def test_a_review_list_of_the_wrong_shape_is_refused_and_nothing_is_pushed(
    proposal: Path, httpserver: HTTPServer
) -> None:
    """An answer series cannot read is never taken as 'no review yet' (which would allow a force)."""
    old = _opened(proposal, httpserver, deny=False, review_items=[{"state": "APPROVED"}])
    git(proposal, "checkout", "-q", "topic/serving-fix")
    serving = (proposal / SERVING).read_text()
    _topic_commit(proposal, {SERVING: serving.replace("kay 3 (fixed)\n", "kay 3 (fixed again)\n")}, "", amend=True)
    proc = run_series("propose", "serving-fix", "--update", cwd=proposal, env=_api(httpserver), expect=1)
    assert "reviews of PR #62000 without an id" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert _remote_head(proposal) == old


def test_offline_review_is_unknown_so_the_update_adds_a_commit(proposal: Path, httpserver: HTTPServer) -> None:
    old = _opened(proposal, httpserver)
    git(proposal, "checkout", "-q", "topic/serving-fix")
    serving = (proposal / SERVING).read_text()
    _topic_commit(proposal, {SERVING: serving.replace("kay 3 (fixed)\n", "kay 3 (fixed again)\n")}, "", amend=True)
    out = run_series("propose", "serving-fix", "--update", "--offline", cwd=proposal).stdout
    assert "review: unknown (no API)" in out and "updated as if it had" in out, out
    new = _remote_head(proposal)
    assert git(proposal, "rev-parse", f"{new}^").strip() == old, out


def test_a_topic_without_a_recorded_pr_has_nothing_to_update(proposal: Path) -> None:
    proc = run_series("propose", "serving-fix", "--update", "--offline", cwd=proposal, expect=1)
    assert "records no upstream PR" in proc.stderr and "series propose serving-fix" in proc.stderr, proc.stderr
