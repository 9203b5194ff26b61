"""`series adopt-upstream N`: carry upstream PR N instead of one of our topics.

The PR's own commits (its head minus upstream's main line) are replayed onto
upstream.base in memory. Authorship is the PR authors': name, email, time and offset
exactly; the committer is the local user, and each message gains `Upstream-PR:` and
`(cherry picked from commit ...)`, the way `git cherry-pick -x` marks provenance.
series.yaml gets topic pr-N where the replaced topic stood; the replaced topic becomes
superseded and its branch is not touched. The whole adoption runs inside the transaction
(series.workspace): the lock is held from the first read of upstream.base to the end, so
a rebase cannot move the base underneath it; the branch and the series.yaml edits move in
one journaled operation, so `series undo` reverts the adoption.

A PR commit that conflicts with upstream.base halts the adoption in the rebase engine's
resumable flow, with this verb's ending (series.verbs.adopt_upstream.adoption_ending): the commit laid out
in the worktree with markers,
state on disk; `--continue` (resume) takes the resolution, replays the rest and commits the
same Transaction; `--abort` (abort) leaves everything as it was.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
from dataclasses import asdict, dataclass, field
from typing import Callable

import pygit2

from series.seriesfile import config
from series.ops import faults
from series import validate
from series.verbs.adopt_upstream.adoption_ending import ENDING, AdoptionPayload, payload, with_trailers
from series.engine import rebase
from series.engine import rebase_state
from series.engine.replay import replay_commits
from series.errors import ConflictError, SeriesError
from series.resolutions import engine_hooks
from series.forge.base import (
    Forge,
    ForgeUnreachable,
    PullRequest,
    pr_fork_point,
    tree_files,
)
from series.forge.pulls import fetch_commit, fetch_pull
from series.git import checkouts, partial
from series.git.command import git
from series.git.refs import current
from series.git.repo import message, subject
from series.git.repo import commits_between, workdir
from series.model import Status, Topic
from series.seriesfile.edit import Edit
from series.workspace import Workspace, Transaction


@dataclass(frozen=True)
class Overlap:
    topic: str
    shared_files: list[str]


@dataclass(frozen=True)
class AdoptedCommit:
    upstream: str  # the PR's commit
    new: str  # its replay onto upstream.base
    author: str  # "Name <email>"
    author_time: int
    author_offset: int
    subject: str


@dataclass(frozen=True)
class Adoption:
    number: int
    reference: str  # URL, or #N without metadata
    title: str | None
    author: str | None  # GitHub login, when known
    source: str  # "github" or "git"
    head: str  # the PR head fetched
    fork_point: str  # where the PR leaves upstream's main line
    topic: str
    branch: str
    base: str  # upstream.base the commits now sit on
    replaces: str | None
    commits: list[AdoptedCommit]
    skipped_merges: list[str] = field(default_factory=list)
    refresh: bool = False
    previous_head: str | None = None  # --refresh: the PR head adopted before
    previous_branch: str | None = None
    range_diff: str | None = None
    unchanged: bool = False
    dry_run: bool = False
    operation: str | None = None
    notes: list[str] = field(default_factory=list)
    worktree: str | None = None  # halted on a conflict: where to resolve it
    conflict: rebase_state.HaltedCommit | None = None


Confirm = Callable[[Overlap], bool]


def _files_of_topic(ws: Workspace, topic: Topic, base: pygit2.Commit) -> set[str]:
    own = ws.own(topic)
    return set(own.paths) if own is not None else set()


def overlaps(ws: Workspace, pr_files: set[str], exclude: str | None = None) -> list[Overlap]:
    """Active topics sharing files with the PR, most shared files first."""
    base = ws.base_commit()
    found = []
    for topic in ws.series.active():
        if topic.name == exclude or ws.repo.references.get(f"refs/heads/{topic.branch}") is None:
            continue
        shared = sorted(pr_files & _files_of_topic(ws, topic, base))
        if shared:
            found.append(Overlap(topic.name, shared))
    found.sort(key=lambda o: -len(o.shared_files))
    return found


def _metadata(forge: Forge | None, number: int, notes: list[str]) -> PullRequest | None:
    if forge is None:
        notes.append("no GitHub API (offline): PR metadata unknown, working from git alone")
        return None
    try:
        return forge.pull(number)  # type: ignore[arg-type]
    except ForgeUnreachable as exc:
        notes.append(f"{exc}; working from git alone")
        return None


def _choose(
    ws: Workspace,
    number: int,
    pr_files: set[str],
    replaces: str | None,
    no_replace: bool,
    confirm: Confirm | None,
    notes: list[str],
) -> str | None:
    if replaces is not None:
        topic = ws.series.topic(replaces)
        if not topic.active:
            raise SeriesError(f"topic '{replaces}' is {topic.status.value}, not active: nothing to replace")
        return replaces
    if no_replace:
        return None
    ranked = overlaps(ws, pr_files)
    if not ranked:
        notes.append(f"no active topic shares a file with PR #{number}: added as a new topic at the end")
        return None
    best = ranked[0]
    if confirm is not None:
        if confirm(best):
            return best.topic
        raise SeriesError(
            f"not adopted: choose the topic PR #{number} replaces with --replaces TOPIC, or pass --no-replace"
        )
    listing = "; ".join(
        f"{o.topic} ({len(o.shared_files)} shared file{'s' if len(o.shared_files) != 1 else ''})" for o in ranked
    )
    raise SeriesError(
        f"PR #{number} shares files with active topics: {listing}; choose with "
        f"--replaces TOPIC (best match: {best.topic}), or pass --no-replace"
    )


def run(
    ws: Workspace,
    number: int,
    *,
    forge: Forge | None = None,
    replaces: str | None = None,
    no_replace: bool = False,
    name: str | None = None,
    refresh: bool = False,
    dry_run: bool = False,
    confirm: Confirm | None = None,
    note: Callable[[str], None] | None = None,
) -> Adoption:
    if dry_run:
        return _run(ws, None, number, forge, replaces, no_replace, name, refresh, confirm, note)
    with ws.transaction("adopt-upstream", f"PR #{number}") as tx:
        return _run(ws.reload(), tx, number, forge, replaces, no_replace, name, refresh, confirm, note)


def _run(
    ws: Workspace,
    tx: Transaction | None,
    number: int,
    forge: Forge | None,
    replaces: str | None,
    no_replace: bool,
    name: str | None,
    refresh: bool,
    confirm: Confirm | None,
    note: Callable[[str], None] | None,
) -> Adoption:
    dry_run = tx is None
    repo = ws.repo
    remote = ws.series.upstream.remote
    carried = [t for t in ws.series.topics if t.upstream_pr == number]
    existing = carried[0] if carried else None
    if refresh:
        if existing is None:
            raise SeriesError(f"no topic carries PR #{number}: adopt it first (without --refresh)")
        if replaces or no_replace or (name and name != existing.name):
            raise SeriesError("--refresh re-adopts the PR into its topic", "drop --replaces/--no-replace/--name")
        topic_name, branch = existing.name, existing.branch
    else:
        if existing is not None:
            raise SeriesError(
                f"PR #{number} is already carried as topic '{existing.name}'; "
                f"take its new commits with 'series adopt-upstream {number} --refresh'"
            )
        topic_name = name or f"pr-{number}"
        if not config.NAME_RE.match(topic_name):
            raise SeriesError(f"--name '{topic_name}': lowercase [a-z0-9._-] only (e.g. pr-{number})")
        if any(t.name == topic_name for t in ws.series.topics):
            raise SeriesError(f"a topic named '{topic_name}' exists already; pick another with --name")
        branch = f"topic/{topic_name}"
        if repo.references.get(f"refs/heads/{branch}") is not None:
            raise SeriesError(f"branch {branch} exists already; pick another topic name with --name")
    if replaces is not None and replaces == topic_name:
        raise SeriesError(f"--replaces {replaces}: a topic cannot replace itself")

    notes: list[str] = []
    head_sha = fetch_pull(repo, remote, number)
    meta = _metadata(forge, number, notes)
    if meta is not None and meta.head_sha and meta.head_sha != head_sha:
        notes.append(
            f"GitHub names head {meta.head_sha[:12]} but {remote} served {head_sha[:12]} "
            "(updated in between?): adopting what was fetched"
        )
    if meta is not None and meta.base_sha and not fetch_commit(repo, remote, meta.base_sha):
        notes.append(
            f"GitHub's base {meta.base_sha[:12]} could not be fetched: counting the PR's "
            f"commits from its merge-base with {remote}/main (fetch {remote} if it is stale)"
        )
    faults.fault("adopt-fetched")
    repo = pygit2.Repository(repo.path)  # see the objects and refs the fetches brought
    ws = Workspace(ws.series, repo, ws.text)
    head = repo[head_sha].peel(pygit2.Commit)
    fork_point = pr_fork_point(repo, remote, head.id, meta.base_sha if meta else None)
    partial.ensure_blobs(repo, fork_point, [head], ws.base_commit())  # a blobless clone's PR
    own = commits_between(repo, fork_point.id, head.id)
    picks = [c for c in own if len(c.parents) <= 1]
    merges = [str(c.id) for c in own if len(c.parents) > 1]
    if merges:
        notes.append(f"skipped {len(merges)} merge commit(s) of the PR branch (upstream's changes, not the PR's)")
    if not picks:
        raise SeriesError(
            f"PR #{number} has no commits of its own over {remote}'s main line "
            f"(head {head_sha[:12]}): merged already, or empty"
        )
    pr_files = {f.path for f in tree_files(repo, fork_point.tree, head.tree)}
    # the trailer carries the forge's URL into every adopted commit: one line, checked
    reference = validate.trailer_value(
        meta.reference if meta is not None else f"#{number}", f"PR #{number} Upstream-PR trailer"
    )

    previous_branch = current(repo, f"refs/heads/{branch}") if refresh else None
    previous_head = existing.upstream_head if existing is not None else None
    if refresh and previous_head == head_sha:
        return _result(
            ws,
            number,
            meta,
            reference,
            head_sha,
            fork_point,
            topic_name,
            branch,
            None,
            [],
            merges,
            refresh=True,
            previous_head=previous_head,
            previous_branch=previous_branch,
            unchanged=True,
            dry_run=dry_run,
            notes=notes,
        )
    if not refresh:
        replaces = _choose(ws, number, pr_files, replaces, no_replace, confirm, notes)

    base = ws.base_commit()
    # The rebase engine's in-memory, path-limited replay: the author line is kept byte
    # for byte, the committer is the local user (GIT_COMMITTER_* or user.*).
    result = replay_commits(
        repo, picks, base, rewrite_message=lambda c: with_trailers(message(c), reference, str(c.id)), topic=topic_name
    )
    if result.conflict is not None and dry_run:
        stop = result.conflict
        commit = repo[stop.commit].peel(pygit2.Commit)
        files = ", ".join(f"{c.path} ({c.kind})" for c in stop.conflicts)
        raise ConflictError(
            f"PR #{number}: commit {str(commit.id)[:12]} '{subject(commit)}' does not "
            f"apply to {ws.series.upstream.base}: conflicts in {files}; nothing was changed (dry run; "
            "without --dry-run the conflict is laid out in a worktree for you to resolve)"
        )
    if result.conflict is not None:
        if refresh and (where := checkouts.checked_out_at(repo, branch)) is not None:
            raise SeriesError(
                f"{branch} is checked out in {where}: switch that worktree to another "
                "branch first, then run --refresh again"
            )
        edits = _edits(ws, number, topic_name, branch, head_sha, meta, replaces, refresh, notes)
        for line in notes:
            if note is not None:
                note(line)
        template = _result(
            ws,
            number,
            meta,
            reference,
            head_sha,
            fork_point,
            topic_name,
            branch,
            replaces,
            [],
            merges,
            refresh=refresh,
            previous_head=previous_head,
            previous_branch=previous_branch,
            notes=[] if note is not None else notes,
        )
        assert tx is not None
        return _halt(ws, template, base, picks, edits, _summary(number, topic_name, replaces, refresh), tx)
    if result.dropped:
        notes.append(
            f"{len(result.dropped)} PR commit(s) already in {ws.series.upstream.base}, left out: "
            + ", ".join(str(c)[:12] for c in result.dropped)
        )
    if not result.mapping:
        raise SeriesError(f"every commit of PR #{number} is already in {ws.series.upstream.base}: nothing to adopt")
    adopted = [
        AdoptedCommit(
            str(old.id),
            str(result.mapping[old.id]),
            f"{old.author.name} <{old.author.email}>",
            old.author.time,
            old.author.offset,
            old.message.split("\n", 1)[0].strip(),
        )
        for old in picks
        if old.id in result.mapping
    ]
    new_head = str(result.head)

    edits = _edits(ws, number, topic_name, branch, head_sha, meta, replaces, refresh, notes)
    range_diff = None
    if refresh and previous_branch is not None:
        range_diff = git(
            workdir(repo), "range-diff", "--no-color", str(base.id), previous_branch, new_head, check=False
        ).stdout
    operation = None
    if tx is not None:
        if refresh and (where := checkouts.checked_out_at(repo, branch)) is not None:
            raise SeriesError(
                f"{branch} is checked out in {where}: switch that worktree to another "
                "branch first, then run --refresh again"
            )
        tx.summary = _summary(number, topic_name, replaces, refresh)
        tx.move(f"refs/heads/{branch}", new_head, expect=previous_branch)
        tx.edits = edits
        tx.extra.update({"pr": number, "head": head_sha, "commits": {a.upstream: a.new for a in adopted}})
        operation = tx.commit().id
    for line in notes:
        if note is not None:
            note(line)
    return _result(
        ws,
        number,
        meta,
        reference,
        head_sha,
        fork_point,
        topic_name,
        branch,
        replaces,
        adopted,
        merges,
        refresh=refresh,
        previous_head=previous_head,
        previous_branch=previous_branch,
        range_diff=range_diff,
        dry_run=dry_run,
        operation=operation,
        notes=[] if note is not None else notes,
    )


def _summary(number: int, topic: str, replaces: str | None, refresh: bool) -> str:
    summary = f"PR #{number} as {topic}" + (f", superseding {replaces}" if replaces else "")
    return ("refresh " if refresh else "") + summary


# -- a conflict: the rebase engine's resumable flow ----------------------------------------------


def _halt(
    ws: Workspace,
    template: Adoption,
    base: pygit2.Commit,
    picks: list[pygit2.Commit],
    edits: list[Edit],
    summary: str,
    tx: Transaction,
) -> Adoption:
    """Hand the adoption to the rebase with this verb's ending: it replays the PR's commits
    again, lays the first conflicting one out in the worktree and saves the state; or, when
    the shared conflict memory resolves everything, commits right away."""
    now = datetime.datetime.now(datetime.timezone.utc)
    data = AdoptionPayload(
        number=template.number,
        reference=template.reference,
        head=template.head,
        branch=template.branch,
        expect=template.previous_branch,
        summary=summary,
        edits=tuple(edits),
        refresh=template.refresh,
        topic=template.topic,
        title=template.title,
        author=template.author,
        source=template.source,
        fork_point=template.fork_point,
        base=template.base,
        replaces=template.replaces,
        previous_head=template.previous_head,
        skipped_merges=tuple(template.skipped_merges),
        notes=tuple(template.notes),
    )
    halt = ENDING.identity.halt(data.to_json(), what=f"an adoption of PR #{template.number} is halted on a conflict")
    state = rebase_state.RebaseState(
        id=f"adopt-{now.strftime('%Y%m%dT%H%M%SZ')}",
        onto_spec=template.base,
        onto_name=template.base,
        onto_sha=str(base.id),
        old_base_name=template.base,
        old_base_sha=str(base.id),
        config_path=str(ws.config_path),
        config_before=ws.text or ws.config_path.read_text(),
        topics=(
            rebase_state.TopicRun(
                name=template.topic,
                branch=template.branch,
                old_head=template.previous_branch or "",
                start=template.fork_point,
                commits=tuple(str(c.id) for c in picks),
            ),
        ),
        halt=halt,
        started=now.isoformat(timespec="seconds"),
    )
    return _from_outcome(ws, rebase.begin(ws, state, ENDING, hooks=engine_hooks(ws.series), tx=tx))


def _resuming(ws: Workspace, action: str) -> contextlib.AbstractContextManager[Transaction]:
    """The transaction for going on with a halted adoption (the rebase's own refusal first: none
    halted, or another operation's), which its halt guard lets through."""
    rebase.ready(ws, ENDING, action)
    return ws.transaction(ENDING.identity.verb, resumes=ENDING.identity.kind)


def resume(ws: Workspace) -> Adoption:
    """`series adopt-upstream --continue`: the resolution, the rest of the PR, the Transaction."""
    with _resuming(ws, "continue") as tx:
        outcome = rebase.continue_rebase(ws, ENDING, tx=tx, hooks=engine_hooks(ws.series))
    return _from_outcome(ws, outcome)


def abort(ws: Workspace) -> int:
    """`series adopt-upstream --abort`: worktree and state gone, nothing moved; the PR number."""
    with _resuming(ws, "abort") as tx:
        state = rebase.abort_rebase(ws, ENDING, tx=tx)
    number = state.halt.payload.get("number")  # not validated: an abort must work on a damaged state
    return number if isinstance(number, int) else 0


def _from_outcome(ws: Workspace, outcome: rebase.RebaseOutcome) -> Adoption:
    repo = ws.repo
    state = outcome.state
    data = payload(state)
    run = state.topics[0]
    adopted = []
    for sha in run.commits:
        if sha in run.mapping:
            old = repo[pygit2.Oid(hex=sha)].peel(pygit2.Commit)
            adopted.append(
                AdoptedCommit(
                    sha,
                    run.mapping[sha],
                    f"{old.author.name} <{old.author.email}>",
                    old.author.time,
                    old.author.offset,
                    old.message.split("\n", 1)[0].strip(),
                )
            )
    result = Adoption(
        number=data.number,
        reference=data.reference,
        title=data.title,
        author=data.author,
        source=data.source,
        head=data.head,
        fork_point=data.fork_point,
        topic=data.topic,
        branch=data.branch,
        base=data.base,
        replaces=data.replaces,
        commits=adopted,
        skipped_merges=list(data.skipped_merges),
        refresh=data.refresh,
        previous_head=data.previous_head,
        previous_branch=data.expect,
        notes=list(data.notes),
    )
    notes = list(outcome.notes)
    if not outcome.finished:
        return dataclasses.replace(
            result, worktree=str(outcome.worktree), conflict=run.conflict, notes=result.notes + notes
        )
    notes += [f"{path}: resolved by hand in {sha[:12]}" for sha, path in run.by_hand]
    notes += [f"{path}: resolved from memory (recorded resolution) in {sha[:12]}" for sha, path in run.resolved]
    if run.dropped:
        notes.append(
            f"{len(run.dropped)} PR commit(s) already in {state.onto_name}, left out: "
            + ", ".join(c[:12] for c in run.dropped)
        )
    range_diff = None
    if data.refresh and data.expect and run.new_head:
        range_diff = git(
            workdir(repo), "range-diff", "--no-color", state.onto_sha, data.expect, run.new_head, check=False
        ).stdout
    return dataclasses.replace(result, range_diff=range_diff, operation=outcome.op_id, notes=notes)


def _edits(
    ws: Workspace,
    number: int,
    name: str,
    branch: str,
    head_sha: str,
    meta: PullRequest | None,
    replaces: str | None,
    refresh: bool,
    notes: list[str],
) -> list[Edit]:
    """The adoption's own series.yaml edits (validated here, applied by the transaction)."""
    draft = ws.draft("adopt-upstream")
    if refresh:
        draft.set_topic(name, upstream_head=head_sha)
    else:
        summary = meta.title if meta is not None and meta.title else None
        draft.add_topic(
            {"name": name, "branch": branch, "summary": summary, "upstream_pr": number, "upstream_head": head_sha},
            before=replaces,
        )
        if replaces is not None:
            draft.set_topic(replaces, status=Status.SUPERSEDED.value, superseded_by=name)
            for topic in ws.series.active():
                if replaces in topic.depends_on:
                    draft.set_topic(topic.name, depends_on=[name if d == replaces else d for d in topic.depends_on])
                    notes.append(f"{topic.name} now depends on {name} (was {replaces})")
    draft.preview()  # never an invalid series.yaml
    return draft.edits


def _result(
    ws: Workspace,
    number: int,
    meta: PullRequest | None,
    reference: str,
    head_sha: str,
    fork_point: pygit2.Commit,
    topic: str,
    branch: str,
    replaces: str | None,
    commits: list[AdoptedCommit],
    merges: list[str],
    **more: object,
) -> Adoption:
    return Adoption(
        number=number,
        reference=reference,
        title=meta.title if meta else None,
        author=meta.author if meta else None,
        source="github" if meta else "git",
        head=head_sha,
        fork_point=str(fork_point.id),
        topic=topic,
        branch=branch,
        base=ws.series.upstream.base,
        replaces=replaces,
        commits=commits,
        skipped_merges=merges,
        **more,  # type: ignore[arg-type]
    )


def to_json(result: Adoption) -> dict[str, object]:
    return asdict(result)


def render(result: Adoption) -> str:
    what = (
        f"PR #{result.number}"
        + (f" '{result.title}'" if result.title else "")
        + (f" by @{result.author}" if result.author else "")
    )
    if result.unchanged:
        return f"{what}: head {result.head[:12]} unchanged since it was adopted; nothing to do"
    verb = "would adopt" if result.dry_run else ("re-adopted" if result.refresh else "adopted")
    if result.worktree is not None:
        return _render_halt(what, result)
    out = [f"{verb} {what} (head {result.head[:12]}, source: {result.source})"]
    out.append(
        f"  topic {result.topic} on branch {result.branch}: {len(result.commits)} commit(s) "
        f"replayed onto {result.base}, authorship kept"
    )
    for c in result.commits:
        out.append(f"    {c.upstream[:12]} -> {c.new[:12]}  {c.author}  {c.subject}")
    if result.replaces:
        out.append(f"  {result.replaces}: superseded by {result.topic} (its branch is kept as it is)")
    if result.refresh and result.range_diff is not None:
        out.append(
            f"  range-diff {result.previous_branch and result.previous_branch[:12]} -> "
            f"{result.commits[-1].new[:12] if result.commits else '?'}:"
        )
        out += [f"    {l}" for l in result.range_diff.rstrip().splitlines()]
    out += [f"note: {n}" for n in result.notes]
    if result.operation:
        out.append(f"'series undo' reverts this ({result.operation})")
    return "\n".join(out)


def _render_halt(what: str, result: Adoption) -> str:
    conflict = result.conflict
    commit, subject = (conflict.commit, conflict.subject) if conflict else ("", "")
    files = ", ".join(f"{f} ({conflict.kinds.get(f, 'content')})" for f in conflict.files) if conflict else ""
    out = [
        f"adopting {what} (head {result.head[:12]}) as {result.topic}: halted on a conflict",
        f"  commit {commit[:12]} '{subject}' does not apply to {result.base}: conflicts in {files}",
    ]
    if result.commits:
        out.append(f"  {len(result.commits)} commit(s) before it replayed, authorship kept")
    out += [f"note: {n}" for n in result.notes]
    out.append(
        f"resolve it in {result.worktree}: edit the conflicting files, 'git add' them, then "
        "'series adopt-upstream --continue' (or 'series adopt-upstream --abort': nothing has moved)"
    )
    return "\n".join(out)
