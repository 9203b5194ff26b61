"""`series rebase`'s words: its result (series.report.rebase_result) as the text it prints."""

from __future__ import annotations

from series.semantic.breaks import Break
from series.report.rebase_result import RebaseResult, TopicFindings
from series.engine.rebase_state import TopicOutcome


def render(result: RebaseResult, integration_branch: str | None = None) -> str:
    """The result as text: the engine's report with what the verb found (upstream's history
    per topic, the breaks, how far behind the base is, the resolutions refused)."""
    report = result.report
    counts: dict[str, int] = {}
    for t in report.topics:
        counts[t.outcome.value] = counts.get(t.outcome.value, 0) + 1
    head = "rebase (dry run)" if report.dry_run else "rebase"
    spec = f" ('{report.onto_spec}')" if report.onto_spec != report.onto_name else ""
    summary = ", ".join(f"{n} {k}" for k, n in counts.items())
    out = [f"{head} onto {report.onto_name}{spec} {report.onto_sha[:12]} from {report.old_base_name}: {summary}"]
    width = max([len(t.name) for t in report.topics] + [5])
    halted = any(t.outcome == TopicOutcome.CONFLICT for t in report.topics) and not report.dry_run
    for t in report.topics:
        by_hand = {r.commit for r in t.resolved_by_hand + t.resolved_from_memory}
        if t.outcome == TopicOutcome.CLEAN:
            rd = t.range_diff or {}
            text = f"clean      {t.commits} commit(s) -> {str(t.new_head)[:12]}  range-diff " + " ".join(
                f"{k}{v}" for k, v in rd.items() if v
            )
            found = len(_breaks(result, t.name))
            text += f", {found} break{'s' if found != 1 else ''}" if found else ""
        elif t.outcome == TopicOutcome.CONFLICT and t.conflict is not None:
            c = t.conflict
            text = f"CONFLICT   {c.commit[:12]} {c.subject}: {', '.join(c.files)}"
        elif t.outcome == TopicOutcome.MERGED:
            form = "merged upstream in modified form" if t.modified else "merged upstream"
            text = f"{form} ({t.reason}); status: merged, branch kept"
        elif t.outcome == TopicOutcome.DROPPED:
            text = f"dropped    {t.reason or 'as asked'}; status: dropped, branch kept"
        elif t.outcome == TopicOutcome.EMPTY:
            after = " after resolution" if by_hand & {d.commit for d in t.dropped} else ""
            text = (
                f"empty{after} ({t.reason}): branch -> {str(t.new_head)[:12]} with no commit "
                "of its own; status unchanged"
            )
        else:
            text = f"{t.outcome.value:<10} {t.reason}"
        out.append(f"  {t.name:<{width}}  {text}".rstrip())
        if t.outcome in (TopicOutcome.CLEAN, TopicOutcome.CONFLICT) and t.reason:
            # the merged rules' note: a PR upstream merged and then reverted is replayed
            out.append(f"  {'':<{width}}    {t.reason}")
            if t.outcome == TopicOutcome.CLEAN:
                out.append(
                    f"  {'':<{width}}    the fork keeps carrying its change: 'series drop {t.name}' follows upstream"
                )
        if t.outcome == TopicOutcome.EMPTY:
            # not merged: nothing proved upstream has it; the user decides whether it goes
            how = f"series rebase --drop-topic {t.name}" if halted else f"series drop {t.name}"
            out.append(f"  {'':<{width}}    if upstream's side is all it needs: '{how}' stops carrying it")
        for d in t.dropped if t.outcome not in (TopicOutcome.DROPPED, TopicOutcome.SKIPPED) else ():
            why = "empty after resolution" if d.commit in by_hand else "already upstream"
            out.append(f"  {'':<{width}}    dropped ({why}): {d.commit[:12]} {d.subject}")
        for r in t.resolved_from_memory:
            out.append(f"  {'':<{width}}    resolved from memory: {r.path}")
        if t.outcome == TopicOutcome.MERGED and t.detail:
            out += [f"  {'':<{width}}    {line}" for line in t.detail.splitlines()]
        out += [f"  {'':<{width}}    {b.sentence()}" for b in _breaks(result, t.name)]
        found_about = result.topic(t.name)
        out += [f"  {'':<{width}}    {line}" for line in upstream_lines(found_about)] if found_about else []
    integ = report.integration
    if integ is not None:
        if integ.conflicts:
            out.append("the topics do not combine (integration not rebuilt):")
            out += [f"  {c}" for c in integ.conflicts]
        elif integration_branch:
            verb = "would be rebuilt" if report.dry_run else "rebuilt" if report.operation else "unchanged"
            out.append(f"integration {integration_branch} {verb}: {integ.head[:12]} ({len(integ.topics)} topics)")
    behind = result.behind
    if behind and behind.commits:
        base = report.onto_name if report.operation else report.old_base_name
        n = behind.commits
        out.append(f"base {base} is {n} commit{'s' if n != 1 else ''} ({behind.days} days) behind {behind.tip_name}")
    out += report.notes
    # recorded resolutions not replayed: their conflicts went to a human (issue 33)
    return "\n".join(out) + "".join(f"\n{r.sentence()}" for r in result.refused)


def _breaks(result: RebaseResult, topic: str) -> tuple[Break, ...]:
    found = result.topic(topic)
    return found.breaks if found is not None else ()


def upstream_lines(found: TopicFindings) -> list[str]:
    """What upstream's history says about one topic's outcome (series.verbs.rebase.reach
    finds it): who changed the conflicting lines, which commit landed a merged topic, the
    first breaking commit."""
    out = []
    history = found.history
    for path, culprits in (history.upstream or {}).items():
        out += [c.sentence() for c in culprits.culprits]
        if culprits.more:
            out.append(f"  (and {culprits.more} more upstream commits to {path.rsplit('/', 1)[-1]})")
    for c in history.evidence or ():
        label = f"PR #{c.pr}" if c.pr is not None else "upstream"
        out.append(f"landed by {label}: {c.sha[:12]} {c.subject} ({c.author}, {c.date})")
    first = history.first_breaking
    if first:
        up = first.commit
        label = f"#{up.pr}" if up.pr is not None else up.sha[:12]
        out.append(
            f"first breaking upstream commit: {label} {up.sha[:12]} {up.subject} "
            f"({up.author}, {up.date}), {first.position} of {first.total} on the "
            f"first-parent line ({first.replays} replays)"
        )
    return out
