"""The GitHub REST API through urllib (no new dependency), as a Forge.

The token comes from GITHUB_TOKEN, GH_TOKEN or `gh auth token`, in that order. It is held
only in this object and sent only in the Authorization header to the configured API
host: it is never logged (URLs are logged, headers are not), never part of an error
message, and never sent to a host a Link header names if that host is another one.

Each answer is cached for the run (one Forge per command), so preflight's many questions
about the same PR cost one request each. Errors the user can act on (bad token, unknown
PR or repository, rate limit) are one line each.
"""
from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import re
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable

from series import __version__
from series.forge.base import Forge, ForgeError, ForgeUnreachable, PullFile, PullRequest, hunks_of_patch
from series.model import PRNumber, Sha

log = logging.getLogger("series.forge")

DEFAULT_API = "https://api.github.com"
_LINK_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')
_MAX_PAGES = 50  # 5,000 items: beyond that the question is wrong, not the page size


def api_base(configured: str | None) -> str:
    """SERIES_GITHUB_API (one run) beats upstream.api_url (the team's GitHub Enterprise)."""
    return (os.environ.get("SERIES_GITHUB_API") or configured or DEFAULT_API).rstrip("/")


def find_token(host: str | None = None, run: Callable[..., Any] = subprocess.run) -> str | None:
    """GITHUB_TOKEN, GH_TOKEN, then `gh auth token`; None when there is none (anonymous)."""
    for key in ("GITHUB_TOKEN", "GH_TOKEN"):
        value = os.environ.get(key, "").strip()
        if value:
            return value
    if shutil.which("gh") is None:
        return None
    cmd = ["gh", "auth", "token"]
    if host and host not in ("api.github.com", "github.com"):
        cmd += ["--hostname", host]
    try:
        proc = run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    token = proc.stdout.strip() if proc.returncode == 0 else ""
    return token or None


def _when(epoch: str | None) -> str:
    try:
        moment = _dt.datetime.fromtimestamp(int(epoch or ""), _dt.timezone.utc)
    except ValueError:
        return "later"
    minutes = max(0, int((moment - _dt.datetime.now(_dt.timezone.utc)).total_seconds() // 60) + 1)
    return f"at {moment:%H:%M} UTC, in {minutes} min"


class GitHubForge(Forge):
    source = "github"

    def __init__(self, repo_slug: str, api_url: str | None = None, token: str | None = None,
                 timeout: float = 20.0):
        self.slug = repo_slug
        self.base = api_base(api_url)
        self._host = urllib.parse.urlsplit(self.base).netloc
        self._token = token
        self.timeout = timeout
        self._cache: dict[str, Any] = {}
        self.requests = 0
        self.rate_remaining: int | None = None  # from the last answer's headers

    def __repr__(self) -> str:  # never the token
        return f"GitHubForge({self.slug!r}, {self.base!r}, token={'set' if self._token else 'none'})"

    # -- HTTP ---------------------------------------------------------------------------
    def _get(self, url: str, what: str) -> tuple[Any, str | None]:
        """(decoded JSON, next page URL) for one GET; errors become one-line ForgeErrors."""
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"series/{__version__}",
        }
        if self._token and urllib.parse.urlsplit(url).netloc == self._host:
            headers["Authorization"] = f"Bearer {self._token}"
        log.debug("GET %s", url)
        self.requests += 1
        request = urllib.request.Request(url, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read()
                link = response.headers.get("Link")
                remaining = response.headers.get("X-RateLimit-Remaining")
                if remaining is not None and remaining.isdigit():
                    self.rate_remaining = int(remaining)
        except urllib.error.HTTPError as exc:
            raise self._http_error(exc, what) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ForgeUnreachable(
                f"cannot reach the GitHub API at {self.base} ({reason}); "
                "check the network or upstream.api_url, or pass --offline to work from git alone"
            ) from None
        try:
            data = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise ForgeError(f"the GitHub API at {self.base} sent something that is not JSON for {what}") from None
        next_url = None
        if link:
            m = _LINK_NEXT.search(link)
            if m:
                next_url = m.group(1)
        return data, next_url

    def _http_error(self, exc: urllib.error.HTTPError, what: str) -> ForgeError:
        code = exc.code
        headers = exc.headers
        remaining = headers.get("X-RateLimit-Remaining") if headers else None
        retry_after = headers.get("Retry-After") if headers else None
        message = ""
        try:
            message = str(json.loads(exc.read().decode("utf-8")).get("message", ""))
        except Exception:  # the body is only a hint
            message = ""
        if code in (403, 429) and remaining == "0":
            auth = "" if self._token else "; set GITHUB_TOKEN or GH_TOKEN for a higher limit"
            return ForgeError(
                f"GitHub API rate limit exhausted ({code}) while reading {what}; it resets "
                f"{_when(headers.get('X-RateLimit-Reset'))}{auth}, or pass --offline")
        if code in (403, 429) and retry_after:
            return ForgeError(
                f"GitHub API secondary rate limit ({code}) while reading {what}; "
                f"retry after {retry_after} s, or pass --offline")
        if code == 429:
            return ForgeError(f"GitHub API rate limit (429) while reading {what}; retry later, or pass --offline")
        if code == 401:
            source = "the token" if self._token else "anonymous access"
            return ForgeError(
                f"GitHub API refused {source} (401 Bad credentials) for {what}; "
                "renew GITHUB_TOKEN / GH_TOKEN or run 'gh auth login'")
        if code == 404:
            return ForgeError(
                f"GitHub API: {what} not found (404); check the number and upstream.github "
                f"({self.slug}); a private repository also needs a token")
        if code == 403:
            detail = f": {message}" if message else ""
            return ForgeError(f"GitHub API refused {what} (403){detail}")
        return ForgeError(f"GitHub API error {code} for {what}{': ' + message if message else ''}")

    def _cached(self, url: str, what: str, paginate: bool = False,
                stop: Callable[[list[Any]], bool] | None = None) -> Any:
        if url in self._cache:
            return self._cache[url]
        if not paginate:
            data, _ = self._get(url, what)
        else:
            data = []
            page: str | None = url
            for _ in range(_MAX_PAGES):
                if page is None:
                    break
                if urllib.parse.urlsplit(page).netloc != self._host:
                    raise ForgeError(f"the GitHub API sent a next page on another host ({page}); refusing")
                items, page = self._get(page, what)
                if not isinstance(items, list):
                    raise ForgeError(f"the GitHub API sent an unexpected answer for {what}")
                data.extend(items)
                if stop is not None and stop(items):
                    break
        self._cache[url] = data
        return data

    def _url(self, path: str, **query: str | int) -> str:
        url = f"{self.base}/repos/{self.slug}/{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        return url

    # -- Forge --------------------------------------------------------------------------
    def pull(self, number: PRNumber) -> PullRequest:
        data = self._cached(self._url(f"pulls/{int(number)}"), f"pull request #{number}")
        return _pull_from_json(data)

    def list_pulls(self, since: _dt.datetime) -> list[PullRequest]:
        """Every open PR, whatever its age (vLLM PRs stay open for months), then the PRs
        closed at or after `since`."""
        cutoff = since.astimezone(_dt.timezone.utc)

        def older(items: list[Any]) -> bool:
            # Sorted by last update, newest first: once a page ends before the cutoff,
            # no later page can hold a PR updated (or closed) after it.
            last = items[-1] if items else None
            return isinstance(last, dict) and _parse_time(last.get("updated_at")) < cutoff

        opened = self._cached(
            self._url("pulls", state="open", sort="updated", direction="desc", per_page=100),
            "the open pull requests", paginate=True)
        closed = self._cached(
            self._url("pulls", state="closed", sort="updated", direction="desc", per_page=100),
            "the closed pull requests", paginate=True, stop=older)
        pulls: dict[int, PullRequest] = {}  # one closed between the two lists is in both
        for item in [*opened, *closed]:
            pr = _pull_from_json(item)
            if pr.state == "open" or (pr.closed_at and _parse_time(pr.closed_at) >= cutoff):
                pulls.setdefault(int(pr.number), pr)
        return list(pulls.values())

    def pull_files(self, number: PRNumber) -> list[PullFile]:
        items = self._cached(self._url(f"pulls/{int(number)}/files", per_page=100),
                             f"the files of pull request #{number}", paginate=True)
        if not all(isinstance(i, dict) and isinstance(i.get("filename"), str) for i in items):
            raise ForgeError(f"the GitHub API sent a file list without file names for PR #{number}")
        return [PullFile(path=i["filename"], hunks=hunks_of_patch(i.get("patch")),
                         previous_path=i.get("previous_filename")) for i in items]

    # -- proposing a PR (series propose) ------------------------------------------------
    def open_pulls(self) -> list[PullRequest]:
        """Every open PR, of any age: a duplicate opened long ago is still a duplicate.
        (The same question as list_pulls' first half, so one run asks it once.)"""
        items = self._cached(self._url("pulls", state="open", sort="updated", direction="desc", per_page=100),
                             "the open pull requests", paginate=True)
        return [_pull_from_json(item) for item in items]

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
            raise ForgeError("the GitHub API did not say whose token this is (GET /user); "
                             "pass --owner LOGIN (the owner of your fork)")
        return login

    def create_pull(self, *, head: str, base: str, title: str, body: str, draft: bool = True) -> PullRequest:
        """Open a PR (POST /repos/OWNER/REPO/pulls); sent once, never retried: a retry
        after a lost answer could open it twice."""
        if not self._token:
            raise ForgeError("opening a pull request needs a GitHub token: set GH_TOKEN or GITHUB_TOKEN, "
                             "or run 'gh auth login'")
        url = self._url("pulls")
        payload = json.dumps({"title": title, "head": head, "base": base, "body": body,
                              "draft": draft}).encode("utf-8")
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
                   "User-Agent": f"series/{__version__}", "Content-Type": "application/json",
                   "Authorization": f"Bearer {self._token}"}
        log.debug("POST %s", url)
        request = urllib.request.Request(url, data=payload, headers=headers, method="POST")
        what = f"a new pull request from {head}"
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer = response.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 422:  # GitHub's "Validation Failed": the reasons are in errors[]
                raise ForgeError(f"GitHub refused {what} (422): {_validation_errors(exc)}") from None
            raise self._http_error(exc, what) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ForgeUnreachable(f"cannot reach the GitHub API at {self.base} "
                                   f"({getattr(exc, 'reason', exc)}) to open the PR; nothing was opened "
                                   "as far as series knows: check the fork's PR list before retrying") from None
        try:
            return _pull_from_json(json.loads(answer.decode("utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise ForgeError(f"the GitHub API sent something that is not JSON for {what}") from None


def _validation_errors(exc: urllib.error.HTTPError) -> str:
    """GitHub's reasons for a 422 ("A pull request already exists for ..."), one line."""
    try:
        data = json.loads(exc.read().decode("utf-8"))
    except Exception:  # the body is only a hint
        return "Validation Failed"
    reasons = [str(e.get("message") or e.get("code") or "") for e in data.get("errors") or []
               if isinstance(e, dict)] if isinstance(data, dict) else []
    text = "; ".join(r for r in reasons if r) or str(data.get("message", "Validation Failed"))
    return " ".join(text.split())[:300]

def _parse_time(text: str | None) -> _dt.datetime:
    if not text:
        return _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)
    return _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _pull_from_json(data: Any) -> PullRequest:
    if not isinstance(data, dict) or not isinstance(data.get("number"), int):
        raise ForgeError("the GitHub API sent a pull request without a number; "
                         "check upstream.api_url points at a GitHub REST API")
    merged = bool(data.get("merged") or data.get("merged_at"))
    state = "merged" if merged else str(data.get("state") or "unknown")
    base = data.get("base") or {}
    head = data.get("head") or {}
    user = data.get("user") or {}
    merge_commit = data.get("merge_commit_sha") if merged else None
    return PullRequest(
        number=PRNumber(int(data["number"])), title=str(data.get("title") or ""),
        author=str(user.get("login") or "?"), state=state,
        head_sha=Sha(head["sha"]) if head.get("sha") else None,
        base_sha=Sha(base["sha"]) if base.get("sha") else None,
        merged=merged, merge_commit=Sha(merge_commit) if merge_commit else None,
        url=data.get("html_url"), updated_at=data.get("updated_at"), closed_at=data.get("closed_at"),
    )
