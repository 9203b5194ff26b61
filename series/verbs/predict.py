"""`series predict FILE`: freeze a predictions file before measuring, list it, explain a
failed claim.

A freeze is a journal record through the transaction (sha256 of the bytes, time, ids), so a
measurement can refuse a file that was never frozen or changed since
(series.measure.predictions.require_frozen). An edited file is frozen again only with
--refreeze: a new record, the old hash kept beside it, never a silent edit. An explanation
is a record too, and never touches the file. `series undo` passes over both.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pygit2

from series import validate
from series.measure import predictions
from series.cli_support import Context, emit, emit_json, pass_ctx
from series.errors import SeriesError
from series.workspace import transaction


class PredictOutcome(str, enum.Enum):
    FROZE = "froze"
    REFROZE = "refroze"
    ALREADY = "already-frozen"
    EXPLAINED = "explained"
    SHOWN = "shown"


@dataclass(frozen=True)
class PredictReport:
    outcome: PredictOutcome
    file: predictions.PredictionsFile
    record: predictions.FrozenRecord | None
    operation: str | None = None  # the journal entry this run wrote


def short(sha: str) -> str:
    return f"sha256:{sha[:12]}…"


def run(
    repo: pygit2.Repository,
    path: Path,
    *,
    refreeze: bool = False,
    show: bool = False,
    explain: tuple[str, str] | None = None,
) -> PredictReport:
    name, worktree = predictions.journaled_name(repo, path)
    file = predictions.load(path, name)
    if show:
        return PredictReport(PredictOutcome.SHOWN, file, predictions.frozen(repo, name, worktree))
    if explain is not None:
        return _explain(repo, path, worktree, explain)
    with transaction(repo, predictions.COMMAND) as tx:
        record = predictions.frozen(repo, name, worktree)  # under the lock: no freeze can slip in between
        if record is not None and record.sha256 == file.sha256:
            return PredictReport(PredictOutcome.ALREADY, file, record)
        if record is not None and not refreeze:
            raise predictions.changed(
                file, record, "pass --refreeze to record a new freeze (the old one stays on record)"
            )
        predictions.record_freeze(tx.extra, file, worktree, record.sha256 if record else None)
        n = len(file.predictions)
        tx.summary = (
            f"{'refroze' if record else 'froze'} {name} {short(file.sha256)} "
            f"({n} prediction{'s' if n != 1 else ''})" + (f", was {short(record.sha256)}" if record else "")
        )
        done = tx.commit()
    return PredictReport(
        PredictOutcome.REFROZE if record else PredictOutcome.FROZE,
        file,
        predictions.frozen(repo, name, worktree),
        done.id,
    )


def _explain(repo: pygit2.Repository, path: Path, worktree: str | None, explain: tuple[str, str]) -> PredictReport:
    pred_id, why = explain[0], validate.one_line(explain[1]).strip()
    if not why:
        raise SeriesError("--explain ID WHY: WHY is empty; say why the prediction failed")
    with transaction(repo, predictions.COMMAND) as tx:
        frozen = predictions.require_frozen(repo, path)
        if frozen.file.get(pred_id) is None:
            known = ", ".join(p.id for p in frozen.file.predictions)
            raise SeriesError(f"{frozen.file.name}: no prediction {pred_id!r} (its ids: {known})")
        predictions.record_explanation(tx.extra, frozen, worktree, pred_id, why)
        tx.summary = f"explained {pred_id} of {frozen.file.name}: {why[:60]}"
        done = tx.commit()
    return PredictReport(
        PredictOutcome.EXPLAINED, frozen.file, predictions.frozen(repo, frozen.file.name, worktree), done.id
    )


def render(report: PredictReport) -> str:
    file, record = report.file, report.record
    head = {
        PredictOutcome.FROZE: f"froze {file.name} {short(file.sha256)} ({len(file.predictions)} predictions)",
        PredictOutcome.REFROZE: f"refroze {file.name} {short(file.sha256)} ({len(file.predictions)} predictions); "
        "the earlier freeze stays on record",
        PredictOutcome.ALREADY: f"{file.name} is frozen already, unchanged: nothing to do",
        PredictOutcome.EXPLAINED: f"recorded the explanation in the journal; {file.name} is unchanged",
        PredictOutcome.SHOWN: f"{file.name} {short(file.sha256)}",
    }[report.outcome]
    out = [head + (f" (as {report.operation}; 'series log' lists it)" if report.operation else "")]
    if record is None:
        out.append("  not frozen: 'series predict FILE' freezes it before you measure")
    else:
        out.append(f"  frozen {record.time} ({record.operation}) sha256:{record.sha256}")
        if record.sha256 != file.sha256:
            out.append(f"  warning: changed since: now sha256:{file.sha256} (a measurement refuses it)")
        for old in reversed(record.previous):
            out.append(f"  earlier freeze {old.time} ({old.operation}) sha256:{old.sha256}")
    explanations, current = (record.explanations, record.sha256) if record else ((), file.sha256)
    for p in file.predictions:
        out.append(f"  {p.id}: {p.claim()}  (why: {p.why})")
        for e in explanations:
            if e.id == p.id:
                of = "" if e.sha256 == current else f" of the earlier freeze {short(e.sha256)}"
                out.append(f"    explained {e.time} ({e.operation}){of}: {e.why}")
    return "\n".join(out)


def to_json(report: PredictReport) -> dict[str, Any]:
    record = report.record
    return {
        "outcome": report.outcome.value,
        "file": report.file.name,
        "sha256": report.file.sha256,
        "operation": report.operation,
        "frozen": None
        if record is None
        else {
            "sha256": record.sha256,
            "time": record.time,
            "operation": record.operation,
            "previous": [{"sha256": f.sha256, "time": f.time, "operation": f.operation} for f in record.previous],
        },
        "predictions": [
            {
                "id": p.id,
                "tree": p.tree,
                "metric": p.metric,
                "kind": p.kind.value,
                "expected": list(p.expected) if isinstance(p.expected, tuple) else p.expected,
                "why": p.why,
                "line": p.line,
            }
            for p in report.file.predictions
        ],
        "explanations": [
            {"id": e.id, "why": e.why, "time": e.time, "operation": e.operation, "sha256": e.sha256}
            for e in (record.explanations if record else ())
        ],
    }


@click.command("predict")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--refreeze",
    is_flag=True,
    help="Freeze a file edited since its freeze: a new record; the old hash stays on record.",
)
@click.option("--show", is_flag=True, help="List the claims, the freeze and explanations; change nothing.")
@click.option(
    "--explain",
    nargs=2,
    type=str,
    metavar="ID WHY",
    default=None,
    help="Record why prediction ID failed (the file is never touched).",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def command(
    ctx: Context, file: Path, refreeze: bool, show: bool, explain: tuple[str, str] | None, as_json: bool
) -> None:
    """Freeze a predictions file before measuring: its hash and time go into the journal.

    A measurement refuses a predictions file that was never frozen or has changed since
    its freeze, naming both hashes. Freezing it again after an edit needs --refreeze, which
    is recorded beside the earlier freeze. A prediction that fails stays a result: add
    the reason with --explain ID WHY. 'series undo' passes over freezes and explanations.
    """
    from series.workspace import open_repaired

    if sum([refreeze, show, explain is not None]) > 1:
        raise click.UsageError("--refreeze, --show and --explain go one at a time")
    repo = open_repaired(ctx.here)
    path = file if file.is_absolute() else ctx.here / file
    if not path.is_file():
        raise SeriesError(f"{file}: no such file")
    report = run(repo, path, refreeze=refreeze, show=show, explain=explain)
    if as_json:
        emit_json(to_json(report))
    else:
        emit(render(report))
