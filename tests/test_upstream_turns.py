"""series.upstream.turns: whose turn it is, the 48-hour and 14-day lines, the ping, the
gates, the head; computed from a Conversation with `now` fixed, so every line is exact."""

from __future__ import annotations

import dataclasses
import datetime as dt

from series.forge.base import PullRequest, PullState
from series.forge.conversation import CheckRun, CommitStatus, Conversation, Review, ReviewComment, Said
from series.model import PRNumber, Sha
from series.upstream.turns import PING_TEXT, GateState, HeadState, PullStatus, Turn, row

NOW = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.timezone.utc)
ME, REVIEWER = "ada-upstream", "maint-one"
HEAD = "a" * 40


def ago(**delta: float) -> str:
    return (NOW - dt.timedelta(**delta)).isoformat().replace("+00:00", "Z")


def conv(**changes: object) -> Conversation:
    pull = PullRequest(
        PRNumber(61050),
        "Fix eviction order",
        ME,
        PullState.OPEN,
        head_sha=Sha(HEAD),
        url="https://github.com/vllm-project/vllm/pull/61050",
        updated_at=ago(days=1),
    )
    base = Conversation(
        pull,
        False,
        ("ready",),
        (REVIEWER,),
        (),
        (),
        (),
        (Said(ME, ago(days=5)),),
        (),
        (CheckRun("DCO", "completed", "success"), CheckRun("pre-commit", "completed", "success")),
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_we_pushed_last_and_a_reviewer_is_requested_theirs() -> None:
    r = row("t", conv(), NOW)
    assert (r.turn, r.turn_hours, r.overdue, r.waiting) == (Turn.THEIRS, 120, False, ())


def test_no_reviewer_asked_is_nobodys_turn() -> None:
    assert row("t", conv(requested=()), NOW).turn == Turn.NOBODY


def test_an_unresolved_thread_whose_last_comment_is_theirs_is_ours() -> None:
    comments = (ReviewComment(1, None, Said(REVIEWER, ago(hours=47))),)
    r = row("t", conv(review_comments=comments), NOW)
    assert r.turn == Turn.OURS and r.turn_hours == 47 and not r.overdue, r
    assert r.waiting[0].what == f"review thread: @{REVIEWER} commented last"
    # we answered in the thread: theirs again
    answered = comments + (ReviewComment(2, 1, Said(ME, ago(hours=1))),)
    assert row("t", conv(review_comments=answered), NOW).turn == Turn.THEIRS
    # an outdated thread (its line gone from the diff) counts as settled
    outdated = (ReviewComment(1, None, Said(REVIEWER, ago(hours=47)), outdated=True),)
    assert row("t", conv(review_comments=outdated, pushes=(Said(ME, ago(hours=1)),)), NOW).turn == Turn.THEIRS


def test_the_48_hour_line() -> None:
    at_line = (ReviewComment(1, None, Said(REVIEWER, ago(hours=48))),)
    past = (ReviewComment(1, None, Said(REVIEWER, ago(hours=48, seconds=1))),)
    assert not row("t", conv(review_comments=at_line), NOW).overdue
    assert row("t", conv(review_comments=past), NOW).overdue


def test_changes_requested_after_our_push_is_ours_and_a_push_answers_it() -> None:
    review = Review(Said(REVIEWER, ago(days=3)), "CHANGES_REQUESTED")
    r = row("t", conv(reviews=(review,)), NOW)
    assert r.turn == Turn.OURS and r.overdue and r.waiting[0].what == f"changes requested by @{REVIEWER}"
    pushed = conv(reviews=(review,), pushes=(Said(ME, ago(days=1)),))
    assert row("t", pushed, NOW).turn == Turn.THEIRS  # the reviewer has reviewed: they look again
    approved = conv(reviews=(review, Review(Said(REVIEWER, ago(days=2)), "APPROVED")))
    assert row("t", approved, NOW).turn == Turn.THEIRS


def test_a_review_requested_from_us_is_ours_with_its_age() -> None:
    c = conv(requested=("ada-helper",), viewer="ada-helper", requests=(Said("ada-helper", ago(hours=5)),))
    r = row("t", c, NOW)
    assert (r.turn, r.turn_hours, r.waiting[0].what) == (Turn.OURS, 5, "review requested from @ada-helper")


def test_bots_count_for_nothing() -> None:
    bot = (Said("mergify[bot]", ago(hours=1), True, "This pull request has merge conflicts"),)
    r = row("t", conv(comments=bot), NOW)
    assert r.turn == Turn.THEIRS and r.quiet_days == 5


def test_the_14_day_line_and_one_ping_that_names_nobody() -> None:
    before = row("t", conv(pushes=(Said(ME, ago(days=14, seconds=-1)),)), NOW)
    assert not before.ping_due and before.ping_text is None and before.quiet_days == 13
    due = row("t", conv(pushes=(Said(ME, ago(days=14)),)), NOW)
    assert due.ping_due and due.ping_text == PING_TEXT and "@" not in PING_TEXT and due.quiet_days == 14
    # once: after our ping, no second one, however quiet it stays
    pinged = conv(pushes=(Said(ME, ago(days=40)),), comments=(Said(ME, ago(days=20), text=PING_TEXT),))
    r = row("t", pinged, NOW)
    assert not r.ping_due and r.pinged and r.quiet_days == 20
    # a draft asks nobody: no ping
    assert not row("t", conv(draft=True, pushes=(Said(ME, ago(days=30)),)), NOW).ping_due


def test_the_gates() -> None:
    c = conv(
        labels=("needs-rebase",),
        checks=(
            CheckRun("DCO", "completed", "failure"),
            CheckRun("pre-commit", "in_progress", None),
            CheckRun("docs", "completed", "failure"),
        ),
    )
    gates = {g.name: g for g in row("t", c, NOW).gates}
    assert gates["dco"].state == GateState.FAILING
    assert gates["ready"].state == GateState.MISSING and "ready" in gates["ready"].detail
    assert (gates["ci"].state, gates["ci"].detail) == (GateState.FAILING, "failing: docs")
    assert gates["needs-rebase"].state == GateState.FAILING
    assert gates["stale"].detail.startswith("stale in 89 days")
    stale = {
        g.name: g
        for g in row(
            "t", conv(labels=("stale",), pull=dataclasses.replace(conv().pull, updated_at=ago(days=10))), NOW
        ).gates
    }
    assert stale["stale"].detail.startswith("labelled stale: the stale bot closes it in 20 days")
    missing = {g.name: g for g in row("t", conv(checks=()), NOW).gates}
    assert missing["dco"].state == missing["ci"].state == GateState.MISSING


def test_commit_statuses_combine_with_check_runs() -> None:
    """Buildkite's commit statuses and the check runs make one ci gate: failing if any
    fails, pending if any runs, ok when all passed; a status named DCO is the dco gate's."""

    def ci(*statuses: CommitStatus) -> tuple[GateState, str]:
        gate = {g.name: g for g in row("t", conv(statuses=statuses), NOW).gates}["ci"]
        return gate.state, gate.detail

    assert ci(CommitStatus("buildkite/ci/pr", "success")) == (GateState.OK, "2 passed")
    assert ci(CommitStatus("buildkite/ci/pr", "pending")) == (GateState.PENDING, "running: buildkite/ci/pr")
    assert ci(CommitStatus("buildkite/ci/pr", "pending"), CommitStatus("buildkite/ci/pr/amd", "error")) == (
        GateState.FAILING,
        "failing: buildkite/ci/pr/amd",
    )
    only = {
        g.name: g
        for g in row(
            "t",
            conv(checks=(), statuses=(CommitStatus("buildkite/ci/pr", "success"), CommitStatus("DCO", "failure"))),
            NOW,
        ).gates
    }
    assert (only["ci"].state, only["dco"].state) == (GateState.OK, GateState.FAILING)


def test_merged_and_the_head() -> None:
    merged = conv(pull=dataclasses.replace(conv().pull, state=PullState.MERGED))
    r = row("t", merged, NOW, released_in="v0.31.0")
    assert (r.status, r.released_in, r.turn, r.gates) == (PullStatus.MERGED, "v0.31.0", Turn.DONE, ())
    assert row("t", conv(), NOW, ours_head=HEAD).head.state == HeadState.SAME
    moved = row("t", conv(), NOW, ours_head="b" * 40).head
    assert moved.state == HeadState.DIFFERS and "series adopt-upstream 61050 --refresh" in (moved.hint or "")
    assert row("t", conv(), NOW).head.state == HeadState.UNKNOWN


def test_the_conversation_reads_back_as_stored() -> None:
    c = conv(
        reviews=(Review(Said(REVIEWER, ago(days=3)), "CHANGES_REQUESTED"),),
        review_comments=(ReviewComment(1, None, Said(REVIEWER, ago(hours=2)), outdated=True),),
        comments=(Said(ME, ago(days=1), False, PING_TEXT),),
        viewer=ME,
    )
    assert Conversation.from_json(c.to_json()) == dataclasses.replace(
        c, pull=dataclasses.replace(c.pull, base_sha=None)
    )


def test_githubs_resolved_flag_decides_where_it_is_known() -> None:
    """With GraphQL's answer (resolved: the first comment ids of resolved threads), a
    resolved thread is settled whatever its line, and an unresolved one waits even when
    outdated; without it (None) outdated means settled, and the row says it guessed."""
    current = (ReviewComment(1, None, Said(REVIEWER, ago(hours=5))),)
    outdated = (ReviewComment(1, None, Said(REVIEWER, ago(hours=5)), outdated=True),)
    assert row("t", conv(review_comments=current, resolved=(1,)), NOW).turn == Turn.THEIRS
    assert row("t", conv(review_comments=current, resolved=(2,)), NOW).turn == Turn.OURS
    assert row("t", conv(review_comments=outdated, resolved=()), NOW).turn == Turn.OURS
    guessed = row("t", conv(review_comments=outdated), NOW)
    assert guessed.turn == Turn.THEIRS and not guessed.threads_known
    assert row("t", conv(review_comments=outdated, resolved=()), NOW).threads_known
    assert row("t", conv(), NOW).threads_known  # no thread: nothing to guess


def test_the_graphql_endpoint_sits_beside_the_rest_base_on_the_same_host() -> None:
    from series.forge.github_threads import endpoint

    assert endpoint("https://api.github.com") == "https://api.github.com/graphql"
    assert endpoint("https://ghe.example.com/api/v3/") == "https://ghe.example.com/api/graphql"
    assert endpoint("http://127.0.0.1:8080") == "http://127.0.0.1:8080/graphql"
