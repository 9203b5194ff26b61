"""A measurement: a workload's metrics per named tree, judged against frozen predictions.

The pure part of `series measure` (issue 23), shared with `series comment`: what a
workload may write (`read_metrics`: one JSON object of metric -> number, bool or string,
at most 1 MB, validated where it enters with the tree named), how repeated runs combine
(the median of numbers; anything else must agree), what the environment looks like, the
report (`Measurement` and its JSON; series.measure.measurement_report reads it back) and the per-tree artifact files
a CI job uploads. Text is series.measure.tables; markdown is series comment's.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass
from typing import Mapping, Sequence

from series.measure.predictions import ClaimKind, FrozenPredictions, PredictionsFile, Scalar, judge
from series.seriesfile.config import NAME_RE
from series.errors import SeriesError
from series.persisted import Json, JsonObject, read_object, read_opt_str, read_str

SCHEMA = 1
METRICS_LIMIT = 1 << 20  # a metrics file is a few numbers, not a dump
METRIC_NAME_LIMIT = 200
Values = dict[str, Scalar]  # metric -> value, one run or one tree


@dataclass(frozen=True)
class MeasuredTree:
    name: str  # the run's name for it (ours, theirs): NAME_RE, a directory name too
    spec: str  # base | series | without:T | only:T
    commit: str | None  # the tree's commit (hex), None when not known
    describe: str = ""


@dataclass(frozen=True)
class MachineInfo:
    vllm: str | None
    torch: str | None
    device: str | None  # torch.cuda's device name; None: no accelerator seen
    cpu: str
    python: str
    platform: str

    def line(self) -> str:
        return (
            f"vllm {self.vllm or 'not installed'}, torch {self.torch or 'not installed'}, "
            f"device {self.device or 'none (CPU only)'}, CPU {self.cpu}, python {self.python}, "
            f"{self.platform}"
        )


@dataclass(frozen=True)
class PredictionResult:
    id: str
    tree: str
    metric: str
    claim: str
    observed: Scalar | None
    held: bool | None  # None: the metric was not measured (it did not hold either)
    why: str
    explanation: str | None  # why it failed, from `series predict --explain`
    compared_to: Scalar | None = None  # same_as: the other tree's value


@dataclass(frozen=True)
class Measurement:
    trees: tuple[MeasuredTree, ...]
    metrics: dict[str, Values]
    runs: dict[str, list[Values]]
    environment: dict[str, MachineInfo]
    predictions_file: str
    predictions_sha256: str
    predictions: tuple[PredictionResult, ...]
    command: tuple[str, ...]
    repeat: int
    python: str | None = None  # --python PY, for the reproduce line
    # (name, spec) of every tree of the measurement, in order, where this run measured only
    # some of them (--only: one tree per CI job); empty: the trees measured
    plan: tuple[tuple[str, str], ...] = ()

    def planned(self) -> tuple[tuple[str, str], ...]:
        return self.plan or tuple((t.name, t.spec) for t in self.trees)

    def reproduce(self) -> list[str]:
        file = shlex.quote(self.predictions_file)
        words = ["series", "measure", "--predictions", self.predictions_file]
        for name, spec in self.planned():
            words += ["--tree", f"{name}={spec}"]
        if self.python:
            words += ["--python", self.python]
        if self.repeat != 1:
            words += ["--repeat", str(self.repeat)]
        return [f"series predict {file}", shlex.join([*words, "--", *self.command])]

    def held(self) -> int:
        return sum(1 for p in self.predictions if p.held)


# -- what a workload wrote ---------------------------------------------------------------------


def read_metrics(data: bytes, tree: str) -> Values:
    """SERIES_METRICS's bytes as metrics; a clean SeriesError naming the tree otherwise."""
    where = f"tree {tree}: the metrics file"
    if len(data) > METRICS_LIMIT:
        raise SeriesError(
            f"{where} is {len(data)} bytes; it holds at most {METRICS_LIMIT} "
            "(one JSON object of metric -> number, true/false or string)"
        )
    try:
        doc = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise SeriesError(
            f"{where} is not JSON ({exc}): write one JSON object of metric -> "
            "number, true/false or string to $SERIES_METRICS"
        ) from None
    return metrics_from_json(doc, where)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def metrics_from_json(doc: object, where: str) -> Values:
    if not isinstance(doc, dict):
        raise SeriesError(
            f"{where} holds {type(doc).__name__ if doc is not None else 'null'}, not an object "
            "of metric -> number, true/false or string"
        )
    out: Values = {}
    for key, value in doc.items():
        if not key or len(key) > METRIC_NAME_LIMIT or not key.isprintable():
            raise SeriesError(
                f"{where}: metric name {key[:40]!r} is not a name (1 to {METRIC_NAME_LIMIT} printable characters)"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise SeriesError(f"{where}: {key} is {value}, not a finite number")
        if isinstance(value, str) and not value.isprintable():
            raise SeriesError(f"{where}: {key} holds a string with control characters or a newline")
        if not isinstance(value, (bool, int, float, str)):
            raise SeriesError(f"{where}: {key} is {_kind(value)}; a metric is a number, true/false or a string")
        out[str(key)] = value
    return out


def _kind(value: object) -> str:
    return {list: "a list", dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)


def median(values: Sequence[int | float]) -> int | float:
    """The median; of two middle values that are equal, that value (so ints stay ints)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    low, high = ordered[mid - 1], ordered[mid]
    return low if low == high else (low + high) / 2


def combine(runs: Sequence[Values], tree: str) -> Values:
    """A tree's metrics from its runs: numbers by their median; a bool or a string must be
    the same in every run; every run names the same metrics."""
    if not runs:
        raise SeriesError(f"tree {tree}: no run to take metrics from")
    names = list(runs[0])
    for index, run in enumerate(runs[1:], start=2):
        if set(run) != set(names):
            odd = sorted(set(run) ^ set(names))
            raise SeriesError(
                f"tree {tree}: run {index} reports other metrics than run 1 ({', '.join(odd)}); "
                "every run writes the same metrics"
            )
    out: Values = {}
    for name in names:
        values = [run[name] for run in runs]
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(numbers) == len(values):
            out[name] = median(numbers)
        elif all(type(v) is type(values[0]) and v == values[0] for v in values):
            out[name] = values[0]
        else:
            raise SeriesError(
                f"tree {tree}: metric {name} differs between runs "
                f"({', '.join(show(v) for v in values[:5])}); only numbers are combined "
                "(by their median): a bool or a string must be the same in every run"
            )
    return out


def show(value: Scalar | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# -- the report --------------------------------------------------------------------------------


def check_trees(file: PredictionsFile, names: Sequence[str], remedy: str = "add --tree {tree}=SPEC") -> None:
    """Every claim is about a tree of this run: a measurement that left a frozen claim out
    would be a way around it."""
    for p in file.predictions:
        for tree in (p.tree, *([str(p.expected)] if p.kind == ClaimKind.SAME_AS else [])):
            if tree not in names:
                raise SeriesError(
                    f"{file.name}:{p.line}: prediction {p.id} is about tree {tree!r}, which this "
                    f"run does not measure (its trees: {', '.join(names)}); " + remedy.format(tree=tree)
                )


def judged(frozen: FrozenPredictions, metrics: Mapping[str, Values]) -> tuple[PredictionResult, ...]:
    out = []
    for p in frozen.file.predictions:
        verdict = judge(p, metrics)
        reasons = [e.why for e in frozen.record.explanations if e.id == p.id and e.sha256 == frozen.file.sha256]
        out.append(
            PredictionResult(
                p.id,
                p.tree,
                p.metric,
                p.claim(),
                verdict.observed,
                verdict.held,
                p.why,
                reasons[-1] if reasons else None,
                verdict.compared_to,
            )
        )
    return tuple(out)


def to_json(m: Measurement) -> dict[str, Json]:
    """The report as `series measure --json` prints it (and `series comment` reads it)."""
    return {
        "schema": SCHEMA,
        "trees": [{"name": t.name, "spec": t.spec, "commit": t.commit, "describe": t.describe} for t in m.trees],
        "metrics": {name: dict(values) for name, values in m.metrics.items()},
        "runs": {name: [dict(r) for r in runs] for name, runs in m.runs.items()},
        "environment": {name: machine_json(e) for name, e in m.environment.items()},
        "predictions_file": m.predictions_file,
        "predictions_sha256": m.predictions_sha256,
        "predictions": [
            {
                "id": p.id,
                "tree": p.tree,
                "metric": p.metric,
                "claim": p.claim,
                "observed": p.observed,
                "held": p.held,
                "why": p.why,
                "explanation": p.explanation,
                "compared_to": p.compared_to,
            }
            for p in m.predictions
        ],
        "held": m.held(),
        "command": list(m.command),
        "repeat": m.repeat,
        "python": m.python,
        "reproduce": [line for line in m.reproduce()],
    }


def machine_json(e: MachineInfo) -> dict[str, Json]:
    return {
        "vllm": e.vllm,
        "torch": e.torch,
        "device": e.device,
        "cpu": e.cpu,
        "python": e.python,
        "platform": e.platform,
    }


def machine_from_json(doc: Json, where: str) -> MachineInfo:
    """An environment: the probe's answer, or an environment.json from another machine."""
    try:
        d = read_object(doc, "environment")
        return MachineInfo(
            _short(read_opt_str(d, "vllm")),
            _short(read_opt_str(d, "torch")),
            _short(read_opt_str(d, "device")),
            _text(read_str(d, "cpu")),
            _text(read_str(d, "python")),
            _text(read_str(d, "platform")),
        )
    except ValueError as exc:
        raise SeriesError(f"{where}: not an environment ({exc})") from None


def _short(value: str | None) -> str | None:
    return None if value is None else _text(value)


def _text(value: str) -> str:
    if len(value) > 200 or not value.isprintable():
        raise ValueError(f"{value[:40]!r} is not one printable line of at most 200 characters")
    return value


def tree_from_json(d: JsonObject) -> MeasuredTree:
    name = read_str(d, "name")
    if not NAME_RE.match(name):
        raise ValueError(f"tree name {name[:40]!r} is not a name (lowercase letters, digits, '.', '_', '-')")
    return MeasuredTree(
        name, _text(read_str(d, "spec")), read_opt_str(d, "commit"), _text(read_opt_str(d, "describe") or "")
    )
