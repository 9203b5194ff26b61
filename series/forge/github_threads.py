"""Which of a PR's review threads are resolved: GitHub's GraphQL API (reviewThreads.isResolved).

GitHub's REST API has no word for a resolved thread; GraphQL has, and it needs a token
(GitHub answers anonymous GraphQL with 401). Without a token this reads nothing and says
so (None): `series upstream` then approximates and labels its answer as approximated.

One query per page of 100 threads, sent to the GraphQL endpoint on the configured API host
only (github.com: https://api.github.com/graphql; GitHub Enterprise: https://HOST/api/graphql
beside https://HOST/api/v3), through the same client as every REST read (the token stays on
that host, the answer size is capped). A query only reads; it is still sent once and never
retried. Every field is checked where it enters: a wrong answer is one ForgeError naming the
PR, never a thread taken as resolved.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from series import __version__, validate
from series.forge.base import ForgeError, ForgeUnreachable
from series.forge.http import ApiClient, HttpFailed, HttpRefused, HttpUnreachable
from series.model import PRNumber

# a PR's threads beyond this are not a review a person holds: refused, as REST lists are
MAX_THREADS = 5000

QUERY = """query($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes { isResolved comments(first: 1) { nodes { databaseId } } }
      }
    }
  }
}"""


class GraphQLReads(Protocol):
    """What this module asks of GitHubForge (github.py hands itself in: no import back)."""

    _token: str | None
    base: str
    slug: str
    http: ApiClient

    def _http_error(self, exc: HttpFailed, what: str) -> ForgeError: ...


def endpoint(api_base: str) -> str:
    """The GraphQL URL beside a REST base: https://HOST/api/v3 -> https://HOST/api/graphql."""
    base = api_base.rstrip("/")
    return base[: -len("/v3")] + "/graphql" if base.endswith("/api/v3") else base + "/graphql"


def resolved_threads(forge: GraphQLReads, number: PRNumber, max_pages: int) -> tuple[int, ...] | None:
    """The REST ids of the first comments of the PR's resolved review threads, sorted; None
    without a token (not known)."""
    if not forge._token:
        return None
    owner, name = forge.slug.split("/", 1)
    url = endpoint(forge.base)
    what = f"the review threads of pull request #{number}"
    resolved: list[int] = []
    seen = 0
    after: str | None = None
    for _ in range(max_pages):
        page = _page(forge, url, what, {"owner": owner, "name": name, "number": int(number), "after": after})

        def bad(detail: str) -> ForgeError:
            return ForgeError(
                f"the GitHub GraphQL API sent {detail} for {what} ({validate.one_line(url)}); refusing the answer"
            )

        threads = _dig(page, "data", "repository", "pullRequest", "reviewThreads")
        nodes = threads.get("nodes") if isinstance(threads, dict) else None
        info = threads.get("pageInfo") if isinstance(threads, dict) else None
        if not isinstance(nodes, list) or not isinstance(info, dict):
            raise bad("no list of review threads")
        seen += len(nodes)
        if seen > MAX_THREADS:
            raise bad(f"more than {MAX_THREADS} review threads")
        for node in nodes:
            flag = node.get("isResolved") if isinstance(node, dict) else None
            first = _dig(node, "comments", "nodes")
            ident = (
                first[0].get("databaseId") if isinstance(first, list) and first and isinstance(first[0], dict) else None
            )
            if not isinstance(flag, bool) or isinstance(ident, bool) or not isinstance(ident, int):
                raise bad("a review thread without isResolved or its first comment's id")
            if flag:
                resolved.append(ident)
        more, cursor = info.get("hasNextPage"), info.get("endCursor")
        if more is False:
            return tuple(sorted(set(resolved)))
        if more is not True or not isinstance(cursor, str) or not cursor or cursor == after:
            raise bad("a page of review threads without a next cursor")
        after = cursor
    raise ForgeError(
        f"the GitHub GraphQL API had more than {max_pages} pages of {what}; stopped rather than go on with part of them"
    )


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _page(forge: GraphQLReads, url: str, what: str, variables: dict[str, Any]) -> Any:
    headers = {
        "Accept": "application/vnd.github+json",
        "User-Agent": f"series/{__version__}",
        "Content-Type": "application/json",
    }
    payload = json.dumps({"query": QUERY, "variables": variables}).encode("utf-8")
    try:
        answer = forge.http.post(url, what, headers, payload)
    except HttpRefused as exc:
        raise ForgeError(str(exc)) from None
    except HttpUnreachable as exc:
        raise ForgeUnreachable(f"{exc}; check the network, or pass --offline to read the stored fetch") from None
    except HttpFailed as exc:
        raise forge._http_error(exc, what) from None
    try:
        data = json.loads(answer.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ForgeError(f"the GitHub GraphQL API sent something that is not JSON for {what}") from None
    errors = data.get("errors") if isinstance(data, dict) else None
    if errors:
        first = errors[0].get("message") if isinstance(errors, list) and isinstance(errors[0], dict) else None
        said = forge.http.scrub(first)[:200] if isinstance(first, str) else "an error"
        raise ForgeError(
            f"the GitHub GraphQL API refused {what}: {validate.one_line(said)}",
            "a fine-grained token needs read access to pull requests; or pass --offline",
        )
    return data
