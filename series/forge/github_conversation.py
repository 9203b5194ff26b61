"""A PR's review conversation from GitHub's REST API, every field checked where it enters.

Read through GitHubForge's one GET (token only to the API host, redirects kept there,
pagination bounded, rate limits said in one line): the PR itself, its reviews, its review
comments, its conversation, its commits, its review-request events and the check runs of
its head commit and its combined commit status (CI that reports as commit statuses, as
vLLM's Buildkite does, is no check run). A wrong answer (a wrong type, a list that is not one, a list longer than
MAX_ITEMS) is one ForgeError naming the URL; nothing of it is used.

Resolved review threads: REST does not say which threads are resolved; GraphQL's
reviewThreads does, with a token (forge/github_threads.py). A thread here is a first
comment and its replies (in_reply_to_id), known as resolved by its first comment's id.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Callable, Iterator, Protocol

from series import validate
from series.forge import github_threads
from series.forge.base import ForgeError, PullRequest
from series.forge.conversation import (
    REVIEW_STATES,
    STATUS_STATES,
    CheckRun,
    CommitStatus,
    Conversation,
    Review,
    ReviewComment,
    Said,
)
from series.forge.http import ApiClient, HttpFailed
from series.model import PRNumber


class GitHubReads(Protocol):
    """What this module asks of GitHubForge (github.py hands itself in: no import back)."""

    _token: str | None
    base: str
    slug: str
    http: ApiClient

    def _http_error(self, exc: HttpFailed, what: str) -> ForgeError: ...

    def pull(self, number: PRNumber) -> PullRequest: ...

    def viewer_login(self) -> str: ...

    def _url(self, path: str, **query: str | int) -> str: ...

    def _get(self, url: str, what: str) -> tuple[Any, str | None]: ...

    def _cached(
        self, url: str, what: str, paginate: bool = False, stop: Callable[[list[Any]], bool] | None = None
    ) -> Any: ...


ParseTime = Callable[[Any, str, str], datetime.datetime]

# one PR's list of anything beyond this is not a conversation a person holds: refused
MAX_ITEMS = 5000
_LOGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}(\[bot\])?")


def fetch(forge: GitHubReads, number: PRNumber, _parse_time: ParseTime, max_pages: int) -> Conversation:
    pull = forge.pull(number)
    url = forge._url(f"pulls/{int(number)}")
    data = forge._cached(url, f"pull request #{number}")

    def bad(what: str, where: str) -> ForgeError:
        return ForgeError(
            f"the GitHub API sent {what} for PR #{number} ({validate.one_line(where)[:200]}); refusing the answer"
        )

    def listed(path: str, what: str) -> list[dict[str, Any]]:
        where = forge._url(path, per_page=100)
        items = forge._cached(where, f"{what} of pull request #{number}", paginate=True)
        if len(items) > MAX_ITEMS:
            raise bad(f"more than {MAX_ITEMS} {what}", where)
        if not all(isinstance(i, dict) for i in items):
            raise bad(f"{what} that are not objects", where)
        return list(items)

    def login(value: Any, where: str, key: str = "login") -> tuple[str, bool]:
        user = value if isinstance(value, dict) else None
        name = user.get(key) if user is not None else None
        if value is None:
            return "ghost", False  # a deleted account: GitHub sends null
        if not isinstance(name, str) or not _LOGIN.fullmatch(name):
            raise bad(f"a user without a valid login ({validate.one_line(str(name))[:40]!r})", where)
        return name, name.endswith("[bot]") or user.get("type") == "Bot"  # type: ignore[union-attr]

    def when(value: Any, where: str, key: str) -> str:
        if not isinstance(value, str) or not value:
            raise bad(f"no '{key}' time", where)
        _parse_time(value, where, key)
        return value

    def said(item: dict[str, Any], where: str, key: str, user: str = "user") -> Said:
        who, bot = login(item.get(user), where)
        return Said(who, when(item.get(key), where, key), bot)

    for key in ("draft",):
        if not isinstance(data.get(key, False), bool):
            raise bad(f"a '{key}' that is not true or false", url)
    labels = []
    for label in data.get("labels") or []:
        if not isinstance(label, dict) or not isinstance(label.get("name"), str):
            raise bad("a label without a name", url)
        labels.append(label["name"])
    requested = [login(r, url)[0] for r in _list(data.get("requested_reviewers"), bad, "requested_reviewers", url)]

    reviews = []
    where = forge._url(f"pulls/{int(number)}/reviews", per_page=100)
    for item in listed(f"pulls/{int(number)}/reviews", "reviews"):
        state = item.get("state")
        if state not in REVIEW_STATES:
            raise bad(f"a review state {validate.one_line(str(state))[:30]!r}", where)
        if state == "PENDING":
            continue  # a draft review nobody else can see yet
        reviews.append(Review(said(item, where, "submitted_at"), state))

    review_comments = []
    where = forge._url(f"pulls/{int(number)}/comments", per_page=100)
    for item in listed(f"pulls/{int(number)}/comments", "review comments"):
        ident, reply = item.get("id"), item.get("in_reply_to_id")
        if (
            isinstance(ident, bool)
            or not isinstance(ident, int)
            or (reply is not None and (isinstance(reply, bool) or not isinstance(reply, int)))
        ):
            raise bad("a review comment without an id", where)
        review_comments.append(
            ReviewComment(ident, reply, said(item, where, "created_at"), outdated=item.get("position", 0) is None)
        )

    comments = []
    where = forge._url(f"issues/{int(number)}/comments", per_page=100)
    for item in listed(f"issues/{int(number)}/comments", "comments"):
        body = item.get("body")
        if not isinstance(body, (str, type(None))):
            raise bad("a comment whose body is not text", where)
        first = (body or "").strip().split("\n", 1)[0][:200]
        who, bot = login(item.get("user"), where)
        comments.append(Said(who, when(item.get("created_at"), where, "created_at"), bot, first))

    pushes = []
    where = forge._url(f"pulls/{int(number)}/commits", per_page=100)
    for item in listed(f"pulls/{int(number)}/commits", "commits"):
        commit = item.get("commit")
        committer = commit.get("committer") if isinstance(commit, dict) else None
        if not isinstance(committer, dict):
            raise bad("a commit without a committer", where)
        who = login(item.get("author"), where)[0] if item.get("author") is not None else pull.author
        pushes.append(Said(who, when(committer.get("date"), where, "commit.committer.date")))

    requests = []
    where = forge._url(f"issues/{int(number)}/timeline", per_page=100)
    for item in listed(f"issues/{int(number)}/timeline", "timeline events"):
        if item.get("event") == "review_requested" and item.get("requested_reviewer") is not None:
            requests.append(
                Said(login(item.get("requested_reviewer"), where)[0], when(item.get("created_at"), where, "created_at"))
            )

    checks = _check_runs(forge, number, pull.head_sha, bad, max_pages) if pull.head_sha else []
    statuses = _statuses(forge, number, pull.head_sha, bad, max_pages) if pull.head_sha else []
    return Conversation(
        pull,
        bool(data.get("draft")),
        tuple(labels),
        tuple(requested),
        tuple(reviews),
        tuple(review_comments),
        tuple(comments),
        tuple(pushes),
        tuple(requests),
        tuple(checks),
        _viewer(forge),
        tuple(statuses),
        github_threads.resolved_threads(forge, number, max_pages),
    )


def _list(value: Any, bad: Any, key: str, url: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_ITEMS:
        raise bad(f"a '{key}' that is not a list", url)
    return value


def _enveloped(
    forge: GitHubReads, path: str, key: str, what: str, noun: str, bad: Any, max_pages: int
) -> Iterator[tuple[Any, str]]:
    """Each item of a list GitHub wraps in an object per page ({total_count, <key>: [...]}),
    with the page it came from; at most MAX_ITEMS in all and max_pages pages."""
    page: str | None = forge._url(path, per_page=100)
    seen = 0
    for _ in range(max_pages):
        if page is None:
            return
        data, following = forge._get(page, what)
        items = data.get(key) if isinstance(data, dict) else None
        if not isinstance(items, list) or seen + len(items) > MAX_ITEMS:
            raise bad(f"{noun} that are not a list of at most {MAX_ITEMS}", page)
        seen += len(items)
        for item in items:
            yield item, page
        page = following
    raise bad(f"more than {max_pages} pages of {noun}", page or "")


def _check_runs(forge: GitHubReads, number: PRNumber, head: str, bad: Any, max_pages: int) -> list[CheckRun]:
    """The check runs of the head commit: an object per page ({total_count, check_runs})."""
    runs: list[CheckRun] = []
    for item, page in _enveloped(
        forge,
        f"commits/{head}/check-runs",
        "check_runs",
        f"the check runs of PR #{number}'s head",
        "check runs",
        bad,
        max_pages,
    ):
        name = item.get("name") if isinstance(item, dict) else None
        status = item.get("status") if isinstance(item, dict) else None
        conclusion = item.get("conclusion") if isinstance(item, dict) else None
        if not isinstance(name, str) or not isinstance(status, str) or not isinstance(conclusion, (str, type(None))):
            raise bad("a check run without a name, status or conclusion", page)
        runs.append(CheckRun(validate.one_line(name)[:100], status, conclusion))
    return runs


def _statuses(forge: GitHubReads, number: PRNumber, head: str, bad: Any, max_pages: int) -> list[CommitStatus]:
    """The head commit's combined status, one entry per context (GitHub keeps the latest of
    each): an object per page ({state, total_count, statuses}). The combined `state` alone
    is not read: GitHub says "pending" for a commit nobody reported on."""
    found: list[CommitStatus] = []
    for item, page in _enveloped(
        forge,
        f"commits/{head}/status",
        "statuses",
        f"the commit status of PR #{number}'s head",
        "commit statuses",
        bad,
        max_pages,
    ):
        context = item.get("context") if isinstance(item, dict) else None
        state = item.get("state") if isinstance(item, dict) else None
        if not isinstance(context, str) or state not in STATUS_STATES:
            raise bad("a commit status without a context or a known state", page)
        found.append(CommitStatus(validate.one_line(context)[:100], str(state)))
    return found


def _viewer(forge: GitHubReads) -> str | None:
    """Whose token this is (review requests addressed to us); None without a token."""
    if not forge._token:
        return None
    try:
        return forge.viewer_login()
    except ForgeError:
        return None  # a token that cannot say: the PR's author is still "us"
