"""`series comment PR --measurement REPORT.json`: say a measurement on the upstream PR.

The comment is rendered by series.measure.comment_body from the report (`series measure
--json`, checked key by key where it enters: series.measure.measurement_report), the
evidence of `series test --run --compare --json` when given, and the PR's own description
(its "unmeasured" line, quoted). It is posted once through the forge (token pinned to the
API host, the POST never retried), and its URL is recorded on the topic that carries the
PR (`measured: URL`) through the transaction, so `series status` shows it and `series undo`
reverts the record (not the comment: GitHub has it).

Which topic: the one whose `upstream_pr` is PR (adopt-upstream and propose record it).
When none is, the command refuses before anything is sent, --dry-run too: a comment cannot
be taken back by series, and a PR number no topic carries is most often a typo for one
that does; `--no-record` posts it anyway and records nothing.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from series.measure import comment_body
from series.propose import prbody
from series.measure import predictions
from series.measure.measurement_report import MeasurementReport, read_report
from series.cli_support import Context, emit, emit_json, pass_ctx
from series.errors import SeriesError
from series.forge.base import Forge, ForgeUnreachable, OfflineForge, PostedComment
from series.model import PRNumber, Topic
from series.workspace import Workspace

COMMAND = "comment"


class Outcome(str, enum.Enum):
    POSTED = "posted"
    WOULD_POST = "would-post"  # --dry-run


@dataclass(frozen=True)
class CommentOptions:
    dry_run: bool = False
    record: bool = True  # --no-record: post, record nothing


@dataclass
class Commented:
    number: int
    outcome: Outcome
    body: comment_body.CommentBody
    topic: str | None  # where measured: goes (or would)
    posted: PostedComment | None = None
    replaced: str | None = None  # the topic's earlier measured: URL
    operation: str | None = None
    notes: list[str] = field(default_factory=list)


def carrier(ws: Workspace, number: int) -> Topic | None:
    """The topic that carries PR `number`: its upstream_pr; an active one before others
    (an adopted PR re-adopted keeps one active topic)."""
    found = [t for t in ws.series.topics if t.upstream_pr == number]
    return next((t for t in found if t.active), found[0] if found else None)


def _no_carrier(ws: Workspace, number: int) -> SeriesError:
    carried = [f"#{t.upstream_pr} ({t.name})" for t in ws.series.topics if t.upstream_pr is not None]
    known = f"topics carry {', '.join(carried)}" if carried else "no topic records an upstream_pr"
    return SeriesError(
        f"no topic in {ws.config_path.name} carries PR #{number} ({known}); check the number: "
        f"a posted comment cannot be taken back. Adopt it first ('series adopt-upstream {number}'), "
        "or pass --no-record to post anyway and record nothing"
    )


def on_record(ws: Workspace, report: MeasurementReport) -> tuple[MeasurementReport, str | None, list[str]]:
    """The report with what this repository's journal says of its predictions: when the
    freeze it names is on record, its time (the comment says when) and the explanations
    added since the run ('series predict --explain' after measuring: no need to measure
    again on the GPU seat to say why a claim failed). The report's own explanation wins."""
    record = predictions.frozen(ws.repo, report.predictions_file)
    name, sha = report.predictions_file, report.predictions_sha256
    if record is None:
        return (
            report,
            None,
            [
                f"{name} was never frozen in this repository's journal: the comment's \"frozen "
                "before the run\" rests on the report alone"
            ],
        )
    freezes = {record.sha256: record.time, **{f.sha256: f.time for f in record.previous}}
    if sha not in freezes:
        return (
            report,
            None,
            [
                f"this report's {name} (sha256:{sha[:12]}…) is no freeze on record here "
                f"(newest: sha256:{record.sha256[:12]}…, {record.time})"
            ],
        )
    reasons = {e.id: e.why for e in record.explanations if e.sha256 == sha}  # the newest last, so it wins
    judged = tuple(
        dataclasses.replace(p, explanation=reasons[p.id]) if not p.held and not p.explanation and p.id in reasons else p
        for p in report.predictions
    )
    return dataclasses.replace(report, predictions=judged), freezes[sha], []


def _notes(report: MeasurementReport, topic: Topic | None) -> list[str]:
    notes = []
    for p in report.predictions:
        if not p.held and not p.explanation:
            notes.append(
                f"prediction '{p.id}' failed with no reason recorded: 'series predict "
                f"{report.predictions_file} --explain {p.id} \"why it failed\"', then run this "
                "again (no new measurement needed)"
            )
    if topic is not None:
        named = any(t.spec.split(":", 1)[-1] == topic.name for t in report.trees if ":" in t.spec)
        if not named and not (topic.active and any(t.spec == "series" for t in report.trees)):
            notes.append(
                f"no tree of the measurement includes '{topic.name}' (the topic of this PR): "
                "is this the report for this PR?"
            )
    return notes


def run(
    ws: Workspace,
    forge: Forge,
    number: int,
    report: MeasurementReport,
    evidence: dict[str, Any] | None,
    opts: CommentOptions,
) -> Commented:
    topic = carrier(ws, number)
    if topic is None and opts.record:
        raise _no_carrier(ws, number)
    report, frozen_at, notes = on_record(ws, report)
    notes += _notes(report, topic)
    described: str | None = None
    if not isinstance(forge, OfflineForge):
        try:
            forge.pull(PRNumber(number))  # the PR exists, and is this repository's
            described = forge.pull_description(PRNumber(number))
        except ForgeUnreachable as exc:
            if not opts.dry_run:
                raise
            notes.append(f"{exc}; rendered without the PR's description")
    else:
        notes.append(
            "from git refs alone (--offline, SERIES_OFFLINE=1 or no upstream.github): the PR's "
            "description is not read, so its own 'unmeasured' line is not quoted"
        )
    body = comment_body.render(number, report, evidence, comment_body.invitation(described), frozen_at=frozen_at)
    notes += [f"cut to fit GitHub's limit: {c}" for c in body.cut]
    result = Commented(
        number,
        Outcome.WOULD_POST,
        body,
        topic.name if topic and opts.record else None,
        replaced=topic.measured if topic and opts.record else None,
        notes=notes,
    )
    if topic is not None and opts.record:
        # the record is checked before anything is sent: an edit the editor would refuse (a
        # series.yaml changed into something it cannot splice or validate) stops here, not
        # after the post; a halted operation is refused just before the post
        draft = ws.draft(COMMAND)
        draft.set_topic(topic.name, measured=f"https://github.com/{ws.series.upstream.github or 'x/y'}/pull/{number}")
        draft.preview()
    if opts.dry_run:
        return result
    from series.ops.halted import refuse_if_halted

    refuse_if_halted(ws.repo, f"series {COMMAND}")
    result.posted = forge.comment(PRNumber(number), body.text)
    result.outcome = Outcome.POSTED
    if result.topic is not None:
        try:
            with ws.transaction(COMMAND, f"measurement on PR #{number} posted: {result.posted.url}") as tx:
                tx.set_topic(result.topic, measured=result.posted.url)
                result.operation = tx.commit().id
        except SeriesError as exc:
            raise SeriesError(
                f"the comment is posted ({result.posted.url}) but not recorded: {exc.text}",
                f"add 'measured: {result.posted.url}' to topic '{result.topic}' by hand",
            ) from None
    return result


def to_json(c: Commented) -> dict[str, Any]:
    return {
        "pr": c.number,
        "outcome": c.outcome.value,
        "topic": c.topic,
        "comment": {"id": c.posted.id, "url": c.posted.url} if c.posted else None,
        "recorded": c.operation is not None,
        "replaced": c.replaced,
        "operation": c.operation,
        "characters": comment_body.utf16_length(c.body.text),
        "cut": list(c.body.cut),
        "body": c.body.text,
        "notes": c.notes,
    }


def render(c: Commented) -> str:
    if c.posted is None:
        where = f" and record measured: on '{c.topic}'" if c.topic else ", recording nothing (--no-record)"
        out = [
            c.body.text.rstrip("\n"),
            "",
            f"--dry-run: nothing posted, nothing recorded; would post these "
            f"{comment_body.utf16_length(c.body.text)} characters on PR #{c.number}{where}",
        ]
    else:
        out = [f"posted the measurement on PR #{c.number}: {c.posted.url}"]
        if c.operation is not None:
            was = f" (was {c.replaced})" if c.replaced and c.replaced != c.posted.url else ""
            out.append(
                f"recorded measured: on '{c.topic}'{was}; 'series undo' reverts the record, not the "
                f"comment (operation {c.operation})"
            )
        else:
            out.append("recorded nothing (--no-record)")
    out += [f"note: {n}" for n in c.notes]
    return "\n".join(out)


@click.command("comment")
@click.argument("number", type=click.IntRange(min=1, max=10**9 - 1), metavar="PR")
@click.option(
    "--measurement",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    metavar="REPORT.json",
    help="The report of 'series measure --json' (or '--collect DIR --json').",
)
@click.option(
    "--evidence",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="EVIDENCE.json",
    help="JSON of 'series test --run --compare --json': the upstream tests go in as a table.",
)
@click.option("--no-record", is_flag=True, help="Post although no topic carries PR, and record nothing in series.yaml.")
@click.option(
    "--offline",
    is_flag=True,
    help="Do not ask the API (also SERIES_OFFLINE=1): with --dry-run, renders without the PR's description.",
)
@click.option("--dry-run", is_flag=True, help="Print the comment; post nothing, write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def command(
    ctx: Context,
    number: int,
    measurement: Path,
    evidence: Path | None,
    no_record: bool,
    offline: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Post a measurement on upstream PR as a comment, and record it on its topic.

    \b
    The comment, in this order: what was measured and why (the PR's own "unmeasured"
    line quoted), the environment, the upstream tests (--evidence), the metrics of each
    tree, every prediction (a failed one struck, with why it failed: 'series predict
    FILE --explain ID WHY' first), and the commands to reproduce. It @-mentions nobody
    (names in it are code) and hides nothing; a long one is cut to GitHub's 65536
    characters, saying what is left out.

    \b
    It is posted once (never retried: a retry could post it twice) with the token of
    GH_TOKEN / GITHUB_TOKEN or 'gh auth token', sent only to the configured API host.
    Its URL goes on the topic that carries the PR (its upstream_pr) as 'measured: URL':
    'series status' shows it; 'series undo' reverts the record, not the comment.
    No topic carries PR: refused (a typo is public once posted), unless --no-record.

    \b
    Examples:
      series measure --predictions p.yaml --tree ours=series --tree theirs=only:pr-61050 \\
          --json -- python workload.py > report.json
      series comment 61050 --measurement report.json --dry-run
      series comment 61050 --measurement report.json --evidence ev.json
    """
    from series.forge import open_forge

    report = read_report(measurement)
    data = prbody.read_evidence(evidence) if evidence is not None else None
    ws = ctx.workspace(check_branches=False)
    use_git = offline or os.environ.get("SERIES_OFFLINE") == "1"
    forge = open_forge(ws.repo, ws.series.upstream, offline=use_git)
    result = run(ws, forge, number, report, data, CommentOptions(dry_run=dry_run, record=not no_record))
    if as_json:
        emit_json(to_json(result))
    else:
        emit(render(result))
