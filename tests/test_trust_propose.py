"""series propose at the trust boundary (issue 22): a fork remote that is an option, open
PRs past any page limit, commit messages that mention strangers or hide text, evidence of
the wrong shape. Each is a one-line error (exit 1) with nothing pushed and no ref moved,
or a PR body that notifies nobody the guide does not allow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from tests.conftest import run_series, sh
from tests.repos import git
from tests.test_propose import SERVING, SLUG, TOKEN, _api, _pull, _serve, proposal  # noqa: F401


def refs(fork: Path) -> str:
    return git(fork, "for-each-ref", "--format=%(refname) %(objectname)")


def one_line_error(proc: object, *named: str) -> str:
    err = getattr(proc, "stderr")
    assert err.startswith("series: error: ") and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and "bug" not in err, err
    for word in named:
        assert word in err, err
    return str(err)


# --- 9. a fork remote that git would read as an option ------------------------------------


@pytest.mark.parametrize("remote", ["--receive-pack=touch pwned", "-oops", "no such remote", "a..b"])
def test_a_fork_remote_that_is_an_option_or_no_remote_pushes_nothing(
    proposal: Path, httpserver: HTTPServer, remote: str
) -> None:
    created: list[dict[str, object]] = []
    _serve(httpserver, proposal, created)
    before = refs(proposal)
    proc = run_series(
        "propose", "serving-fix", "--despite", "50001", "--fork", remote, cwd=proposal, expect=1, env=_api(httpserver)
    )
    one_line_error(proc, "--fork")
    assert not (proposal / "pwned").exists() and created == [] and refs(proposal) == before
    assert git(proposal, "ls-remote", str(proposal.parent / "my-fork.git")) == "", "nothing pushed"
    assert "upstream_pr" not in (proposal / "series.yaml").read_text()


def test_an_option_like_fork_remote_is_refused_under_dry_run_too(proposal: Path) -> None:
    proc = run_series(
        "propose",
        "serving-fix",
        "--dry-run",
        "--offline",
        "--despite",
        "50001",
        "--fork",
        "--upload-pack=x",
        cwd=proposal,
        expect=1,
    )
    one_line_error(proc, "starts with '-'")


# --- 10. every page of open PRs, or a stop that says so -----------------------------------


def _paged(server: HTTPServer, fork: Path, pages: int | None, last: list[dict[str, object]]) -> list[int]:
    """Open PRs served one empty page after another (GitHub's Link: rel="next"), the PR on
    the last; `pages` None: every page links to a next one, for ever."""
    _serve(server, fork, [])
    seen: list[int] = []

    def page(request: Request) -> Response:
        n = int(request.args.get("page", "1"))
        seen.append(n)
        more = pages is None or n < pages
        headers = (
            {"Link": f'<{server.url_for(f"{SLUG}/pulls")}?state=open&per_page=100&page={n + 1}>; rel="next"'}
            if more
            else {}
        )
        return Response(json.dumps([] if more else last), headers=headers, content_type="application/json")

    server.handlers.clear()  # _serve's one-page list goes; the rest of it stays below
    _serve_without_list(server, fork)
    server.expect_request(f"{SLUG}/pulls", method="GET").respond_with_handler(page)
    return seen


def _serve_without_list(server: HTTPServer, fork: Path) -> None:
    lee = git(fork, "log", "-1", "--format=%H", "--author=Lee", "v0.30.0").strip()
    server.expect_request(f"{SLUG}/commits/{lee}").respond_with_json({"sha": lee, "author": {"login": "leewriter"}})
    server.expect_request(f"{SLUG}/pulls/50001/files").respond_with_json(
        [{"filename": SERVING, "status": "modified", "patch": "@@ -8,1 +8,1 @@\n-lee 8\n+lee 8 (theirs)"}]
    )


def test_a_duplicate_past_page_50_is_found(proposal: Path, httpserver: HTTPServer) -> None:
    seen = _paged(
        httpserver, proposal, 60, [_pull(50001, "[Frontend] an old idea about serving", "2019-05-01T00:00:00Z")]
    )
    proc = run_series(
        "propose",
        "serving-fix",
        "--dry-run",
        "--json",
        cwd=proposal,
        expect=1,
        env={**_api(httpserver), "SERIES_HTTP_CACHE": "off"},
    )
    assert seen == list(range(1, 61)), seen
    assert [c["number"] for c in json.loads(proc.stdout)["duplicates"]["candidates"]] == [50001]


def test_open_prs_without_an_end_stop_the_proposal(proposal: Path, httpserver: HTTPServer) -> None:
    seen = _paged(httpserver, proposal, None, [])
    before = refs(proposal)
    proc = run_series(
        "propose", "serving-fix", "--json", cwd=proposal, expect=1, env={**_api(httpserver), "SERIES_HTTP_CACHE": "off"}
    )
    one_line_error(proc, "the open pull requests", "pages")
    assert proc.stdout == "" and refs(proposal) == before and len(seen) > 50, (proc.stdout, len(seen))
    assert git(proposal, "ls-remote", "origin") == ""


# --- 11. mentions and hidden text from commit messages ------------------------------------

HOSTILE_BODY = (
    "Thanks @evil for the idea, cc @someone and @org/team.\n\n"
    "Reported by a@b.com; see `@code` and @kaydev, who wrote these lines.\n\n"
    "<!-- hidden: everything below would vanish on GitHub"
)


def test_commit_messages_mention_only_owners_and_authors_and_hide_nothing(proposal: Path) -> None:
    (proposal.parent / "msg").write_text("[Bugfix][Frontend] and @evil in the subject\n\n" + HOSTILE_BODY)
    sh(
        "git checkout -q topic/serving-fix && echo x > extra.txt && git add extra.txt && "
        f"git commit -q -F {proposal.parent / 'msg'} && git checkout -q --detach v0.30.0",
        proposal,
    )
    out = run_series(
        "propose", "serving-fix", "--dry-run", "--offline", "--despite", "50001", "--json", cwd=proposal
    ).stdout
    data = json.loads(out)
    body = data["description"]["body"]
    assert "@kaydev" in data["reviewers"]["mentionable"]
    for stranger in ("evil", "someone", "org/team"):
        assert f"@\u200d{stranger}" in body and f"@{stranger}" not in body, body
    assert " @kaydev," in body, "a line author stays mentionable"
    assert "Reported by a@b.com; see `@code` and" in body, "an address and a code span stay as written"
    assert "<!-- hidden" not in body and "&lt;!-- hidden" in body, body
    assert body.index("&lt;!-- hidden") < body.index("Release notes:"), "nothing after it is hidden"
    assert body.startswith("<!-- markdownlint-disable -->"), "the template's own comments stay"


@pytest.mark.parametrize(
    "text, safe",
    [
        ("cc @evil.", "cc @\u200devil."),
        ("(@evil) -@evil", "(@\u200devil) -@\u200devil"),
        ("a@b.com x1@y", "a@b.com x1@y"),  # addresses: no mention on GitHub
        ("@Owner and @org/team and @org/other", "@Owner and @org/team and @\u200dorg/other"),
        ("`@evil` stays", "`@evil` stays"),  # already code
        ("a lone `@evil", "a lone `@\u200devil"),
        ("```\n@evil <!-- x\n```\n@evil", "```\n@evil <!-- x\n```\n@\u200devil"),  # a fenced block is code
        ("<!-- a --> <!--", "&lt;!-- a --> &lt;!--"),
    ],
)
def test_neutralise(text: str, safe: str) -> None:
    from series.propose.mentions import neutralise

    assert neutralise(text, ["@owner", "@org/team", "docs@example.com"]) == safe


# Each a way '@evil' (neither a CODEOWNER nor a line author) reached GitHub's mention
# filter through the code-span escape (issue 33): read back as CommonMark renders it.
SLIPPED = [
    "\\@evil",  # the backslash escaped the inserted backtick
    "\\`@evil`",  # an escaped backtick opens no code span
    "```a`b\n@evil",  # a backtick fence's info has no backtick: no fence
    "`a\n@evil`",  # a code span across two lines
    "&#64;evil and &#x40;evil",  # a reference to '@' is one after rendering
    "_@evil_",  # emphasis goes, '@evil' starts its text
    "@evil@evil",  # the first in code made the second one
    "- a\n  ```\n@evil\n```",  # a fence in a list item ends with the item
    "[a](`)`x`@evil`",  # a link's destination holds the first backtick
]


@pytest.mark.parametrize("text", SLIPPED)
def test_no_escaped_mention_notifies_as_github_reads_it(text: str) -> None:
    from series.propose.mentions import neutralise
    from tests.test_comment import _mentions

    safe = neutralise(text, ["@owner"])
    body = f"## Purpose\n\n{safe}\n\nRelease notes: @owner"
    assert _mentions(body) == ["@owner"], (safe, _mentions(body))


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "`",
                "``",
                "```",
                "\\",
                "@evil",
                "@owner",
                " ",
                "\n",
                "\n\n",
                "~~~",
                "a",
                "_",
                "<",
                ">",
                "*",
                "- ",
                "> ",
                "  ",
                "[",
                "]",
                "(",
                ")",
                "](",
                "<div>",
                "&#64;",
            ]
        ),
        max_size=14,
    )
)
def test_any_commit_text_notifies_only_whom_it_may(pieces: list[str]) -> None:
    from series.propose.mentions import neutralise
    from tests.test_comment import _mentions

    body = f"## Purpose\n\n{neutralise(''.join(pieces), ['@owner'])}\n"
    assert set(_mentions(body)) <= {"@owner"}, body


# --- 12. --evidence of the wrong shape -----------------------------------------------------


@pytest.mark.parametrize(
    "content, said",
    [
        (b"[]", "not an object"),
        (b"{}", "no per-test results"),
        (b"not json", "not JSON"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b'{"with_series": [1]}', "with_series[0]"),
        (b'{"with_series": [{"commands": [{"tests": ["a"]}]}]}', "tests"),
        (b'{"with_series": [], "without": {"evidence": [{"test": 3}]}}', "without.evidence[0].test"),
        (b'{"summary": {"base": 5}, "tests": {}}', "summary.base"),
        (b'{"summary": {"base": {"passed": "x"}}, "tests": {}}', "summary.base.passed"),
        (b'{"summary": {}, "tests": {}, "needed": {"t": 1}}', "needed.t"),
        (b'{"summary": {}, "tests": {}, "worse": ["a"]}', "worse"),
        (b'{"summary": {}, "tests": {}, "machine": {"a": 1}}', "machine"),
        (b'{"summary": {}, "tests": {}, "build": ["x"]}', "build"),
        (b"[" * 100000, "not JSON"),
    ],
)
def test_evidence_of_the_wrong_shape_is_one_line_naming_the_file(
    proposal: Path, tmp_path: Path, content: bytes, said: str
) -> None:
    path = tmp_path / "ev.json"
    path.write_bytes(content)
    proc = run_series(
        "propose",
        "serving-fix",
        "--dry-run",
        "--offline",
        "--despite",
        "50001",
        "--evidence",
        str(path),
        cwd=proposal,
        expect=1,
    )
    one_line_error(proc, str(path), said)
