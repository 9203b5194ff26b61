"""One row of `series upstream`: a PR's state, whose turn it is, its quiet clock and gates.

Computed from a fetched Conversation with `now` handed in (tests fix it), nothing read
here. The turn is Gerrit's attention rule on GitHub's data: what waits on us (a review
thread whose last comment is not ours, a change request or a comment newer than our last
push or reply, a review requested from us) makes it ours, since the oldest of them, and
past 48 hours overdue; else, when we acted last and somebody reviews (requested, or has
reviewed), it is theirs; else nobody's (no reviewer asked). "Us" is the PR's author, and
the token's login when there is one. Bots count for nothing.

The quiet clock: days since the last human activity on either side. A ping is due after
14 quiet days, once: our own ping does not restart the clock, and after it no second
ping is offered. The offered text names nobody (no @: a maintainer is never hurried).
The stale clock is vLLM's stale bot: stale after 90 days without an update, closed 30
days after the label.
"""

from __future__ import annotations

import datetime
import enum
import re
from dataclasses import dataclass, field

from series.forge.base import PullState
from series.forge.conversation import CheckRun, CommitStatus, Conversation, ReviewComment, Said
from series.persisted import Json
from series.upstream.followups import FollowUp

OVERDUE = datetime.timedelta(hours=48)
PING_AFTER = datetime.timedelta(days=14)
STALE_AFTER_DAYS = 90
CLOSED_AFTER_STALE_DAYS = 30
PING_TEXT = "Friendly ping: happy to rebase or split this if that helps review."
_PING = re.compile(r"\bping\b", re.IGNORECASE)
assert "@" not in PING_TEXT  # the ping names nobody


class PullStatus(str, enum.Enum):
    DRAFT = "draft"
    OPEN = "open"
    MERGED = "merged"
    CLOSED = "closed"


class Turn(str, enum.Enum):
    OURS = "ours"
    THEIRS = "theirs"
    NOBODY = "nobody"  # open, and no reviewer asked or reviewing
    DONE = "done"  # merged or closed


class GateState(str, enum.Enum):
    OK = "ok"
    PENDING = "pending"
    MISSING = "missing"
    FAILING = "failing"


class HeadState(str, enum.Enum):
    SAME = "same"
    DIFFERS = "differs"
    UNKNOWN = "unknown"  # no head recorded on our side


@dataclass(frozen=True)
class Waiting:
    """One thing that makes it our turn, and since when."""

    what: str
    since: str

    def to_json(self) -> dict[str, Json]:
        return {"what": self.what, "since": self.since}


@dataclass(frozen=True)
class Gate:
    name: str  # dco, ready, ci, needs-rebase, stale
    state: GateState
    detail: str

    def to_json(self) -> dict[str, Json]:
        return {"name": self.name, "state": self.state.value, "detail": self.detail}


@dataclass(frozen=True)
class Head:
    state: HeadState
    pr_head: str | None
    ours: str | None
    hint: str | None = None

    def to_json(self) -> dict[str, Json]:
        return {"state": self.state.value, "pr_head": self.pr_head, "ours": self.ours, "hint": self.hint}


@dataclass(frozen=True)
class UpstreamRow:
    topic: str
    number: int
    title: str
    url: str | None
    status: PullStatus
    released_in: str | None  # merged: the first upstream release containing the merge
    turn: Turn
    turn_since: str | None
    turn_hours: int | None  # age of the turn, whole hours
    overdue: bool  # our turn for more than 48 hours
    waiting: tuple[Waiting, ...]
    last_activity: str | None
    quiet_days: int | None
    ping_due: bool
    pinged: bool  # we pinged after the last activity: no second ping
    ping_text: str | None
    gates: tuple[Gate, ...]
    head: Head
    notes: tuple[str, ...] = ()
    follow_ups: tuple[FollowUp, ...] = field(default=())  # upstream commits naming the PR (series.upstream.followups)
    # False: the PR has review threads and which are resolved is not known (no token), so
    # the outdated ones were taken as settled (_settled)
    threads_known: bool = True

    def to_json(self) -> dict[str, Json]:
        return {
            "topic": self.topic,
            "pr": self.number,
            "title": self.title,
            "url": self.url,
            "status": self.status.value,
            "released_in": self.released_in,
            "turn": self.turn.value,
            "turn_since": self.turn_since,
            "turn_hours": self.turn_hours,
            "overdue": self.overdue,
            "waiting": [w.to_json() for w in self.waiting],
            "last_activity": self.last_activity,
            "quiet_days": self.quiet_days,
            "ping_due": self.ping_due,
            "pinged": self.pinged,
            "ping_text": self.ping_text,
            "gates": [g.to_json() for g in self.gates],
            "head": self.head.to_json(),
            "follow_ups": [f.to_json() for f in self.follow_ups],
            "notes": list(self.notes),
            "threads_known": self.threads_known,
        }


def moment(text: str) -> datetime.datetime:
    """An ISO 8601 time of the forge's (checked where it entered), as an aware UTC datetime."""
    when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return when if when.tzinfo is not None else when.replace(tzinfo=datetime.timezone.utc)


def _latest(items: list[Said]) -> Said | None:
    return max(items, key=lambda s: moment(s.at), default=None)


def status_of(conv: Conversation) -> PullStatus:
    state = conv.pull.state
    if state == PullState.MERGED:
        return PullStatus.MERGED
    if state == PullState.CLOSED:
        return PullStatus.CLOSED
    return PullStatus.DRAFT if conv.draft else PullStatus.OPEN


def ours_of(conv: Conversation) -> frozenset[str]:
    return frozenset(x.lower() for x in (conv.pull.author, conv.viewer) if x)


def _settled(root_id: int, root: ReviewComment | None, resolved: tuple[int, ...] | None) -> bool:
    """A thread is settled when GitHub says it is resolved; where that is not known (no
    token: GraphQL only), when its line is gone from the diff (outdated): an approximation
    the row labels (UpstreamRow.threads_known)."""
    if resolved is not None:
        return root_id in resolved
    return root is not None and root.outdated


def waiting_on_us(conv: Conversation, ours: frozenset[str]) -> list[Waiting]:
    def mine(s: Said) -> bool:
        return s.author.lower() in ours

    our_acts = [
        *conv.pushes,
        *(s for s in conv.comments if mine(s)),
        *(r.said for r in conv.reviews if mine(r.said)),
        *(c.said for c in conv.review_comments if mine(c.said)),
    ]
    our_last = _latest(our_acts)

    def after_us(s: Said) -> bool:
        return our_last is None or moment(s.at) > moment(our_last.at)

    found: list[Waiting] = []
    threads: dict[int, list[Said]] = {}
    roots = {c.id: c for c in conv.review_comments if c.reply_to is None}
    for c in conv.review_comments:
        threads.setdefault(c.reply_to or c.id, []).append(c.said)
    for root_id, thread in sorted(threads.items()):
        last = _latest([s for s in thread if not s.bot])
        if last is not None and not mine(last) and not _settled(root_id, roots.get(root_id), conv.resolved):
            found.append(Waiting(f"review thread: @{last.author} commented last", last.at))
    latest_verdict: dict[str, Said] = {}
    verdicts: dict[str, str] = {}
    for r in sorted(conv.reviews, key=lambda r: moment(r.said.at)):
        if r.state != "COMMENTED" and not r.said.bot and not mine(r.said):
            latest_verdict[r.said.author], verdicts[r.said.author] = r.said, r.state
    for who, said in sorted(latest_verdict.items()):
        if verdicts[who] == "CHANGES_REQUESTED" and after_us(said):
            found.append(Waiting(f"changes requested by @{who}", said.at))
    for s in conv.comments:
        if not s.bot and not mine(s) and after_us(s):
            found.append(Waiting(f"comment by @{s.author}", s.at))
    for login in conv.requested:
        if login.lower() in ours:
            asked = _latest([e for e in conv.requests if e.author.lower() == login.lower()])
            since = asked.at if asked is not None else (conv.pull.updated_at or "")
            if since:
                found.append(Waiting(f"review requested from @{login}", since))
    return sorted(found, key=lambda w: moment(w.since))


def _turn(conv: Conversation, ours: frozenset[str], waiting: list[Waiting]) -> tuple[Turn, str | None]:
    if status_of(conv) in (PullStatus.MERGED, PullStatus.CLOSED):
        return Turn.DONE, None
    if waiting:
        return Turn.OURS, waiting[0].since
    # nothing waits on us: whoever reviews (requested, or has reviewed) has the turn, since
    # our last push or reply (a later approval, or a comment we answered, asks nothing of us)
    humans = [*conv.comments, *(r.said for r in conv.reviews), *(c.said for c in conv.review_comments)]
    our_last = _latest([s for s in humans if s.author.lower() in ours and not s.bot] + list(conv.pushes))
    reviewers = {x.lower() for x in conv.requested} - ours | {r.said.author.lower() for r in conv.reviews} - ours
    if reviewers:
        return Turn.THEIRS, our_last.at if our_last is not None else None
    return Turn.NOBODY, None


def gates(conv: Conversation, now: datetime.datetime) -> tuple[Gate, ...]:
    labels = {label.lower() for label in conv.labels}
    # CI reports two ways: check runs (GitHub Actions, the DCO app's "DCO") and commit
    # statuses (vLLM's Buildkite, "buildkite/ci/pr..."); a gate reads both
    dco = (
        [c for c in conv.checks if c.name.lower() == "dco"],
        [s for s in conv.statuses if s.context.lower() == "dco"],
    )
    others = (
        [c for c in conv.checks if c.name.lower() != "dco"],
        [s for s in conv.statuses if s.context.lower() != "dco"],
    )
    out = [
        _check_gate("dco", *dco, "no DCO check on the head: every commit needs 'Signed-off-by' (git commit -s)"),
        Gate("ready", GateState.OK, "labelled ready")
        if "ready" in labels
        else Gate(
            "ready",
            GateState.MISSING,
            "no 'ready' label: vLLM runs its full CI on an outside PR only with it (a maintainer adds it)",
        ),
        _check_gate("ci", *others, "no check runs or commit statuses on the head"),
        Gate("needs-rebase", GateState.FAILING, "labelled needs-rebase: rebase the PR on main")
        if "needs-rebase" in labels
        else Gate("needs-rebase", GateState.OK, "no needs-rebase label"),
    ]
    if conv.pull.updated_at:
        idle = (now - moment(conv.pull.updated_at)).days
        if "stale" in labels:
            left = max(0, CLOSED_AFTER_STALE_DAYS - idle)
            out.append(
                Gate(
                    "stale",
                    GateState.FAILING,
                    f"labelled stale: the stale bot closes it in {left} days without activity",
                )
            )
        else:
            left = max(0, STALE_AFTER_DAYS - idle)
            out.append(
                Gate(
                    "stale",
                    GateState.OK if left > 14 else GateState.PENDING,
                    f"stale in {left} days without activity (then closed {CLOSED_AFTER_STALE_DAYS} days later)",
                )
            )
    return tuple(out)


def _check_gate(name: str, checks: list[CheckRun], statuses: list[CommitStatus], none: str) -> Gate:
    """Failing if any check run or status fails, else pending if any runs, else ok."""
    if not checks and not statuses:
        return Gate(name, GateState.MISSING, none)
    bad = sorted(
        {c.name for c in checks if c.status == "completed" and c.conclusion not in ("success", "neutral", "skipped")}
        | {s.context for s in statuses if s.state in ("failure", "error")}
    )
    running = sorted(
        {c.name for c in checks if c.status != "completed"} | {s.context for s in statuses if s.state == "pending"}
    )
    if bad:
        return Gate(name, GateState.FAILING, "failing: " + ", ".join(bad))
    if running:
        return Gate(name, GateState.PENDING, "running: " + ", ".join(running))
    return Gate(name, GateState.OK, f"{len(checks) + len(statuses)} passed")


def head_of(conv: Conversation, ours: str | None) -> Head:
    theirs = conv.pull.head_sha
    if ours is None or theirs is None:
        return Head(HeadState.UNKNOWN, theirs, ours)
    if ours == theirs:
        return Head(HeadState.SAME, theirs, ours)
    return Head(
        HeadState.DIFFERS,
        theirs,
        ours,
        f"the PR head is not our topic's: 'series adopt-upstream {int(conv.pull.number)} --refresh' "
        "shows the range-diff",
    )


def row(
    topic: str,
    conv: Conversation,
    now: datetime.datetime,
    *,
    ours_head: str | None = None,
    released_in: str | None = None,
    notes: tuple[str, ...] = (),
    follow_ups: tuple[FollowUp, ...] = (),
) -> UpstreamRow:
    ours = ours_of(conv)
    status = status_of(conv)
    waiting = waiting_on_us(conv, ours) if status not in (PullStatus.MERGED, PullStatus.CLOSED) else []
    turn, since = _turn(conv, ours, waiting)
    hours = int((now - moment(since)).total_seconds() // 3600) if since else None
    acts = [
        s
        for s in (
            *conv.comments,
            *(r.said for r in conv.reviews),
            *(c.said for c in conv.review_comments),
            *conv.pushes,
        )
        if not s.bot
    ]

    def is_ping(s: Said) -> bool:
        return s.author.lower() in ours and bool(_PING.search(s.text))

    last = _latest(acts)
    real = _latest([s for s in acts if not (s in conv.comments and is_ping(s))])
    pinged = any(is_ping(s) and (real is None or moment(s.at) > moment(real.at)) for s in conv.comments)
    quiet = now - moment(real.at) if real is not None else None
    due = status == PullStatus.OPEN and turn != Turn.OURS and quiet is not None and quiet >= PING_AFTER and not pinged
    open_ = status in (PullStatus.OPEN, PullStatus.DRAFT)
    return UpstreamRow(
        topic=topic,
        number=int(conv.pull.number),
        title=conv.pull.title,
        url=conv.pull.url,
        status=status,
        released_in=released_in,
        turn=turn,
        turn_since=since,
        turn_hours=hours,
        overdue=turn == Turn.OURS and since is not None and now - moment(since) > OVERDUE,
        waiting=tuple(waiting),
        last_activity=last.at if last else None,
        quiet_days=(now - moment(last.at)).days if last else None,
        ping_due=due,
        pinged=pinged,
        ping_text=PING_TEXT if due else None,
        gates=gates(conv, now) if open_ else (),
        head=head_of(conv, ours_head) if open_ else Head(HeadState.UNKNOWN, conv.pull.head_sha, ours_head),
        notes=notes,
        follow_ups=follow_ups,
        threads_known=conv.resolved is not None or not conv.review_comments,
    )
