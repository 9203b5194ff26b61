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
"""
from __future__ import annotations

import re
from typing import Iterable

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)")
_MENTION = re.compile(r"(`?)(?<![A-Za-z0-9_])@([A-Za-z0-9][A-Za-z0-9-]{0,38}(?:/[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)?)(`?)")


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
