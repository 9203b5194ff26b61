"""series preflight: duplicate upstream PRs ranked by overlap, exact paths, DCO; API and git refs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from series.verbs.preflight import signed_off
from tests.conftest import from_template, run_series, sh
from tests.repos import add_pull_request, build_fork, build_upstream, commit_files, git, github_fixture

LRU = "vllm/v1/kv_offload/cpu/policies/lru.py"
TOKEN = "ghp_PREFLIGHTsecret0987654321"


def _served(root: Path) -> Path:
    work = build_upstream(root / "upstream-work")
    add_pull_request(work, 61050)  # the duplicate of offload-evict-fix
    lru = (work / LRU).read_text()
    evict = commit_files(
        work,
        "v0.30.0",
        {LRU: lru.replace("key, _ =", "key, _slot =")},
        "[KV offload] name the evicted slot",
        "2026-01-22T08:00:00Z",
        author={"GIT_AUTHOR_NAME": "Kay Dev", "GIT_AUTHOR_EMAIL": "kay@example.com"},
    )
    git(work, "update-ref", "refs/pull/61100/head", evict)
    sched = commit_files(
        work,
        "v0.31.0",
        {"vllm/v1/core/sched/scheduler.py": "# other\n"},
        "[Core] scheduler rewrite",
        "2026-01-23T08:00:00Z",
    )
    git(work, "update-ref", "refs/pull/61200/head", sched)
    stale = commit_files(work, "v0.30.0", {LRU: lru + "# stale\n"}, "[KV offload] stale idea", "2000-01-01T00:00:00Z")
    git(work, "update-ref", "refs/pull/50000/head", stale)
    bare = root / "upstream.git"
    sh(f"git clone -q --mirror {work} {bare}", root)
    return build_fork(bare, root / "fork")


@pytest.fixture
def served(tmp_path: Path) -> Path:
    """A fork whose upstream is a bare repository serving three PR heads."""
    return from_template("preflight", _served, tmp_path)


def test_offline_fetch_ranks_the_duplicate_first_and_checks_dco(served: Path) -> None:
    out = run_series("preflight", "offload-evict-fix", "--fetch", "--days", "3650", "--json", cwd=served).stdout
    data = json.loads(out)
    ranked = [(c["number"], len(c["shared_files"]), c["overlapping_hunks"]) for c in data["candidates"]]
    assert ranked == [(61050, 2, 2), (61100, 1, 0)], ranked
    assert data["candidates"][0]["author"] == "Ada Upstream"
    assert data["paths"] == ["tests/v1/kv_offload/test_lru.py", LRU], data["paths"]
    assert data["dco_ok"] is False and len(data["commits"]) == 2, data
    assert data["source"] == "git refs", data
    # PR refs are remote-tracking refs: fetched, never branches
    refs = sh("git for-each-ref --format='%(refname)' refs/remotes/upstream/pr", served).split()
    assert sorted(refs) == [f"refs/remotes/upstream/pr/{n}" for n in (50000, 61050, 61100, 61200)], refs


def test_offline_text_report(served: Path) -> None:
    run_series("preflight", "offload-evict-fix", "--fetch", "--days", "3650", cwd=served)
    text = run_series("preflight", "offload-evict-fix", "--offline", "--days", "3650", cwd=served).stdout
    lines = text.splitlines()
    assert lines[0] == "preflight offload-evict-fix: 2 commit(s) over v0.30.0", text
    assert f"  {LRU}" in lines and "DCO: 2 of 2 commit(s) lack Signed-off-by" in text, text
    first = next(l for l in lines if l.startswith("  #"))
    assert first.startswith("  #61050") and "2 shared files, 2 overlapping hunks" in first, text
    assert "#50000" not in text, "a PR head older than --days is not a candidate"
    assert "note: offline" in text, text


def test_dco_ok_when_every_commit_is_signed_off(served: Path) -> None:
    sh(
        "git checkout -q topic/api-hello && git commit -q --amend -s --no-edit && git checkout -q --detach v0.30.0",
        served,
    )
    out = run_series("preflight", "api-hello", "--offline", cwd=served).stdout
    assert "DCO: ok, all 1 commit(s) carry Signed-off-by" in out, out
    # this clone has no PR head fetched: no duplicate search was made, and it says so
    assert (
        "upstream PRs touching the same files: not searched: no PR heads under "
        "refs/remotes/upstream/pr/ to search: --fetch fetches them (or run online)"
    ) in out, out
    assert ": none" not in out, out
    assert signed_off("x\n\nSigned-off-by: A B <a@b.c>\n")
    assert not signed_off("x\n\nSigned-off-by: nobody\n")


def _serve_api(server: HTTPServer, **values: str) -> None:
    base = server.url_for("").rstrip("/")
    repo = "/repos/vllm-project/vllm"
    query = {"sort": "updated", "direction": "desc", "per_page": "100"}
    page2 = f"{base}{repo}/pulls?state=open&sort=updated&direction=desc&per_page=100&page=2"
    server.expect_request(f"{repo}/pulls", query_string={"state": "open", **query, "page": "2"}).respond_with_json(
        github_fixture("pulls-open-page-2", API=base)
    )
    server.expect_request(f"{repo}/pulls", query_string={"state": "open", **query}).respond_with_json(
        github_fixture("pulls-page-1", API=base, **values),
        headers={"Link": f'<{page2}>; rel="next"', "X-RateLimit-Remaining": "4990"},
    )
    server.expect_request(f"{repo}/pulls", query_string={"state": "closed", **query}).respond_with_json(
        github_fixture("pulls-page-2", API=base), headers={"X-RateLimit-Remaining": "4989"}
    )
    files2 = f"{base}{repo}/pulls/61050/files?per_page=100&page=2"
    server.expect_request(f"{repo}/pulls/61050/files", query_string={"per_page": "100", "page": "2"}).respond_with_json(
        github_fixture("files-61050-page-2", API=base)
    )
    server.expect_request(f"{repo}/pulls/61050/files").respond_with_json(
        github_fixture("files-61050-page-1", API=base), headers={"Link": f'<{files2}>; rel="next"'}
    )
    for number in (61100, 61200, 60900, 58000):
        server.expect_request(f"{repo}/pulls/{number}/files").respond_with_json(
            github_fixture(f"files-{number}", API=base)
        )


def test_github_api_ranks_duplicate_first_and_never_shows_the_token(
    fork: Path, httpserver: HTTPServer, tmp_path: Path
) -> None:
    _serve_api(httpserver)
    env = {"SERIES_GITHUB_API": httpserver.url_for(""), "GITHUB_TOKEN": TOKEN}
    proc = run_series("-v", "preflight", "offload-evict-fix", cwd=fork, env=env)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("  #")]
    assert lines[0].startswith("  #61050 open") and "ada-upstream" in lines[0], proc.stdout
    assert "2 shared files, 2 overlapping hunks" in lines[0], proc.stdout
    assert lines[1].startswith("  #58000 open") and "1 shared file, 1 overlapping hunk" in lines[1], (
        "open for 90 days: still a candidate, whatever its age"
    )
    assert lines[2].startswith("  #61100 closed") and "1 shared file, 0 overlapping hunks" in lines[2], proc.stdout
    assert len(lines) == 3 and "#60900" not in proc.stdout, "closed 90 days ago: outside the window"
    assert "source: github" in proc.stdout and "GET " in proc.stderr, proc.stderr
    assert TOKEN not in proc.stdout + proc.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.stat().st_size < 1_000_000:
            assert TOKEN.encode() not in path.read_bytes(), f"token written to {path}"
    auth = {r.headers.get("Authorization") for r, _ in httpserver.log}
    assert auth == {f"Bearer {TOKEN}"}, auth
    # 2 open pages, 1 closed + files of 61200, 61050 (2 pages), 58000, 61100; never 60900
    assert len(httpserver.log) == 8, [r.full_path for r, _ in httpserver.log]


def test_api_rate_limit_is_one_line(fork: Path, httpserver: HTTPServer) -> None:
    httpserver.expect_request("/repos/vllm-project/vllm/pulls").respond_with_json(
        github_fixture("error-rate-limit"),
        status=403,
        headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "4102444800"},
    )
    proc = run_series(
        "preflight", "offload-evict-fix", cwd=fork, expect=1, env={"SERIES_GITHUB_API": httpserver.url_for("")}
    )
    assert proc.stderr.startswith("series: error: GitHub API rate limit exhausted (403)"), proc.stderr
    assert "set GITHUB_TOKEN" in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr


def test_unreachable_api_falls_back_to_git_refs(served: Path) -> None:
    run_series("preflight", "offload-evict-fix", "--fetch", cwd=served)
    proc = run_series(
        "preflight", "offload-evict-fix", "--days", "3650", cwd=served, env={"SERIES_GITHUB_API": "http://127.0.0.1:9"}
    )
    assert "note: cannot reach the GitHub API" in proc.stderr, proc.stderr
    assert "  #61050" in proc.stdout, proc.stdout


def test_unknown_topic_and_empty_topic(fork: Path) -> None:
    proc = run_series("preflight", "nope", "--offline", cwd=fork, expect=1)
    assert "no topic named 'nope'" in proc.stderr, proc.stderr
    sh("git branch -f topic/api-hello v0.30.0", fork)
    proc = run_series("preflight", "api-hello", "--offline", cwd=fork, expect=1)
    assert "no commits over v0.30.0" in proc.stderr, proc.stderr


def test_preflight_stops_before_exceeding_the_rate_limit(fork: Path, httpserver: HTTPServer) -> None:
    httpserver.expect_request("/repos/vllm-project/vllm/pulls").respond_with_json(
        github_fixture("pulls-page-1"), headers={"X-RateLimit-Remaining": "1"}
    )
    proc = run_series(
        "preflight", "offload-evict-fix", cwd=fork, expect=1, env={"SERIES_GITHUB_API": httpserver.url_for("")}
    )
    assert "needs 2 GitHub API requests but only 1 remain" in proc.stderr, proc.stderr
    assert len(httpserver.log) == 2, "the open and the closed list; no file request was spent"
    httpserver.expect_request("/repos/vllm-project/vllm/pulls/61200/files").respond_with_json(
        github_fixture("files-61200")
    )
    out = run_series(
        "preflight", "offload-evict-fix", "--limit", "1", cwd=fork, env={"SERIES_GITHUB_API": httpserver.url_for("")}
    ).stdout
    assert "note: checked the 1 most recently updated of 2 PRs (--limit)" in out, out


def test_fetched_pr_heads_are_not_upstream_history(served: Path) -> None:
    """Our own topic posted upstream as PR #62000: fetching PR heads must not make its
    commits look like upstream's (status would count 0, a rebase would retire it)."""
    sh("git push -q upstream topic/offload-evict-fix:refs/pull/62000/head", served)
    out = run_series("preflight", "offload-evict-fix", "--fetch", "--days", "3650", cwd=served).stdout
    assert "  #62000" in out and "2 commit(s) over v0.30.0" in out, out
    rows = {t["name"]: t for t in json.loads(run_series("status", "--json", cwd=served).stdout)["topics"]}
    assert rows["offload-evict-fix"]["commits"] == 2, rows["offload-evict-fix"]


def test_offline_never_drops_an_old_pr_head_and_knows_merged_ones_from_main(served: Path) -> None:
    """Without --days every PR head counts, whatever its age (ranked by overlap, then
    recency); a PR whose squash commit '(#N)' is on main is merged, the rest unknown."""
    upstream = served.parent / "upstream.git"
    rewrite = commit_files(
        upstream,
        "v0.30.0",
        {LRU: (served / LRU).read_text() + "# v0.31 draft\n"},
        "[KV offload] rewrite LRU touch",
        "2026-02-01T08:00:00Z",
    )
    git(upstream, "update-ref", "refs/pull/60001/head", rewrite)  # v0.31.0 is its squash "(#60001)"
    data = json.loads(run_series("preflight", "offload-evict-fix", "--fetch", "--json", cwd=served).stdout)
    found = {c["number"]: c for c in data["candidates"]}
    assert found[50000]["state"] == "unknown" and found[50000]["updated_at"].startswith("2000-01-01"), found
    assert found[60001]["state"] == "merged", found
    assert found[60001]["merge_commit"] == sh("git rev-parse v0.31.0", served).strip(), found
    assert found[61050]["state"] == "unknown", "not on main: open or closed, git cannot tell"
    order = [c["number"] for c in data["candidates"]]
    assert order[0] == 61050 and order.index(60001) < order.index(50000), order  # same overlap: newest first
    assert data["checked"] == 5, data
    text = run_series("preflight", "offload-evict-fix", "--offline", cwd=served).stdout
    assert "every head, whatever its age; 5 checked" in text and "(merged as " in text, text
    narrowed = run_series("preflight", "offload-evict-fix", "--offline", "--days", "3650", cwd=served).stdout
    assert "#50000" not in narrowed and "older than 3650 days left out (--days)" in narrowed, narrowed


def test_api_prs_fetched_at_the_same_head_are_compared_from_git_refs(served: Path, httpserver: HTTPServer) -> None:
    """At vLLM's scale (about a thousand open PRs) an API request per PR is the cost: a PR
    whose head is fetched at GitHub's head sha is compared from git instead."""
    run_series("preflight", "offload-evict-fix", "--fetch", cwd=served)
    head = sh("git rev-parse refs/remotes/upstream/pr/61050", served).strip()
    _serve_api(httpserver, HEAD_SHA=head)
    proc = run_series("preflight", "offload-evict-fix", cwd=served, env={"SERIES_GITHUB_API": httpserver.url_for("")})
    lines = [l for l in proc.stdout.splitlines() if l.startswith("  #")]
    assert lines[0].startswith("  #61050 open") and "2 shared files, 2 overlapping hunks" in lines[0], proc.stdout
    asked = [r.full_path for r, _ in httpserver.log]
    assert not any("/pulls/61050/files" in p for p in asked), asked
    assert any("/pulls/61200/files" in p for p in asked), "a head GitHub has newer than ours is asked for"
    assert "1 of 4 PRs compared from their heads fetched into git refs" in proc.stdout, proc.stdout


DUPLICATE_TITLE = "[Bugfix][KV offload] Fix eviction order of touched blocks"  # #61050's, in the fixture
DUPLICATE_BODY = f"## Purpose\n\n{DUPLICATE_TITLE}\n\n## Test Plan\n\npytest tests/v1/kv_offload\n"


def test_api_scores_each_candidate_as_vllms_duplicate_bot(fork: Path, httpserver: HTTPServer, tmp_path: Path) -> None:
    """The score vLLM's duplicate-PR bot would give our PR against each candidate once posted
    (0.75 text + 0.25 file Jaccard, flagged at 0.75): #61050's own title and body with the
    same two files crosses; #61100, another text and one file of two, stays below."""
    _serve_api(httpserver)
    env = {"SERIES_GITHUB_API": httpserver.url_for("")}
    body = tmp_path / "body.md"
    body.write_text(DUPLICATE_BODY)
    data = json.loads(
        run_series(
            "preflight",
            "offload-evict-fix",
            "--json",
            "--title",
            DUPLICATE_TITLE,
            "--body-file",
            str(body),
            cwd=fork,
            env=env,
        ).stdout
    )
    scores = {c["number"]: c["duplicate_bot"] for c in data["candidates"]}
    assert scores[61050]["flagged"] and scores[61050]["files"] == 1.0, scores
    assert scores[61050]["text"] > 0.999 and scores[61050]["score"] >= 0.75, scores
    assert not scores[61100]["flagged"] and scores[61100]["score"] < 0.75 and scores[61100]["files"] == 0.5, scores
    assert data["duplicate_bot"]["flagged"] == [61050] and data["duplicate_bot"]["threshold"] == 0.75, data
    assert data["duplicate_bot"]["title"] == DUPLICATE_TITLE and "MiniLM" in data["duplicate_bot"]["text_model"]
    text = run_series("preflight", "offload-evict-fix", cwd=fork, env=env).stdout
    bot_lines = [l.strip() for l in text.splitlines() if l.strip().startswith("duplicate bot:")]
    assert len(bot_lines) == 3, text  # one per candidate
    assert bot_lines[0].startswith("duplicate bot: 62% (text 49%, files 100%), below its 75% threshold"), text
    assert "note: duplicate bot: scored as '[Bugfix][KV offload] keep request order when touching " in text, (
        "by default the title and description propose would post"
    )
