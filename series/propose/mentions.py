"""Text from commit messages made safe for a PR body: it notifies only whom the guide
allows, and hides nothing.

A PR body is Markdown that GitHub acts on: '@name' (and '@org/team') notifies that person
or team, and an unclosed '<!--' hides everything after it. Commit messages are written
for git, where neither means anything ('cc @someone', a pasted HTML comment), and a
topic may carry commits of other people. So in text that came from commits:
- a mention of anyone but the allowed (CODEOWNERS owners, authors of the changed lines)
  gets a zero width joiner after its '@': GitHub shows '@name' and notifies nobody;
- '<!--' becomes '&lt;!--', shown as written.
What is surely code (a fence at a line's start, a code span nothing casts doubt on) is
left alone: GitHub neither notifies nor hides there; anything else is text. GitHub's
mention filter reads the rendered text, where '@' after the start or a character that is
not a letter, digit or '_' is a mention; an '_' may be an emphasis delimiter that is gone
after rendering, and '&#64;' is an '@' there, so only an '@' right after a letter or a
digit is left as an address (a@b.com).

`inline`, `code` and `fenced` are the stricter half, for strings that are not Markdown at
all (a metric name, a server's PR body quoted, a command): they come out as exactly the
characters they hold, whatever those are: every Markdown and HTML character escaped, so
no comment, tag, link definition, emphasis or fence can start in them; a code span or a
fence longer than any run of backticks inside, so nothing closes it early; one line.
"""

from __future__ import annotations

import re
from typing import Iterable

_NAME = r"[A-Za-z0-9][A-Za-z0-9-]{0,38}(?:/[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)?"
# '@' as GitHub reads it in text: itself, or a character reference that decodes to it
_MENTION = re.compile(rf"(@|&#0*64;|&#[xX]0*40;|&commat;)({_NAME})")
# GitHub reads the rendered text, where an '_' before the '@' may have been an emphasis
# delimiter and gone: only a letter or digit there surely makes an address
_ALNUM = re.compile(r"[A-Za-z0-9]")
ZWJ = "\u200d"  # after the '@': GitHub's mention filter needs a letter or digit there
_FENCE_OPEN = re.compile(r"^(`{3,}|~{3,})(.*)$")  # at the line's start: never inside a list item
_FENCE_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")
_HTML_START = re.compile(r"^ {0,3}<")
_RUN = re.compile(r"`+")
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
# what ends an autolink or a tag ('>'), a link's destination or title (')'), a reference (']'):
# a span holding one may have begun inside it, where the backtick was no code at all
_SWALLOWED = re.compile(r"[>)\]]")
_AT_NAME = re.compile(rf"@{_NAME}")
_AT_NAMES = re.compile(rf"(?:@{_NAME})+")  # '@a@b': one span (two would merge their backticks)
_WORD = re.compile(r"[A-Za-z0-9_]")
# CommonMark lets a backslash escape any ASCII punctuation; these are the ones that start
# something inside a line of GitHub's Markdown (HTML, links, emphasis, code, tables, math,
# entities). Line-start syntax (headings, lists) cannot arise: the text never starts a line.
_MARKUP = re.compile(r"([\\`*_\[\]<>|~&$])")
# one line, and nothing that reorders or hides characters (bidi controls, zero widths)
_INVISIBLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]")


def neutralise(text: str, allowed: Iterable[str]) -> str:
    """`text` with every mention not in `allowed` ('@login', '@org/team') broken by a zero
    width joiner after its '@' and every '<!--' escaped, outside what is surely code.

    The joiner changes nothing around the mention (a code span put there instead would
    meet a backslash, a backtick or another '@' next to it and make a new mention), so
    what is not surely code can simply be treated as text: only a fence opened at the
    start of a line (no list item or quote can hold it there) and a code span found on a
    line with nothing in doubt before it are left alone. After a doubt (a backtick run
    with no closer on its line, a span holding what could end a link or a tag that began
    before it, a line that starts HTML) the paragraph's spans are text, and after a
    line that starts HTML, every fence and span is; a fence left open is closed."""
    keep = {a.lower() for a in allowed if a.startswith("@")}
    out = []
    fence: str | None = None
    html = False  # a line started HTML: its blocks can hold a fence line, or end past a blank line
    doubt = False  # this paragraph's code spans are not trusted any more
    for line in text.split("\n"):
        if fence is not None:
            m = _FENCE_CLOSE.match(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append(line)
            continue
        opening = _FENCE_OPEN.match(line)
        if opening and not html and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            fence, doubt = opening.group(1), False
            out.append(line)
            continue
        if not line.strip():
            doubt = False
        if _HTML_START.match(line):
            html = True
        escaped, clear = _line(line, keep, trust=not (doubt or html))
        doubt = doubt or not clear
        out.append(escaped)
    if fence is not None:
        out.append(fence)  # an open fence would make code of whatever follows in the body
    return "\n".join(out)


def _line(line: str, keep: set[str], trust: bool) -> tuple[str, bool]:
    """The line escaped, and whether nothing in it was in doubt. Code spans as CommonMark
    finds them (a backslash before a backtick makes it text; a run closes only with a run
    as long), honoured while `trust` holds and until the first doubt."""
    parts = []
    at = i = 0
    while i < len(line):
        char = line[i]
        if char == "\\" and i + 1 < len(line) and line[i + 1] in _PUNCTUATION:
            i += 2
            continue
        if char != "`":
            i += 1
            continue
        run = _RUN.match(line, i)
        assert run is not None
        close = next((m for m in _RUN.finditer(line, run.end()) if len(m.group(0)) == len(run.group(0))), None)
        if close is None or not trust or _SWALLOWED.search(line, run.end(), close.start()):
            trust = False  # a run with no closer here may close on a later line; a link or tag may hold it
            break
        parts += [_text(line[at:i], keep), line[i : close.end()]]
        at = i = close.end()
    parts.append(_text(line[at:], keep))
    return "".join(parts), trust


def _text(raw: str, keep: set[str]) -> str:
    text = raw.replace("<!--", "&lt;!--")

    def mention(m: re.Match[str]) -> str:
        at, name = m.group(1), m.group(2)
        if m.start() > 0 and _ALNUM.match(text[m.start() - 1]):
            return m.group(0)  # an address (a@b.com): '@' after a letter or digit is no mention
        following = text[m.end() : m.end() + 1]
        if at == "@" and f"@{name}".lower() in keep and following not in ("\\", "&"):
            return m.group(0)  # kept, unless an escape or a reference could lengthen the name
        return f"@{ZWJ}{name}"

    return _MENTION.sub(mention, text)


def _flat(text: str) -> str:
    return " ".join(_INVISIBLE.sub(" ", text).split())


def inline(text: str) -> str:
    """`text` shown as written, on one line, in running Markdown text or a table cell:
    every mention in a code span (so it notifies nobody), every other Markdown character
    escaped."""
    text = _flat(text)
    out = []
    at = look = 0
    while (m := _AT_NAME.search(text, look)) is not None:
        start = m.start()
        if start > 0 and _WORD.match(text[start - 1]):
            look = m.end()  # an address (a@b.com) notifies nobody; an '@' after it may
            continue
        run = _AT_NAMES.match(text, start)
        assert run is not None
        out.append(_MARKUP.sub(r"\\\1", text[at:start]))
        out.append(code(run.group(0)))
        at = look = run.end()
    out.append(_MARKUP.sub(r"\\\1", text[at:]))
    return "".join(out)


def code(text: str, *, cell: bool = False) -> str:
    """`text` as a code span nothing inside can close: fenced by more backticks than its
    longest run. In a table cell a '|' would end the cell even in code, and a backslash
    before it cannot be escaped there: such a value is `inline` text instead."""
    text = _flat(text)
    if not text or (cell and "|" in text):
        return inline(text) if text else "\"\""
    ticks = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or (text[0] == text[-1] == " ") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fenced(lines: Iterable[str], info: str = "") -> str:
    """A fenced code block of `lines` (each made one line) that no line can close: its
    fence is longer than any run of backticks in them."""
    body = [_INVISIBLE.sub(" ", line).rstrip() for line in lines]  # spaces kept: a command's own
    longest = max((len(r) for line in body for r in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence + re.sub(r"[^A-Za-z0-9_+-]", "", info), *body, fence])
