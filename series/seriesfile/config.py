"""series.yaml: find it, validate it once (errors name file, line and key), edit it in place.

ruamel.yaml rather than PyYAML: the tool edits the user's file (a new base after a rebase,
a topic superseded by an adopted PR) and must keep their comments and key order, and its
round-trip nodes carry the line and column of every key. The one editor is
series.seriesfile.edit (line splices from those positions, re-validated before writing), used
through the transaction in series.workspace.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any, Callable

from series.seriesfile import blockyaml
from series import validate
from series.errors import SeriesError
from series.model import PRNumber, ProposeSettings, Series, Sha, Status, Topic, Upstream

Mapping = Any  # a dict that knows its positions (`lc`): ruamel's CommentedMap, series.seriesfile.blockyaml's BlockMap
Sequence = Any  # a list that knows them: CommentedSeq or BlockSeq

FILENAME = "series.yaml"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
GITHUB_SLUG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$")
TOP_KEYS = ("upstream", "integration", "topics", "resolutions", "propose", "ci")  # ci: series.evidence.pipeline
PROPOSE_KEYS = ("max_lines", "max_files", "hot_paths", "fork_remote")
UPSTREAM_KEYS = ("remote", "base", "github", "api_url")
TOPIC_KEYS = (
    "name",
    "branch",
    "status",
    "summary",
    "scope",
    "depends_on",
    "superseded_by",
    "upstream_pr",
    "upstream_head",
    "merged_in",
    "reason",
    "measured",  # the comment that posted a measurement on upstream_pr (series comment)
    "owner",  # who the nightly mentions when the topic conflicts (series.evidence.pipeline)
)


def _yaml() -> Any:
    """ruamel's round-trip YAML, imported only when a file needs it (series.seriesfile.blockyaml)."""
    from ruamel.yaml import YAML

    yaml = YAML()  # round-trip mode
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    return yaml


def find(start: Path, explicit: Path | None = None) -> Path:
    """series.yaml in `start` or its parents, the way git finds .git; or `explicit`."""
    if explicit is not None:
        if not explicit.is_file():
            raise SeriesError(f"{explicit}: no such file (check --config)")
        return explicit.resolve()
    here = start.resolve()
    for directory in (here, *here.parents):
        candidate = directory / FILENAME
        if candidate.is_file():
            return candidate
    raise SeriesError(
        f"no {FILENAME} in {here} or its parents",
        "run 'series init --base REF' in your fork, or pass --config FILE / -C DIR",
    )


class _ConfigChecker:
    def __init__(self, path: Path):
        self.path = path

    def fail(self, node: Any, key: str | int | None, where: str, what: str) -> SeriesError:
        line = line_of(node, key)
        return SeriesError(f"{self.path.name}:{line}: {where}: {what}")


def line_of(node: Any, key: str | int | None) -> int:
    """From ruamel's positions (`lc`), or series.seriesfile.blockyaml's, which answer the same way."""
    lc: Any = getattr(node, "lc", None)
    try:
        if isinstance(node, dict) and key is not None and key in node:
            return int(lc.key(key)[0]) + 1
        if isinstance(node, list) and isinstance(key, int):
            return int(lc.item(key)[0]) + 1
        return int(lc.line) + 1
    except (AttributeError, KeyError, IndexError, TypeError):
        return 1


_PARSED: dict[tuple[str, Path], tuple[Series, Any]] = {}
_READ: dict[tuple[str, Path], Series] = {}


def parse(text: str, path: Path) -> tuple[Series, Any]:
    """Validate the whole document; return the Series and ruamel's round-trip document
    (the editor's). Only reading? `read` is faster.

    Remembered per text: one command parses the same file several times (open, the write
    transaction's compare-and-swap, the editor's check), ~8 ms each on a 23-topic file. Callers
    must not change the document they get (the editor's fallback loads its own)."""
    key = (text, path)
    if key not in _PARSED:
        if len(_PARSED) > 8:
            _PARSED.clear()
        _PARSED[key] = _parse(text, path)
    return _PARSED[key]


def read(text: str, path: Path) -> Series:
    """The validated Series, as `parse` gives it. A file in the plain block YAML that
    series.yaml is written in is read without ruamel (series.seriesfile.blockyaml, ~20 ms less); any
    other goes through `parse`, which has the reference answer and its error messages.
    Both go through the one validator, so they refuse the same way, naming the same line."""
    key = (text, path)
    if key not in _READ:
        doc = blockyaml.load(text)
        _remember(key, _validated(doc, path) if doc is not None else parse(text, path)[0])
    return _READ[key]


def read_document(text: str, path: Path) -> tuple[Series, Any]:
    """The validated Series and a document that knows its positions (`lc`), for the
    editor to read (not change): series.seriesfile.blockyaml's where it reads the file, else
    ruamel's round-trip document (`parse`)."""
    doc = blockyaml.load(text)
    if doc is None:
        return parse(text, path)
    key = (text, path)
    if key not in _READ:
        _remember(key, _validated(doc, path))
    return _READ[key], doc


def _remember(key: tuple[str, Path], series: Series) -> None:
    if len(_READ) > 8:
        _READ.clear()
    _READ[key] = series


_LONG_NUMBER = re.compile(r"^[ \t-]*([^\s:#'\"][^:#]*?):[ \t]+[-+]?([0-9][0-9_]{999,})[ \t]*(?:#.*)?$", re.M)


def _long_number(text: str, path: Path, exc: ValueError) -> SeriesError:
    """ruamel reads a plain run of digits as an int, and Python's int() refuses one of
    thousands of digits (a ValueError without a position): find the line that has it."""
    m = _LONG_NUMBER.search(text)
    if m is None:
        return SeriesError(f"{path.name}: malformed YAML: {validate.one_line(str(exc))[:120]}")
    line = text.count("\n", 0, m.start()) + 1
    digits = len(m.group(2).replace("_", ""))
    return SeriesError(
        f"{path.name}:{line}: {m.group(1).strip()}: a number of {digits} digits is no value "
        "series.yaml takes (a pull request number has at most "
        f"{validate.PR_DIGITS} digits)"
    )


def _parse(text: str, path: Path) -> tuple[Series, Any]:
    doc = load_yaml(text, path)
    return _validated(doc, path), doc


def load_yaml(text: str, path: Path) -> Any:
    """ruamel's round-trip document of `text`; malformed YAML is one line naming the file
    and line (series.yaml here, a predictions file in series.measure.predictions)."""
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        return _yaml().load(io.StringIO(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        lines = text.splitlines()
        if exc.context_mark is not None and mark is not None and mark.line >= len(lines):
            mark = exc.context_mark  # "got <stream end>": point at what was left open
        line = mark.line + 1 if mark is not None else 1
        # show the line itself: ruamel's wording ("<block end>") rarely says what to fix
        near = (
            f" (line {line}: {lines[line - 1].strip()!r}; check indentation and brackets)"
            if 0 < line <= len(lines) and lines[line - 1].strip()
            else ""
        )
        raise SeriesError(f"{path.name}:{line}: malformed YAML: {exc.problem or exc.context}{near}") from None
    except YAMLError as exc:  # the reader's refusals (control characters) carry no mark
        raise SeriesError(f"{path.name}: malformed YAML: {validate.one_line(str(exc))}") from None
    except RecursionError:
        raise SeriesError(f"{path.name}: malformed YAML: nested too deeply") from None
    except ValueError as exc:  # int() of a number past Python's limit (4,300 digits)
        raise _long_number(text, path, exc) from None


def _validated(doc: Any, path: Path) -> Series:
    """The one validator, over ruamel's nodes or series.seriesfile.blockyaml's (both dicts and lists
    that know their lines)."""
    check = _ConfigChecker(path)
    if not isinstance(doc, dict):
        raise SeriesError(f"{path.name}:1: expected a mapping with 'upstream' and 'topics'")
    for key in doc:
        if key not in TOP_KEYS:
            raise check.fail(doc, key, str(key), unknown_key(key, TOP_KEYS))
    up = doc.get("upstream")
    if not isinstance(up, dict):
        raise check.fail(doc, "upstream", "upstream", "missing or not a mapping (needs remote and base)")
    for key in up:
        if key not in UPSTREAM_KEYS:
            raise check.fail(up, key, f"upstream.{key}", unknown_key(key, UPSTREAM_KEYS))
    for key in ("remote", "base"):
        if not isinstance(up.get(key), str) or not up.get(key):
            raise check.fail(up, key, f"upstream.{key}", "required, a non-empty string")
    github = up.get("github")
    if github is not None and (not isinstance(github, str) or not GITHUB_SLUG_RE.match(github)):
        raise check.fail(up, "github", "upstream.github", "expected OWNER/REPO, e.g. vllm-project/vllm")
    api = _opt_str(check, up, "api_url", "upstream.api_url")
    upstream = Upstream(
        remote=_checked(check, up, "remote", "upstream.remote", validate.remote_name),
        base=_checked(check, up, "base", "upstream.base", _revision),
        github=github,
        api_url=_checked(check, up, "api_url", "upstream.api_url", validate.api_url) if api else None,
    )
    integration = _opt_str(check, doc, "integration", "integration")
    if integration is not None:
        _checked(check, doc, "integration", "integration", validate.branch_name)
    resolutions = _opt_str(check, doc, "resolutions", "resolutions") or "resolutions"
    raw_topics = doc.get("topics")
    if raw_topics is None:
        raw_topics = []
    if not isinstance(raw_topics, list):
        raise check.fail(doc, "topics", "topics", "expected a list of topics")
    topics: list[Topic] = []
    for index, raw in enumerate(raw_topics):
        topics.append(_topic(check, raw_topics, index, raw))
    _check_references(check, raw_topics, topics)
    return Series(
        path=path,
        upstream=upstream,
        topics=tuple(topics),
        integration=integration,
        resolutions=resolutions,
        propose=_propose(check, doc),
        lines=_key_lines(doc, up, raw_topics),
    )


def _key_lines(doc: Mapping, up: Mapping, seq: Sequence) -> dict[str, int]:
    """1-based lines of keys, for errors found after loading ('upstream.base',
    'topics.NAME', 'topics.NAME.branch', ...)."""
    lines = {str(key): line_of(doc, key) for key in doc}
    lines.update({f"upstream.{key}": line_of(up, key) for key in up})
    for index, raw in enumerate(seq):
        name = raw.get("name")
        lines[f"topics.{name}"] = line_of(seq, index)
        lines.update({f"topics.{name}.{key}": line_of(raw, key) for key in raw})
    return lines


def unknown_key(key: Any, allowed: tuple[str, ...]) -> str:
    import difflib  # here, not at the top: only a misspelt key asks for it

    close = difflib.get_close_matches(str(key), allowed, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return f"unknown key ({hint}allowed: {', '.join(allowed)})"


def _checked(check: _ConfigChecker, node: Mapping, key: str, where: str, rule: Callable[[Any, str], Any]) -> Any:
    """node[key] through one of series.validate's rules; its refusal names file and line."""
    try:
        return rule(node.get(key), where)
    except SeriesError as exc:
        message = str(exc)
        prefix = f"{where}: "
        raise check.fail(node, key, where, message[len(prefix) :] if message.startswith(prefix) else message) from None


def _revision(value: Any, where: str) -> str:
    """A revision (a tag, a sha) that may reach git's command line: never an option."""
    text = str(value)
    if text.startswith("-") or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in text):
        raise SeriesError(
            f"{where}: {validate.printable(text)!r} is not a revision (no leading '-', spaces or control characters)"
        )
    return validate.stable_revision(text, where)


def _opt_str(check: _ConfigChecker, node: Mapping, key: str, where: str) -> str | None:
    value = node.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise check.fail(node, key, where, "expected a non-empty string")
    return value


def _str_list(check: _ConfigChecker, node: Mapping, key: str, where: str) -> tuple[str, ...]:
    value = node.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise check.fail(node, key, where, "expected a list of strings")
    return tuple(value)


def _topic(check: _ConfigChecker, seq: Sequence, index: int, raw: Any) -> Topic:
    where = f"topics[{index}]"
    if not isinstance(raw, dict):
        raise check.fail(seq, index, where, "expected a mapping with name and branch")
    if isinstance(raw.get("name"), str):
        where = f"topics[{index}] ({raw['name']})"  # the name says which topic faster than [index]
    for key in raw:
        if key not in TOPIC_KEYS:
            raise check.fail(raw, key, f"{where}.{key}", unknown_key(key, TOPIC_KEYS))
    where = f"topics[{index}]"
    name = raw.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise check.fail(raw, "name", f"{where}.name", "required, lowercase [a-z0-9._-] (e.g. offload-evict-fix)")
    where = f"topics[{index}] ({name})"
    branch = raw.get("branch")
    if not isinstance(branch, str) or not branch:
        raise check.fail(raw, "branch", f"{where}.branch", "required, the topic's branch name")
    _checked(check, raw, "branch", f"{where}.branch", validate.branch_name)
    status_raw = raw.get("status", "active")
    try:
        status = Status(status_raw)
    except ValueError:
        allowed = ", ".join(s.value for s in Status)
        raise check.fail(raw, "status", f"{where}.status", f"'{status_raw}' is not one of {allowed}") from None
    pr = raw.get("upstream_pr")
    if pr is not None and (isinstance(pr, bool) or not isinstance(pr, int) or not 0 < pr <= validate.MAX_PR):
        raise check.fail(
            raw,
            "upstream_pr",
            f"{where}.upstream_pr",
            f"expected a pull request number (at most {validate.PR_DIGITS} digits)",
        )
    head = _opt_str(check, raw, "upstream_head", f"{where}.upstream_head")
    if head is not None:
        _checked(check, raw, "upstream_head", f"{where}.upstream_head", validate.commit_id)
    merged_in = raw.get("merged_in")
    if merged_in is not None:
        merged_in = _checked(check, raw, "merged_in", f"{where}.merged_in", _revision)
    measured = raw.get("measured")
    if measured is not None:
        measured = _checked(check, raw, "measured", f"{where}.measured", validate.https_url)
    return Topic(
        name=name,
        branch=branch,
        status=status,
        summary=_opt_str(check, raw, "summary", f"{where}.summary"),
        scope=_str_list(check, raw, "scope", f"{where}.scope"),
        depends_on=_str_list(check, raw, "depends_on", f"{where}.depends_on"),
        superseded_by=_opt_str(check, raw, "superseded_by", f"{where}.superseded_by"),
        upstream_pr=PRNumber(pr) if pr is not None else None,
        upstream_head=Sha(head) if head else None,
        merged_in=merged_in,
        reason=_opt_str(check, raw, "reason", f"{where}.reason"),
        measured=measured,
        line=line_of(seq, index),
    )


def _propose(check: _ConfigChecker, doc: Mapping) -> ProposeSettings:
    """The `propose:` block: first-PR limits for `series propose` (defaults: vLLM's guide)."""
    raw = doc.get("propose")
    if raw is None:
        return ProposeSettings()
    if not isinstance(raw, dict):
        raise check.fail(doc, "propose", "propose", "expected a mapping (max_lines, max_files, hot_paths, fork_remote)")
    for key in raw:
        if key not in PROPOSE_KEYS:
            raise check.fail(raw, key, f"propose.{key}", unknown_key(key, PROPOSE_KEYS))
    values: dict[str, Any] = {}
    for key in ("max_lines", "max_files"):
        value = raw.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise check.fail(raw, key, f"propose.{key}", "expected a positive whole number")
        values[key] = value
    if "hot_paths" in raw:
        values["hot_paths"] = _str_list(check, raw, "hot_paths", "propose.hot_paths")
    remote = _opt_str(check, raw, "fork_remote", "propose.fork_remote")
    if remote is not None:
        _checked(check, raw, "fork_remote", "propose.fork_remote", validate.remote_name)
        values["fork_remote"] = remote
    return ProposeSettings(**values)


def _check_references(check: _ConfigChecker, seq: Sequence, topics: list[Topic]) -> None:
    seen: dict[str, int] = {}
    for index, topic in enumerate(topics):
        if topic.name in seen:
            first = topics[seen[topic.name]].line
            raise check.fail(
                seq[index],
                "name",
                f"topics[{index}].name",
                f"duplicate topic name '{topic.name}' (first at line {first})",
            )
        seen[topic.name] = index
    for index, topic in enumerate(topics):
        raw = seq[index]
        for dep in topic.depends_on:
            if dep not in seen:
                raise check.fail(
                    raw,
                    "depends_on",
                    f"topics[{index}] ({topic.name}).depends_on",
                    f"'{dep}' is not a topic in this file",
                )
            if seen[dep] >= index:
                raise check.fail(
                    raw,
                    "depends_on",
                    f"topics[{index}] ({topic.name}).depends_on",
                    f"'{dep}' must come earlier in the series",
                )
        if topic.superseded_by is not None and topic.superseded_by not in seen:
            raise check.fail(
                raw,
                "superseded_by",
                f"topics[{index}] ({topic.name}).superseded_by",
                f"'{topic.superseded_by}' is not a topic in this file",
            )
        if topic.status is Status.SUPERSEDED and topic.superseded_by is None:
            raise check.fail(
                raw, "status", f"topics[{index}] ({topic.name}).status", "superseded needs superseded_by: <topic>"
            )


def decode_text(data: bytes, name: str) -> str:
    """series.yaml's bytes (or a predictions file's) as text: UTF-8 (a BOM is fine), no NUL; else a one-line error."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SeriesError(f"{name}: is UTF-16; save it as UTF-8")
    if b"\0" in data:
        line = data[: data.index(b"\0")].count(b"\n") + 1
        raise SeriesError(f"{name}:{line}: holds a NUL byte; save the file as UTF-8 text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SeriesError(f"{name}:{line}: not UTF-8 (byte {data[exc.start]:#04x}); save the file as UTF-8") from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: Path) -> str:
    """The text of a series.yaml on disk, checked as decode_text checks it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SeriesError(f"{path}: cannot read ({exc.strerror})") from None
    return decode_text(data, path.name)


def load(path: Path) -> Series:
    return read(read_text(path), path)
