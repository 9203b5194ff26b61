"""`series upstream` against a local server shaped like GitHub's API: the row online, the
fetch stored and read back offline with its age, merged-in-release, a moved head, and
hostile answers refused in one line."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pygit2
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from tests.conftest import run_series, sh
from tests.repos import commit_files, git, github_fixture

TOKEN = "ghp_UPSTREAMsecret11223344"
REPO = "/repos/vllm-project/vllm"
NOW = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


def ago(**delta: float) -> str:
    return (NOW - dt.timedelta(**delta)).isoformat().replace("+00:00", "Z")


def env_for(server: HTTPServer, **extra: str) -> dict[str, str]:
    return {"SERIES_GITHUB_API": server.url_for(""), "GITHUB_TOKEN": TOKEN, "SERIES_HTTP_RETRIES": "0", **extra}


def carry(fork: Path, head: str) -> None:
    """offload-evict-fix records PR #61050, adopted at `head`."""
    path = fork / "series.yaml"
    path.write_text(
        path.read_text().replace(
            "    scope: [vllm/v1/kv_offload/]\n",
            f"    scope: [vllm/v1/kv_offload/]\n    upstream_pr: 61050\n    upstream_head: {head}\n",
        )
    )


def serve(
    server: HTTPServer,
    head: str,
    *,
    pull: dict[str, Any] | None = None,
    comments: list[Any] | None = None,
    checks: Any = None,
    status: Any = None,
    threads: Any = None,
    resolved: bool = False,
) -> None:
    data = pull or github_fixture("pull-61050", API=server.url_for("").rstrip("/"), HEAD_SHA=head, RECENT=ago(days=3))
    assert isinstance(data, dict)
    data["requested_reviewers"] = [{"login": "maint-one", "type": "User"}]
    server.expect_request(f"{REPO}/pulls/61050").respond_with_json(data)
    server.expect_request(f"{REPO}/pulls/61050/reviews").respond_with_json([])
    server.expect_request(f"{REPO}/pulls/61050/comments").respond_with_json(
        comments
        if comments is not None
        else [
            {
                "id": 7,
                "in_reply_to_id": None,
                "position": 3,
                "user": {"login": "maint-one", "type": "User"},
                "created_at": ago(days=3),
                "body": "why this order?",
            }
        ]
    )
    server.expect_request(f"{REPO}/issues/61050/comments").respond_with_json([])
    server.expect_request(f"{REPO}/pulls/61050/commits").respond_with_json(
        [
            {
                "sha": head,
                "author": {"login": "ada-upstream", "type": "User"},
                "commit": {"committer": {"date": ago(days=5)}},
            }
        ]
    )
    server.expect_request(f"{REPO}/issues/61050/timeline").respond_with_json([])
    server.expect_request(f"{REPO}/commits/{head}/check-runs").respond_with_json(
        checks
        if checks is not None
        else {
            "total_count": 2,
            "check_runs": [
                {"name": "DCO", "status": "completed", "conclusion": "success"},
                {"name": "pre-commit", "status": "completed", "conclusion": "success"},
            ],
        }
    )
    # Buildkite reports as commit statuses; none here (GitHub's combined state is then "pending")
    server.expect_request(f"{REPO}/commits/{head}/status").respond_with_json(
        status if status is not None else {"state": "pending", "total_count": 0, "statuses": []}
    )
    server.expect_request("/user").respond_with_json({"login": "ada-upstream"})
    # GraphQL: one answer, or the page for each cursor (variables.after) when a dict of them
    pages = threads if isinstance(threads, dict) and None in threads else {None: threads}
    if pages[None] is None:
        pages[None] = graphql_threads((7, resolved))

    def page(request: Request) -> Response:
        answer = pages.get(json.loads(request.data)["variables"]["after"], {"errors": [{"message": "no such page"}]})
        return Response(json.dumps(answer), content_type="application/json")

    server.expect_request("/graphql", method="POST").respond_with_handler(page)


def graphql_threads(*threads: tuple[int, bool], more: str | None = None) -> dict[str, Any]:
    """GraphQL's answer for reviewThreads: (first comment's REST id, isResolved) each."""
    nodes = [{"isResolved": flag, "comments": {"nodes": [{"databaseId": ident}]}} for ident, flag in threads]
    page = {"pageInfo": {"hasNextPage": more is not None, "endCursor": more}, "nodes": nodes}
    return {"data": {"repository": {"pullRequest": {"reviewThreads": page}}}}


def pr_head(fork: Path) -> str:
    return sh("git ls-remote upstream refs/pull/61050/head", fork).split()[0]


def test_the_row_online_then_offline_from_the_stored_fetch(served: Path, httpserver: HTTPServer) -> None:
    head = pr_head(served)
    carry(served, head)
    serve(httpserver, head)
    proc = run_series("upstream", cwd=served, env=env_for(httpserver))
    first = proc.stdout.splitlines()[0]
    assert first.startswith("#61050 offload-evict-fix: open, ours turn for 3 days, past 48 h"), proc.stdout
    assert "waiting on us: review thread: @maint-one commented last" in proc.stdout
    assert "head:" not in proc.stdout  # the PR head is the one we adopted
    assert TOKEN not in proc.stdout + proc.stderr
    # the fetch is stored through the transaction, as a record 'series undo' passes over
    stored = served / ".git" / "series" / "upstream" / "fetched.json"
    assert json.loads(stored.read_text())["pulls"][0]["number"] == 61050
    log = json.loads(run_series("log", "--json", cwd=served).stdout)
    assert log["operations"][-1]["command"] == "upstream", log
    run_series("undo", cwd=served, expect=1)  # nothing else to undo: the record is passed over
    online = json.loads(run_series("upstream", "--json", cwd=served, env=env_for(httpserver)).stdout)
    httpserver.clear()  # offline: no request may reach the server
    offline = run_series("upstream", "--offline", "--json", cwd=served, env=env_for(httpserver))
    data = json.loads(offline.stdout)
    assert data["source"] == "stored" and data["age_hours"] == 0 and httpserver.log == [], data
    assert data["rows"] == online["rows"]
    text = run_series("upstream", "--offline", cwd=served).stdout
    assert text.startswith("offline: from the fetch stored ") and "(0 h old)" in text.splitlines()[0], text
    # the API unreachable: the stored fetch, said
    down = run_series("upstream", cwd=served, env={**env_for(httpserver), "SERIES_GITHUB_API": "http://127.0.0.1:9"})
    assert "showing the last fetch stored" in down.stdout and down.stdout.startswith("offline:"), down.stdout


def test_offline_without_a_stored_fetch_is_an_error(served: Path) -> None:
    carry(served, pr_head(served))
    proc = run_series("upstream", "--offline", cwd=served, expect=1)
    assert "no stored fetch" in proc.stderr and len(proc.stderr.strip().splitlines()) == 2, proc.stderr


def test_a_head_that_differs_from_ours(served: Path, httpserver: HTTPServer) -> None:
    head = pr_head(served)
    carry(served, "b" * 40)
    serve(httpserver, head, comments=[])
    proc = run_series("upstream", cwd=served, env=env_for(httpserver))
    assert "series adopt-upstream 61050 --refresh' shows the range-diff" in proc.stdout, proc.stdout
    assert "theirs turn for 5 days" in proc.stdout, proc.stdout


def test_merged_in_the_first_release_that_contains_it(served: Path, httpserver: HTTPServer) -> None:
    head = pr_head(served)
    carry(served, head)
    repo = pygit2.Repository(str(served))
    merge = str(repo.revparse_single("v0.30.0").id)  # contained in v0.30.0 and every later release
    pull = github_fixture("pull-61050-merged", API=httpserver.url_for("").rstrip("/"), HEAD_SHA=head, MERGE_SHA=merge)
    assert isinstance(pull, dict)
    serve(httpserver, head, pull=pull)
    data = json.loads(run_series("upstream", "--json", cwd=served, env=env_for(httpserver)).stdout)
    row = data["rows"][0]
    assert (row["status"], row["released_in"], row["turn"], row["follow_ups"]) == ("merged", "v0.30.0", "done", [])


def _merged_then_reverted(served: Path, httpserver: HTTPServer, tags: dict[str, str]) -> list[str]:
    """Upstream's trunk goes on: #61050 squash-merged (M), reverted by #61100 (R), the revert
    reverted by #61200 (L); `tags` puts release tags on them. The rows' JSON and text."""
    head = pr_head(served)
    carry(served, head)
    tip = git(served, "rev-parse", "upstream/main").strip()
    m = commit_files(
        served, tip, {"vllm/evict.py": "FIXED = True\n"}, "[Core] Fix offload eviction (#61050)", "2026-02-01T00:00:00Z"
    )
    r = commit_files(
        served,
        m,
        {"vllm/evict.py": None},
        'Revert "[Core] Fix offload eviction (#61050)" (#61100)',
        "2026-02-02T00:00:00Z",
    )
    subject = 'Revert "Revert "[Core] Fix offload eviction (#61050)" (#61100)" (#61200)'
    landed = commit_files(served, r, {"vllm/evict.py": "FIXED = True\n"}, subject, "2026-02-03T00:00:00Z")
    shas = {"M": m, "R": r, "L": landed}
    git(served, "update-ref", "refs/remotes/upstream/main", landed)
    for tag, at in tags.items():
        git(served, "tag", tag, shas[at])
    pull = github_fixture("pull-61050-merged", API=httpserver.url_for("").rstrip("/"), HEAD_SHA=head, MERGE_SHA=m)
    assert isinstance(pull, dict)
    serve(httpserver, head, pull=pull)
    row = json.loads(run_series("upstream", "--json", cwd=served, env=env_for(httpserver)).stdout)["rows"][0]
    return [row["released_in"], row["notes"], run_series("upstream", "--offline", cwd=served).stdout.splitlines()[1]]


def test_a_release_with_the_merge_and_its_revert_does_not_carry_the_pr(served: Path, httpserver: HTTPServer) -> None:
    released, notes, first = _merged_then_reverted(served, httpserver, {"v0.40.0": "R"})
    assert released is None and first.startswith("#61050 offload-evict-fix: merged, done"), first
    assert "then reverted by #61100" in notes[0] and notes[0].endswith("no release here carries it"), notes


def test_a_revert_in_a_later_release_is_said_beside_the_release(served: Path, httpserver: HTTPServer) -> None:
    released, notes, first = _merged_then_reverted(served, httpserver, {"v0.40.0": "M", "v0.41.0": "R"})
    assert released == "v0.40.0" and "merged in v0.40.0" in first, first
    assert notes[0].startswith("reverted by #61100") and "v0.41.0 does not carry it" in notes[0]


def test_relanded_by_a_revert_of_the_revert_the_release_carries_it(served: Path, httpserver: HTTPServer) -> None:
    released, notes, _ = _merged_then_reverted(served, httpserver, {"v0.40.0": "R", "v0.41.0": "L"})
    assert released == "v0.41.0", (released, notes)
    assert "reverted by #61100" in notes[0] and "relanded by #61200" in notes[0] and notes[0].endswith("before v0.41.0")


def test_hostile_answers_are_refused_in_one_line(served: Path, httpserver: HTTPServer) -> None:
    head = pr_head(served)
    carry(served, head)
    serve(httpserver, head, comments=[{"id": "seven", "user": {"login": "x"}, "created_at": ago(days=1)}])
    proc = run_series("upstream", cwd=served, env=env_for(httpserver), expect=1)
    assert "a review comment without an id" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    httpserver.clear()
    serve(httpserver, head, checks={"total_count": 1, "check_runs": "all green"})
    proc = run_series("upstream", cwd=served, env=env_for(httpserver), expect=1)
    assert "check runs that are not a list" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    httpserver.clear()
    serve(httpserver, head, status={"state": "success", "statuses": [{"context": "buildkite/ci/pr", "state": "done"}]})
    proc = run_series("upstream", cwd=served, env=env_for(httpserver), expect=1)
    assert "a commit status without a context or a known state" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    httpserver.clear()
    serve(
        httpserver,
        head,
        comments=[
            {
                "id": i,
                "in_reply_to_id": None,
                "position": 1,
                "created_at": ago(days=1),
                "user": {"login": "flood", "type": "User"},
                "body": "x" * 200,
            }
            for i in range(1, 400)
        ],
    )
    proc = run_series("upstream", cwd=served, env=env_for(httpserver, SERIES_HTTP_MAX_BYTES="20000"), expect=1)
    assert "sent more than 20000 bytes" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (served / ".git" / "series" / "upstream" / "fetched.json").exists()


def test_follow_ups_of_the_pr_fill_the_row(served: Path, httpserver: HTTPServer) -> None:
    """A fix of #61050 landed on upstream's main (fetched): the row lists it, not carried,
    in text and JSON, online and offline alike (git alone reads it)."""
    head = pr_head(served)
    carry(served, head)
    fix = commit_files(
        served,
        "refs/remotes/upstream/main",
        {"vllm/fix.py": "FIXED = True\n"},
        "[Bugfix] Fix for #61050: pinned blocks (#61060)",
        "2026-02-13T00:00:00Z",
    )
    git(served, "update-ref", "refs/remotes/upstream/main", fix)
    serve(httpserver, head)
    text = run_series("upstream", cwd=served, env=env_for(httpserver)).stdout
    assert (
        f"  fix of #61050: {fix[:12]} '[Bugfix] Fix for #61050: pinned blocks (#61060)': not carried"
        in text.splitlines()
    ), text
    data = json.loads(run_series("upstream", "--offline", "--json", cwd=served).stdout)
    (follow,) = data["rows"][0]["follow_ups"]
    assert (follow["kind"], follow["commit"]["sha"], follow["commit"]["pr"], follow["carried"]) == (
        "fix",
        fix,
        61060,
        None,
    ), follow


def test_buildkite_commit_statuses_join_the_ci_gate(served: Path, httpserver: HTTPServer) -> None:
    """vLLM's Buildkite reports commit statuses, not check runs: the ci gate reads both, and
    any failing one fails it (the check runs here all passed)."""
    head = pr_head(served)
    carry(served, head)
    serve(
        httpserver,
        head,
        status={
            "state": "failure",
            "total_count": 2,
            "statuses": [
                {"context": "buildkite/ci/pr", "state": "failure"},
                {"context": "buildkite/ci/pr/basic-correctness", "state": "pending"},
            ],
        },
    )
    data = json.loads(run_series("upstream", "--json", cwd=served, env=env_for(httpserver)).stdout)
    gates = {g["name"]: g for g in data["rows"][0]["gates"]}
    assert (gates["ci"]["state"], gates["ci"]["detail"]) == ("failing", "failing: buildkite/ci/pr"), gates
    assert gates["dco"]["state"] == "ok", gates
    # stored and read back offline: the same gates
    offline = json.loads(run_series("upstream", "--offline", "--json", cwd=served).stdout)
    assert offline["rows"][0]["gates"] == data["rows"][0]["gates"]


def test_resolved_threads_come_from_graphql_and_without_a_token_the_row_says_it_guessed(
    served: Path, httpserver: HTTPServer
) -> None:
    """GitHub says which review threads are resolved only through GraphQL (with a token): a
    resolved thread whose last comment is the reviewer's is not our turn; the pages of
    threads are all read; without a token the row falls back to 'outdated = settled' and
    says so; a GraphQL error or a thread without isResolved is refused in one line."""
    head = pr_head(served)
    carry(served, head)
    serve(httpserver, head, resolved=True)
    data = json.loads(run_series("upstream", "--json", cwd=served, env=env_for(httpserver)).stdout)
    row = data["rows"][0]
    assert (row["turn"], row["waiting"], row["threads_known"]) == ("theirs", [], True), row
    asked = [r for r, _ in httpserver.log if r.path == "/graphql"]
    assert len(asked) == 1 and asked[0].headers["Authorization"] == f"Bearer {TOKEN}"
    assert json.loads(asked[0].data)["variables"] == {
        "owner": "vllm-project",
        "name": "vllm",
        "number": 61050,
        "after": None,
    }
    # two pages: the thread resolved on the second still counts
    httpserver.clear()
    serve(
        httpserver,
        head,
        threads={None: graphql_threads((99, True), more="page-2"), "page-2": graphql_threads((7, True))},
    )
    row = json.loads(run_series("upstream", "--json", cwd=served, env=env_for(httpserver)).stdout)["rows"][0]
    assert row["turn"] == "theirs", row
    # no token: unknown, so the open thread (its line still in the diff) waits, and the row says why
    httpserver.clear()
    serve(httpserver, head, resolved=True)
    env = {k: v for k, v in env_for(httpserver).items() if k != "GITHUB_TOKEN"}
    text = run_series("upstream", cwd=served, env=env).stdout
    assert "waiting on us: review thread: @maint-one commented last" in text, text
    assert "which review threads are resolved is not known without a token" in text, text
    assert not [r for r, _ in httpserver.log if r.path == "/graphql"]
    for threads, said in (
        ({"errors": [{"message": f"Resource not accessible by integration {TOKEN}"}]}, "refused the review threads"),
        (
            {
                "data": {
                    "repository": {
                        "pullRequest": {"reviewThreads": {"pageInfo": {"hasNextPage": False}, "nodes": [{}]}}
                    }
                }
            },
            "without isResolved",
        ),
    ):
        httpserver.clear()
        serve(httpserver, head, threads=threads)
        proc = run_series("upstream", cwd=served, env=env_for(httpserver), expect=1)
        assert said in proc.stderr and len(proc.stderr.strip().splitlines()) <= 2, proc.stderr
        assert TOKEN not in proc.stderr
