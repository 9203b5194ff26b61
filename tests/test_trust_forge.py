"""The GitHub client at the trust boundary (issue 11): the token stays on the configured
host, server text is scrubbed and escaped, wrong answers are one-line errors, transient
failures are retried, and repeated questions cost 304s. A fake API on local servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from series.forge.base import ForgeError, ForgeUnreachable
from series.forge.github import GitHubForge
from series.forge.http import ApiClient, scrub
from series.model import PRNumber
from tests.repos import github_fixture

REPO = "/repos/vllm-project/vllm"
TOKEN = "ghp_TRUSTtoken0123456789abcdef"


def forge_for(server: HTTPServer, **client: object) -> GitHubForge:
    base = server.url_for("").rstrip("/")
    waits: list[float] = []
    said: list[str] = []
    http = ApiClient(base, TOKEN, sleep=waits.append, say=said.append, **client)  # type: ignore[arg-type]
    forge = GitHubForge("vllm-project/vllm", base, TOKEN, client=http)
    forge.waits, forge.said = waits, said  # type: ignore[attr-defined]
    return forge


def pull(server: HTTPServer, **values: str) -> object:
    return github_fixture(
        "pull-61050", API=server.url_for("").rstrip("/"), HEAD_SHA="a" * 40, BASE_SHA="b" * 40, **values
    )


@pytest.fixture
def other_host() -> HTTPServer:
    server = HTTPServer(host="127.0.0.1", port=0)
    server.start()
    yield server
    server.clear()
    server.stop()


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_host_is_refused_and_gets_no_token(
    httpserver: HTTPServer, other_host: HTTPServer, code: int
) -> None:
    seen: list[str | None] = []

    def steal(request: Request) -> Response:
        seen.append(request.headers.get("Authorization"))
        return Response(json.dumps(pull(httpserver)), content_type="application/json")

    other_host.expect_request(f"{REPO}/pulls/61050").respond_with_handler(steal)
    httpserver.expect_request(f"{REPO}/pulls/61050").respond_with_data(
        "", status=code, headers={"Location": other_host.url_for(f"{REPO}/pulls/61050")}
    )
    with pytest.raises(ForgeError) as info:
        forge_for(httpserver).pull(PRNumber(61050))
    message = str(info.value)
    assert "redirected pull request #61050" in message and "another host" in message, message
    assert "\n" not in message and TOKEN not in message
    assert seen == [] and not other_host.log, "nothing, let alone the token, went to the other host"


def test_a_redirect_on_the_same_host_is_followed_with_the_token(httpserver: HTTPServer) -> None:
    httpserver.expect_request(f"{REPO}/pulls/61050").respond_with_data(
        "", status=301, headers={"Location": f"{REPO}/pulls/61050/moved"}
    )
    httpserver.expect_request(f"{REPO}/pulls/61050/moved").respond_with_json(pull(httpserver))
    assert forge_for(httpserver).pull(PRNumber(61050)).number == 61050
    assert [r.headers.get("Authorization") for r, _ in httpserver.log] == [f"Bearer {TOKEN}"] * 2


def test_server_message_echoing_the_token_is_scrubbed_and_escaped(httpserver: HTTPServer) -> None:
    echo = f"Bad header 'Authorization: Bearer {TOKEN}' \x1b[31mred\x1b[0m\nSigned-off-by: x"
    httpserver.expect_request(f"{REPO}/pulls/61050").respond_with_json({"message": echo}, status=422)
    with pytest.raises(ForgeError) as info:
        forge_for(httpserver).pull(PRNumber(61050))
    message = str(info.value)
    assert "GitHub API error 422" in message and TOKEN not in message and "\x1b" not in message, message
    assert "\n" not in message and "\\x1b[31m" in message, message
    assert scrub("token ghp_abcdefghijklmnopqrstu and github_pat_ABCDEFGHIJKLMNOPQRST", None) == "[token] and [token]"


@pytest.mark.parametrize(
    "change, named",
    [
        ({"html_url": "https://github.com/vllm-project/vllm/pull/61050\nSigned-off-by: Mallory <m@x.org>"}, "html_url"),
        ({"html_url": "https://evil.example/vllm-project/vllm/pull/61050"}, "html_url"),
        ({"html_url": "http://github.com/vllm-project/vllm/pull/61050"}, "html_url"),
        ({"base": {"sha": "--upload-pack=touch PWNED"}}, "base.sha"),
        ({"head": {"sha": "not-an-object"}}, "head.sha"),
        ({"head": "a" * 40}, "'head' that is not an object"),
        ({"updated_at": "yesterday"}, "updated_at"),
        ({"title": ["a", "list"]}, "'title' that is not a string"),
        ({"number": "61050"}, "no number"),
        ({"number": 61051, "html_url": "https://github.com/vllm-project/vllm/pull/61051"}, "#61051, not #61050"),
        ({"state": "\x1b]0;owned\x07"}, "state"),
    ],
)
def test_a_wrong_pull_request_answer_is_one_line_naming_the_field(
    httpserver: HTTPServer, change: dict[str, object], named: str
) -> None:
    data = dict(pull(httpserver))  # type: ignore[call-overload]
    data.update(change)
    httpserver.expect_request(f"{REPO}/pulls/61050").respond_with_json(data)
    with pytest.raises(ForgeError) as info:
        forge_for(httpserver).pull(PRNumber(61050))
    message = str(info.value)
    assert named in message and "\n" not in message and "\x1b" not in message, message
    assert f"{REPO}/pulls/61050" in message, "the message names the URL"


def test_a_lone_surrogate_title_and_escape_codes_become_plain_text(httpserver: HTTPServer) -> None:
    data = dict(pull(httpserver))  # type: ignore[call-overload]
    httpserver.expect_request(f"{REPO}/pulls/61050").respond_with_data(
        json.dumps({**data, "title": "fix \ud800 \x1b[2Jcleared"}), content_type="application/json"
    )
    pr = forge_for(httpserver).pull(PRNumber(61050))
    assert pr.title == "fix ?  [2Jcleared", pr.title
    pr.title.encode("utf-8")  # writable into series.yaml


def test_non_json_and_non_utf8_answers_name_the_url(httpserver: HTTPServer) -> None:
    httpserver.expect_request(f"{REPO}/pulls/61050").respond_with_data(b"\xff\xfe<html>", status=200)
    with pytest.raises(ForgeError, match=r"not JSON .*pulls/61050"):
        forge_for(httpserver).pull(PRNumber(61050))


def test_5xx_and_dropped_connections_are_retried_with_bounded_jittered_backoff(httpserver: HTTPServer) -> None:
    answers = iter(
        [
            Response("", status=502),
            Response("", status=503),
            Response(json.dumps(pull(httpserver)), content_type="application/json"),
        ]
    )
    httpserver.expect_request(f"{REPO}/pulls/61050").respond_with_handler(lambda r: next(answers))
    forge = forge_for(httpserver, retries=3, backoff=0.5)
    assert forge.pull(PRNumber(61050)).number == 61050
    waits = forge.waits  # type: ignore[attr-defined]
    assert len(waits) == 2 and 0 <= waits[0] <= 0.5 and 0 <= waits[1] <= 1.0, waits
    httpserver.clear()
    httpserver.expect_request(f"{REPO}/pulls/61050").respond_with_data("", status=500)
    forge = forge_for(httpserver, retries=2, backoff=100.0)
    with pytest.raises(ForgeError, match="GitHub API error 500"):
        forge.pull(PRNumber(61050))
    assert len(httpserver.log) == 3 and all(w <= 8.0 for w in forge.waits), forge.waits  # type: ignore[attr-defined]


def test_unreachable_after_retries_is_marked_for_the_offline_fallback() -> None:
    waits: list[float] = []
    http = ApiClient("http://127.0.0.1:9", TOKEN, retries=2, backoff=0.1, sleep=waits.append)
    forge = GitHubForge("vllm-project/vllm", "http://127.0.0.1:9", TOKEN, client=http)
    with pytest.raises(ForgeUnreachable, match="after 3 tries.*--offline"):
        forge.pull(PRNumber(1))
    assert len(waits) == 2


def test_a_short_retry_after_is_waited_out_and_said(httpserver: HTTPServer) -> None:
    answers = iter(
        [
            Response('{"message": "slow down"}', status=403, headers={"Retry-After": "7"}),
            Response(json.dumps(pull(httpserver)), content_type="application/json"),
        ]
    )
    httpserver.expect_request(f"{REPO}/pulls/61050").respond_with_handler(lambda r: next(answers))
    forge = forge_for(httpserver)
    assert forge.pull(PRNumber(61050)).number == 61050
    assert forge.waits == [7.0], forge.waits  # type: ignore[attr-defined]
    assert any("wait 7 s (Retry-After, 403)" in s for s in forge.said), forge.said  # type: ignore[attr-defined]


def test_etag_cache_turns_a_repeated_run_into_a_304(httpserver: HTTPServer, tmp_path: Path) -> None:
    body = pull(httpserver)

    def answer(request: Request) -> Response:
        if request.headers.get("If-None-Match") == '"v1"':
            return Response(status=304, headers={"ETag": '"v1"', "X-RateLimit-Remaining": "4999"})
        return Response(
            json.dumps(body), content_type="application/json", headers={"ETag": '"v1"', "X-RateLimit-Remaining": "4998"}
        )

    httpserver.expect_request(f"{REPO}/pulls/61050").respond_with_handler(answer)
    cache = tmp_path / "http-cache"
    first = forge_for(httpserver, cache=cache).pull(PRNumber(61050))
    second_forge = forge_for(httpserver, cache=cache)  # a new run: the run cache is empty
    assert second_forge.pull(PRNumber(61050)) == first
    assert [r.headers.get("If-None-Match") for r, _ in httpserver.log] == [None, '"v1"']
    assert second_forge.rate_remaining == 4999
    written = [p.read_text() for p in cache.rglob("*.json")]
    assert len(written) == 1 and TOKEN not in written[0]
    for path in cache.rglob("*.json"):
        path.write_text("{corrupt")  # our own cache, damaged: a miss, not an error
    assert forge_for(httpserver, cache=cache).pull(PRNumber(61050)) == first
