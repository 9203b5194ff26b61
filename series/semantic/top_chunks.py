"""A module's source cut into runs of top-level statements, so that what a run says is read
once per text however many versions of the module share it (series.semantic.upstream_api:
the old and the new base's version of vllm/config.py, and every version a culprit search
reads, differ in a few classes; issue 34).

    split(source) -> [(first line, text)] or None

A cut goes before every line that starts at column 0 with neither blank nor `#`. Why each
text parsed alone says what the whole file says of those lines: the tokenizer reads left to
right, and at such a line it is either at the top level (no open bracket, string or
backslash continuation: the line starts a new statement, the indentation stack closes to
column 0 as at the end of a file) or inside one of those, in which case the text before the
cut ends inside it and does not parse alone (an unclosed bracket, an unterminated string,
a backslash at the end). A statement that goes on at column 0 (`else:`, `elif`, `except`,
`finally`, a decorator's def) leaves a text that does not parse alone either. So when every
text parses, the file's statements are the texts' statements in order, their lines moved by
the text's first line; when one does not, the caller parses the whole file (and gets what
it always got, an error included). What a text cut this way cannot show is left to the
whole parse (None): a BOM or coding cookie (the file's decoding), lone carriage returns
(line counting), `barry_as_FLUFL` (it changes the tokenizer). `from __future__` imports
stay in the first text, where the whole file needs them to be.
"""

from __future__ import annotations

import re

# a line at column 0 that may start a statement: not blank, a comment, a closing bracket, or a
# clause that continues the statement before it (those would only leave texts that do not parse)
_CUT = re.compile(r"^(?![\s#)\]}]|(?:else|elif|except|finally)\b)", re.MULTILINE)
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_UTF8 = re.compile(rb"(?i)utf[-_]?8")  # a cookie naming the default, UTF-8


def split(source: bytes) -> list[tuple[int, str]] | None:
    """The texts and their first lines (module docstring); None: parse the whole file."""
    if source.startswith(b"\xef\xbb\xbf") or b"\r" in source or b"barry_as_FLUFL" in source:
        return None
    for head in source.split(b"\n", 2)[:2]:
        cookie = _COOKIE.match(head)
        if cookie is not None and not _UTF8.fullmatch(cookie.group(1)):
            return None
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError:
        return None
    future = text.rfind("__future__")
    starts = []
    decorated = False  # the line before was a decorator's: its def or class goes with it
    for m in _CUT.finditer(text):
        begin = m.start()
        if begin >= len(text):
            break
        if begin > 0 and begin > future and not decorated:
            starts.append(begin)
        decorated = text.startswith("@", begin)
    out: list[tuple[int, str]] = []
    line, begin = 1, 0
    for end in [*starts, len(text)]:
        out.append((line, text[begin:end]))
        line += text.count("\n", begin, end)
        begin = end
    return out
