"""The rebase's two edits to series.yaml, made on the lines themselves.

A rebase changes `upstream.base` and marks topics merged. In the block layout that
`series init` writes (and people keep), those are single lines, so they are edited as
lines: comments, quoting and spacing elsewhere stay byte for byte, and no YAML
round-trip is paid (ruamel's costs about 25 ms on a 23-topic file, a sixth of a whole
rebase). Anything else (flow style, anchors) returns None and the caller falls back to
series.config's round-trip editor.
"""
from __future__ import annotations

import re

_KEY = re.compile(r"^(?P<indent>\s*)(?P<dash>-\s+)?(?P<key>[A-Za-z_]+):(?P<rest>.*)$")


def _value_span(rest: str) -> tuple[str, str] | None:
    """(value, trailing comment with its spacing) of a plain scalar line remainder."""
    m = re.match(r"^(\s*)([^#'\"\[\]{}&*!|>]*?)(\s+#.*)?$", rest)
    if m is None:
        return None
    return m.group(2), m.group(3) or ""


def edit(text: str, base: str, merged: dict[str, str]) -> str | None:
    """Set upstream.base, and status: merged / merged_in for each topic in `merged`."""
    lines = text.split("\n")
    section = None
    base_done = False
    topic_at: dict[str, tuple[int, int]] = {}   # name -> (first line, indent of its keys)
    current: str | None = None
    for i, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _KEY.match(line)
        if m is None:
            if not line.startswith((" ", "\t", "-")):
                section = None
            continue
        top = not m.group("indent") and not m.group("dash")
        if top:
            section = m.group("key")
            current = None
            continue
        if section == "upstream" and m.group("key") == "base" and not m.group("dash"):
            span = _value_span(m.group("rest"))
            if span is None or not span[0]:
                return None
            lines[i] = f"{m.group('indent')}base: {base}{span[1]}"
            base_done = True
        elif section == "topics" and m.group("key") == "name" and m.group("dash"):
            span = _value_span(m.group("rest"))
            if span is None:
                return None
            current = span[0].strip()
            topic_at[current] = (i, len(m.group("indent")) + len(m.group("dash")))
    if not base_done:
        return None
    for name in sorted(merged, key=lambda n: -topic_at.get(n, (-1, 0))[0]):
        if name not in topic_at:
            return None
        first, indent = topic_at[name]
        end = last = first + 1
        while end < len(lines):
            stripped = lines[end].strip()
            if stripped and not stripped.startswith("#"):
                lead = len(lines[end]) - len(lines[end].lstrip())
                if lead < indent:
                    break
                last = end + 1
            end += 1
        end = last
        wanted = {"status": "merged", "merged_in": merged[name]}
        for j in range(first, end):
            m = _KEY.match(lines[j])
            if m and m.group("key") in wanted and len(m.group("indent")) + len(m.group("dash") or "") == indent:
                span = _value_span(m.group("rest"))
                if span is None:
                    return None
                prefix = lines[j][:len(m.group("indent")) + len(m.group("dash") or "")]
                lines[j] = f"{prefix}{m.group('key')}: {wanted.pop(m.group('key'))}{span[1]}"
        lines[end:end] = [f"{' ' * indent}{k}: {v}" for k, v in wanted.items()]
    return "\n".join(lines)
