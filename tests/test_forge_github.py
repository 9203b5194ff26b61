"""GitHubForge against a local HTTP server serving recorded-shape API answers. No network."""

from __future__ import annotations

import datetime as dt
import logging
import os
import stat
import time
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from series.forge import open_forge
from series.forge.base import ForgeError, ForgeUnreachable, hunks_of_patch, ranges_overlap
from series.forge.github import GitHubForge, api_base, find_token
from series.model import PRNumber, Upstream
from tests.repos import github_fixture

REPO = "/repos/vllm-project/vllm"
TOKEN = "ghp_SECRETtoken1234567890"


def forge_for(server: HTTPServer, token: str | None = TOKEN) -> GitHubForge:
    return GitHubForge("vllm-project/vllm", server.url_for("").rstrip("/"), token)


def api(server: HTTPServer) -> str:
    return server.url_for("").rstrip("/")


def test_pull_metadata_with_bearer_token_and_run_cache(httpserver: HTTPServer) -> None:
    httpserver.expect_request(f"{REPO}/pulls/61050", headers={"Authorization": f"Bearer {TOKEN}"}).respond_with_json(
        github_fixture("pull-61050", API=api(httpserver), HEAD_SHA="a" * 40, BASE_SHA="b" * 40)
    )
    forge = forge_for(httpserver)
    pr = forge.pull(PRNumber(61050))
    assert (pr.number, pr.author, pr.state, pr.merged) == (61050, "ada-upstream", "open", False), pr
    assert (pr.head_sha, pr.base_sha, pr.merge_commit) == ("a" * 40, "b" * 40, None), pr
    assert pr.reference == "https://github.com/vllm-project/vllm/pull/61050"
    assert forge.pull(PRNumber(61050)) == pr
    assert len(httpserver.log) == 1, "the second question must come from the run's cache"
    assert TOKEN not in repr(forge)


def test_merged_pull_has_its_merge_commit(httpserver: HTTPServer) -> None:
    httpserver.expect_request(f"{REPO}/pulls/61050").respond_with_json(
        github_fixture("pull-61050-merged", MERGE_SHA="c" * 40)
    )
    pr = forge_for(httpserver).pull(PRNumber(61050))
    assert (pr.state, pr.merged, pr.merge_commit) == ("merged", True, "c" * 40), pr


def _serve_pull_list(server: HTTPServer) -> None:
    """Open PRs on two pages (the second: #58000, open, last updated 90 days ago), then the
    closed ones, newest update first."""
    query = {"sort": "updated", "direction": "desc", "per_page": "100"}
    page2 = f"{api(server)}{REPO}/pulls?state=open&sort=updated&direction=desc&per_page=100&page=2"
    server.expect_request(f"{REPO}/pulls", query_string={"state": "open", **query, "page": "2"}).respond_with_json(
        github_fixture("pulls-open-page-2")
    )
    server.expect_request(f"{REPO}/pulls", query_string={"state": "open", **query}).respond_with_json(
        github_fixture("pulls-page-1"), headers={"Link": f'<{page2}>; rel="next", <{page2}>; rel="last"'}
    )
    server.expect_request(f"{REPO}/pulls", query_string={"state": "closed", **query}).respond_with_json(
        github_fixture("pulls-page-2")
    )


def test_list_pulls_keeps_every_open_pr_whatever_its_age_and_the_recently_closed(httpserver: HTTPServer) -> None:
    _serve_pull_list(httpserver)
    since = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=30)
    pulls = forge_for(httpserver).list_pulls(since)
    assert [(p.number, p.state) for p in pulls] == [
        (61200, "open"),
        (61050, "open"),
        (58000, "open"),
        (61100, "closed"),
    ], pulls
    assert len(httpserver.log) == 3, [r.url for r, _ in httpserver.log]


def test_pull_files_paginated_with_hunks(httpserver: HTTPServer) -> None:
    page2 = f"{api(httpserver)}{REPO}/pulls/61050/files?per_page=100&page=2"
    httpserver.expect_request(
        f"{REPO}/pulls/61050/files", query_string={"per_page": "100", "page": "2"}
    ).respond_with_json(github_fixture("files-61050-page-2"))
    httpserver.expect_request(f"{REPO}/pulls/61050/files").respond_with_json(
        github_fixture("files-61050-page-1"), headers={"Link": f'<{page2}>; rel="next"'}
    )
    files = forge_for(httpserver).pull_files(PRNumber(61050))
    assert [(f.path, f.hunks) for f in files] == [
        ("vllm/v1/kv_offload/cpu/policies/lru.py", ((9, 0),)),
        ("tests/v1/kv_offload/test_lru.py", ((2, 0),)),
    ], files


def test_a_next_page_on_another_host_is_refused(httpserver: HTTPServer) -> None:
    httpserver.expect_request(f"{REPO}/pulls/61050/files").respond_with_json(
        [], headers={"Link": '<http://evil.example:1/steal?page=2>; rel="next"'}
    )
    with pytest.raises(ForgeError, match="another host"):
        forge_for(httpserver).pull_files(PRNumber(61050))


@pytest.mark.parametrize(
    "status, headers, fixture, expected",
    [
        (401, {}, "error-401", "refused the token (401 Bad credentials)"),
        (404, {}, "error-404", "pull request #61050 not found (404)"),
        (
            403,
            {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()) + 600)},
            "error-rate-limit",
            "rate limit exhausted (403)",
        ),
        (
            429,
            {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()) + 60)},
            "error-rate-limit",
            "rate limit exhausted (429)",
        ),
        (403, {"Retry-After": "60"}, "error-secondary-rate-limit", "secondary rate limit (403)"),
        (403, {}, "error-secondary-rate-limit", "refused pull request #61050 (403): You have exceeded"),
    ],
)
def test_errors_are_one_clear_line_without_the_token(
    httpserver: HTTPServer, status: int, headers: dict[str, str], fixture: str, expected: str
) -> None:
    httpserver.expect_request(f"{REPO}/pulls/61050").respond_with_json(
        github_fixture(fixture), status=status, headers=headers
    )
    with pytest.raises(ForgeError) as info:
        forge_for(httpserver).pull(PRNumber(61050))
    message = str(info.value)
    assert expected in message, message
    assert "\n" not in message and TOKEN not in message, message
    if "exhausted" in message:
        assert "resets at" in message and "UTC" in message, message


def test_unreachable_api_is_one_line_and_marked_for_fallback() -> None:
    forge = GitHubForge("vllm-project/vllm", "http://127.0.0.1:9", TOKEN, timeout=2)
    with pytest.raises(ForgeUnreachable) as info:
        forge.pull(PRNumber(1))
    assert "cannot reach the GitHub API at http://127.0.0.1:9" in str(info.value)
    assert "--offline" in str(info.value) and TOKEN not in str(info.value)


def test_debug_log_names_urls_never_the_token(httpserver: HTTPServer, caplog: pytest.LogCaptureFixture) -> None:
    httpserver.expect_request(f"{REPO}/pulls/61050").respond_with_json(github_fixture("pull-61050"))
    with caplog.at_level(logging.DEBUG, logger="series"):
        forge_for(httpserver).pull(PRNumber(61050))
    assert "GET " in caplog.text and TOKEN not in caplog.text, caplog.text


def test_a_pull_request_naming_another_host_is_refused_before_any_request(httpserver: HTTPServer) -> None:
    forge = forge_for(httpserver)
    with pytest.raises(ForgeError, match="another host"):
        forge._get("http://127.0.0.1:1/repos/x/y/pulls/1", "pull request #1")
    assert forge.requests == 0 and not httpserver.log


def test_token_sources_in_gh_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    assert find_token() is None, "no env, no gh: anonymous"
    gh = bin_dir / "gh"
    gh.write_text("#!/bin/sh\n[ \"$1 $2\" = 'auth token' ] && echo \"gho_fromgh$3$4\" && exit 0\nexit 1\n")
    gh.chmod(gh.stat().st_mode | stat.S_IEXEC)
    assert find_token() == "gho_fromgh"
    assert find_token("ghe.example.com") == "gho_fromgh--hostnameghe.example.com"
    monkeypatch.setenv("GITHUB_TOKEN", "github_env")
    assert find_token("api.github.com") == "github_env"
    monkeypatch.setenv("GH_TOKEN", "gh_env")
    assert find_token("api.github.com") == "gh_env", "gh reads GH_TOKEN before GITHUB_TOKEN"
    assert find_token("127.0.0.1") == "gh_env", "a loopback stand-in for github.com"
    # a github.com token is never sent to an Enterprise host: that takes its own variable
    assert find_token("ghe.example.com") == "gho_fromgh--hostnameghe.example.com"
    monkeypatch.setenv("GITHUB_ENTERPRISE_TOKEN", "ghe_second")
    assert find_token("ghe.example.com") == "ghe_second"
    monkeypatch.setenv("GH_ENTERPRISE_TOKEN", "ghe_env")
    assert find_token("ghe.example.com") == "ghe_env"


def test_api_base_env_beats_config_and_offline_forge_without_github(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert api_base(None) == "https://api.github.com"
    assert api_base("https://ghe.example.com/api/v3/") == "https://ghe.example.com/api/v3"
    monkeypatch.setenv("SERIES_GITHUB_API", "http://127.0.0.1:8/")
    assert api_base("https://ghe.example.com/api/v3") == "http://127.0.0.1:8"
    import pygit2

    repo = pygit2.init_repository(str(tmp_path / "r"))
    assert open_forge(repo, Upstream("upstream", "v1")).source == "git refs"
    assert open_forge(repo, Upstream("upstream", "v1", "a/b"), offline=True).source == "git refs"
    assert open_forge(repo, Upstream("upstream", "v1", "a/b")).source == "github"


def test_hunk_ranges() -> None:
    # changes only, context left out, as a zero-context git diff numbers them
    patch = "@@ -7,6 +7,7 @@ x\n a\n b\n+new\n c\n-old\n d\n@@ -30 +31 @@\n-b\n+c\n\\ No newline at end of file"
    assert hunks_of_patch(patch) == ((8, 0), (10, 1), (30, 1))
    near_miss = hunks_of_patch("@@ -9,4 +9,4 @@\n a\n b\n c\n-d\n+e")
    assert ranges_overlap(((9, 0),), near_miss) == 0, "shared context is not an overlap"
    assert hunks_of_patch(None) == ()
    assert ranges_overlap(((9, 0),), ((7, 6),)) == 1, "an insertion inside a hunk overlaps"
    assert ranges_overlap(((9, 0),), ((12, 4),)) == 0
