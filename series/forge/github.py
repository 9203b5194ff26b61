"""The GitHub REST API through urllib (no new dependency), as a Forge.

The token is read the way gh reads it: GH_TOKEN, then GITHUB_TOKEN for github.com (and a
local test server or proxy on loopback); GH_ENTERPRISE_TOKEN, then GITHUB_ENTERPRISE_TOKEN
for any other (Enterprise) host; then `gh auth token`. It is held only in the HTTP client
(http.py), which sends it only to the configured API host and follows no redirect away
from it; it is never logged (URLs are logged, headers are not), and a server's message
is shown only scrubbed of it.

Every answer is checked here, where it enters: types, commit ids as hex, the PR's URL as
a link to this repository's PR on the configured host (it becomes a commit trailer),
dates as ISO 8601. A wrong answer is a one-line ForgeError (exit 1) naming the URL.

Each answer is cached for the run (one Forge per command), so preflight's many questions
about the same PR cost one request each, and on disk by ETag across runs (http.py).
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import re
import shutil
import subprocess
import urllib.parse
from typing import Any, Callable

from series import __version__, validate
from series.errors import SeriesError
from series.forge.base import (
    Forge,
    ForgeError,
    ForgeUnreachable,
    PostedComment,
    PullFile,
    PullRequest,
    PullState,
    ReviewActivity,
    hunks_of_patch,
)
from series.forge.conversation import Conversation
from series.forge.http import ApiClient, HttpFailed, HttpRefused, HttpUnreachable
from series.model import PRNumber, Sha

log = logging.getLogger("series.forge")

DEFAULT_API = "https://api.github.com"
_LINK_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')
# 20,000 items at 100 a page (vLLM has a few thousand open PRs): a list still going on
# past it is an error, never a silent cut (a duplicate on page 201 is still a duplicate)
MAX_PAGES = 200
_API_STATES = (PullState.OPEN.value, PullState.CLOSED.value, PullState.UNKNOWN.value)


def api_base(configured: str | None) -> str:
    """SERIES_GITHUB_API (one run) beats upstream.api_url (the team's GitHub Enterprise)."""
    explicit = os.environ.get("SERIES_GITHUB_API")
    where = "SERIES_GITHUB_API" if explicit else "upstream.api_url"
    value = (explicit or configured or DEFAULT_API).rstrip("/")
    return validate.api_url(value, where)


def is_dotcom(host: str | None) -> bool:
    """github.com's API (or a loopback server standing in for it: tests, a local proxy)."""
    host = (host or "").lower()
    return host in ("api.github.com", "github.com") or host.endswith(".ghe.com") or validate.is_loopback(host)


def find_token(host: str | None = None, run: Callable[..., Any] = subprocess.run) -> str | None:
    """gh's order: GH_TOKEN, GITHUB_TOKEN (github.com) or GH_ENTERPRISE_TOKEN,
    GITHUB_ENTERPRISE_TOKEN (other hosts), then `gh auth token`; None: anonymous."""
    dotcom = host is None or is_dotcom(host)
    keys = ("GH_TOKEN", "GITHUB_TOKEN") if dotcom else ("GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN")
    for key in keys:
        value = os.environ.get(key, "").strip()
        if value:
            return value
    if shutil.which("gh") is None:
        return None
    cmd = ["gh", "auth", "token"]
    if not dotcom and host:
        cmd += ["--hostname", host]
    try:
        proc = run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    token = proc.stdout.strip() if proc.returncode == 0 else ""
    return token or None


def web_hosts(api_host: str) -> tuple[str, ...]:
    """Where this API's PR pages live (html_url): github.com for api.github.com, the same
    host for Enterprise (https://HOST/api/v3), github.com or itself for a loopback stand-in."""
    host = api_host.lower()
    if host == "api.github.com":
        return ("github.com",)
    if validate.is_loopback(host):
        return ("github.com", host)
    if host.startswith("api."):
        return (host[4:], host)
    return (host,)


def _when(epoch: str | None) -> str:
    try:
        moment = datetime.datetime.fromtimestamp(int(epoch or ""), datetime.timezone.utc)
    except ValueError:
        return "later"
    minutes = max(0, int((moment - datetime.datetime.now(datetime.timezone.utc)).total_seconds() // 60) + 1)
    return f"at {moment:%H:%M} UTC, in {minutes} min"


class GitHubForge(Forge):
    source = "github"
    api = True

    def __init__(
        self,
        repo_slug: str,
        api_url: str | None = None,
        token: str | None = None,
        timeout: float = 20.0,
        client: ApiClient | None = None,
    ):
        self.slug = repo_slug
        self.base = api_base(api_url)
        self._host = urllib.parse.urlsplit(self.base).netloc
        self._token = token
        self.timeout = timeout
        self.http = client or ApiClient(self.base, token, timeout=timeout)
        self._cache: dict[str, Any] = {}
        self.rate_remaining: int | None = None  # from the last answer's headers

    def __repr__(self) -> str:  # never the token
        return f"GitHubForge({self.slug!r}, {self.base!r}, token={'set' if self._token else 'none'})"

    @property
    def requests(self) -> int:
        return self.http.requests

    # -- HTTP ---------------------------------------------------------------------------
    def _get(self, url: str, what: str) -> tuple[Any, str | None]:
        """(decoded JSON, next page URL) for one GET; errors become one-line ForgeErrors."""
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"series/{__version__}",
        }
        if urllib.parse.urlsplit(url).netloc != self._host:
            raise ForgeError(
                f"the GitHub API sent a link to another host ({validate.one_line(url)[:200]}) "
                f"for {what}; refusing (the token goes only to {self.base})"
            )
        try:
            answer = self.http.get(url, what, headers)
        except HttpRefused as exc:
            raise ForgeError(str(exc)) from None
        except HttpUnreachable as exc:
            raise ForgeUnreachable(
                f"{exc}; check the network or upstream.api_url, or pass --offline to work from git alone"
            ) from None
        except HttpFailed as exc:
            raise self._http_error(exc, what) from None
        if answer.rate_remaining is not None:
            self.rate_remaining = answer.rate_remaining
        try:
            data = json.loads(answer.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise ForgeError(
                f"the GitHub API at {self.base} sent something that is not JSON for {what} ({validate.one_line(url)})"
            ) from None
        next_url = None
        m = _LINK_NEXT.search(answer.link or "")
        if m:
            next_url = m.group(1)
        return data, next_url

    def _http_error(self, exc: HttpFailed, what: str) -> ForgeError:
        code = exc.code
        headers = exc.headers
        remaining = headers.get("X-RateLimit-Remaining") if headers else None
        retry_after = headers.get("Retry-After") if headers else None
        message = ""
        try:
            found = json.loads(exc.body.decode("utf-8"))
            if isinstance(found, dict) and isinstance(found.get("message"), str):
                message = self.http.scrub(found["message"])[:300]
        except (UnicodeDecodeError, ValueError, RecursionError):  # the body is only a hint
            message = ""
        if code in (403, 429) and remaining == "0":
            auth = "" if self._token else "; set GITHUB_TOKEN or GH_TOKEN for a higher limit"
            return ForgeError(
                f"GitHub API rate limit exhausted ({code}) while reading {what}; it resets "
                f"{_when(headers.get('X-RateLimit-Reset') if headers else None)}{auth}, or pass --offline"
            )
        if code in (403, 429) and retry_after:
            return ForgeError(
                f"GitHub API secondary rate limit ({code}) while reading {what}; "
                f"retry after {validate.one_line(retry_after)[:40]} s, or pass --offline"
            )
        if code == 429:
            return ForgeError(f"GitHub API rate limit (429) while reading {what}; retry later, or pass --offline")
        if code == 401:
            source = "the token" if self._token else "anonymous access"
            return ForgeError(
                f"GitHub API refused {source} (401 Bad credentials) for {what}; "
                "renew GH_TOKEN / GITHUB_TOKEN or run 'gh auth login'"
            )
        if code == 404:
            return ForgeError(
                f"GitHub API: {what} not found (404); check the number and upstream.github "
                f"({self.slug}); a private repository also needs a token"
            )
        if code == 403:
            detail = f": {message}" if message else ""
            return ForgeError(f"GitHub API refused {what} (403){detail}")
        return ForgeError(f"GitHub API error {code} for {what}{': ' + message if message else ''}")

    def _cached(
        self, url: str, what: str, paginate: bool = False, stop: Callable[[list[Any]], bool] | None = None
    ) -> Any:
        if url in self._cache:
            return self._cache[url]
        if not paginate:
            data, _ = self._get(url, what)
        else:
            data = []
            page = url
            for _ in range(MAX_PAGES):
                items, following = self._get(page, what)
                if not isinstance(items, list):
                    raise ForgeError(
                        f"the GitHub API sent an unexpected answer for {what} (not a list; {validate.one_line(url)})"
                    )
                data.extend(items)
                if following is None or (stop is not None and stop(items)):
                    break
                page = following
            else:
                raise ForgeError(
                    f"the GitHub API had more than {MAX_PAGES} pages of {what} "
                    f"({len(data)} items so far); stopped rather than go on with part of "
                    f"them ({validate.one_line(url)[:200]})"
                )
        self._cache[url] = data
        return data

    def _url(self, path: str, **query: str | int) -> str:
        url = f"{self.base}/repos/{self.slug}/{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        return url

    # -- Forge --------------------------------------------------------------------------
    def pull(self, number: PRNumber) -> PullRequest:
        url = self._url(f"pulls/{int(number)}")
        pr = self.pull_from_json(self._cached(url, f"pull request #{number}"), url)
        if pr.number != number:
            raise ForgeError(
                f"the GitHub API answered {url} with pull request #{pr.number}, not #{number}; refusing it"
            )
        return pr

    def list_pulls(self, since: datetime.datetime) -> list[PullRequest]:
        """Every open PR, whatever its age (vLLM PRs stay open for months), then the PRs
        closed at or after `since`."""
        cutoff = since.astimezone(datetime.timezone.utc)
        url = self._url("pulls", state="all", sort="updated", direction="desc", per_page=100)

        def older(items: list[Any]) -> bool:
            # Sorted by last update, newest first: once a page ends before the cutoff,
            # no later page can hold a PR updated (or closed) after it.
            last = items[-1] if items else None
            return isinstance(last, dict) and _parse_time(last.get("updated_at"), url) < cutoff

        open_url = self._url("pulls", state="open", sort="updated", direction="desc", per_page=100)
        closed_url = self._url("pulls", state="closed", sort="updated", direction="desc", per_page=100)
        opened = self._cached(open_url, "the open pull requests", paginate=True)
        closed = self._cached(closed_url, "the closed pull requests", paginate=True, stop=older)
        pulls: dict[int, PullRequest] = {}  # one closed between the two lists is in both
        for item, where in [*((i, open_url) for i in opened), *((i, closed_url) for i in closed)]:
            pr = self.pull_from_json(item, where)
            if pr.state == PullState.OPEN or (pr.closed_at and _parse_time(pr.closed_at, where) >= cutoff):
                pulls.setdefault(int(pr.number), pr)
        return list(pulls.values())

    def pull_files(self, number: PRNumber) -> list[PullFile]:
        url = self._url(f"pulls/{int(number)}/files", per_page=100)
        items = self._cached(url, f"the files of pull request #{number}", paginate=True)
        files = []
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("filename"), str) or not item["filename"]:
                raise ForgeError(
                    f"the GitHub API sent a file list without file names for PR #{number} ({validate.one_line(url)})"
                )
            patch, previous = item.get("patch"), item.get("previous_filename")
            if not isinstance(patch, (str, type(None))) or not isinstance(previous, (str, type(None))):
                raise ForgeError(
                    f"the GitHub API sent a file entry with a wrong 'patch' or "
                    f"'previous_filename' for PR #{number} ({validate.one_line(url)})"
                )
            files.append(PullFile(path=item["filename"], hunks=hunks_of_patch(patch), previous_path=previous))
        return files

    def pull_from_json(self, data: Any, url: str) -> PullRequest:
        return pull_from_json(data, url, self.slug, web_hosts(urllib.parse.urlsplit(self.base).hostname or ""))

    # -- proposing a PR (series propose) ------------------------------------------------
    def open_pulls(self) -> list[PullRequest]:
        """Every open PR, of any age: a duplicate opened long ago is still a duplicate.
        (The same question as list_pulls' first half, so one run asks it once.)"""
        url = self._url("pulls", state="open", sort="updated", direction="desc", per_page=100)
        items = self._cached(url, "the open pull requests", paginate=True)
        return [self.pull_from_json(item, url) for item in items]

    def commit_login(self, sha: str) -> str | None:
        """The GitHub login of a commit's author (for an @-mention), None when GitHub has none."""
        try:
            data = self._cached(self._url(f"commits/{sha}"), f"commit {sha[:12]}")
        except ForgeError:
            return None  # a hint for the reviewer list, never worth stopping for
        author = data.get("author") if isinstance(data, dict) else None
        login = author.get("login") if isinstance(author, dict) else None
        return login if isinstance(login, str) and re.fullmatch(r"[A-Za-z0-9-]{1,39}", login) else None

    def viewer_login(self) -> str:
        """The login the token belongs to: the owner of the fork a PR's head lives in."""
        data = self._cached(f"{self.base}/user", "the authenticated user")
        login = data.get("login") if isinstance(data, dict) else None
        if not isinstance(login, str) or not re.fullmatch(r"[A-Za-z0-9-]{1,39}", login):
            raise ForgeError(
                "the GitHub API did not say whose token this is (GET /user)",
                "pass --owner LOGIN (the owner of your fork)",
            )
        return login

    def _post(self, url: str, what: str, payload: dict[str, Any], sent: str, check: str) -> Any:
        """One POST with the token (required), sent once and never retried: a retry after a
        lost answer could do it twice. `sent`: what the request makes ('opened'), `check`:
        where the user looks before running again. The answer, parsed JSON."""
        if not self._token:
            raise ForgeError(f"{what} needs a GitHub token", "set GH_TOKEN or GITHUB_TOKEN, or run 'gh auth login'")
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"series/{__version__}",
            "Content-Type": "application/json",
        }
        try:
            answer = self.http.post(url, what, headers, json.dumps(payload).encode("utf-8"))
        except HttpRefused as exc:
            raise ForgeError(f"{exc}; nothing was {sent} as far as series knows") from None
        except HttpUnreachable as exc:
            raise ForgeUnreachable(
                f"{exc} for {what}; nothing was {sent} as far as series knows: check {check} before retrying"
            ) from None
        except HttpFailed as exc:
            if exc.code == 422:  # GitHub's "Validation Failed": the reasons are in errors[]
                raise ForgeError(
                    f"GitHub refused {what} (422): {self.http.scrub(_validation_errors(exc.body))}"
                ) from None
            error = self._http_error(exc, what)
            raise (_MaybeDone(str(error)) if exc.code >= 500 else error) from None
        try:
            return json.loads(answer.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise ForgeError(
                f"the GitHub API sent something that is not JSON for {what} ({url}); it was "
                f"probably {sent}: check {check}"
            ) from None

    def create_pull(self, *, head: str, base: str, title: str, body: str, draft: bool = True) -> PullRequest:
        """Open a PR (POST /repos/OWNER/REPO/pulls); sent once, never retried."""
        url = self._url("pulls")
        data = self._post(
            url,
            f"a new pull request from {head}",
            {"title": title, "head": head, "base": base, "body": body, "draft": draft},
            "opened",
            "the fork's PR list",
        )
        return self.pull_from_json(data, url)

    def pull_description(self, number: PRNumber) -> str | None:
        """The PR's body, from the same answer as pull() (one request for both)."""
        url = self._url(f"pulls/{int(number)}")
        self.pull(number)  # checked as a PR first: number, URL, shas
        body = self._cached(url, f"pull request #{number}").get("body")
        if not isinstance(body, (str, type(None))):
            raise ForgeError(
                f"the GitHub API sent pull request #{number} with a 'body' that is not a string "
                f"({validate.one_line(url)})"
            )
        return body

    def pull_conversation(self, number: PRNumber) -> Conversation:
        """Reviews, review comments, the conversation, commits, review requests and the
        head's check runs (forge/github_conversation.py, where each answer is checked)."""
        from series.forge import github_conversation

        return github_conversation.fetch(self, number, _parse_time, MAX_PAGES)

    def review_activity(self, number: PRNumber) -> ReviewActivity:
        """Every review (GET pulls/N/reviews) and review comment (GET pulls/N/comments) on the
        PR, all pages: one of either means review has started. Each item must be an object
        with a numeric id; anything else is refused (a wrong answer never reads as 'no review')."""
        counts = []
        for kind, what in (("reviews", "reviews"), ("comments", "review comments")):
            url = self._url(f"pulls/{int(number)}/{kind}", per_page=100)
            items = self._cached(url, f"the {what} of pull request #{number}", paginate=True)
            for item in items:
                ident = item.get("id") if isinstance(item, dict) else None
                if isinstance(ident, bool) or not isinstance(ident, int):
                    raise ForgeError(
                        f"the GitHub API sent one of the {what} of PR #{number} without an id "
                        f"({validate.one_line(url)}); refusing the answer"
                    )
            counts.append(len(items))
        return ReviewActivity(reviews=counts[0], comments=counts[1])

    def comment(self, number: PRNumber, body: str) -> PostedComment:
        """Post on the PR's conversation (POST /repos/OWNER/REPO/issues/N/comments: a PR is
        an issue to GitHub); sent once, never retried. The answer's html_url must be this
        PR's page on the configured web host, its id a positive number."""
        url = self._url(f"issues/{int(number)}/comments")
        where = f"PR #{number}'s conversation"
        try:
            data = self._post(url, f"a comment on pull request #{number}", {"body": body}, "posted", where)
        except _MaybeDone as exc:  # a server error may come after the comment was made
            raise ForgeError(
                f"{exc}; it may have been posted anyway: look at {where} before running "
                "again (series never sends it twice)"
            ) from None
        return comment_from_json(
            data, url, self.slug, int(number), web_hosts(urllib.parse.urlsplit(self.base).hostname or "")
        )


class _MaybeDone(ForgeError):
    """A 5xx answer to a POST: the server may have done the work before it failed."""


def comment_from_json(data: Any, url: str, slug: str, number: int, hosts: tuple[str, ...]) -> PostedComment:
    """The comment GitHub says it made, checked: its URL becomes a record in series.yaml."""

    def bad(what: str) -> ForgeError:
        return ForgeError(
            f"the GitHub API answered the comment on PR #{number} with {what} "
            f"({validate.one_line(url)}); it was probably posted: check the PR's conversation"
        )

    if not isinstance(data, dict):
        raise bad("something that is not an object")
    ident = data.get("id")
    if isinstance(ident, bool) or not isinstance(ident, int) or ident <= 0:
        raise bad("no comment id")
    link = data.get("html_url")
    fragment = f"issuecomment-{ident}"
    problems = []
    for path in (f"/{slug}/pull/{number}", f"/{slug}/issues/{number}"):  # GitHub links a PR's comments either way
        try:
            return PostedComment(ident, validate.web_url(link, hosts, path, "the comment's html_url", fragment))
        except SeriesError as exc:
            problems.append(str(exc))
    raise bad(problems[0])


def _validation_errors(body: bytes) -> str:
    """GitHub's reasons for a 422 ("A pull request already exists for ..."), one line."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # the body is only a hint
        return "Validation Failed"
    reasons = (
        [str(e.get("message") or e.get("code") or "") for e in data.get("errors") or [] if isinstance(e, dict)]
        if isinstance(data, dict) and isinstance(data.get("errors"), list)
        else []
    )
    text = "; ".join(r for r in reasons if r) or (
        str(data.get("message", "Validation Failed")) if isinstance(data, dict) else "Validation Failed"
    )
    return " ".join(text.split())[:300]


def _parse_time(text: Any, url: str, field: str = "updated_at") -> datetime.datetime:
    if text is None or text == "":
        return datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)
    try:
        if not isinstance(text, str):
            raise ValueError(text)
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ForgeError(
            f"the GitHub API sent {field} {validate.one_line(str(text))[:60]!r}, not an "
            f"ISO 8601 time ({validate.one_line(url)})"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.timezone.utc)


def _text(value: Any) -> str:
    """A one-line display string from an answer: lone surrogates and controls replaced."""
    text = value if isinstance(value, str) else ""
    text = text.encode("utf-8", "replace").decode("utf-8")  # a lone surrogate cannot be written
    return re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", " ", text).strip()


def pull_from_json(data: Any, url: str, slug: str, hosts: tuple[str, ...]) -> PullRequest:
    """One pull request from the API, every field checked; ForgeError names what is wrong."""

    def bad(what: str) -> ForgeError:
        return ForgeError(
            f"the GitHub API sent a pull request with {what} ({validate.one_line(url)}); "
            "check upstream.api_url points at a GitHub REST API"
        )

    if (
        not isinstance(data, dict)
        or isinstance(data.get("number"), bool)
        or not isinstance(data.get("number"), int)
        or data["number"] <= 0
    ):
        raise bad("no number")
    number = data["number"]
    for key in ("title", "body", "state", "html_url", "merge_commit_sha", "updated_at", "closed_at", "merged_at"):
        if not isinstance(data.get(key), (str, type(None))):
            raise bad(f"a '{key}' that is not a string")
    for key in ("base", "head", "user"):
        if not isinstance(data.get(key), (dict, type(None))):
            raise bad(f"a '{key}' that is not an object")
    merged = bool(data.get("merged") or data.get("merged_at"))
    said = data.get("state") or "unknown"  # the API says open or closed; merged is a PR with a merge
    if said not in _API_STATES:
        raise bad(f"state {validate.one_line(said)[:20]!r}")
    state = PullState.MERGED if merged else PullState(said)
    base = data.get("base") or {}
    head = data.get("head") or {}
    user = data.get("user") or {}
    try:
        head_sha = validate.commit_id(head["sha"], f"PR #{number} head.sha") if head.get("sha") else None
        base_sha = validate.commit_id(base["sha"], f"PR #{number} base.sha") if base.get("sha") else None
        merge_commit = data.get("merge_commit_sha") if merged else None
        if merge_commit:
            validate.commit_id(merge_commit, f"PR #{number} merge_commit_sha")
        html_url = data.get("html_url")
        if html_url is not None:
            validate.web_url(html_url, hosts, f"/{slug}/pull/{number}", f"PR #{number} html_url")
    except SeriesError as exc:
        raise ForgeError(f"the GitHub API sent {exc.text} ({validate.one_line(url)})") from None
    for key in ("updated_at", "closed_at"):
        _parse_time(data.get(key), url, key)
    return PullRequest(
        number=PRNumber(number),
        title=_text(data.get("title")),
        author=_text(user.get("login")) or "?",
        state=state,
        head_sha=Sha(head_sha) if head_sha else None,
        base_sha=Sha(base_sha) if base_sha else None,
        merge_commit=Sha(merge_commit) if merge_commit else None,
        url=html_url,
        updated_at=data.get("updated_at"),
        closed_at=data.get("closed_at"),
        body=data.get("body"),
    )
