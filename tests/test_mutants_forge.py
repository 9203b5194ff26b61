"""Tests that fail when the forge's trust rules are wrong in small ways (issue 37)."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from series.forge.http import scrub
from series.model import PRNumber
from tests.test_trust_forge import REPO, forge_for, pull


def test_scrub_marks_where_the_token_was() -> None:
    """The token is replaced by a marker, not removed silently: a message that reads
    "Authorization: " followed by nothing would hide that something was taken out."""
    token = "s3cr3t-not-shaped-like-a-github-token"
    assert scrub(f"sent {token} to the API", token) == "sent [token] to the API"
    assert scrub("Authorization: token abcdefgh12345", None) == "Authorization: [token]"


def test_a_changed_answer_replaces_its_cached_copy(httpserver: HTTPServer, tmp_path: Path) -> None:
    """The PR changed since the last run (a new ETag): its new answer is cached in place of
    the old one, so the run after that is a 304 again, not a full answer every time."""
    body = pull(httpserver)
    assert isinstance(body, dict)
    version = {"etag": '"v1"'}

    def answer(request: Request) -> Response:
        if request.headers.get("If-None-Match") == version["etag"]:
            return Response(status=304, headers={"ETag": version["etag"]})
        return Response(
            json.dumps({**body, "title": version["etag"]}),
            content_type="application/json",
            headers={"ETag": version["etag"]},
        )

    httpserver.expect_request(f"{REPO}/pulls/61050").respond_with_handler(answer)
    cache = tmp_path / "http-cache"
    forge_for(httpserver, cache=cache).pull(PRNumber(61050))
    version["etag"] = '"v2"'
    assert forge_for(httpserver, cache=cache).pull(PRNumber(61050)).title == '"v2"'
    assert forge_for(httpserver, cache=cache).pull(PRNumber(61050)).title == '"v2"'
    sent = [r.headers.get("If-None-Match") for r, _ in httpserver.log]
    statuses = [response.status_code for _, response in httpserver.log]
    assert (sent, statuses) == ([None, '"v1"', '"v2"'], [200, 200, 304]), (sent, statuses)


def test_a_post_without_a_token_is_refused_before_anything_is_sent(httpserver: HTTPServer) -> None:
    """GitHub would answer 401 or 404; refused here, the user is told which variable to
    set, and the server never sees the request."""
    import pytest

    from series.forge.base import ForgeError
    from series.forge.github import GitHubForge

    forge = GitHubForge("vllm-project/vllm", httpserver.url_for("").rstrip("/"), None)
    with pytest.raises(ForgeError, match="needs a GitHub token") as refused:
        forge.comment(PRNumber(61050), "measured")
    assert "GITHUB_TOKEN" in str(refused.value.hint) and httpserver.log == [], httpserver.log
