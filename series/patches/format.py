"""One commit as a `git format-patch`-style file, written and parsed.

The file is what `git format-patch --full-index` writes, minus what changes when nothing
changed: the commit id in the `From ` line is a fixed placeholder (a commit id moves with
every rebase and committer date) and the `-- \\n<git version>` trailer is left out. So
re-exporting an unchanged series rewrites no file. `git am` reads these files as they are.

Text is UTF-8; bytes that are not are carried through with surrogateescape, so file
contents and messages round-trip byte for byte. A message git would not write back the
same way (no final newline, a multi-line first paragraph) is kept verbatim and flagged
with an `X-Series-Message: verbatim` header.
"""

from __future__ import annotations

import email.utils
import re
from dataclasses import dataclass
from typing import Protocol, Sequence

import pygit2

from series import validate
from series.errors import SeriesError
from series.validate import printable

PLACEHOLDER_SHA = "0" * 40
FROM_LINE = f"From {PLACEHOLDER_SHA} Mon Sep 17 00:00:00 2001"
ZERO_ID = "0" * 40
VERBATIM = "verbatim"
NO_NEWLINE = "no-final-newline"
_DIFFSTAT_LINE = re.compile(r"^( .* \| .*| \d+ files? changed.*| (create|delete|rename|mode change|copy) .*)$")


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


@dataclass(frozen=True)
class Patch:
    author_name: str
    author_email: str
    author_time: int  # seconds since the epoch
    author_offset: int  # minutes east of UTC, as git keeps it
    message: str  # the commit message, exactly
    diff: str  # "diff --git ..." sections, possibly empty
    number: int = 1
    total: int = 1

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]


# ---------------------------------------------------------------- paths, as git quotes them

_QUOTE_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
}
_UNQUOTE_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def quote_path(path: str) -> str:
    """git's core.quotePath quoting: C-style, with bytes >= 0x80 as octal escapes."""
    data = encode(path)
    if not any(b < 0x20 or b >= 0x7F or b in (0x22, 0x5C) for b in data):
        return path
    out = []
    for b in data:
        ch = chr(b)
        if ch in _QUOTE_ESCAPES:
            out.append(_QUOTE_ESCAPES[ch])
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def unquote_path(text: str) -> str:
    if not (len(text) >= 2 and text.startswith('"') and text.endswith('"')):
        return text
    body, out, i = text[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += encode(ch)
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in _UNQUOTE_ESCAPES:
            out.append(_UNQUOTE_ESCAPES[nxt])
            i += 2
        elif re.match(r"[0-7]{3}", body[i + 1 : i + 4]):
            out.append(int(body[i + 1 : i + 4], 8))
            i += 4
        else:
            raise SeriesError(f"malformed quoted path {text}")
    return decode(bytes(out))


# ---------------------------------------------------------------- diffs


def _hunk_text(hunks: Sequence[pygit2.DiffHunk]) -> list[str]:
    out = []
    for hunk in hunks:
        out.append(hunk.header if hunk.header.endswith("\n") else hunk.header + "\n")
        for line in hunk.lines:
            content = decode(line.raw_content)
            if line.origin in "<>=":
                # libgit2 reports "\ No newline at end of file" as its own line kind
                out.append("\\ No newline at end of file\n")
            else:
                # a last line without newline: the marker line that follows says so
                out.append(line.origin + content + ("" if content.endswith("\n") else "\n"))
    return out


def unified_hunks(old: bytes, new: bytes) -> str:
    """Just the @@ hunks turning `old` into `new` (3 lines of context)."""
    patch = pygit2.Patch.create_from(old, new, context_lines=3)
    return "".join(_hunk_text(patch.hunks))


@dataclass(frozen=True)
class FileDiffStat:
    name: str  # "path" or "old => new"
    added: int
    deleted: int
    note: str | None  # "create mode 100644 x", ...


def _is_binary(repo: pygit2.Repository, oid: pygit2.Oid) -> bool:
    if oid == pygit2.Oid(hex=ZERO_ID):
        return False
    return b"\0" in repo[oid].peel(pygit2.Blob).data[:8000]


class _FileSide(Protocol):
    """One side of a file change: a pygit2 DiffFile, or a _Side from a tree walk."""

    @property
    def path(self) -> str: ...
    @property
    def mode(self) -> int: ...
    @property
    def id(self) -> pygit2.Oid: ...


@dataclass(frozen=True)
class _Side:
    path: str
    mode: int
    id: pygit2.Oid


def _check_side(repo: pygit2.Repository, side: _FileSide, where: str) -> None:
    mode = side.mode
    if mode == pygit2.enums.FileMode.COMMIT:
        raise SeriesError(f"{where}: {side.path} is a submodule; patch files cannot carry it")
    if mode and _is_binary(repo, side.id):
        raise SeriesError(
            f"{where}: {side.path} is binary; patch files cannot carry binary content "
            "(keep it out of the topic, or carry it another way)"
        )


def tree_diff(
    repo: pygit2.Repository, old: pygit2.Tree, new: pygit2.Tree, where: str
) -> tuple[str, list[FileDiffStat]]:
    """The `diff --git` sections from `old` to `new`, renames detected, full index lines.

    Binary changes and submodules are refused: a patch file cannot carry them, and an
    export that cannot be imported again would lose work.

    The changed paths come from a walk of the differing subtrees only (a libgit2 tree
    diff walks all of vLLM's ~8,500 entries: 1.6 ms a commit); only a commit that both
    adds and deletes files, where a rename may hide, goes through libgit2's rename
    detection, so the output is the same either way.
    """
    from series.git.repo import changed_paths

    changes = sorted(changed_paths(repo, old, new), key=lambda c: encode(c.path))
    if any(c.old_id is None for c in changes) and any(c.new_id is None for c in changes):
        return _renaming_diff(repo, old, new, where)
    out: list[str] = []
    stats: list[FileDiffStat] = []
    link = pygit2.enums.FileMode.LINK
    for c in changes:
        # changed_paths sets a side's id and mode together
        a = _Side(c.path, c.old_mode, c.old_id) if c.old_id is not None and c.old_mode is not None else None
        b = _Side(c.path, c.new_mode, c.new_id) if c.new_id is not None and c.new_mode is not None else None
        if a is None or b is None or a.id != b.id:
            for side in (a, b):
                if side is not None:
                    _check_side(repo, side, where)
        if a is not None and b is not None and (a.mode == link) != (b.mode == link):
            pairs = [(a, None), (None, b)]  # file <-> symlink: git writes both
        else:
            pairs = [(a, b)]
        for x, y in pairs:
            # the patch points into these buffers: keep them alive while its hunks are read
            before = repo[x.id].peel(pygit2.Blob).data if x else b""
            after = repo[y.id].peel(pygit2.Blob).data if y else b""
            patch = pygit2.Patch.create_from(before, after, context_lines=3, interhunk_lines=0)
            text, stat = _section(x, y, patch.hunks, "A" if x is None else "D" if y is None else "M", 0)
            out.append(text)
            stats.append(stat)
    return "".join(out), stats


def _renaming_diff(
    repo: pygit2.Repository, old: pygit2.Tree, new: pygit2.Tree, where: str
) -> tuple[str, list[FileDiffStat]]:
    diff = old.diff_to_tree(new, context_lines=3, interhunk_lines=0)
    diff.find_similar()
    out: list[str] = []
    stats: list[FileDiffStat] = []
    for patch in diff:
        # pygit2 types a diff's patches as optional (libgit2 can skip one); a tree diff
        # like this one has a patch for every delta, binary ones included
        assert patch is not None
        delta = patch.delta
        if delta.old_file.id != delta.new_file.id:
            for side in (delta.old_file, delta.new_file):
                _check_side(repo, side, where)
        if delta.status_char() == "T":
            # file <-> symlink: git writes a deletion and an addition
            for old_side, new_side in ((delta.old_file, None), (None, delta.new_file)):
                before = repo[old_side.id].peel(pygit2.Blob).data if old_side else b""
                after = repo[new_side.id].peel(pygit2.Blob).data if new_side else b""
                single = pygit2.Patch.create_from(before, after, context_lines=3)
                text, stat = _section(old_side, new_side, single.hunks, "A" if new_side else "D", 0)
                out.append(text)
                stats.append(stat)
            continue
        text, stat = _section(delta.old_file, delta.new_file, patch.hunks, delta.status_char(), delta.similarity)
        out.append(text)
        stats.append(stat)
    return "".join(out), stats


def _section(
    old: _FileSide | None, new: _FileSide | None, hunks: Sequence[pygit2.DiffHunk], status: str, similarity: int
) -> tuple[str, FileDiffStat]:
    first, last = (old if old is not None else new), (new if new is not None else old)
    assert first is not None and last is not None, "a diff section has at least one side"
    old_path, new_path = first.path, last.path
    old_mode = old.mode if old is not None and status != "A" else 0
    new_mode = new.mode if new is not None and status != "D" else 0
    old_id = str(old.id) if old is not None and status != "A" else ZERO_ID
    new_id = str(new.id) if new is not None and status != "D" else ZERO_ID
    a, b = quote_path(f"a/{old_path}"), quote_path(f"b/{new_path}")
    lines = [f"diff --git {a} {b}\n"]
    note = None
    if status == "A":
        lines.append(f"new file mode {new_mode:o}\n")
        note = f"create mode {new_mode:o} {new_path}"
    elif status == "D":
        lines.append(f"deleted file mode {old_mode:o}\n")
        note = f"delete mode {old_mode:o} {old_path}"
    elif old_mode != new_mode:
        lines += [f"old mode {old_mode:o}\n", f"new mode {new_mode:o}\n"]
        note = f"mode change {old_mode:o} => {new_mode:o} {new_path}"
    if status == "R":
        lines += [
            f"similarity index {similarity}%\n",
            f"rename from {quote_path(old_path)}\n",
            f"rename to {quote_path(new_path)}\n",
        ]
        note = f"rename {old_path} => {new_path} ({similarity}%)"
    if old_id != new_id:
        mode = f" {new_mode:o}" if status not in "AD" and old_mode == new_mode else ""
        lines.append(f"index {old_id}..{new_id}{mode}\n")
    body = _hunk_text(hunks)
    if body:
        # like git, a name with a space ends in a tab so that readers know where it stops
        lines.append(f"--- {a + chr(9) * (' ' in a) if status != 'A' else '/dev/null'}\n")
        lines.append(f"+++ {b + chr(9) * (' ' in b) if status != 'D' else '/dev/null'}\n")
        lines += body
    added = sum(1 for line in body if line.startswith("+"))
    deleted = sum(1 for line in body if line.startswith("-"))
    name = f"{old_path} => {new_path}" if status == "R" else new_path
    return "".join(lines), FileDiffStat(name, added, deleted, note)


def diffstat(stats: list[FileDiffStat]) -> str:
    if not stats:
        return ""
    width = max(len(s.name) for s in stats)
    biggest = max(s.added + s.deleted for s in stats)
    digits = len(str(biggest))
    scale = min(1.0, 40 / biggest) if biggest else 1.0
    out = []
    for s in stats:
        plus, minus = round(s.added * scale), round(s.deleted * scale)
        if s.added and not plus:
            plus = 1
        if s.deleted and not minus:
            minus = 1
        bar = "+" * plus + "-" * minus
        out.append(f" {s.name:<{width}} | {s.added + s.deleted:>{digits}} {bar}".rstrip() + "\n")
    added, deleted = sum(s.added for s in stats), sum(s.deleted for s in stats)
    summary = f" {len(stats)} file{'s' if len(stats) != 1 else ''} changed"
    if added:
        summary += f", {added} insertion{'s' if added != 1 else ''}(+)"
    if deleted:
        summary += f", {deleted} deletion{'s' if deleted != 1 else ''}(-)"
    out.append(summary + "\n")
    out += [f" {s.note}\n" for s in stats if s.note]
    return "".join(out)


# ---------------------------------------------------------------- whole files


def slug(subject: str) -> str:
    """A file-name-safe form of the subject, the way format-patch makes one."""
    text = re.sub(r"[^A-Za-z0-9._]+", "-", subject)
    text = re.sub(r"\.+", ".", text).strip("-.")
    return text[:52].rstrip("-.") or "patch"


def file_name(number: int, subject: str) -> str:
    return f"{number:04d}-{slug(subject)}.patch"


def format_date(time: int, offset: int) -> str:
    import datetime

    zone = datetime.timezone(datetime.timedelta(minutes=offset))
    when = datetime.datetime.fromtimestamp(time, zone)
    sign = "-" if offset < 0 else "+"
    hours, minutes = divmod(abs(offset), 60)
    days = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
    months = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
    return (
        f"{days[when.weekday()]}, {when.day} {months[when.month - 1]} {when.year} "
        f"{when:%H:%M:%S} {sign}{hours:02d}{minutes:02d}"
    )


def _split_message(message: str) -> tuple[str, str, list[str]]:
    """(subject, body, flags): message == subject + "\\n" [+ "\\n" + body] unless flagged."""
    first, _, rest = message.partition("\n")
    if message.endswith("\n") and "\n" in message:
        if rest == "":
            return first, "", []
        if (
            rest.startswith("\n")
            and rest[1:].strip("\n")
            and not rest[1:].startswith("\n")
            and not rest.endswith("\n\n")
        ):
            return first, rest[1:], []
    flags = [VERBATIM] + ([] if message.endswith("\n") else [NO_NEWLINE])
    body = message if message.endswith("\n") else message + "\n"
    return first, body, flags


_SPECIALS = re.compile(r'[()<>\[\]:;@\\,."]')


def _address(name: str, address: str) -> str:
    if _SPECIALS.search(name):
        escaped = name.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}" <{address}>'
    return f"{name} <{address}>"


def _decode_words(value: str, source: str = "patch", header: str = "header") -> str:
    """git format-patch writes non-ASCII names and subjects as RFC 2047 encoded words."""
    if "=?" not in value:
        return value
    import email.errors
    import email.header

    try:
        return str(email.header.make_header(email.header.decode_header(value)))
    except (email.errors.HeaderParseError, UnicodeError, LookupError, ValueError) as exc:
        raise SeriesError(
            f"{source}: unreadable encoded word in '{header}:' ({printable(value)[:80]!r}: {exc})"
        ) from None


def _date(text: str, source: str) -> tuple[int, int]:
    """(time, offset in minutes) of a Date: header, within what fsck --strict accepts."""
    parsed = email.utils.parsedate_tz(text)
    if parsed is None:
        raise SeriesError(f"{source}: unreadable 'Date:' header {printable(text)!r}")
    zone = parsed[9] or 0
    try:
        time = int(email.utils.mktime_tz(parsed))
    except (OverflowError, ValueError, OSError):
        time = -1  # a year no clock holds: refused below with the header shown
    if time < 0 or time > validate.MAX_TIME or abs(zone) // 60 > validate.MAX_OFFSET:
        raise SeriesError(
            f"{source}: 'Date:' header {printable(text)!r} is outside what a git "
            "commit can hold (years 1970-9999, zones up to +/-9959)"
        )
    return time, zone // 60


def render(patch: Patch, stats: list[FileDiffStat] | None = None) -> str:
    subject, body, flags = _split_message(patch.message)
    lines = [
        FROM_LINE,
        f"From: {_address(patch.author_name, patch.author_email)}",
        f"Date: {format_date(patch.author_time, patch.author_offset)}",
        f"Subject: [PATCH {patch.number}/{patch.total}] {subject}",
    ]
    if flags:
        lines.append(f"X-Series-Message: {', '.join(flags)}")
    text = "\n".join(lines) + "\n\n" + body + "---\n"
    if stats:
        text += diffstat(stats)
    text += "\n" + patch.diff
    return text


_HEADER = re.compile(r"^([A-Za-z-]+):\s?(.*)$")


def parse(text: str, source: str) -> Patch:
    """Parse a patch file written by `render` or by `git format-patch`."""
    lines = text.split("\n")
    if not lines or not lines[0].startswith("From "):
        raise SeriesError(f"{source}: not a patch file (expected a 'From <sha> ...' first line)")
    headers: dict[str, str] = {}
    i, last = 1, None
    while i < len(lines) and lines[i] != "":
        line = lines[i]
        if line[:1] in (" ", "\t") and last is not None:
            headers[last] += line  # a folded header continues the previous one
        else:
            m = _HEADER.match(line)
            if m is None:
                raise SeriesError(f"{source}:{i + 1}: malformed header line {printable(line)!r}")
            last = m.group(1).lower()
            headers[last] = m.group(2)
        i += 1
    for key in ("from", "date", "subject"):
        if key not in headers:
            raise SeriesError(f"{source}: missing '{key.capitalize()}:' header")
    name, address = email.utils.parseaddr(headers["from"])
    name = _decode_words(name, source, "From")
    if not address:
        raise SeriesError(f"{source}: 'From:' header has no <email>: {printable(headers['from'])!r}")
    validate.identity(name, address, f"{source}: From")
    time, offset = _date(headers["date"], source)
    number, total = 1, 1
    subject = _decode_words(headers["subject"], source, "Subject")
    m = re.match(r"^\[PATCH(?: (\d+)/(\d+))?[^\]]*\] ?", subject)
    if m:
        subject = subject[m.end() :]
        if m.group(1):
            number, total = int(m.group(1)), int(m.group(2))
    rest = lines[i + 1 :]
    cut = _separator(rest)
    if cut is None:
        raise SeriesError(f"{source}: no '---' line between the message and the diff")
    body_lines = rest[:cut]
    diff_start = next((j for j in range(cut + 1, len(rest)) if rest[j].startswith("diff --git ")), len(rest))
    diff = "\n".join(rest[diff_start:])
    diff = _strip_signature(diff)
    flags = [f.strip() for f in headers.get("x-series-message", "").split(",") if f.strip()]
    body = "\n".join(body_lines) + "\n" if body_lines else ""
    if VERBATIM in flags:
        message = body[:-1] if NO_NEWLINE in flags else body
    else:
        body = body.rstrip("\n")
        message = subject + "\n" + ("\n" + body + "\n" if body else "")
    return Patch(
        author_name=name,
        author_email=address,
        author_time=time,
        author_offset=offset,
        message=message,
        diff=diff,
        number=number,
        total=total,
    )


def _separator(rest: list[str]) -> int | None:
    """The '---' line that ends the message: the one followed by a diffstat and the diff.

    A message may itself hold a '---' line, so the first one is not enough.
    """
    for j, line in enumerate(rest):
        if line != "---":
            continue
        k = j + 1
        while k < len(rest) and _DIFFSTAT_LINE.match(rest[k]):
            k += 1
        while k < len(rest) and rest[k] == "":
            k += 1
        if k >= len(rest) or rest[k].startswith("diff --git "):
            return j
    return None


_SIGNATURE = re.compile(r"(^|\n)-- \n[0-9][^\n]*\n*$")


def _strip_signature(diff: str) -> str:
    """git format-patch ends with '-- \\n<git version>'; it is no part of the diff."""
    m = _SIGNATURE.search(diff)
    return diff[: m.start() + len(m.group(1))] if m else diff
