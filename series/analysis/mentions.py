"""Text from commit messages made safe for a PR body: it notifies only whom the guide
allows, and hides nothing.

A PR body is Markdown that GitHub acts on: '@name' (and '@org/team') notifies that person
or team, and an unclosed '<!--' hides everything after it. Commit messages are written
for git, where neither means anything ('cc @someone', a pasted HTML comment), and a
topic may carry commits of other people. So in text that came from commits:
- a mention of anyone but the allowed (CODEOWNERS owners, authors of the changed lines)
  is put in a code span, `@name`, which GitHub shows as written and notifies nobody for;
- '<!--' becomes '&lt;!--', shown as written.
What is already code (fenced blocks, code spans) is left alone: GitHub neither notifies
nor hides there. A mention is what GitHub's mention filter takes for one: '@' after the
start or a character that is not a letter, digit or '_' (so a@b.com is an address).

`inline`, `code` and `fenced` are the stricter half, for strings that are not Markdown at
all (a metric name, a server's PR body quoted, a command): they come out as exactly the
characters they hold, whatever those are: every Markdown and HTML character escaped, so
no comment, tag, link definition, emphasis or fence can start in them; a code span or a
fence longer than any run of backticks inside, so nothing closes it early; one line.
"""
from __future__ import annotations

import re
from typing import Iterable

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)")
_NAME = r"[A-Za-z0-9][A-Za-z0-9-]{0,38}(?:/[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)?"
_MENTION = re.compile(rf"(`?)(?<![A-Za-z0-9_])@({_NAME})(`?)")
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
    """`text` with every mention not in `allowed` ('@login', '@org/team') in a code span and
    every '<!--' escaped, outside code."""
    keep = {a.lower() for a in allowed if a.startswith("@")}
    out = []
    fence: str | None = None
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append(line)
        elif m:
            fence = m.group(1)
            out.append(line)
        else:
            out.append(_line(line, keep))
    return "\n".join(out)


def _line(line: str, keep: set[str]) -> str:
    parts = []
    at = 0
    for span in _CODE_SPAN.finditer(line):
        parts += [_text(line[at:span.start()], keep), span.group(0)]
        at = span.end()
    parts.append(_text(line[at:], keep))
    return "".join(parts)


def _text(text: str, keep: set[str]) -> str:
    def mention(m: re.Match[str]) -> str:
        before, name, after = m.group(1), m.group(2), m.group(3)
        if f"@{name}".lower() in keep:
            return m.group(0)
        # a lone backtick next to the span would merge with it: escaped, it stays a backtick
        return ("\\`" if before else "") + f"`@{name}`" + ("\\`" if after else "")
    return _MENTION.sub(mention, text.replace("<!--", "&lt;!--"))


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
