"""The files a measurement leaves per tree for another machine to collect (issue 23).

`series measure --artifact DIR` writes DIR/<tree>/tree.json, metrics.json and
environment.json (what a CI job on the GPU seat uploads); `series measure --collect DIR`
reads every tree.json found under DIR back and makes the report a local run would have
made. These files come from another machine: every field is checked where it is read, and
each file's predictions_sha256 must be the frozen hash of the predictions file, so a run
made against other claims cannot be passed off as this one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from series.measure import measurement
from series.measure import predictions
from series.measure.measurement import MachineInfo, MeasuredTree, Measurement, Values
from series.errors import SeriesError
from series.persisted import Json, read_int, read_list, read_object, read_opt_str, read_str, read_strs

TREE_FILE = "tree.json"
METRICS_FILE = "metrics.json"
ENVIRONMENT_FILE = "environment.json"
TREE_LIMIT = 32 << 20  # every run's metrics: a 1 MB limit each would be too tight for --repeat


def files(m: Measurement, tree: MeasuredTree) -> dict[str, Json]:
    """{file name: document} of one tree's artifact."""
    return {
        TREE_FILE: {
            "schema": measurement.SCHEMA,
            "tree": tree.name,
            "spec": tree.spec,
            "commit": tree.commit,
            "predictions_sha256": m.predictions_sha256,
            "command": list(m.command),
            "repeat": m.repeat,
            "runs": [dict(r) for r in m.runs.get(tree.name, [])],
            "describe": tree.describe,
            "python": m.python,
            "order": [n for n, _ in m.planned()],
        },
        METRICS_FILE: dict(m.metrics.get(tree.name, {})),
        ENVIRONMENT_FILE: measurement.machine_json(m.environment[tree.name]) if tree.name in m.environment else None,
    }


@dataclass(frozen=True)
class CollectedTree:
    tree: MeasuredTree
    where: str  # the tree.json it came from, for errors
    predictions_sha256: str
    command: tuple[str, ...]
    repeat: int
    runs: tuple[Values, ...]
    metrics: Values
    environment: MachineInfo
    python: str | None
    order: tuple[str, ...]  # the run's trees in order, when the job knew them


def parse(data: bytes, where: str, limit: int = measurement.METRICS_LIMIT) -> Json:
    if len(data) > limit:
        raise SeriesError(f"{where}: {len(data)} bytes, more than the {limit} an artifact file may hold")
    try:
        doc: Json = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise SeriesError(f"{where}: not JSON ({exc})") from None
    return doc


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def read_collected(
    tree_doc: Json, metrics_doc: Json, environment_doc: Json, where: str, directory: str
) -> CollectedTree:
    """One tree's artifact; `directory` names the metrics and environment files in errors."""
    try:
        d = read_object(tree_doc, TREE_FILE)
        if d.get("schema") != measurement.SCHEMA:
            raise ValueError(f"schema is {d.get('schema')!r}, not {measurement.SCHEMA}")
        tree = measurement.tree_from_json(
            {"name": d.get("tree"), "spec": d.get("spec"), "commit": d.get("commit"), "describe": d.get("describe")}
        )
        repeat = read_int(d, "repeat")
        if repeat < 1:
            raise ValueError(f"'repeat' is {repeat}")
        runs = tuple(measurement.metrics_from_json(r, f"{where}: a run") for r in read_list(d, "runs"))
        order = tuple(read_strs(d, "order")) if d.get("order") is not None else ()
        command = tuple(read_strs(d, "command"))
        if not command:
            raise ValueError("'command' is empty")
        sha = read_str(d, "predictions_sha256")
        python = read_opt_str(d, "python")
    except ValueError as exc:
        raise SeriesError(f"{where}: not a tree.json of series measure --artifact ({exc})") from None
    metrics = measurement.metrics_from_json(metrics_doc, f"{directory}/{METRICS_FILE}")
    environment = measurement.machine_from_json(environment_doc, f"{directory}/{ENVIRONMENT_FILE}")
    if runs and measurement.combine(runs, tree.name) != metrics:
        raise SeriesError(
            f"{directory}/{METRICS_FILE}: tree {tree.name}'s metrics are not what its runs in "
            f"{TREE_FILE} give (the median of numbers): the artifact was changed after the run"
        )
    return CollectedTree(tree, where, sha, command, repeat, runs, metrics, environment, python, order)


def assemble(found: list[CollectedTree], frozen: predictions.FrozenPredictions) -> Measurement:
    """The report of the collected trees, as a local run of them would have made it."""
    if not found:
        raise SeriesError(f"no {TREE_FILE} found: the directory holds no artifact of series measure --artifact")
    for c in found:
        if c.predictions_sha256 != frozen.file.sha256:
            raise SeriesError(
                f"{c.where}: tree {c.tree.name} was measured against predictions sha256:"
                f"{c.predictions_sha256}, but {frozen.file.name} is frozen as sha256:"
                f"{frozen.file.sha256}: collect it with the predictions file it ran with"
            )
    seen: dict[str, str] = {}
    for c in found:
        if c.tree.name in seen:
            raise SeriesError(f"tree {c.tree.name} is in two artifacts ({seen[c.tree.name]} and {c.where}): keep one")
        seen[c.tree.name] = c.where
    first = found[0]
    for c in found[1:]:
        if (c.command, c.repeat) != (first.command, first.repeat):
            raise SeriesError(
                f"{c.where} ran {' '.join(c.command)!r} {c.repeat} times, {first.where} ran "
                f"{' '.join(first.command)!r} {first.repeat} times: not one measurement"
            )
    names = set(seen)
    orders = {c.order for c in found}
    order = next(iter(orders)) if len(orders) == 1 and set(first.order) == names else tuple(sorted(names))
    ranked = sorted(found, key=lambda c: order.index(c.tree.name))
    measurement.check_trees(
        frozen.file, [c.tree.name for c in ranked], "collect the artifact of tree {tree} too (its job may have failed)"
    )
    metrics = {c.tree.name: c.metrics for c in ranked}
    pythons = {c.python for c in found}
    return Measurement(
        trees=tuple(c.tree for c in ranked),
        metrics=metrics,
        runs={c.tree.name: list(c.runs) for c in ranked},
        environment={c.tree.name: c.environment for c in ranked},
        predictions_file=frozen.file.name,
        predictions_sha256=frozen.file.sha256,
        predictions=measurement.judged(frozen, metrics),
        command=first.command,
        repeat=first.repeat,
        python=pythons.pop() if len(pythons) == 1 else None,
    )
