"""A reader for the plain block YAML that series.yaml is written in, or no answer at all.

ruamel.yaml reads any YAML and keeps every comment, which the editor needs; its import and
one parse of a 23-topic file cost about 20 ms, a tenth of a whole `series rebase --dry-run`,
and most commands only read the file. This reader takes the subset series.yaml is written
in: block mappings of simple keys, block sequences, plain one-line scalars that can only be
strings, whole numbers, true/false or null, one-line quoted strings without escapes, and
one-line flow lists of those (the editor writes `scope: [a, b]`). For anything else (flow
mappings, anchors, tags, block scalars, tabs, a scalar over two lines, a key twice, any
plain word YAML could read as something other than a string) it answers None and the
caller asks ruamel, whose answer (and error message) stays the reference. Where it
answers, the data and the position of every key, value and item equal ruamel's:
tests/test_blockyaml.py checks that on generated and mutated files.
"""

from __future__ import annotations

import re
from typing import Any

_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):(?: +(.*))?$")
_INT = re.compile(r"[1-9][0-9]{0,17}$")  # ruamel reads "0" and "007" as its ScalarInt: declined
# YAML 1.2 (as ruamel resolves it) reads a plain scalar that starts with a letter as a
# string, but for these words (any case; the last six are YAML 1.1's booleans)
NOT_STRINGS = {"true", "false", "null", "yes", "no", "on", "off", "y", "n"}
_SPECIAL_START = set("-?:,[]{}#&*!|>'\"%@`")


class Unsupported(Exception):
    """Outside the subset: ask ruamel."""


class Positions:
    """Where a node's parts start, 0-based (line, column), asked the way ruamel's `lc` is
    asked (series.seriesfile.config names lines from it, series.seriesfile.edit splices at it)."""

    def __init__(self, line: int):
        self.line = line
        self.keys: dict[str, tuple[int, int]] = {}
        # inline values only; else KeyError (ruamel's answer for an empty value is where the
        # next token starts, which no splice uses)
        self.values: dict[str, tuple[int, int]] = {}
        self.items: list[tuple[int, int]] = []

    def key(self, key: str) -> tuple[int, int]:
        return self.keys[key]

    def value(self, key: str) -> tuple[int, int]:
        return self.values[key]

    def item(self, index: int) -> tuple[int, int]:
        return self.items[index]


class _Block:
    """ruamel's `fa`: a block node is never in flow style."""

    @staticmethod
    def flow_style() -> bool:
        return False


class BlockMap(dict):  # type: ignore[type-arg]
    def __init__(self, line: int):
        super().__init__()
        self.lc = Positions(line)
        self.fa = _Block


class BlockSeq(list):  # type: ignore[type-arg]
    def __init__(self, line: int):
        super().__init__()
        self.lc = Positions(line)
        self.fa = _Block


class _Flow:
    def __init__(self, seq: "FlowSeq"):
        self.seq = seq

    def flow_style(self) -> bool | None:
        return True if self.seq else None  # ruamel's answer for an empty `[]` is None


class FlowSeq(list):  # type: ignore[type-arg]
    """`[a, 'b c']` on one line, of scalars only (the editor writes string lists so)."""

    def __init__(self, line: int):
        super().__init__()
        self.lc = Positions(line)
        self.fa = _Flow(self)


def load(text: str) -> BlockMap | None:
    """The document as BlockMap/BlockSeq/scalars, or None when it is outside the subset."""
    try:
        lines = _content_lines(text)
        if not lines:
            return None
        node, rest = _node(lines, 0, lines[0][1])
        if rest != len(lines) or not isinstance(node, BlockMap):
            return None
        return node
    except Unsupported:
        return None


def _content_lines(text: str) -> list[tuple[int, int, str]]:
    """(line number, indent, content) of each line that holds data; comments and blank
    lines hold none (a trailing comment is dropped where its scalar is read)."""
    text = text.replace("\r\n", "\n")  # one line break to YAML too, and no column moves
    if "\t" in text or "\r" in text or text.startswith(("%", "---")) or "\n---" in text or "\n..." in text:
        raise Unsupported
    out = []
    for number, line in enumerate(text.split("\n")):
        stripped = line.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        if not line.isprintable():
            raise Unsupported
        out.append((number, len(line) - len(stripped), stripped.rstrip(" ")))
    return out


def _node(lines: list[tuple[int, int, str]], at: int, indent: int) -> tuple[Any, int]:
    """The block node whose lines start at `at` with this indent; and the line after it."""
    if lines[at][2].startswith("- ") or lines[at][2] == "-":
        return _sequence(lines, at, indent)
    return _mapping(lines, at, indent, lines[at][2], lines[at][0])


def _mapping(
    lines: list[tuple[int, int, str]], at: int, indent: int, first: str, first_line: int
) -> tuple[BlockMap, int]:
    """A mapping at column `indent`; its first key is `first` (which may sit after a '- ')."""
    node = BlockMap(first_line)
    content, number = first, first_line
    while True:
        match = _KEY.match(content)
        if match is None:
            raise Unsupported
        key, value = match.group(1), match.group(2)
        if key in node:
            raise Unsupported  # ruamel refuses a repeated key: let it say so
        node.lc.keys[key] = (number, indent)
        at += 1
        if value is not None and not value.startswith("#"):
            column = indent + match.start(2)
            node[key] = _flow(value, number, column) if value.startswith("[") else _scalar(value)
            node.lc.values[key] = (number, column)
            if at < len(lines) and lines[at][1] > indent:
                raise Unsupported  # a scalar continued on the next line, or a stray block
        elif at < len(lines) and (lines[at][1] > indent or (lines[at][1] == indent and _is_item(lines[at][2]))):
            node[key], at = _node(lines, at, lines[at][1])
        else:
            node[key] = None
        if at >= len(lines) or lines[at][1] < indent:
            return node, at
        if lines[at][1] != indent or _is_item(lines[at][2]):
            raise Unsupported
        number, _, content = lines[at]


def _sequence(lines: list[tuple[int, int, str]], at: int, indent: int) -> tuple[BlockSeq, int]:
    node = BlockSeq(lines[at][0])
    while at < len(lines) and lines[at][1] == indent and _is_item(lines[at][2]):
        number, _, content = lines[at]
        if content == "-":
            raise Unsupported  # the item's value on the next line: rare, left to ruamel
        rest = content[2:]
        column = indent + 2 + len(rest) - len(rest.lstrip(" "))
        rest = rest.lstrip(" ")
        node.lc.items.append((number, column))
        if _KEY.match(rest):
            item, at = _mapping(lines, at, column, rest, number)
        else:
            if rest.startswith(("- ", "#")) or rest == "-":
                raise Unsupported
            item, at = _scalar(rest), at + 1
            if at < len(lines) and lines[at][1] > indent:
                raise Unsupported
        node.append(item)
    if at < len(lines) and lines[at][1] > indent:
        raise Unsupported
    return node, at


def _flow(value: str, line: int, column: int) -> FlowSeq:
    """A one-line flow sequence of scalars; Unsupported for anything more."""
    node = FlowSeq(line)
    at = 1
    while True:
        while value[at : at + 1] == " ":
            at += 1
        if value[at : at + 1] == "]" and not node:
            break
        start = at
        if value[at : at + 1] in ("'", '"'):
            at = _quoted_end(value, at) + 1
        else:
            while at < len(value) and value[at] not in ",]":
                at += 1
        item = value[start:at].rstrip(" ")
        if not item or any(c in item for c in "[]{}#") and item[0] not in "'\"":
            raise Unsupported
        node.append(_scalar(item))
        node.lc.items.append((line, column + start))
        while value[at : at + 1] == " ":
            at += 1
        if value[at : at + 1] == "]":
            break
        if value[at : at + 1] != "," or value[at + 1 : at + 2] not in (" ", ""):
            raise Unsupported  # `[a,b]`, a trailing comma, anything unclosed: ruamel's
        at += 1
    after = value[at + 1 :]
    if after and not after.startswith(" #"):
        raise Unsupported
    return node


def _quoted_end(value: str, start: int) -> int:
    """Where the quoted scalar that opens at `start` closes; Unsupported if it does not."""
    quote = value[start]
    end = value.find(quote, start + 1)
    if quote == "'":
        while end != -1 and value[end + 1 : end + 2] == "'":
            end = value.find("'", end + 2)
    if end == -1:
        raise Unsupported
    return end


def _is_item(content: str) -> bool:
    return content == "-" or content.startswith("- ")


def _scalar(value: str) -> Any:
    """A one-line scalar (its trailing comment dropped) as ruamel would read it, or
    Unsupported where the subset cannot be sure."""
    if value[0] in "'\"":
        quote = value[0]
        end = _quoted_end(value, 0)
        inner, after = value[1:end], value[end + 1 :].lstrip(" ")
        if after and not (after.startswith("#") and value[end + 1 : end + 2] == " "):
            raise Unsupported
        if quote == '"' and "\\" in inner:
            raise Unsupported  # escapes: ruamel decodes them
        return inner.replace("''", "'") if quote == "'" else inner
    if value[0] in _SPECIAL_START:
        raise Unsupported
    comment = value.find(" #")
    if comment != -1:
        value = value[:comment].rstrip(" ")
    if value in ("null", "~"):
        return None
    if value in ("true", "false"):
        return value == "true"
    if _INT.match(value):
        return int(value)
    if (
        not value[0].isascii()
        or not value[0].isalpha()
        or value.lower() in NOT_STRINGS
        or ": " in value
        or value.endswith(":")
    ):
        raise Unsupported
    return value
