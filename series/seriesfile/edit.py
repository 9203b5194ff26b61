"""The one series.yaml editor: key-level edits, compared-and-swapped onto the current text.

An operation does not write a new series.yaml; it carries `Edit`s, each naming one key
(`upstream.base`, `topics[NAME].status`, a whole `topics[NAME]` entry, or the whole file
for `series init`) with the value the operation saw (`old`) and the one it wants (`new`).
`apply()` re-reads the file as it is *now*, checks every edited key still holds `old`
(or already holds `new`), and refuses naming the key when someone changed it meanwhile:
a hand edit or another command during a halted rebase is never overwritten. Undo is the
same edits reversed, applied to the current file under the same check.

Edits are line splices located from the parsed document's positions (pre-commit edits its
config the same way), so comments, quoting and spacing elsewhere stay byte for byte;
values are quoted whenever YAML would read them as anything but that string (`@{-1}`,
`0.31`, `yes`). The result is parsed and validated, and must equal the expected data,
before anyone writes it; a layout the splicer does not handle (flow-style topics, a value
on its own line) is edited through ruamel's round-trip instead, under the same check.
"""

from __future__ import annotations

import copy
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from series.seriesfile import blockyaml, config
from series.seriesfile.config import Mapping, Sequence
from series.errors import SeriesError
from series.persisted import Json, JsonObject, read_opt_str, read_strs

Plain = dict[str, Any]
KeyPath = tuple[str, ...]
WHOLE_FILE: KeyPath = ()


class _Gone:
    """The topic an edit names is not in the file at all."""

    def __repr__(self) -> str:
        return "(no such topic)"


GONE: Any = _Gone()


@dataclass(frozen=True)
class Edit:
    path: KeyPath  # ("upstream", "base"), ("topics", NAME, FIELD), ("topics", NAME), ()
    old: Any  # what the operation saw; None: the key was absent
    new: Any  # what it writes; None: remove the key
    after: str | None = None  # a new topic: the topic it follows (None: first)
    before: str | None = None  # ... and the topic it precedes (None: last)

    @property
    def key(self) -> str:
        return describe(self.path)

    def reversed(self) -> "Edit":
        return Edit(self.path, self.new, self.old, self.after, self.before)

    def to_json(self) -> dict[str, Json]:
        return {"path": list(self.path), "old": self.old, "new": self.new, "after": self.after, "before": self.before}

    @classmethod
    def from_json(cls, data: JsonObject) -> "Edit":
        """An edit as a journal entry or a halted state kept it, validated (ValueError)."""
        path = read_strs(data, "path")
        if "old" not in data or "new" not in data:
            raise ValueError("edit: no old or new value")
        return cls(tuple(path), data["old"], data["new"], read_opt_str(data, "after"), read_opt_str(data, "before"))


def describe(path: KeyPath) -> str:
    if not path:
        return "the whole file"
    if path[0] == "topics" and len(path) > 1:
        return f"topics[{path[1]}]" + (f".{path[2]}" if len(path) > 2 else "")
    return ".".join(path)


class EditConflict(SeriesError):
    """Someone changed a key this operation edits; nothing was written."""

    def __init__(self, file: str, edit: Edit, now: Any):
        self.edit, self.now = edit, now
        if not edit.path:
            super().__init__(f"{file}: changed since this operation read it ({now}); nothing was written")
            return
        super().__init__(
            f"{file}: {edit.key} changed since this operation read it (it was {_show(edit.old)}, "
            f"it is {_show(now)} now, this operation sets {_show(edit.new)}); nothing was written"
        )


def _show(value: Any) -> str:
    if value is None:
        return "absent"
    if isinstance(value, dict):
        return "a topic entry"
    return repr(value) if isinstance(value, str) else json.dumps(value)


# -- plain data --------------------------------------------------------------------------------


def plain(node: Any) -> Any:
    """ruamel's round-trip nodes as dicts, lists and scalars (what edits compare)."""
    if isinstance(node, dict):
        return {str(k): plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [plain(v) for v in node]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    return str(node)


def load_plain(text: str, path: Path) -> Plain:
    """Parse and validate; the document as plain data (series.seriesfile.blockyaml's reading where
    it has one: the same data as ruamel's)."""
    return dict(plain(config.read_document(text, path)[1]))


def _topic_index(data: Plain, name: str) -> int | None:
    for i, topic in enumerate(data.get("topics") or []):
        if isinstance(topic, dict) and topic.get("name") == name:
            return i
    return None


def value_at(data: Plain | None, path: KeyPath, text: str | None = None) -> Any:
    if not path:
        return text
    if data is None:
        return GONE
    if path[0] == "topics":
        index = _topic_index(data, path[1])
        if index is None:
            return None if len(path) == 2 else GONE
        topic = data["topics"][index]
        return topic if len(path) == 2 else topic.get(path[2])
    node: Any = data
    for part in path[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    return node.get(path[-1]) if isinstance(node, dict) else None


def _set_at(data: Plain, edit: Edit) -> None:
    path = edit.path
    if path[0] == "topics":
        topics = data.setdefault("topics", None)
        if topics is None:
            topics = data["topics"] = []
        index = _topic_index(data, path[1])
        if len(path) == 2:
            if index is not None:
                topics.pop(index)
            if edit.new is not None:
                topics.insert(_insert_index(data, edit), copy.deepcopy(edit.new))
            return
        assert index is not None
        if edit.new is None:
            topics[index].pop(path[2], None)
        else:
            topics[index][path[2]] = copy.deepcopy(edit.new)
        return
    node = data
    for part in path[:-1]:
        node = node.setdefault(part, {})
    if edit.new is None:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = copy.deepcopy(edit.new)


def _insert_index(data: Plain, edit: Edit) -> int:
    """Where a new topic goes: before `before`, else after `after`, else at the end."""
    topics = data.get("topics") or []
    if edit.before is not None and (i := _topic_index(data, edit.before)) is not None:
        return i
    if edit.after is not None and (i := _topic_index(data, edit.after)) is not None:
        return i + 1
    return 0 if edit.after is None and edit.before is not None and not topics else len(topics)


def diff(before: Plain, after: Plain) -> list[Edit]:
    """The key-level edits that turn `before` into `after` (topic order is not a key)."""
    edits: list[Edit] = []
    for section in ("upstream",):
        b, a = before.get(section) or {}, after.get(section) or {}
        for key in list(b) + [k for k in a if k not in b]:
            if b.get(key) != a.get(key):
                edits.append(Edit((section, key), b.get(key), a.get(key)))
    for key in list(before) + [k for k in after if k not in before]:
        if key not in ("upstream", "topics") and before.get(key) != after.get(key):
            edits.append(Edit((key,), before.get(key), after.get(key)))
    old = {t["name"]: t for t in before.get("topics") or []}
    new_list = after.get("topics") or []
    new = {t["name"]: t for t in new_list}
    for name, topic in old.items():
        if name not in new:
            edits.append(Edit(("topics", name), topic, None))
    for i, topic in enumerate(new_list):
        name = topic["name"]
        if name not in old:
            edits.append(
                Edit(
                    ("topics", name),
                    None,
                    topic,
                    after=new_list[i - 1]["name"] if i else None,
                    before=new_list[i + 1]["name"] if i + 1 < len(new_list) else None,
                )
            )
            continue
        b = old[name]
        for key in list(b) + [k for k in topic if k not in b]:
            if b.get(key) != topic.get(key):
                edits.append(Edit(("topics", name, key), b.get(key), topic.get(key)))
    return edits


# -- scalars -----------------------------------------------------------------------------------

_PLAIN_OK = re.compile(r"^[A-Za-z0-9_./(~$][^#:\[\]{},'\"\n\t]*$")
_SURELY_PLAIN = re.compile(r"^[A-Za-z_/][A-Za-z0-9_./+-]*$")  # a name, a ref, a path: never a number


def scalar(value: Any, flow: bool = False) -> str:
    """`value` as YAML text that reads back as exactly `value`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(scalar(v, flow=True) for v in value) + "]"
    text = str(value)
    if _SURELY_PLAIN.match(text) and text.lower() not in blockyaml.NOT_STRINGS:
        return text
    if _PLAIN_OK.match(text) and text == text.strip() and " #" not in text and _reads_back(text):
        return text
    if text.isprintable():
        return "'" + text.replace("'", "''") + "'"
    return json.dumps(text)  # a JSON string is a valid YAML double-quoted scalar


def _reads_back(text: str) -> bool:
    """Does `k: TEXT` read back as the string TEXT? blockyaml's answer where it has one
    (ruamel's too, tests/test_blockyaml.py), so the editor loads ruamel only for the rest."""
    doc = blockyaml.load(f"k: {text}\n")
    if doc is not None:
        return type(doc.get("k")) is str and doc["k"] == text
    try:
        got = config._yaml().load(io.StringIO(f"k: {text}\n"))
    except Exception:  # noqa: BLE001 - anything ruamel cannot read back must be quoted
        return False
    return (
        isinstance(got, dict)
        and type(got.get("k")) is not bool
        and isinstance(got.get("k"), str)
        and str(got["k"]) == text
    )


def _topic_lines(topic: Plain, dash: int, key_col: int) -> list[str]:
    keys = [k for k in config.TOPIC_KEYS if k in topic] + [k for k in topic if k not in config.TOPIC_KEYS]
    out = []
    for i, key in enumerate(keys):
        lead = " " * dash + "-" + " " * (key_col - dash - 1) if i == 0 else " " * key_col
        out.append(f"{lead}{key}: {scalar(topic[key])}\n")
    return out


# -- splices -----------------------------------------------------------------------------------


class _Unsupported(Exception):
    """A layout the splicer does not edit; the round-trip editor does it instead."""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _block_end(lines: list[str], first: int, column: int) -> int:
    """The line after the block that starts at `first` and holds lines indented past `column`
    (trailing blank and comment lines are left to what follows)."""
    end = last = first + 1
    while end < len(lines):
        if not _blank(lines[end]):
            if _indent(lines[end]) <= column:
                break
            last = end + 1
        end += 1
    return last


def _value_end(line: str, col: int) -> int:
    """Where the one-line value starting at `col` ends (its comment excluded)."""
    rest = line[col:].rstrip("\r\n")
    if not rest:
        raise _Unsupported("value on its own line")
    if rest[0] in "'\"":
        quote, i = rest[0], 1
        while i < len(rest):
            if quote == '"' and rest[i] == "\\":
                i += 2
                continue
            if rest[i] == quote:
                if quote == "'" and rest[i + 1 : i + 2] == "'":
                    i += 2
                    continue
                return col + i + 1
            i += 1
        raise _Unsupported("quoted value over several lines")
    if rest[0] in "[{":
        close = rest.find("]" if rest[0] == "[" else "}")
        if close < 0:
            raise _Unsupported("flow value over several lines")
        return col + close + 1
    if rest[0] in "|>&*!":
        raise _Unsupported("block scalar, anchor or tag")
    comment = re.search(r"\s#", rest)
    return col + len((rest[: comment.start()] if comment else rest).rstrip())


Splice = tuple[int, int, list[str], int]  # replace lines [start, end) by these; seq for order


def line_end(text: str) -> str:
    """The file's line end: CRLF when most of its lines end so (a Windows editor's file)."""
    return "\r\n" if text.count("\r\n") * 2 > text.count("\n") else "\n"


class _Splicer:
    """Lines are replaced whole; each untouched line keeps its own end, and the lines
    written end as most of the file's do."""

    def __init__(self, text: str, doc: Mapping):
        self.eol = line_end(text)
        self.lines = text.splitlines(keepends=True)
        self.unterminated = bool(self.lines) and not self.lines[-1].endswith("\n")
        if self.unterminated:
            self.lines[-1] += self.eol
        self.doc = doc
        self.splices: list[Splice] = []

    def add(self, start: int, end: int, new: list[str], fresh: bool = True) -> None:
        if fresh:  # written here with "\n": end them as the file does
            new = [line[:-1] + self.eol if line.endswith("\n") and not line.endswith("\r\n") else line for line in new]
        self.splices.append((start, end, new, len(self.splices)))

    def result(self) -> str:
        lines = list(self.lines)
        for start, end, new, _ in sorted(self.splices, key=lambda s: (s[0], s[3]), reverse=True):
            lines[start:end] = new
        if self.unterminated and lines and lines[-1] == self.lines[-1]:
            lines[-1] = lines[-1][: -len(self.eol)]  # its last line untouched: still without an end
        return "".join(lines)

    def _block_map(self, node: Any) -> Mapping:
        if not isinstance(node, dict) or getattr(node, "fa").flow_style():
            raise _Unsupported("flow-style mapping")
        return node

    def set_key(self, node: Mapping, key: str, value: Any, column: int | None = None) -> None:
        node = self._block_map(node)
        if value is None:
            if key not in node:
                return
            line, col = node.lc.key(key)
            end = _block_end(self.lines, line, col)
            self.add(line, end, [])
            return
        if key in node:
            line, col = node.lc.value(key)
            if line != node.lc.key(key)[0] or isinstance(node[key], dict):
                raise _Unsupported("value on its own line")
            text = self.lines[line]
            stop = _value_end(text, col)
            if _block_end(self.lines, line, node.lc.key(key)[1]) != line + 1:
                raise _Unsupported("value continues on the next line")
            self.add(line, line + 1, [text[:col] + scalar(value) + text[stop:]], fresh=False)
            return
        keys = list(node)
        if not keys:
            raise _Unsupported("empty mapping")
        first_line, key_col = node.lc.key(keys[0])
        last_line = node.lc.key(keys[-1])[0]
        end = _block_end(self.lines, last_line, key_col)
        self.add(end, end, [" " * key_col + f"{key}: {scalar(value)}\n"])

    def _topics(self) -> Sequence | None:
        seq = self.doc.get("topics")
        if isinstance(seq, list) and seq and not getattr(seq, "fa").flow_style():
            return seq
        if seq:
            raise _Unsupported("flow-style topics")
        return None

    def _item_span(self, seq: Sequence, index: int) -> tuple[int, int, int, int]:
        """(first line, end line, dash column, key column) of topic `index`."""
        line, key_col = seq.lc.item(index)
        head = self.lines[line][:key_col].rstrip()
        if not head.endswith("-"):
            raise _Unsupported("topic entry not on its dash line")
        dash = len(head) - 1
        if index + 1 < len(seq):
            nxt = seq.lc.item(index + 1)[0]
            end = line + 1
            for i in range(line + 1, nxt):
                if not _blank(self.lines[i]):
                    end = i + 1
            return line, end, dash, key_col
        return line, _block_end(self.lines, line, dash), dash, key_col

    def add_topic(self, topic: Plain, at: int) -> None:
        seq = self._topics()
        if seq is None:
            lines = _topic_lines(topic, 2, 4)
            if "topics" in self.doc:
                line = self.doc.lc.key("topics")[0]
                if self.lines[line].split("#")[0].strip() not in ("topics: []", "topics:"):
                    raise _Unsupported("topics on several lines")
                self.add(line, line + 1, ["topics:\n"] + lines)
            else:
                self.add(len(self.lines), len(self.lines), ["topics:\n"] + lines)
            return
        ref = min(at, len(seq) - 1)
        first, end, dash, key_col = self._item_span(seq, ref)
        where = first if at < len(seq) else end
        self.add(where, where, _topic_lines(topic, dash, key_col))

    def remove_topic(self, index: int) -> None:
        seq = self._topics()
        if seq is None:
            raise _Unsupported("no block topics")
        first, end, _, _ = self._item_span(seq, index)
        self.add(first, end, [])


def _splice(text: str, doc: Mapping, current: Plain, edits: list[Edit]) -> str:
    splicer = _Splicer(text, doc)
    names = [t.get("name") for t in current.get("topics") or []]
    seq = doc.get("topics")
    for edit in edits:
        path = edit.path
        if path[0] == "topics" and len(path) == 2:
            index = names.index(path[1]) if path[1] in names else None
            if index is not None:
                splicer.remove_topic(index)
            if edit.new is not None:
                splicer.add_topic(edit.new, _insert_index(current, edit))
        elif path[0] == "topics":
            splicer.set_key(seq[names.index(path[1])], path[2], edit.new)
        elif len(path) == 2:
            splicer.set_key(doc[path[0]], path[1], edit.new)
        else:
            splicer.set_key(doc, path[0], edit.new)
    return splicer.result()


def _roundtrip(doc: Any, expected: Plain) -> str:
    """The fallback editor: ruamel's round-trip of the expected data over the parsed
    document (comments on untouched keys survive)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    def merge(node: Any, want: Any) -> Any:
        if isinstance(node, CommentedMap) and isinstance(want, dict):
            for key in [k for k in node if k not in want]:
                del node[key]
            for key, value in want.items():
                node[key] = merge(node[key], value) if key in node else _fresh(value)
            return node
        if isinstance(node, CommentedSeq) and isinstance(want, list) and all(isinstance(w, dict) for w in want):
            by_name = {n.get("name"): n for n in node if isinstance(n, CommentedMap)}
            items = [merge(by_name[w["name"]], w) if w.get("name") in by_name else _fresh(w) for w in want]
            node[:] = items
            return node
        return _fresh(want)

    merge(doc, expected)
    out = io.StringIO()
    config._yaml().dump(doc, out)
    return out.getvalue()


def _fresh(value: Any) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, dict):
        node = CommentedMap()
        for key, item in value.items():
            node[key] = _fresh(item)
        return node
    if isinstance(value, list):
        seq = CommentedSeq([_fresh(v) for v in value])
        if not any(isinstance(v, dict) for v in value):
            seq.fa.set_flow_style()
        return seq
    return value


# -- the transaction's entry point ----------------------------------------------------------------------


def apply(text: str | None, path: Path, edits: list[Edit]) -> str | None:
    """`edits` compared-and-swapped onto `text` (the file now; None: it does not exist).

    Raises EditConflict naming the first key someone else changed; returns the new text
    (None: the file is to be removed), validated. Keys already at their new value are left.
    """
    whole = [e for e in edits if not e.path]
    if whole:
        edit = whole[-1]
        if text == edit.new:
            return text
        if text != edit.old:
            raise EditConflict(path.name, edit, _first_change(edit.old, text, path))
        if edit.new is not None:
            config.parse(edit.new, path)
        return edit.new  # type: ignore[no-any-return]
    if text is None:
        raise SeriesError(f"{path}: missing (moved or deleted?); put it back, or pass --config FILE")
    series_doc = config.read_document(text, path)[1]  # blockyaml's positions are ruamel's
    current = dict(plain(series_doc))
    expected = copy.deepcopy(current)
    todo = []
    for edit in edits:
        now = value_at(current, edit.path)
        if now == edit.new and now is not GONE:
            continue
        if now != edit.old or now is GONE:
            raise EditConflict(path.name, edit, now)
        _set_at(expected, edit)
        todo.append(edit)
    if not todo:
        return text
    for doc in _positions(series_doc, text, path):
        try:
            result = _splice(text, doc, current, todo)
            if load_plain(result, path) == expected:
                return result
        except (_Unsupported, SeriesError, KeyError, ValueError, IndexError):
            pass
    result = _roundtrip(config._yaml().load(io.StringIO(text)), expected)  # its own copy: it is changed
    result = re.sub(r"\r?\n", line_end(text), result)  # ruamel writes "\n"
    if load_plain(result, path) != expected:
        raise AssertionError(f"series.yaml editor: {describe(todo[0].path)} did not read back")
    return result


def _positions(doc: Mapping, text: str, path: Path) -> Iterator[Mapping]:
    """The documents to splice at: series.seriesfile.blockyaml's, then ruamel's when blockyaml's has
    no position for what the edit needs (an empty value's), so a splice ruamel's positions
    allow is never given up for the round trip."""
    yield doc
    if isinstance(doc, blockyaml.BlockMap):
        yield config.parse(text, path)[1]


def _first_change(old: str | None, now: str | None, path: Path) -> str:
    """For a whole-file edit: the first key that differs, to name it."""
    if old is None or now is None:
        return "present" if now is not None else "absent"
    try:
        edits = diff(load_plain(old, path), load_plain(now, path))
    except SeriesError:
        return "unparseable"
    return f"changed at {edits[0].key}" if edits else "reformatted"


def skeleton(remote: str, base: str, github: str | None, integration: str | None) -> str:
    """A new series.yaml with no topics and a comment that teaches the format; `series
    init` adds its topics with the editor, like any other edit."""
    lines = [
        "# series.yaml: the fork's topics over an upstream vLLM release, in order.\n",
        "# status: active | superseded | merged | dropped. See 'series --help'.\n",
        "upstream:\n",
        f"  remote: {scalar(remote)}\n",
        f"  base: {scalar(base)}\n",
    ]
    if github:
        lines.append(f"  github: {scalar(github)}\n")
    if integration:
        lines.append(f"integration: {scalar(integration)}\n")
    lines.append("topics: []\n")
    return "".join(lines)
