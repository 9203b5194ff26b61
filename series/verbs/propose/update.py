"""`series propose TOPIC --update`: bring a proposed topic's PR branch up to the topic, in
the way vLLM's reviewers expect.

Once review has started (the forge reports a review or a review comment), the PR branch
only grows: a force-push would make every reviewer's "viewed" marks and line comments
point at commits that no longer exist. So, against the PR's own base on main (where the
PR branch leaves upstream's main: its diff on GitHub is measured from there):

  added     the topic replayed onto that base reproduces the PR head's tree after its
            first k commits: the commits after k are new work, replayed onto the PR
            head: a fast-forward, one commit per topic commit.
  update    the topic's commits were rewritten (a rebase of the series, an amended fix):
            ONE new commit on the PR head whose tree is the whole topic replayed onto the
            PR's base (git's merge-ort answers, the engine's replay), "Update: ...".
            Still a fast-forward; the PR's diff stays the topic's own change, nothing of
            main that came after the base is dragged in.
  squash    only with --squash (the maintainer asked): the topic as one commit on
            upstream's current main, pushed with --force-with-lease=<the head we saw>.
  replace   before any review: the topic replayed onto current main, as a fresh propose
            would push it, with --force-with-lease (allowed: nobody's review is lost).
  current   the PR already holds the topic: nothing is pushed.

Offline (no API), whether review started cannot be read: series acts as if it had.
The range-diff between what the PR holds and what would be pushed comes first; --dry-run
stops there. The push goes through the git CLI (the user's credentials); the local PR
branch moves in one journaled operation, which `series undo` reverts. The push itself is
not undone: a branch pushed to a remote cannot be taken back by series.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, Callable

import pygit2

from series import validate
from series.engine.replay import ReplayResult, replay_commits
from series.evidence import named_trees
from series.errors import SeriesError
from series.forge.base import Forge, PullState, ReviewActivity
from series.git.command import git
from series.git.repo import committer, message, workdir
from series.ops.halted import refuse_if_halted
from series.model import PRNumber
from series.verbs.propose.steps import _CREDENTIALS, _mainline, _signoff
from series.workspace import Workspace


class Mode(str, enum.Enum):
    ADDED = "added"
    UPDATE = "update"
    SQUASH = "squash"
    REPLACE = "replace"
    CURRENT = "current"

    @property
    def forced(self) -> bool:
        return self in (Mode.SQUASH, Mode.REPLACE)


@dataclass(frozen=True)
class UpdateOptions:
    squash: bool = False
    dry_run: bool = False
    signoff: bool = False
    fork_remote: str | None = None
    branch: str | None = None
    fetch: bool = False


@dataclass(frozen=True)
class Update:
    topic: str
    number: int
    remote: str
    branch: str
    mode: Mode
    old_head: str  # what the PR branch holds now (fetched from the fork)
    new_head: str  # what is (or would be) pushed; old_head when current
    base: str  # the PR's base on upstream main (merge-base of its head and main)
    new_base: str  # the base of the pushed range (the same, or main for squash/replace)
    review: ReviewActivity | None  # None: unknown (no API)
    pushed_commits: tuple[str, ...]
    range_diff: str
    command: str
    dry_run: bool
    operation: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def pushed(self) -> bool:
        return self.operation is not None


def _commit(repo: pygit2.Repository, sha: str | pygit2.Oid) -> pygit2.Commit:
    return repo[sha].peel(pygit2.Commit)


def _replay(
    ws: Workspace,
    name: str,
    commits: list[pygit2.Commit],
    onto: pygit2.Commit,
    what: str,
    signoff: bool,
    trunk_name: str,
) -> ReplayResult:
    me = committer(ws.repo)
    result = replay_commits(
        ws.repo, commits, onto, committer=me, topic=name, rewrite_message=_signoff(me) if signoff else None
    )
    if result.conflict is not None:
        raise named_trees.trunk_conflict(ws, name, result.conflict, onto, what, trunk_name)
    return result


def _fetch_pr_branch(ws: Workspace, remote: str, branch: str) -> pygit2.Commit:
    """The PR branch as the fork has it now (never our local copy, which may be stale)."""
    tracking = f"refs/remotes/{remote}/{branch}"
    proc = git(
        workdir(ws.repo),
        "fetch",
        "--quiet",
        "--no-tags",
        "--end-of-options",
        remote,
        f"+refs/heads/{branch}:{tracking}",
        check=False,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise SeriesError(
            f"cannot fetch {branch} from {remote}: {_CREDENTIALS.sub('://', last)}",
            "pass --fork REMOTE / --branch NAME if the PR branch lives elsewhere",
        )
    ref = ws.repo.references.get(tracking)
    if ref is None:
        raise SeriesError(f"{remote} has no branch {branch} after fetching it")
    return ref.peel(pygit2.Commit)


def _squash_message(ws: Workspace, name: str, commits: list[pygit2.Commit], signoff: bool) -> str:
    subjects = [message(c).split("\n", 1)[0] for c in commits]
    text = subjects[0] if len(commits) == 1 else (ws.series.topic(name).summary or subjects[0])
    body = "\n".join(f"* {s}" for s in subjects)
    out = f"{text}\n\nSquashed, as the maintainer asked, from {len(commits)} commit(s):\n\n{body}\n"
    if signoff:
        me = committer(ws.repo)
        out += f"\nSigned-off-by: {me.name} <{me.email}>\n"
    return out


def _update_message(ws: Workspace, name: str, base: pygit2.Commit, signoff: bool) -> str:
    release = ws.series.upstream.base
    out = (
        f"Update: {name} rebased onto {release}\n\n"
        f"The topic's commits were rewritten (a rebase of the series onto {release}, or an amended "
        f"fix). This commit brings the PR branch to their content, replayed onto the PR's base "
        f"{str(base.id)[:12]}; added on top, not force-pushed, since review has started.\n"
    )
    if signoff:
        me = committer(ws.repo)
        out += f"\nSigned-off-by: {me.name} <{me.email}>\n"
    return out


def _new_commit(repo: pygit2.Repository, parent: pygit2.Commit, tree: pygit2.Oid, text: str) -> pygit2.Commit:
    me = committer(repo)
    return _commit(repo, repo.create_commit(None, me, me, text, tree, [parent.id]))


def _range_diff(ws: Workspace, old: tuple[str, str], new: tuple[str, str]) -> str:
    proc = git(workdir(ws.repo), "range-diff", "--no-color", f"{old[0]}..{old[1]}", f"{new[0]}..{new[1]}")
    return proc.stdout.rstrip()


def _prefix_match(
    repo: pygit2.Repository, commits: list[pygit2.Commit], replayed: ReplayResult, head: pygit2.Commit
) -> int | None:
    """How many leading topic commits the PR head already holds: the largest k whose replay
    onto the PR's base has the PR head's tree (None: no prefix does, the commits changed)."""
    found = None
    for index, commit in enumerate(commits):
        new = replayed.mapping.get(commit.id)
        if new is not None and _commit(repo, new).tree_id == head.tree_id:
            found = index + 1
    return found


def run(
    ws: Workspace, name: str, forge: Forge, opts: UpdateOptions, step: Callable[[str], None] = lambda _: None
) -> Update:
    repo = ws.repo
    topic = ws.series.topic(name)
    if topic.upstream_pr is None:
        raise SeriesError(
            f"topic '{name}' records no upstream PR (upstream_pr in {ws.config_path.name}): nothing to update",
            f"propose it first: 'series propose {name}'",
        )
    number = int(topic.upstream_pr)
    where = "--fork" if opts.fork_remote else "propose.fork_remote"
    remote = validate.existing_remote(repo.remotes.names(), opts.fork_remote or ws.series.propose.fork_remote, where)
    branch = opts.branch or f"pr/{name}"
    if not pygit2.reference_is_valid_name(f"refs/heads/{branch}"):
        raise SeriesError(f"--branch {branch!r} is not a valid git branch name (see 'git check-ref-format')")
    if opts.fetch:
        up = ws.series.upstream.remote
        git(
            workdir(repo), "fetch", "--quiet", "--no-tags", "--end-of-options", up, f"+refs/heads/*:refs/remotes/{up}/*"
        )
    main, main_name, _ = _mainline(ws)
    step("fetch")
    head = _fetch_pr_branch(ws, remote, branch)
    notes: list[str] = []
    review: ReviewActivity | None = None
    if forge.api:
        step("review")
        pr = forge.pull(PRNumber(number))
        if pr.state is not PullState.OPEN:
            raise SeriesError(f"upstream PR #{number} is {pr.state.value}: there is nothing to update")
        if pr.head_sha is not None and pr.head_sha != str(head.id):
            raise SeriesError(
                f"PR #{number}'s head is {pr.head_sha[:12]} but {remote}/{branch} is "
                f"{str(head.id)[:12]}: that branch is not the PR's",
                "pass --fork REMOTE / --branch NAME naming the PR's branch",
            )
        review = forge.review_activity(PRNumber(number))
    else:
        notes.append(
            f"{forge.source} cannot say whether review has started: updated as if it had (commits added, no force-push)"
        )
    ws.head(topic)
    span = ws.own(topic)
    if span is None or not span.commits:
        raise SeriesError(f"topic '{name}' has no commits of its own over {ws.series.upstream.base}: nothing to push")
    commits = list(span.commits)
    fork_point = repo.merge_base(head.id, main.id)
    if fork_point is None:
        raise SeriesError(f"{remote}/{branch} shares no history with {main_name}: not a PR branch on upstream main")
    base = _commit(repo, fork_point)
    step("replay")
    pushed: tuple[str, ...]
    if opts.squash or (review is not None and not review.started):
        onto_main = _replay(ws, name, commits, main, main_name, opts.signoff, main_name)
        new_base = main
        if opts.squash:
            mode = Mode.SQUASH
            new = _new_commit(
                repo, main, _commit(repo, onto_main.head).tree_id, _squash_message(ws, name, commits, opts.signoff)
            )
            pushed = (str(new.id),)
        else:
            mode = Mode.REPLACE
            new = _commit(repo, onto_main.head)
            pushed = tuple(str(c) for c in onto_main.new_commits)
        shown = (str(main.id), str(new.id))
        squashed = [p.id for p in head.parents] == [main.id]
        if new.tree_id == head.tree_id and (mode is Mode.REPLACE or squashed):
            mode, new, pushed = Mode.CURRENT, head, ()
    else:
        new_base = base
        on_base = _replay(ws, name, commits, base, f"the PR's base on {main_name}", opts.signoff, main_name)
        shown = (str(base.id), str(on_base.head))
        held = _prefix_match(repo, commits, on_base, head)
        if held is not None:
            added = _replay(ws, name, commits[held:], head, "the PR head", opts.signoff, main_name)
            new = _commit(repo, added.head)
            mode = Mode.ADDED if added.new_commits else Mode.CURRENT
            pushed = tuple(str(c) for c in added.new_commits)
        else:
            mode = Mode.UPDATE
            new = _new_commit(
                repo, head, _commit(repo, on_base.head).tree_id, _update_message(ws, name, base, opts.signoff)
            )
            pushed = (str(new.id),)
    if mode is not Mode.CURRENT and not opts.signoff and "\nSigned-off-by: " in message(head):
        notes.append(
            "the PR's commits carry Signed-off-by but --signoff was not given: the pushed commit(s) "
            "lack it and upstream's DCO check will flag them; run again with --signoff"
        )
    diff = _range_diff(ws, (str(base.id), str(head.id)), shown)
    target = f"{new.id}:refs/heads/{branch}"
    lease = [f"--force-with-lease=refs/heads/{branch}:{head.id}"] if mode.forced else []
    command = " ".join(["git push", *lease, remote, target])
    update = Update(
        name,
        number,
        remote,
        branch,
        mode,
        str(head.id),
        str(new.id),
        str(base.id),
        str(new_base.id),
        review,
        pushed,
        diff,
        command,
        opts.dry_run,
        notes=notes,
    )
    if opts.dry_run or mode is Mode.CURRENT:
        return update
    refuse_if_halted(repo, "propose")
    step("push")
    proc = git(workdir(repo), "push", "--porcelain", *lease, "--end-of-options", remote, target, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise SeriesError(
            f"git push to {remote} failed: {_CREDENTIALS.sub('://', last)}",
            f"{remote}/{branch} may have moved since it was fetched: run the update again "
            "to see the range-diff against what it holds now",
        )
    with ws.transaction(
        "propose-update",
        f"{name}: PR #{number} updated ({mode.value}), {remote}/{branch} {str(head.id)[:12]}..{str(new.id)[:12]}",
    ) as tx:
        tx.move(f"refs/heads/{branch}", str(new.id))
        tx.extra["pushed"] = f"{remote} {branch} {head.id} {new.id}"
        return dataclasses.replace(update, operation=tx.commit().id)


# --- output -------------------------------------------------------------------------------

_SAYS = {
    Mode.ADDED: "review has started: the topic's new commit(s) added on top of the PR head (fast-forward, no force)",
    Mode.UPDATE: "review has started and the topic's commits were rewritten: one 'Update:' commit added on top "
    "of the PR head, holding the topic replayed onto the PR's base (fast-forward, no force)",
    Mode.SQUASH: "--squash (the maintainer asked): the topic as one commit on upstream main, force-pushed "
    "with a lease on the head seen",
    Mode.REPLACE: "no review yet: the PR branch is replaced by the topic replayed onto upstream main "
    "(force-with-lease; allowed before review starts)",
    Mode.CURRENT: "the PR branch already holds the topic: nothing to push",
}


def to_json(u: Update) -> dict[str, Any]:
    return {
        "topic": u.topic,
        "pull_request": u.number,
        "remote": u.remote,
        "branch": u.branch,
        "mode": u.mode.value,
        "force": u.mode.forced,
        "old_head": u.old_head,
        "new_head": u.new_head,
        "base": u.base,
        "new_base": u.new_base,
        "review": None
        if u.review is None
        else {"reviews": u.review.reviews, "comments": u.review.comments, "started": u.review.started},
        "commits": list(u.pushed_commits),
        "range_diff": u.range_diff,
        "command": u.command,
        "dry_run": u.dry_run,
        "pushed": u.pushed,
        "operation": u.operation,
        "notes": u.notes,
    }


def render(u: Update) -> str:
    if u.review is None:
        seen = "review: unknown (no API)"
    else:
        seen = f"review: {u.review.reviews} review(s), {u.review.comments} review comment(s)"
    out = [
        f"PR #{u.number} ({u.remote}/{u.branch} at {u.old_head[:12]}, base {u.base[:12]}); {seen}",
        f"{u.mode.value}: {_SAYS[u.mode]}",
        f"range-diff (what the PR holds -> what {'would be' if u.dry_run else 'is'} pushed):",
    ]
    out += [f"   {line}" for line in (u.range_diff or "(no difference)").splitlines()]
    if u.mode is not Mode.CURRENT:
        if u.dry_run:
            out.append(f"would run (--dry-run: nothing pushed): {u.command}")
        elif u.pushed:
            out.append(
                f"pushed {len(u.pushed_commits)} commit(s): {u.remote}/{u.branch} "
                f"{u.old_head[:12]} -> {u.new_head[:12]}" + (" (forced, with lease)" if u.mode.forced else "")
            )
            out.append(
                f"   local {u.branch} moved (operation {u.operation}); 'series undo' moves it back, "
                "but cannot take back the push: the remote branch stays as pushed"
            )
    out += [f"note: {n}" for n in u.notes]
    return "\n".join(out)
