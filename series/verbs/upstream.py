"""`series upstream`: one row per topic that records an upstream PR, after posting.

The rows are series.upstream.turns' (computed with `now` handed in); the data is the
forge's (GitHubForge.pull_conversation: the token only to the API host, paginated, rate
limits and wrong answers one line). Each online run stores what it fetched through the
transaction (series.upstream.store, a journal record `series undo` passes over); offline
(--offline, SERIES_OFFLINE=1, or the API unreachable) the rows come from that store, and
say how old it is.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field
from typing import Any

import click

from series.cli_support import Context, emit, emit_json, pass_ctx
from series.errors import SeriesError
from series.forge.base import Forge, ForgeUnreachable
from series.forge.conversation import Conversation
from series.model import PRNumber, Topic
from series.upstream import store
from series.upstream.followups import of_workspace
from series.upstream.turns import GateState, HeadState, PullStatus, Turn, UpstreamRow, moment, row
from series.workspace import Workspace

COMMAND = "upstream"


@dataclass
class UpstreamReport:
    rows: list[UpstreamRow]
    source: str  # "github" or "stored"
    fetched_at: str | None
    age_hours: int | None  # how old the stored fetch is (offline)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "fetched_at": self.fetched_at,
            "age_hours": self.age_hours,
            "rows": [r.to_json() for r in self.rows],
            "notes": self.notes,
        }


def _stamp(now: datetime.datetime) -> str:
    return now.astimezone(datetime.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def carried(ws: Workspace) -> list[Topic]:
    return [t for t in ws.series.topics if t.upstream_pr is not None]


def _ours_head(ws: Workspace, topic: Topic) -> str | None:
    """What we last put on the PR: the adopted head (upstream_head), else the local PR
    branch propose pushed (pr/TOPIC)."""
    if topic.upstream_head:
        return str(topic.upstream_head)
    ref = ws.repo.references.get(f"refs/heads/pr/{topic.name}")
    return str(ref.peel().id) if ref is not None else None


def _released(ws: Workspace, conv: Conversation) -> tuple[str | None, tuple[str, ...]]:
    from series.upstream.released import released_in

    merge = conv.pull.merge_commit
    if not conv.pull.merged or not merge:
        return None, ()
    if merge not in ws.repo:
        remote = ws.series.upstream.remote
        return None, (
            f"the merge commit {merge[:12]} is not here: 'git fetch {remote} --tags' to say which release has it",
        )
    upstream = ws.series.upstream
    return released_in(ws.repo, merge, int(conv.pull.number), upstream.github, upstream.remote)


def _fetch(ws: Workspace, forge: Forge, topics: list[Topic], now: datetime.datetime) -> store.Fetched:
    seen: dict[int, Conversation] = {}
    for topic in topics:
        number = int(topic.upstream_pr or 0)
        if number not in seen:
            seen[number] = forge.pull_conversation(PRNumber(number))
    return store.Fetched(_stamp(now), tuple(seen.values()))


def run(ws: Workspace, forge: Forge | None, now: datetime.datetime) -> UpstreamReport:
    topics = carried(ws)
    notes: list[str] = []
    if not topics:
        return UpstreamReport(
            [],
            "none",
            None,
            None,
            ["no topic records an upstream PR ('series propose' or 'series adopt-upstream' records upstream_pr)"],
        )
    fetched: store.Fetched | None = None
    if forge is not None:
        try:
            fetched = _fetch(ws, forge, topics, now)
        except ForgeUnreachable as exc:
            notes.append(f"{exc.text}: showing the last fetch stored")
    if fetched is not None:
        source = "github"
        try:
            with ws.transaction(COMMAND, f"fetched {len(fetched.pulls)} upstream PR(s)") as tx:
                store.stage(tx, ws.repo, fetched)
                tx.commit()
        except SeriesError as exc:  # a halted rebase, a lock: the rows stand, only the offline copy waits
            notes.append(f"this fetch is not stored for offline use: {exc.text}")
        age = None
    else:
        source = "stored"
        fetched = store.load(ws.repo)
        if fetched is None:
            raise SeriesError(
                "no stored fetch of the upstream PRs to read offline",
                "run 'series upstream' once with the network (upstream.github set)",
            )
        age = int((now - moment(fetched.at)).total_seconds() // 3600)
    after = of_workspace(ws)  # git alone: the same offline as online
    if after is not None and after.trunk is None:
        remote = ws.series.upstream.remote
        notes.append(f"follow-ups not read: neither {remote}/main nor {remote}/master is fetched (git fetch {remote})")
    tracked = {p.topic: p for p in after.prs} if after is not None else {}
    rows = []
    for topic in topics:
        conv = fetched.find(int(topic.upstream_pr or 0))
        if conv is None:
            notes.append(f"PR #{topic.upstream_pr} of '{topic.name}' is not in the stored fetch")
            continue
        released, said = _released(ws, conv)
        pr = tracked.get(topic.name)
        rows.append(
            row(
                topic.name,
                conv,
                now,
                ours_head=_ours_head(ws, topic),
                released_in=released,
                notes=said + tuple(pr.warnings() if pr is not None else ()),
                follow_ups=pr.followups if pr is not None else (),
            )
        )
    return UpstreamReport(rows, source, fetched.at, age, notes)


def _age(hours: int) -> str:
    return f"{hours} h" if hours < 48 else f"{hours // 24} days"


def render_row(r: UpstreamRow) -> list[str]:
    state = r.status.value + (f" in {r.released_in}" if r.released_in else "")
    if r.turn in (Turn.OURS, Turn.THEIRS):
        turn = (
            f"{r.turn.value} turn"
            + (f" for {_age(r.turn_hours)}" if r.turn_hours is not None else "")
            + (", past 48 h" if r.overdue else "")
        )
    else:
        turn = {Turn.NOBODY: "no reviewer asked", Turn.DONE: "done"}[r.turn]
    out = [f"#{r.number} {r.topic}: {state}, {turn}  {r.title}"]
    out += [f"  waiting on us: {w.what}, since {w.since}" for w in r.waiting]
    if r.quiet_days is not None and r.status in (PullStatus.OPEN, PullStatus.DRAFT):
        quiet = f"  quiet {r.quiet_days} days"
        if r.ping_due:
            quiet += f"; a ping is due (it names nobody): \"{r.ping_text}\""
        elif r.pinged:
            quiet += "; pinged already since the last activity (once is enough)"
        out.append(quiet)
    if r.gates:
        out.append(
            "  gates: "
            + "; ".join(
                f"{g.name} {g.state.value}"
                + ("" if g.state == GateState.OK and g.name != "stale" else f" ({g.detail})")
                for g in r.gates
            )
        )
    if r.head.state == HeadState.DIFFERS:
        out.append(
            f"  head: the PR is at {str(r.head.pr_head)[:12]}, our topic at {str(r.head.ours)[:12]}: {r.head.hint}"
        )
    out += [f"  {f.sentence()}" for f in r.follow_ups]
    out += [f"  note: {n}" for n in r.notes]
    if not r.threads_known:
        out.append(
            "  note: which review threads are resolved is not known without a token (GitHub says it "
            "only through GraphQL): a thread whose line is gone from the diff was taken as settled"
        )
    return out


def render(report: UpstreamReport) -> str:
    out = []
    if report.source == "stored" and report.age_hours is not None:
        out.append(f"offline: from the fetch stored {report.fetched_at} ({_age(report.age_hours)} old)")
    for r in report.rows:
        out += render_row(r)
    out += [f"note: {n}" for n in report.notes]
    return "\n".join(out) if out else "no upstream PRs"


@click.command("upstream")
@click.option(
    "--offline",
    is_flag=True,
    help="Do not ask the API (also SERIES_OFFLINE=1): read the last fetch stored, and say how old it is.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for the nightly.")
@pass_ctx
def command(ctx: Context, offline: bool, as_json: bool) -> None:
    """Show each upstream PR a topic records: its state, whose turn it is, its gates.

    \b
    One row per topic with upstream_pr (proposed or adopted): draft, open, merged (with
    the first upstream release containing it) or closed; whose turn it is (Gerrit's
    attention rule: a review thread whose last comment is not ours, changes requested or
    a comment after our last push or reply, a review requested from us make it ours, past
    48 h marked; when we acted last and somebody reviews, theirs); days since the last
    activity, and after 14 quiet days one ping, whose offered text names nobody; the gates
    (DCO, the 'ready' label vLLM's full CI needs, CI's check runs and commit statuses
    (Buildkite's), 'needs-rebase', the stale bot's 90 + 30 days); whether the PR head is still our topic's (if not, 'series
    adopt-upstream N --refresh' shows the range-diff); and the commits upstream's main
    landed naming the PR (fixes, follow-ups, reverts: read from git, offline too), each
    with whether the series carries it.

    \b
    Resolved threads: read from GitHub's GraphQL API (reviewThreads), which needs a token;
    a thread waits while it is unresolved and its last comment is not ours. Without a
    token, a thread whose line is gone from the diff is taken as settled, and the row says
    so.

    \b
    Each run stores what it fetched in .git/series/upstream/ (a journal record that
    'series undo' passes over); --offline, or an unreachable API, reads it back.

    \b
    Examples:
      series upstream
      series upstream --json > upstream.json     # the nightly
      series upstream --offline
    """
    from series.forge import open_forge

    ws = ctx.workspace(check_branches=False)
    use_store = offline or os.environ.get("SERIES_OFFLINE") == "1" or not ws.series.upstream.github
    forge = None if use_store else open_forge(ws.repo, ws.series.upstream)
    report = run(ws, forge, datetime.datetime.now(datetime.timezone.utc))
    if as_json:
        emit_json(report.to_json())
    else:
        emit(render(report))
