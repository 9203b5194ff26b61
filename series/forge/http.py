"""GET against one API host, with the token kept to that host: redirects, retries, ETags.

urllib on its own copies every header, Authorization included, to wherever a redirect
points. So redirects are not left to urllib: a 30x is followed here, only for GET and
only to the configured host (same scheme, host and port); anything else is refused in
one line, and the token never leaves for a second host.

Transient failures (5xx, a dropped connection, a timeout) are retried a bounded number
of times with exponential backoff and full jitter. A short `Retry-After` (secondary
rate limits, 503s) is waited out and said; a long one becomes the error. Successful
answers are kept in an on-disk ETag cache, so a nightly CI run that asks the same
questions pays with 304s, which GitHub does not count against the rate limit.

Whatever the server says is untrusted: its error `message` is shown only after
`scrub()` has removed the token and anything shaped like a credential.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Callable

from series.cache import user_cache
from series.errors import SeriesError, register_secret
from series.ops.fs import write_atomically
from series.validate import one_line

log = logging.getLogger("series.forge")

REDIRECTS = (301, 302, 303, 307, 308)
TRANSIENT = (500, 502, 503, 504)
MAX_REDIRECTS = 5
SHORT_WAIT = 30.0  # seconds: a Retry-After up to this is waited out, longer is an error
# one answer larger than this is refused, not read into memory: GitHub's pages of 100
# items stay far below it (SERIES_HTTP_MAX_BYTES lowers it in tests)
MAX_BODY = 64 * 1024 * 1024
_CREDENTIAL = re.compile(
    r"(?:gh[pousr]_[A-Za-z0-9_]{16,}|github_pat_[A-Za-z0-9_]{16,}|"
    r"(?i:(?:bearer|token|basic)\s+)[A-Za-z0-9_.=:+/-]{8,})"
)


def scrub(text: str, token: str | None) -> str:
    """`text` without the token or anything that looks like a credential, one line."""
    if token:
        text = text.replace(token, "[token]")
    return one_line(_CREDENTIAL.sub("[token]", text))


@dataclass(frozen=True)
class Answer:
    status: int  # 200, or 304 answered from the cache
    body: bytes
    link: str | None
    rate_remaining: int | None
    from_cache: bool = False


class HttpRefused(SeriesError):
    """A redirect or answer this client will not follow."""


class HttpFailed(SeriesError):
    """The server answered with an error status (after retries, for transient ones)."""

    def __init__(self, message: str, code: int, headers: Message | None, body: bytes):
        super().__init__(message)
        self.code = code
        self.headers = headers
        self.body = body


class HttpUnreachable(SeriesError):
    """No answer at all after the retries: DNS, refused, reset, timeout."""


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Every 30x comes back to us as an HTTPError, headers untouched by urllib."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


def cache_dir() -> Path:
    return user_cache("http", "SERIES_HTTP_CACHE")


class ApiClient:
    """GETs to one API base URL; `get()` returns an Answer or raises one of the above."""

    def __init__(
        self,
        base: str,
        token: str | None,
        *,
        timeout: float = 20.0,
        retries: int | None = None,
        backoff: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        say: Callable[[str], None] | None = None,
        cache: Path | None = None,
    ):
        self.base = base
        self.origin = _origin(base)
        self._token = token
        if token:
            register_secret(token)
        self.timeout = timeout
        self.retries = retries if retries is not None else int(os.environ.get("SERIES_HTTP_RETRIES", "3"))
        self.backoff = backoff if backoff is not None else float(os.environ.get("SERIES_HTTP_BACKOFF", "0.5"))
        self.sleep = sleep
        self.say = say or log.warning
        self.cache = (
            cache if cache is not None else (None if os.environ.get("SERIES_HTTP_CACHE") == "off" else cache_dir())
        )
        self.requests = 0
        self._opener = urllib.request.build_opener(_NoRedirects)

    def scrub(self, text: str) -> str:
        return scrub(text, self._token)

    # -- the ETag cache -------------------------------------------------------------------
    def _cache_file(self, url: str) -> Path | None:
        if self.cache is None:
            return None
        # keyed by who asks too (a token may see a private repository); the token itself
        # is never written, only mixed into a digest that cannot be turned back into it
        who = hashlib.sha256((self._token or "").encode()).hexdigest()
        key = hashlib.sha256(f"{url}\n{who}".encode()).hexdigest()
        return self.cache / f"{key[:2]}" / f"{key}.json"

    def _cached(self, url: str) -> dict[str, str] | None:
        path = self._cache_file(url)
        if path is None or not path.is_file():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # our own cache, damaged: a miss, rewritten on the next 200
        if (
            not isinstance(entry, dict)
            or entry.get("url") != url
            or not all(isinstance(entry.get(k), str) for k in ("etag", "body"))
        ):
            return None
        return entry

    def _store(self, url: str, etag: str | None, body: bytes, link: str | None) -> None:
        path = self._cache_file(url)
        if path is None or not etag:
            return
        try:
            text = (
                self.scrub(body.decode("utf-8"))
                if self._token and self._token.encode() in body
                else body.decode("utf-8")
            )
        except UnicodeDecodeError:
            return
        entry = {"url": url, "etag": etag, "link": link or "", "body": text}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, json.dumps(entry))
        except OSError as exc:  # a cache that cannot be written costs requests, nothing else
            log.debug("http cache not written (%s)", exc.strerror)

    # -- one GET --------------------------------------------------------------------------
    def get(self, url: str, what: str, headers: dict[str, str]) -> Answer:
        if _origin(url) != self.origin:
            raise HttpRefused(
                f"refusing to send a request for {what} to {one_line(url)}: not the configured API host {self.base}"
            )
        cached = self._cached(url)
        extra = {"If-None-Match": cached["etag"]} if cached else {}
        for hop in range(MAX_REDIRECTS + 1):
            try:
                return self._attempts(url, what, {**headers, **extra}, cached)
            except _Redirect as moved:
                target = urllib.parse.urljoin(url, moved.location)
                if _origin(target) != self.origin:
                    raise HttpRefused(
                        f"the GitHub API at {self.base} redirected {what} ({moved.code}) to another "
                        f"host ({scrub(target, self._token)[:200]}); refusing to follow it: the "
                        "token is only sent to the configured API host (check upstream.api_url)"
                    ) from None
                log.debug("redirect %s -> %s", moved.code, target)
                url = target
        raise HttpRefused(f"the GitHub API at {self.base} redirected {what} more than {MAX_REDIRECTS} times; refusing")

    def post(self, url: str, what: str, headers: dict[str, str], payload: bytes) -> Answer:
        """One POST, sent once: never retried (a lost answer could mean it was done) and
        never redirected (a 30x is refused, the token stays here)."""
        if _origin(url) != self.origin:
            raise HttpRefused(f"refusing to send {what} to {one_line(url)}: not the configured API host {self.base}")
        send = dict(headers)
        if self._token:
            send["Authorization"] = f"Bearer {self._token}"
        log.debug("POST %s", url)
        self.requests += 1
        request = urllib.request.Request(url, data=payload, headers=send, method="POST")
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                return Answer(response.status, response.read(), response.headers.get("Link"), None)
        except urllib.error.HTTPError as exc:
            if exc.code in REDIRECTS:
                raise HttpRefused(
                    f"the GitHub API at {self.base} redirected {what} ({exc.code}); "
                    "refusing: only GET requests follow redirects, and only on this host"
                ) from None
            raise HttpFailed(f"HTTP {exc.code}", exc.code, exc.headers, _read(exc)) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise HttpUnreachable(f"cannot reach the GitHub API at {self.base} ({self.scrub(str(reason))})") from None

    def _attempts(self, url: str, what: str, headers: dict[str, str], cached: dict[str, str] | None) -> Answer:
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            wait = self._pause(attempt)
            try:
                return self._once(url, headers, cached)
            except urllib.error.HTTPError as exc:
                location = exc.headers.get("Location") if exc.headers else None
                if exc.code in REDIRECTS and location:
                    raise _Redirect(exc.code, location) from None
                body = _read(exc)
                retry_after = _seconds(exc.headers.get("Retry-After") if exc.headers else None)
                if (
                    retry_after is not None
                    and retry_after <= SHORT_WAIT
                    and not last
                    and exc.code in (403, 429, *TRANSIENT)
                ):
                    self.say(
                        f"the GitHub API asked to wait {retry_after:g} s (Retry-After, "
                        f"{exc.code}) while reading {what}; waiting"
                    )
                    self.sleep(retry_after)
                    continue
                if exc.code in TRANSIENT and not last:
                    log.debug("GET %s: %s, retrying in %.1f s", url, exc.code, wait)
                    self.sleep(wait)
                    continue
                raise HttpFailed(f"HTTP {exc.code}", exc.code, exc.headers, body) from None
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                if not last:
                    log.debug("GET %s: %s, retrying in %.1f s", url, reason, wait)
                    self.sleep(wait)
                    continue
                raise HttpUnreachable(
                    f"cannot reach the GitHub API at {self.base} ({self.scrub(str(reason))}"
                    f"{', after ' + str(self.retries + 1) + ' tries' if self.retries else ''})"
                ) from None
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _pause(self, attempt: int) -> float:
        """Full jitter (AWS's 'exponential backoff and jitter'), capped at 8 s a wait."""
        return random.uniform(0, min(8.0, self.backoff * (2**attempt)))

    def _once(self, url: str, headers: dict[str, str], cached: dict[str, str] | None) -> Answer:
        send = dict(headers)
        if self._token and _origin(url) == self.origin:
            send["Authorization"] = f"Bearer {self._token}"
        log.debug("GET %s", url)
        self.requests += 1
        request = urllib.request.Request(url, headers=send, method="GET")
        try:
            response = self._opener.open(request, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            if exc.code == 304 and cached is not None:
                remaining = exc.headers.get("X-RateLimit-Remaining") if exc.headers else None
                return Answer(
                    304,
                    cached["body"].encode("utf-8"),
                    cached.get("link") or None,
                    int(remaining) if remaining and remaining.isdigit() else None,
                    True,
                )
            raise
        with response:
            limit = int(os.environ.get("SERIES_HTTP_MAX_BYTES") or MAX_BODY)
            body = response.read(limit + 1)
            if len(body) > limit:
                raise HttpRefused(
                    f"the GitHub API at {self.base} sent more than {limit} bytes for "
                    f"{one_line(url)[:200]}; refusing an answer that large"
                )
            link = response.headers.get("Link")
            remaining = response.headers.get("X-RateLimit-Remaining")
            self._store(url, response.headers.get("ETag"), body, link)
        return Answer(response.status, body, link, int(remaining) if remaining and remaining.isdigit() else None)


class _Redirect(Exception):
    def __init__(self, code: int, location: str):
        super().__init__(code)
        self.code = code
        self.location = location


def _read(exc: urllib.error.HTTPError) -> bytes:
    try:
        return exc.read()[:65536]
    except (OSError, ValueError):
        return b""


def _seconds(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None  # an HTTP date: treated as long, so the error says when to retry
    return seconds if 0 <= seconds < 1e6 else None
