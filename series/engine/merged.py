"""Rules that declare a topic merged upstream before it is replayed.

The rebase asks every rule, in order, for each active topic; the first verdict wins and
the topic is retired (status merged, merged_in: the new base's name) without a replay, its
branch kept. The engine's own rule, "every commit's replay came out empty", needs the
replay and is applied after it (series.engine.rebase).

A rule is a callable `rule(ctx: MergedContext) -> MergedVerdict | None`. To add one (the
upstream-PR rules: "(#N)" in upstream's subjects, squash-merged in modified form), append
it to `RULES` below, or pass `merged_rules=` to series.engine.rebase.start().
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pygit2

from series.model import Topic


@dataclass(frozen=True)
class MergedContext:
    repo: pygit2.Repository
    topic: Topic
    old_base: pygit2.Commit      # upstream.base before the rebase
    new_base: pygit2.Commit      # the REF being rebased onto
    new_base_name: str           # its resolved name (v0.31.0)
    commits: tuple[pygit2.Commit, ...]  # the topic's own commits, oldest first


@dataclass(frozen=True)
class MergedVerdict:
    reason: str                   # one line for the report: what proved it
    modified: bool = False        # merged upstream in a modified form
    detail: str = ""              # e.g. the difference, for the report


MergedRule = Callable[[MergedContext], "MergedVerdict | None"]


def _pr_rules(ctx: MergedContext) -> MergedVerdict | None:
    """Upstream-PR topics: a '(#N)' subject upstream, or the PR's files squash-merged
    (series.forge.retire). Git evidence only: a rebase without --fetch uses no network."""
    if ctx.topic.upstream_pr is None:
        return None
    from series.forge import retire

    verdict = retire.check(ctx.repo, ctx.topic, ctx.old_base, ctx.new_base)
    if verdict is None:
        return None
    return MergedVerdict(verdict.reason, modified=verdict.modified, detail=verdict.diff)


RULES: list[MergedRule] = [_pr_rules]


def first_verdict(ctx: MergedContext, rules: list[MergedRule] | None = None) -> MergedVerdict | None:
    for rule in RULES if rules is None else rules:
        verdict = rule(ctx)
        if verdict is not None:
            return verdict
    return None
