"""A measurement's report read back: the JSON of `series measure --json` (issue 23), which
`series comment` turns into words on a pull request.

The file crosses a trust boundary: it is made on another seat (a GPU runner's artifact, a
colleague's run) and handed in by path, so every key the comment reads is checked for its
type here, where it enters, and a wrong one is a SeriesError naming the file and the key
(`trees[1].commit`, `metrics.ours.tokens_sum`), never a traceback. Keys this schema does
not name are left alone (a newer series may add some); a missing one it does name is an
error, except where the contract allows null.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from series.errors import SeriesError
from series.validate import one_line

Value = Union[bool, int, float, str]  # what a workload may report for one metric
SCHEMA = 1
ENVIRONMENT_KEYS = ("vllm", "torch", "device", "cpu", "python", "platform")
_OPTIONAL_ENV = ("vllm", "torch", "device")  # null: not installed / no device
_HEX = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
MAX_BYTES = 64 * 1024 * 1024  # a report is small; a huge file is not one (and not read whole)


@dataclass(frozen=True)
class ReportedTree:
    name: str
    spec: str  # base | series | without:TOPIC | only:TOPIC
    commit: str | None


@dataclass(frozen=True)
class JudgedPrediction:
    id: str
    tree: str
    metric: str
    claim: str
    observed: Value | None  # None: the tree did not report the metric
    held: bool | None  # None: not measured (the metric missing): it did not hold either
    why: str | None
    explanation: str | None  # why it failed, added after the run (series predict --explain)
    compared_to: Value | None = None  # same_as: the other tree's value


@dataclass(frozen=True)
class MeasurementReport:
    trees: tuple[ReportedTree, ...]
    metrics: dict[str, dict[str, Value]]  # tree -> metric -> value
    runs: dict[str, tuple[dict[str, Value], ...]]
    environment: dict[str, dict[str, str | None]]  # tree -> ENVIRONMENT_KEYS -> value
    predictions_file: str
    predictions_sha256: str
    predictions: tuple[JudgedPrediction, ...]
    command: tuple[str, ...]
    repeat: int
    reproduce: tuple[str, ...]

    def tree(self, name: str) -> ReportedTree | None:
        return next((t for t in self.trees if t.name == name), None)


class _Bad(ValueError):
    """A key of the wrong type; the message names it by its path in the document."""


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Bad(f"'{where}' is not an object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _Bad(f"'{where}' is not a list")
    return value


def _str(value: Any, where: str, *, null: bool = False) -> Any:
    if value is None and null:
        return None
    if not isinstance(value, str):
        raise _Bad(f"'{where}' is not a string" + (" or null" if null else ""))
    return value


def _value(value: Any, where: str, *, null: bool = False) -> Any:
    if value is None and null:
        return None
    if not isinstance(value, (bool, int, float, str)):
        raise _Bad(f"'{where}' is not a number, true/false or a string")
    return value


def _values(value: Any, where: str) -> dict[str, Value]:
    return {str(k): _value(v, f"{where}.{k}") for k, v in _object(value, where).items()}


def _known_tree(name: str, names: set[str], where: str) -> str:
    if name not in names:
        raise _Bad(f"'{where}' names tree {one_line(name)[:60]!r}, which is not in 'trees'")
    return name


def parse_report(data: Any) -> MeasurementReport:
    """The report, every key checked; _Bad (a ValueError) names the first wrong one."""
    d = _object(data, "the document")
    if d.get("schema") != SCHEMA or isinstance(d.get("schema"), bool):
        raise _Bad(f"'schema' is {one_line(repr(d.get('schema')))[:40]}, not {SCHEMA}")
    trees = []
    for i, raw in enumerate(_list(d.get("trees"), "trees")):
        t = _object(raw, f"trees[{i}]")
        commit = _str(t.get("commit"), f"trees[{i}].commit", null=True)
        if commit is not None and not _HEX.match(commit):
            raise _Bad(f"'trees[{i}].commit' is not a commit id (40 or 64 hex digits) or null")
        trees.append(
            ReportedTree(_str(t.get("name"), f"trees[{i}].name"), _str(t.get("spec"), f"trees[{i}].spec"), commit)
        )
    names = {t.name for t in trees}
    if len(names) != len(trees):
        raise _Bad("'trees' names a tree twice")
    metrics = {
        _known_tree(k, names, f"metrics.{k}"): _values(v, f"metrics.{k}")
        for k, v in _object(d.get("metrics"), "metrics").items()
    }
    runs = {
        _known_tree(k, names, f"runs.{k}"): tuple(
            _values(r, f"runs.{k}[{j}]") for j, r in enumerate(_list(v, f"runs.{k}"))
        )
        for k, v in _object(d.get("runs", {}), "runs").items()
    }
    environment = {}
    for k, v in _object(d.get("environment"), "environment").items():
        env = _object(v, f"environment.{_known_tree(k, names, f'environment.{k}')}")
        environment[k] = {
            key: _str(env.get(key), f"environment.{k}.{key}", null=key in _OPTIONAL_ENV) for key in ENVIRONMENT_KEYS
        }
    sha = _str(d.get("predictions_sha256"), "predictions_sha256")
    if not _SHA256.match(sha):
        raise _Bad("'predictions_sha256' is not a sha256 (64 hex digits)")
    predictions = []
    for i, raw in enumerate(_list(d.get("predictions"), "predictions")):
        p = _object(raw, f"predictions[{i}]")
        where = f"predictions[{i}]"
        held = p.get("held")
        if held is not None and not isinstance(held, bool):
            raise _Bad(f"'{where}.held' is not true/false/null")
        predictions.append(
            JudgedPrediction(
                id=_str(p.get("id"), f"{where}.id"),
                tree=_known_tree(_str(p.get("tree"), f"{where}.tree"), names, f"{where}.tree"),
                metric=_str(p.get("metric"), f"{where}.metric"),
                claim=_str(p.get("claim"), f"{where}.claim"),
                observed=_value(p.get("observed"), f"{where}.observed", null=True),
                held=held,
                why=_str(p.get("why"), f"{where}.why", null=True),
                explanation=_str(p.get("explanation"), f"{where}.explanation", null=True),
                compared_to=_value(p.get("compared_to"), f"{where}.compared_to", null=True),
            )
        )
    repeat = d.get("repeat")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise _Bad("'repeat' is not a whole number of at least 1")
    command = tuple(_str(c, f"command[{j}]") for j, c in enumerate(_list(d.get("command"), "command")))
    reproduce = tuple(_str(c, f"reproduce[{j}]") for j, c in enumerate(_list(d.get("reproduce"), "reproduce")))
    return MeasurementReport(
        tuple(trees),
        metrics,
        runs,
        environment,
        _str(d.get("predictions_file"), "predictions_file"),
        sha,
        tuple(predictions),
        command,
        repeat,
        reproduce,
    )


def read_report(path: Path, option: str = "--measurement") -> MeasurementReport:
    """The report in `path`, or a one-line SeriesError naming the file and what is wrong."""
    how = "write it with 'series measure ... --json > FILE' (or --collect DIR --json)"
    where = f"{option} {path}"
    try:
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise SeriesError(f"{where}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_BYTES:
        raise SeriesError(f"{where}: larger than {MAX_BYTES // (1024 * 1024)} MiB: not a measurement report; {how}")
    try:
        parsed = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise SeriesError(f"{where}: not UTF-8 (byte {exc.start}); {how}") from None
    except json.JSONDecodeError as exc:
        raise SeriesError(f"{where}: not JSON ({exc.msg}, line {exc.lineno}); {how}") from None
    except (RecursionError, ValueError):  # nested too deeply; a number past int()'s limit
        raise SeriesError(
            f"{where}: not JSON a report can hold (nested too deeply or a number too long); {how}"
        ) from None
    try:
        return parse_report(parsed)
    except _Bad as exc:
        raise SeriesError(f"{where}: not a 'series measure --json' report: {one_line(str(exc))[:300]}; {how}") from None
