"""Predictions about a measurement, frozen before it runs (issue 23).

A predictions file (YAML) lists claims about metrics per tree of a run:

    predictions:
      - id: same-sum
        tree: theirs
        metric: tokens_sum
        equals: 100064        # or at_least / at_most / between: [a, b] / same_as: ours
        why: "their ranking keeps the same victims on our workload"

It is validated once, where it enters (`load`: errors name file, line and key, as
series.yaml's do), and `judge` decides a claim against measured metrics. Freezing is a
journal record (the transaction's, made by `series predict`): the file's sha256, time and
ids. `require_frozen` is what a measurement calls: a file never frozen, or one whose bytes
differ from the newest freeze, is refused naming both hashes, so a claim is never edited
silently after the fact. A refreeze is allowed but loud: it is a new record and every
earlier hash stays in `FrozenRecord.previous`. Freezes and explanations are records
(`journal.RECORD`): `series undo` passes over them, since undoing a claim would be a way to
rewrite it.
"""

from __future__ import annotations

import enum
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Union

import pygit2

from series.seriesfile import config
from series.ops import journal
from series.errors import SeriesError
from series.persisted import Json, read_object, read_opt_str, read_str, read_strs

Scalar = Union[bool, int, float, str]
Metrics = Mapping[str, Mapping[str, Scalar]]  # tree -> metric -> value
COMMAND = "predict"  # the journal entries' command


class ClaimKind(str, enum.Enum):
    """What a prediction claims of its metric (the str mixin keeps the YAML key)."""

    EQUALS = "equals"
    AT_LEAST = "at_least"
    AT_MOST = "at_most"
    BETWEEN = "between"
    SAME_AS = "same_as"  # the same metric on another tree


@dataclass(frozen=True)
class Prediction:
    id: str
    tree: str
    metric: str
    kind: ClaimKind
    expected: Scalar | tuple[float, float]  # BETWEEN: (low, high); SAME_AS: the other tree
    why: str
    line: int

    def claim(self) -> str:
        """The claim in words, as the file states it: `tokens_sum on theirs equals 100064`."""
        if isinstance(self.expected, tuple):
            what = f"between {self.expected[0]} and {self.expected[1]}"
        elif self.kind == ClaimKind.SAME_AS:
            what = f"same as on {self.expected}"
        else:
            what = f"{self.kind.value.replace('_', ' ')} {self.expected!r}"
        return f"{self.metric} on {self.tree} {what}"


@dataclass(frozen=True)
class PredictionsFile:
    name: str  # as errors and records name it (repo-relative where it can be)
    sha256: str  # of the file's bytes
    predictions: tuple[Prediction, ...]

    def get(self, pred_id: str) -> Prediction | None:
        return next((p for p in self.predictions if p.id == pred_id), None)


@dataclass(frozen=True)
class PredictionVerdict:
    held: bool | None  # None: a metric it needs was not measured
    observed: Scalar | None
    compared_to: Scalar | None = None  # SAME_AS: the other tree's value


@dataclass(frozen=True)
class Freeze:
    operation: str
    time: str
    sha256: str


@dataclass(frozen=True)
class Explanation:
    operation: str
    time: str
    id: str
    why: str
    sha256: str  # the frozen file it explains a claim of


@dataclass(frozen=True)
class FrozenRecord:
    """What the journal holds about one predictions file: the newest freeze, every earlier
    one (oldest first), and the explanations added since the first."""

    name: str
    sha256: str
    time: str
    operation: str
    ids: tuple[str, ...]
    previous: tuple[Freeze, ...]
    explanations: tuple[Explanation, ...]


@dataclass(frozen=True)
class FrozenPredictions:
    file: PredictionsFile
    record: FrozenRecord


# -- reading the file ------------------------------------------------------------------------

CLAIMS = tuple(k.value for k in ClaimKind)
KEYS = ("id", "tree", "metric", "why", *CLAIMS)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load(path: Path, name: str) -> PredictionsFile:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SeriesError(f"{name}: cannot read ({exc.strerror})") from None
    return parse(data, name)


def parse(data: bytes, name: str) -> PredictionsFile:
    """The file's bytes, validated whole; exit 1 naming file:line and key otherwise."""
    text = config.decode_text(data, name)
    doc = config.load_yaml(text, Path(name))
    if not isinstance(doc, dict) or set(doc) != {"predictions"}:
        raise SeriesError(f"{name}:1: expected a mapping with one key, 'predictions' (a list of claims)")
    seq = doc["predictions"]
    if not isinstance(seq, list) or not seq:
        raise SeriesError(
            f"{name}:{config.line_of(doc, 'predictions')}: predictions: expected a non-empty list of claims"
        )
    found: list[Prediction] = []
    for index, raw in enumerate(seq):
        pred = _prediction(name, seq, index, raw)
        twin = next((p for p in found if p.id == pred.id), None)
        if twin is not None:
            raise SeriesError(
                f"{name}:{pred.line}: predictions[{index}].id: {pred.id!r} is already the id "
                f"of the prediction on line {twin.line} (ids are unique)"
            )
        found.append(pred)
    return PredictionsFile(name, sha256(data), tuple(found))


def _prediction(name: str, seq: list[Any], index: int, raw: Any) -> Prediction:
    where = f"predictions[{index}]"

    def fail(key: str | None, what: str) -> SeriesError:
        line = config.line_of(raw, key) if key is not None else config.line_of(seq, index)
        return SeriesError(f"{name}:{line}: {where}{'.' + key if key else ''}: {what}")

    if not isinstance(raw, dict):
        raise fail(None, "expected a mapping with id, tree, metric, why and one claim")
    for key in raw:
        if key not in KEYS:
            raise fail(str(key), config.unknown_key(key, KEYS))
    for key in ("id", "tree", "metric", "why"):
        value = raw.get(key)
        if not isinstance(value, str) or not value.strip():
            raise fail(key if key in raw else None, f"{key}: required, a non-empty string")
    if not config.NAME_RE.match(raw["id"]):
        raise fail("id", f"{raw['id']!r} is not an id (lowercase letters, digits, '.', '_', '-')")
    kinds = [ClaimKind(k) for k in raw if k in CLAIMS]  # in the file's order: the second is named
    if len(kinds) != 1:
        said = ", ".join(k.value for k in kinds) or "none"
        raise fail(
            kinds[1].value if kinds[1:] else None,
            f"exactly one claim of {', '.join(k.value for k in ClaimKind)} (found: {said})",
        )
    kind = kinds[0]
    return Prediction(
        id=str(raw["id"]),
        tree=str(raw["tree"]),
        metric=str(raw["metric"]),
        kind=kind,
        expected=_expected(kind, raw[kind.value], raw["tree"], lambda what: fail(kind.value, what)),
        why=str(raw["why"]),
        line=config.line_of(seq, index),
    )


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value) if isinstance(value, int) else float(value)  # ruamel's subclasses, plain


def _expected(kind: ClaimKind, value: Any, tree: str, fail: Any) -> Scalar | tuple[float, float]:
    if kind == ClaimKind.EQUALS:
        if isinstance(value, bool):
            return bool(value)
        if isinstance(value, str):
            return str(value)
        number = _number(value)
        if number is None:
            raise fail("expected a number, true/false or a string")
        return number
    if kind == ClaimKind.SAME_AS:
        if not isinstance(value, str) or not value.strip():
            raise fail("expected the name of another tree")
        if value == tree:
            raise fail(f"{value!r} is this prediction's own tree (name another one)")
        return str(value)
    if kind == ClaimKind.BETWEEN:
        low, high = (
            (_number(value[0]), _number(value[1])) if isinstance(value, list) and len(value) == 2 else (None, None)
        )
        if low is None or high is None:
            raise fail("expected two numbers, [low, high]")
        if not low <= high:  # NaN too
            raise fail(f"[{low}, {high}]: the low bound comes first")
        return (low, high)
    number = _number(value)
    if number is None or math.isnan(number):
        raise fail("expected a number")
    return number


# -- judging a claim -------------------------------------------------------------------------


def judge(prediction: Prediction, metrics: Metrics) -> PredictionVerdict:
    """Whether the claim held on `metrics` (tree -> metric -> value). Numbers compare as
    numbers (100064 equals 100064.0), never with a bool; a value of the wrong type for the
    claim is a claim that failed, shown with what was observed."""
    observed = metrics.get(prediction.tree, {}).get(prediction.metric)
    if observed is None:
        return PredictionVerdict(None, None)
    kind, expected = prediction.kind, prediction.expected
    if kind == ClaimKind.SAME_AS:
        other = metrics.get(str(expected), {}).get(prediction.metric)
        if other is None:
            return PredictionVerdict(None, observed)
        return PredictionVerdict(_equal(observed, other), observed, other)
    if isinstance(expected, tuple):  # BETWEEN
        number = _number(observed)
        return PredictionVerdict(number is not None and expected[0] <= number <= expected[1], observed)
    if kind == ClaimKind.EQUALS:
        return PredictionVerdict(_equal(observed, expected), observed)
    number, bound = _number(observed), _number(expected)
    if number is None or bound is None:
        return PredictionVerdict(False, observed)
    return PredictionVerdict(number >= bound if kind == ClaimKind.AT_LEAST else number <= bound, observed)


def _equal(a: Scalar, b: Scalar) -> bool:
    x, y = _number(a), _number(b)
    if x is not None and y is not None:
        return x == y
    return type(a) is type(b) and a == b  # a bool equals a bool, a string a string


# -- the journal's record --------------------------------------------------------------------


def record_freeze(extra: dict[str, Json], file: PredictionsFile, worktree: str | None, previous: str | None) -> None:
    """What a freeze puts in its journal entry (through the transaction's op.extra)."""
    extra[journal.RECORD] = True
    extra[COMMAND] = {
        "action": "freeze",
        "path": file.name,
        "worktree": worktree,
        "sha256": file.sha256,
        "ids": [p.id for p in file.predictions],
        "previous": previous,
    }


def record_explanation(
    extra: dict[str, Json], frozen: FrozenPredictions, worktree: str | None, pred_id: str, why: str
) -> None:
    extra[journal.RECORD] = True
    extra[COMMAND] = {
        "action": "explain",
        "path": frozen.file.name,
        "worktree": worktree,
        "sha256": frozen.record.sha256,
        "id": pred_id,
        "why": why,
    }


def frozen(repo: pygit2.Repository, name: str, worktree: str | None = None) -> FrozenRecord | None:
    """The journal's record of the file journaled as `name` (journal.relative_config's
    path); None when it was never frozen."""
    freezes: list[tuple[Freeze, tuple[str, ...]]] = []
    explained: list[Explanation] = []
    for op in journal.operations(repo):
        if op.command != COMMAND or op.state != journal.OpState.DONE:
            continue
        try:
            d = read_object(op.extra.get(COMMAND), COMMAND)
            if read_str(d, "path") != name or read_opt_str(d, "worktree") != worktree:
                continue
            if read_str(d, "action") == "freeze":
                freezes.append((Freeze(op.id, op.time, read_str(d, "sha256")), tuple(read_strs(d, "ids"))))
            else:
                explained.append(
                    Explanation(op.id, op.time, read_str(d, "id"), read_str(d, "why"), read_str(d, "sha256"))
                )
        except ValueError as exc:
            raise SeriesError(
                f"journal entry {op.id}: unreadable prediction record ({exc}); "
                f"move it out of {journal.journal_dir(repo)} to go on"
            ) from None
    if not freezes:
        return None
    newest, ids = freezes[-1]
    return FrozenRecord(
        name, newest.sha256, newest.time, newest.operation, ids, tuple(f for f, _ in freezes[:-1]), tuple(explained)
    )


def journaled_name(repo: pygit2.Repository, path: Path) -> tuple[str, str | None]:
    """(the file's name in records and errors, its worktree): repo-relative inside it."""
    return journal.relative_config(repo, path)


def require_frozen(repo: pygit2.Repository, path: Path) -> FrozenPredictions:
    """The file, validated, and its freeze; a file never frozen or changed since its
    newest freeze is refused (exit 1) naming both hashes. A measurement calls this first."""
    name, worktree = journaled_name(repo, path)
    file = load(path, name)
    record = frozen(repo, name, worktree)
    if record is None:
        raise SeriesError(
            f"{name} (sha256:{file.sha256}) was never frozen",
            f"run 'series predict {name}' before measuring, so the claims are on record first",
        )
    if record.sha256 != file.sha256:
        raise changed(file, record, f"'series predict {name} --refreeze' (recorded: reports show both hashes)")
    return FrozenPredictions(file, record)


def changed(file: PredictionsFile, record: FrozenRecord, remedy: str) -> SeriesError:
    """The refusal of a file whose bytes differ from its newest freeze, naming both hashes."""
    return SeriesError(
        f"{file.name} changed since it was frozen ({record.time}, {record.operation}): frozen "
        f"sha256:{record.sha256}, now sha256:{file.sha256}; put the frozen text back, or {remedy}"
    )
