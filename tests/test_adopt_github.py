"""adopt-upstream with PR metadata from the GitHub API (a local server): title, URL,
base sha; errors are one line and move nothing; the token is never shown or written."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from pytest_httpserver import HTTPServer

from series.seriesfile import config
from tests.conftest import run_series, sh
from tests.repos import build_fork, build_upstream, github_fixture

TOKEN = "ghp_ADOPTsecret1122334455"
PULL = "/repos/vllm-project/vllm/pulls/61050"


def env_for(server: HTTPServer) -> dict[str, str]:
    return {"SERIES_GITHUB_API": server.url_for(""), "GITHUB_TOKEN": TOKEN}


def shas(fork: Path) -> dict[str, str]:
    repo = pygit2.Repository(str(fork))
    return {name: str(repo.revparse_single(name).id) for name in ("refs/tags/v0.30.0", "refs/tags/v0.31.0")}


def test_metadata_names_the_topic_and_the_trailer(served: Path, httpserver: HTTPServer, tmp_path: Path) -> None:
    s = shas(served)
    head = sh("git ls-remote upstream refs/pull/61050/head", served).split()[0]
    httpserver.expect_request(PULL).respond_with_json(
        github_fixture(
            "pull-61050", API=httpserver.url_for("").rstrip("/"), HEAD_SHA=head, BASE_SHA=s["refs/tags/v0.31.0"]
        )
    )
    # without upstream/main only GitHub's base sha can tell the PR's own commits
    sh("git update-ref -d refs/remotes/upstream/HEAD; git update-ref -d refs/remotes/upstream/main", served)
    proc = run_series(
        "-v", "adopt-upstream", "61050", "--replaces", "offload-evict-fix", cwd=served, env=env_for(httpserver)
    )
    assert "'[Bugfix][KV offload] Fix eviction order of touched blocks' by @ada-upstream" in proc.stdout, proc.stdout
    assert "source: github" in proc.stdout, proc.stdout
    topic = config.load(served / "series.yaml").topic("pr-61050")
    assert topic.summary == "[Bugfix][KV offload] Fix eviction order of touched blocks", topic
    repo = pygit2.Repository(str(served))
    new = repo.references["refs/heads/topic/pr-61050"].peel(pygit2.Commit)
    assert "Upstream-PR: https://github.com/vllm-project/vllm/pull/61050\n" in new.message, new.message
    assert new.parents[0].parents[0].id == repo.revparse_single("v0.30.0").id
    # the token: sent, never shown, never written
    assert {r.headers.get("Authorization") for r, _ in httpserver.log} == {f"Bearer {TOKEN}"}
    assert TOKEN not in proc.stdout + proc.stderr and "GET " in proc.stderr, proc.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.stat().st_size < 1_000_000:
            assert TOKEN.encode() not in path.read_bytes(), f"token written to {path}"


@pytest.mark.parametrize(
    "status, fixture, expected",
    [
        (404, "error-404", "GitHub API: pull request #61050 not found (404)"),
        (401, "error-401", "GitHub API refused the token (401 Bad credentials)"),
    ],
)
def test_api_errors_are_one_line_and_move_nothing(
    served: Path, httpserver: HTTPServer, status: int, fixture: str, expected: str
) -> None:
    httpserver.expect_request(PULL).respond_with_json(github_fixture(fixture), status=status)
    before = (served / "series.yaml").read_text()
    proc = run_series(
        "adopt-upstream", "61050", "--replaces", "offload-evict-fix", cwd=served, env=env_for(httpserver), expect=1
    )
    assert proc.stderr.strip() == f"series: error: {proc.stderr.strip()[len('series: error: ') :]}"
    assert expected in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert TOKEN not in proc.stderr
    assert (served / "series.yaml").read_text() == before
    assert pygit2.Repository(str(served)).references.get("refs/heads/topic/pr-61050") is None


def test_rate_limit_is_one_line(served: Path, httpserver: HTTPServer) -> None:
    httpserver.expect_request(PULL).respond_with_json(
        github_fixture("error-rate-limit"),
        status=429,
        headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "4102444800", "Retry-After": "60"},
    )
    proc = run_series(
        "adopt-upstream", "61050", "--replaces", "offload-evict-fix", cwd=served, env=env_for(httpserver), expect=1
    )
    assert "rate limit exhausted (429)" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_no_network_works_from_git_alone_and_says_so(served: Path) -> None:
    proc = run_series(
        "adopt-upstream",
        "61050",
        "--replaces",
        "offload-evict-fix",
        cwd=served,
        env={"SERIES_GITHUB_API": "http://127.0.0.1:9"},
    )
    assert "note: cannot reach the GitHub API" in proc.stderr and "working from git alone" in proc.stderr, proc.stderr
    assert "source: git" in proc.stdout
    assert config.load(served / "series.yaml").topic("pr-61050").upstream_pr == 61050


def test_series_offline_env_skips_the_api(served: Path, httpserver: HTTPServer) -> None:
    run_series("adopt-upstream", "61050", "--no-replace", cwd=served, env=dict(env_for(httpserver), SERIES_OFFLINE="1"))
    assert len(httpserver.log) == 0


def test_githubs_base_is_fetched_when_our_view_of_main_is_stale(tmp_path: Path, httpserver: HTTPServer) -> None:
    from tests.repos import commit_files, git

    work = build_upstream(tmp_path / "upstream-work")
    bare = tmp_path / "upstream.git"
    sh(f"git clone -q --mirror {work} {bare}", tmp_path)
    fork = build_fork(bare, tmp_path / "fork")  # knows upstream/main = v0.31.0 from here on
    m1 = commit_files(work, "v0.31.0", {"vllm/m1.py": "M1 = 1\n"}, "upstream change M1", "2026-02-11T00:00:00Z")
    pr = commit_files(work, m1, {"vllm/pr.py": "PR = 1\n"}, "the PR's own change", "2026-02-12T00:00:00Z")
    m2 = commit_files(work, m1, {"vllm/m2.py": "M2 = 1\n"}, "upstream change M2", "2026-02-13T00:00:00Z")
    git(work, "update-ref", "refs/heads/main", m2)
    git(work, "update-ref", "refs/pull/61400/head", pr)
    sh(f"git --git-dir={bare} fetch -q {work} '+refs/*:refs/*'", tmp_path)
    fixture = github_fixture("pull-61050", HEAD_SHA=pr, BASE_SHA=m2)
    fixture["number"] = 61400  # type: ignore[index]
    fixture["html_url"] = "https://github.com/vllm-project/vllm/pull/61400"  # type: ignore[index]
    httpserver.expect_request("/repos/vllm-project/vllm/pulls/61400").respond_with_json(fixture)
    run_series("adopt-upstream", "61400", "--no-replace", cwd=fork, env=env_for(httpserver))
    repo = pygit2.Repository(str(fork))
    head = repo.references["refs/heads/topic/pr-61400"].peel(pygit2.Commit)
    assert head.message.startswith("the PR's own change"), head.message
    assert head.parents[0].id == repo.revparse_single("v0.30.0").id, "only the PR's commit, not M1"
