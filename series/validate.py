"""The gate for values from outside: git's own rules, checked once where a value enters.

series.yaml, patch files, export directories and API answers arrive in pull requests
and CI checkouts, so every value from them that reaches git (a ref name, a remote, a
commit id, a trailer, an identity, a date) is checked here, with the rules git itself
applies (refs.c check_refname_component, fsck's ident and date checks), before it is
used. Each check returns the value or raises a one-line SeriesError naming where the
value came from (`where`) and how to fix it; none of them guesses or repairs.

`printable()` is the other half of the gate: text from outside (a PR title, a server's
message) is shown with control characters escaped, so it cannot drive the terminal.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from typing import Iterable

from series.errors import SeriesError

_BAD_REF_CHARS = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")
_HEX = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_CONTROL_ALL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
# fsck --strict: a timestamp git can store and parse back (date.c rejects years past 9999
# as "badDateOverflow" in practice), and a zone of at most +/-99:59 written as 4 digits
MAX_TIME = 253402300799  # 9999-12-31T23:59:59Z
MAX_OFFSET = 99 * 60 + 59  # minutes


def _fail(where: str, value: object, what: str) -> SeriesError:
    return SeriesError(f"{where}: {printable(str(value))!r} {what}")


def ref_component_problem(name: str) -> str | None:
    """Why `name` (a full ref name like refs/heads/x) breaks git check-ref-format, or None."""
    if not name:
        return "is empty"
    if name == "@":
        return "is '@', which git reserves"
    if name.endswith("/"):
        return "ends with '/'"
    if name.endswith("."):
        return "ends with '.'"
    if "@{" in name:
        return "contains '@{'"
    m = _BAD_REF_CHARS.search(name)
    if m:
        char = m.group(0)
        shown = (
            "a space" if char == " " else ("a control character" if ord(char) < 32 or ord(char) == 127 else f"'{char}'")
        )
        return f"contains {shown}"
    for part in name.split("/"):
        if part == "":
            return "contains '//'"
        if part.startswith("."):
            return "has a component starting with '.'"
        if ".." in part:
            return "contains '..'"
        if part.endswith(".lock"):
            return "has a component ending in '.lock'"
    return None


def branch_name(value: object, where: str) -> str:
    """A branch name git accepts (`git check-ref-format --branch` without the @{-N} forms)."""
    if not isinstance(value, str) or not value:
        raise SeriesError(f"{where}: expected a branch name")
    if value.startswith("-"):
        raise _fail(where, value, "starts with '-' (git would read it as an option); rename the branch")
    if value.startswith("refs/") or value == "HEAD":
        raise _fail(where, value, "is not a branch name (give the name under refs/heads/, e.g. topic/x)")
    problem = ref_component_problem(f"refs/heads/{value}")
    if problem is not None:
        raise _fail(where, value, f"is not a valid branch name: it {problem} (git check-ref-format rules)")
    return value


def stable_revision(spec: str, where: str) -> str:
    """A revision whose meaning does not move as the user works: none of git's @{...}
    forms (@{-1}, topic@{2}, main@{yesterday}: the reflog and the checkout history;
    @{upstream}, @{push}: the branch checked out and its configuration). series records
    what it was given (series.yaml's base, an operation's 'onto') and reads it again
    later, when such a form would name another commit."""
    if "@{" in spec:
        shown = printable(spec)[:80]
        raise SeriesError(
            f"{where}: '{shown}' depends on the reflog or the checkout history (an @{{...}} form), "
            "so it would name another commit later",
            f"name a branch, a tag or a commit id: git rev-parse '{shown}' prints the commit it names now",
        )
    return spec


def remote_name(value: object, where: str) -> str:
    """A remote name git accepts: a valid ref component path, no leading '-'."""
    if not isinstance(value, str) or not value:
        raise SeriesError(f"{where}: expected a git remote name, e.g. upstream")
    if value.startswith("-"):
        raise _fail(
            where,
            value,
            "starts with '-' (git would read it as an option); use the name of a remote from 'git remote -v'",
        )
    problem = ref_component_problem(f"refs/remotes/{value}")
    if problem is not None:
        raise _fail(where, value, f"is not a valid remote name: it {problem}")
    return value


def existing_remote(found: Iterable[str | None], value: object, where: str) -> str:
    """A remote name that this repository has (git remote -v)."""
    name = remote_name(value, where)
    names = [n for n in found if n]
    if name not in names:
        known = ", ".join(sorted(names)) or "none"
        raise SeriesError(
            f"{where}: no git remote named '{printable(name)}' in this repository (remotes: {known})",
            f"add it with 'git remote add {name} <url>'",
        )
    return name


def commit_id(value: object, where: str) -> str:
    """A full commit id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits."""
    if not isinstance(value, str) or not _HEX.match(value):
        shown = printable(str(value))[:80]
        raise SeriesError(f"{where}: {shown!r} is not a commit id (40 or 64 hex digits)")
    return value


# GitHub's PR numbers are far below a billion: a longer run of digits is not one (and one
# of 5,000 digits is past what Python's int() reads at all)
PR_DIGITS = 9
MAX_PR = 10**PR_DIGITS - 1


def pr_number(value: object, where: str) -> int:
    """A pull request number: a positive integer of at most PR_DIGITS digits (not a
    bool, not a string)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_PR:
        raise SeriesError(f"{where}: {printable(str(value))[:40]!r} is not a pull request number")
    return value


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def api_url(value: str, where: str) -> str:
    """An API base URL: https, or http only to this machine (a test server, a local proxy)."""
    if _CONTROL_ALL.search(value) or " " in value:
        raise _fail(where, value, "contains spaces or control characters")
    parts = urllib.parse.urlsplit(value)
    if parts.scheme == "https" and parts.hostname:
        return value
    if parts.scheme == "http" and is_loopback(parts.hostname):
        return value
    raise _fail(
        where,
        value,
        "is not an https:// URL (plain http is allowed only to localhost); e.g. https://ghe.example.com/api/v3",
    )


def web_url(value: object, hosts: tuple[str, ...], path: str, where: str, fragment: str = "") -> str:
    """A link the forge sent (a PR's html_url): one line, https (http to loopback), one of
    `hosts`, exactly `path` (case-insensitive: GitHub's owner and repository names are),
    no query, and exactly `fragment` after '#' (a comment's anchor) or none."""
    if not isinstance(value, str):
        raise SeriesError(f"{where}: expected a URL")
    if _CONTROL_ALL.search(value) or " " in value:
        raise _fail(where, value, "contains spaces or control characters; refusing it")
    parts = urllib.parse.urlsplit(value)
    secure = parts.scheme == "https" or (parts.scheme == "http" and is_loopback(parts.hostname))
    if (
        not secure
        or (parts.hostname or "").lower() not in hosts
        or parts.username
        or parts.password
        or parts.query
        or parts.fragment != fragment
        or parts.path.rstrip("/").lower() != path.lower()
    ):
        anchor = f"#{fragment}" if fragment else ""
        raise _fail(where, value, f"is not https://{hosts[0]}{path}{anchor}; refusing it")
    return value


def https_url(value: object, where: str) -> str:
    """A link kept in series.yaml (a posted comment's): one line, https, a host, no
    user or password in it."""
    if not isinstance(value, str) or not value:
        raise SeriesError(f"{where}: expected an https:// URL")
    if _CONTROL_ALL.search(value) or " " in value:
        raise _fail(where, value, "contains spaces or control characters")
    try:
        parts = urllib.parse.urlsplit(value)
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError:
        raise _fail(where, value, "is not a URL") from None
    if parts.scheme != "https" or not parts.hostname or parts.username or parts.password:
        raise _fail(where, value, "is not an https:// URL (with a host, and no user or password)")
    return value


def trailer_value(value: object, where: str) -> str:
    """A commit trailer's value: one line, no control characters, not empty."""
    if not isinstance(value, str) or not value.strip():
        raise SeriesError(f"{where}: empty trailer value")
    if _CONTROL_ALL.search(value):
        raise _fail(where, value, "holds a newline or control character; a trailer is one line")
    return value


def identity(name: str, email: str, where: str) -> tuple[str, str]:
    """An author: git's fsck refuses '<', '>' and newlines in names and emails, and NUL anywhere."""
    for part, label in ((name, "name"), (email, "email")):
        if any(c in part for c in "<>\n\r\0"):
            raise SeriesError(
                f"{where}: author {label} {printable(part)!r} holds '<', '>', a newline "
                "or NUL, which a git commit cannot carry"
            )
    return name, email


def timestamp(time: int, offset: int, where: str) -> tuple[int, int]:
    """A commit date fsck --strict accepts: 0 <= time <= 9999-12-31, |offset| <= 99:59."""
    if not 0 <= time <= MAX_TIME:
        raise SeriesError(f"{where}: date {time} is outside what git can store (1970-01-01 to 9999-12-31)")
    if abs(offset) > MAX_OFFSET:
        raise SeriesError(f"{where}: time zone offset {offset} min is not a valid zone (at most +/-99:59)")
    return time, offset


def zone_problem(zone: str) -> str | None:
    """Why a '+HHMM' zone is not one fsck accepts (minutes must be < 60), or None."""
    m = re.fullmatch(r"[+-](\d\d)(\d\d)", zone)
    if m is None:
        return "is not +HHMM"
    if int(m.group(2)) >= 60:
        return "has minutes past 59"
    return None


def printable(text: str) -> str:
    """`text` with control characters (and lone surrogates) escaped, tabs and newlines kept."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: _escape(m.group(0)), text)


def one_line(text: str) -> str:
    """`text` for a one-line message: every control character escaped, newlines too."""
    return _CONTROL_ALL.sub(lambda m: _escape(m.group(0)), text)


def _escape(char: str) -> str:
    code = ord(char)
    if code == 0x0A:
        return "\\n"
    if code == 0x0D:
        return "\\r"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"
