"""`series propose TOPIC`: carry a topic to upstream as a draft PR, in an order that matters.

  1. replay   the topic's own commits onto upstream's current main, in memory: the PR
              branch (pr/TOPIC). --signoff adds the user's Signed-off-by (DCO is the
              contributor's statement: never added silently).
  2. grade    against vLLM's first-PR norms (series.propose.grade).
  3. reviewers only as the guide allows: CODEOWNERS owners, authors of the changed lines.
  4. describe upstream's own PR template, filled from the topic (series.propose.prbody).
  5. duplicates the open PRs of any age that share a file with the PR branch. Last, just
              before anything is sent: a search when the idea forms finds nothing, and a
              duplicate opened hours before ours is what it must catch. A candidate stops
              the proposal (exit 1, under --dry-run too) unless `--despite N` names it.
  6. send     push to the user's fork remote (git CLI: their credentials), open a DRAFT PR
              through the API, record upstream_pr: on the topic (one journaled operation,
              with the local pr/TOPIC branch), so the rebase retires it once merged.
--dry-run stops after 5 and says what 6 would run.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import pygit2

from series.propose import grade as pr_grade
from series.propose import prbody, reviewers
from series.evidence import named_trees, testmap
from series.propose.title import default_title
from series.engine.replay import replay_commits
from series.ops.halted import refuse_if_halted
from series import validate
from series.errors import SeriesError
from series.forge import scan
from series.forge.base import (
    Forge,
    ForgeUnreachable,
    OfflineForge,
    PullFile,
    PullRequest,
    PullState,
    mainline_commit,
    tree_files,
)
from series.propose import duplicates_score
from series.propose.duplicates import FROM_REFS_NOTE, Candidate, bot_scores, fetched_files, rank
from series.forge.pulls import fetch_all_pulls
from series.git.command import git
from series.git.releases import trunk_commit
from series.git.repo import committer, file_stats, message, workdir
from series.model import PRNumber
from series.workspace import Workspace

STEPS = ("replay", "grade", "reviewers", "description", "duplicates", "push", "pull request")
_CREDENTIALS = re.compile(r"://[^/@\s]+@")  # user:token@ in a URL git may echo
_FORK_URL = re.compile(
    r"^(?:[a-z+]+://)?(?:[^@/]+@)?([^/:]+)[:/]+([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)/"
    r"[^/]+?(?:\.git)?/?$"
)


@dataclass(frozen=True)
class ProposeOptions:
    signoff: bool = False
    not_first: bool = False
    dry_run: bool = False
    despite: tuple[int, ...] = ()
    title: str | None = None
    fork_remote: str | None = None
    owner: str | None = None
    branch: str | None = None
    release_note: str | None = None
    evidence: dict[str, Any] | None = None  # `series test --run --json`
    fetch: bool = False  # fetch upstream main first, and PR heads for an offline search


@dataclass(frozen=True)
class Replayed:
    branch: str
    onto: str  # upstream main's sha
    onto_name: str  # e.g. upstream/main
    head: str
    commits: tuple[pr_grade.Commit, ...]
    signed_off_added: bool
    dropped: int  # topic commits already in upstream main


@dataclass(frozen=True)
class Sent:
    remote: str
    head: str  # owner:branch, what the PR request names
    number: int
    url: str | None
    operation: str


@dataclass(frozen=True)
class Skipped:
    """A step that could not run here, and why: the others still run and report."""

    step: str
    reason: str


@dataclass
class Proposal:
    topic: str
    title: str
    base_branch: str
    steps: list[str] = field(default_factory=list)  # the steps done, in order
    replayed: Replayed | None = None
    grade: pr_grade.Grade | None = None
    reviewers: reviewers.Reviewers | None = None
    description: prbody.Description | None = None
    source: str = ""  # where the duplicate search looked
    unsearched: str | None = None  # why it could not look anywhere
    candidates: list[Candidate] = field(default_factory=list)
    bot_scores: dict[int, duplicates_score.BotScore] = field(default_factory=dict)  # by candidate; API only
    despite: list[int] = field(default_factory=list)
    command: list[str] = field(default_factory=list)  # what step 6 runs (or would run)
    sent: Sent | None = None
    notes: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def blocking(self) -> list[Candidate]:
        return [c for c in self.candidates if c.number not in self.despite]

    @property
    def stopped(self) -> bool:
        return bool(self.blocking)


def _signoff(identity: pygit2.Signature) -> Callable[[pygit2.Commit], str]:
    line = f"Signed-off-by: {identity.name} <{identity.email}>"

    def rewrite(commit: pygit2.Commit) -> str:
        text = message(commit).rstrip()
        last = text.rsplit("\n\n", 1)[-1].splitlines() if "\n\n" in text else []
        if line in last:
            return message(commit)  # git commit -s leaves an existing sign-off alone too
        trailers = bool(last) and all(re.match(r"^[A-Za-z][A-Za-z0-9-]*: ", l) for l in last)
        return text + ("\n" if trailers else "\n\n") + line + "\n"

    return rewrite


def _mainline(ws: Workspace) -> tuple[pygit2.Commit, str, str]:
    remote = ws.series.upstream.remote
    found = trunk_commit(ws.repo, remote)
    if found is not None:
        return found[0], found[1], found[1][len(remote) + 1 :]
    raise SeriesError(
        f"no {remote}/main in this repository",
        f"run 'git fetch {remote}' (or pass --fetch) so the PR is built on upstream's current main",
    )


def replay(ws: Workspace, name: str, opts: ProposeOptions) -> tuple[Replayed, pygit2.Commit, list[str]]:
    topic = ws.series.topic(name)
    if not topic.active:
        raise SeriesError(f"topic '{name}' is {topic.status.value}: only an active topic can be proposed")
    repo = ws.repo
    if opts.fetch:
        remote = ws.series.upstream.remote
        git(
            workdir(repo),
            "fetch",
            "--quiet",
            "--no-tags",
            "--end-of-options",
            remote,
            f"+refs/heads/*:refs/remotes/{remote}/*",
        )
    main, main_name, _ = _mainline(ws)
    ws.head(topic)  # a missing branch: the one error every verb gives
    span = ws.own(topic)
    if span is None or not span.commits:
        raise SeriesError(
            f"topic '{name}' has no commits of its own over {ws.series.upstream.base}: nothing to propose"
        )
    notes = []
    if topic.depends_on:
        notes.append(f"depends on {', '.join(topic.depends_on)}: those commits are not part of this PR")
    me = committer(repo)
    result = replay_commits(
        repo, span.commits, main, committer=me, topic=name, rewrite_message=_signoff(me) if opts.signoff else None
    )
    if result.conflict is not None:
        raise named_trees.trunk_conflict(ws, name, result.conflict, main, main_name, main_name)
    if result.head == main.id:
        raise SeriesError(
            f"every commit of '{name}' is already in {main_name}: nothing to propose (the next rebase marks it merged)"
        )
    commits = tuple(pr_grade.Commit(str(oid), message(repo[oid].peel(pygit2.Commit))) for oid in result.new_commits)
    branch = opts.branch or f"pr/{name}"
    if not pygit2.reference_is_valid_name(f"refs/heads/{branch}"):
        raise SeriesError(f"--branch {branch!r} is not a valid git branch name (see 'git check-ref-format')")
    return (
        Replayed(branch, str(main.id), main_name, str(result.head), commits, opts.signoff, len(result.dropped)),
        main,
        notes,
    )


def refuse_second_pr(ws: Workspace, name: str, forge: Forge) -> None:
    """A topic that records its PR is never proposed again: the dry run refuses as the real
    run does (exit 1, before anything else is checked), naming the PR and the way on."""
    number = ws.series.topic(name).upstream_pr
    if number is None:
        return
    pull = _recorded_pull(ws, forge, int(number))
    state = pull.state if pull is not None else PullState.UNKNOWN
    if state is PullState.MERGED:
        hint = "it is merged: nothing to propose (the next 'series rebase' retires the topic)"
    elif state is PullState.CLOSED:
        hint = (
            f"it was closed unmerged: to open a new PR, remove 'upstream_pr: {number}' from topic "
            f"'{name}' in {ws.config_path.name} first"
        )
    else:
        hint = f"push the topic's new work to it with 'series propose {name} --update' (--dry-run shows the range-diff)"
    url = f" ({pull.url})" if pull is not None and pull.url else ""
    raise SeriesError(
        f"topic '{name}' already has upstream PR #{number}{url}"
        + (f", {state.value}" if state is not PullState.UNKNOWN else "")
        + f" (upstream_pr in {ws.config_path.name}): propose opens a topic's PR once",
        hint,
    )


def _recorded_pull(ws: Workspace, forge: Forge, number: int) -> PullRequest | None:
    """The PR as GitHub has it, else as `series upstream` last fetched it; None when neither
    can say (what it adds to the refusal is its URL and state, never the refusal itself)."""
    from series.upstream import store

    if forge.api:
        try:
            return forge.pull(PRNumber(number))
        except SeriesError:  # unreachable, or no answer: the stored fetch may know
            pass
    try:
        fetched = store.load(ws.repo)
    except SeriesError:
        return None
    found = fetched.find(number) if fetched is not None else None
    return found.pull if found is not None else None


def fork_owner(repo: pygit2.Repository, remote: str) -> str | None:
    """OWNER of a fork remote's URL (github.com:OWNER/vllm, https://host/OWNER/vllm.git)."""
    try:
        url = repo.remotes[remote].url or ""
    except KeyError:
        return None
    if url.startswith(("/", "file:", ".")):
        return None
    m = _FORK_URL.match(url)
    return m.group(2) if m else None


def fork_remote(ws: Workspace, opts: ProposeOptions) -> str:
    """The fork's remote, checked before anything runs: a name git reads as a remote (never
    an option: '--receive-pack=...'), and, unless --dry-run, one this repository has."""
    where = "--fork" if opts.fork_remote else "propose.fork_remote"
    name = opts.fork_remote or ws.series.propose.fork_remote
    if opts.dry_run:
        return validate.remote_name(name, where)  # a missing one is a note: the dry run is for setting up
    return validate.existing_remote(ws.repo.remotes.names(), name, where)


def run(
    ws: Workspace, name: str, forge: Forge, opts: ProposeOptions, step: Callable[[str], None] = lambda _: None
) -> Proposal:
    repo = ws.repo
    settings = ws.series.propose
    refuse_second_pr(ws, name, forge)
    remote = fork_remote(ws, opts)
    # 1. replay
    step("replay")
    done, main, notes = replay(ws, name, opts)
    pr_head = repo[done.head].peel(pygit2.Commit)
    title = opts.title or default_title(ws.series.topic(name).summary, done.commits)
    proposal = Proposal(name, title, done.onto_name.split("/", 1)[1], notes=notes)
    proposal.replayed = done
    proposal.steps.append("replay")
    stats = file_stats(repo, main.tree, pr_head.tree)
    files: list[PullFile] = tree_files(repo, main.tree, pr_head.tree)
    paths = [f.path for f in stats]
    # 2. grade
    step("grade")
    known: tuple[str, ...] = pr_grade.WELL_KNOWN_TAGS
    try:
        guide = main.tree[pr_grade.GUIDE].peel(pygit2.Blob).data.decode("utf-8", "replace")
        known = pr_grade.tags_from_guide(guide) or known
    except (KeyError, ValueError):
        proposal.notes.append(f"no {pr_grade.GUIDE} on {done.onto_name}: title tags checked against series' copy")
    proposal.grade = pr_grade.grade(title, stats, done.commits, settings, first_pr=not opts.not_first, known_tags=known)
    proposal.steps.append("grade")
    # 3. reviewers
    step("reviewers")
    me = committer(repo)
    owner = opts.owner or fork_owner(repo, remote)
    login_of = forge.commit_login if forge.api else None
    proposal.reviewers = reviewers.suggest(
        repo, main, files, login_of=login_of, me=[me.email] + ([owner] if owner else [])
    )
    proposal.steps.append("reviewers")
    # 4. description
    step("description")
    template_path, template = prbody.read_template(repo, main.tree)
    selected = test_plan(repo, main, name, paths, proposal)
    note = opts.release_note or (ws.series.topic(name).summary or pr_grade.title_tags(title)[1])
    proposal.description = prbody.render(
        template_path,
        template,
        title,
        done.commits,
        selected,
        paths,
        note,
        opts.evidence,
        mentionable=proposal.reviewers.mentionable,
    )
    if template_path is None:
        proposal.notes.append(f"no pull request template on {done.onto_name}: used vLLM's classic sections")
    assert proposal.grade is not None
    # the description's own rules (vLLM's PR checklist, AGENTS.md) join the grade
    proposal.grade = dataclasses.replace(
        proposal.grade, findings=proposal.grade.findings + pr_grade.describe(proposal.description.body, done.commits)
    )
    proposal.steps.append("description")
    # 5. duplicates: the last step before anything is sent
    step("duplicates")
    # scored as vLLM's duplicate bot will score the PR once posted: its title and this description
    mine = duplicates_score.PullText(
        int(ws.series.topic(name).upstream_pr or 0),
        proposal.title,
        proposal.description.body,
        tuple(f.path for f in files),
    )
    proposal.source, proposal.candidates, proposal.unsearched, proposal.bot_scores = duplicates(
        ws, forge, files, opts, proposal.notes, mine
    )
    proposal.despite = sorted(set(opts.despite))
    for number in proposal.despite:
        if number not in {c.number for c in proposal.candidates}:
            proposal.notes.append(f"--despite {number}: #{number} shares no file with this PR")
    proposal.steps.append("duplicates")
    head_ref = f"{owner or '<your GitHub login>'}:{done.branch}"
    proposal.command = [
        f"git push {remote} {done.head}:refs/heads/{done.branch}",
        f"POST /repos/{ws.series.upstream.github or 'OWNER/REPO'}/pulls "
        f"head={head_ref} base={proposal.base_branch} draft=true",
    ]
    if opts.dry_run and remote not in repo.remotes.names():
        proposal.notes.append(
            f"no git remote '{remote}' for your fork yet: add it ('git remote add {remote} "
            "URL') or pass --fork REMOTE before proposing for real"
        )
    if proposal.stopped or opts.dry_run:
        return proposal
    # 6. send
    proposal.sent = send(ws, name, forge, proposal, remote, owner, step)
    return proposal


def test_plan(
    repo: pygit2.Repository, main: pygit2.Commit, name: str, paths: list[str], proposal: Proposal
) -> list[testmap.StepSelection] | None:
    """The upstream CI steps covering the PR's paths, for its description; None, with the step
    reported as skipped, when main has no CI map series can read (an older upstream)."""
    try:
        return testmap.load_commit(repo, main).select({p: (name,) for p in paths})
    except SeriesError as exc:
        proposal.skipped.append(Skipped("test plan", exc.text))
        return None


def duplicates(
    ws: Workspace,
    forge: Forge,
    files: list[PullFile],
    opts: ProposeOptions,
    notes: list[str],
    mine: duplicates_score.PullText,
) -> tuple[str, list[Candidate], str | None, dict[int, duplicates_score.BotScore]]:
    """Open PRs of any age sharing a file with the PR branch, most overlap first: preflight's
    ranking; offline, its one path-limited walk over every fetched PR head (forge.scan),
    with the PRs main has merged left out. The third value says why nothing could be
    searched (no PR head fetched), which is no answer, never 'none share a file'. The
    fourth: each candidate's duplicate-bot score against `mine`, as preflight shows it
    (from the API only: the bot reads every PR's title and body)."""
    remote = ws.series.upstream.remote
    if opts.fetch and isinstance(forge, OfflineForge):
        fetch_all_pulls(ws.repo, remote)
    if not isinstance(forge, OfflineForge):
        try:
            pulls = forge.open_pulls()
            # PRs whose head is fetched here at GitHub's head sha: one git walk, not a request each
            local = fetched_files(ws.repo, remote, pulls, [f.path for f in files])
            if local:
                notes.append(
                    f"{len(local)} of {len(pulls)} open PRs compared from their heads fetched into "
                    "git refs (same head as GitHub's), not with an API request each"
                )
            seen: dict[int, list[PullFile]] = {}

            def files_of(pr: PullRequest) -> list[PullFile]:
                found = local[int(pr.number)] if int(pr.number) in local else forge.pull_files(pr.number)
                seen[int(pr.number)] = found
                return found

            candidates = rank(files, pulls, files_of)
            scores = bot_scores(mine, pulls, seen, candidates)
            if local and scores:
                notes.append(FROM_REFS_NOTE)
            return forge.source, candidates, None, scores
        except ForgeUnreachable as exc:
            notes.append(f"{exc}; searched the PR heads fetched into git refs instead")
            forge = OfflineForge(ws.repo, remote)
    offline = forge if isinstance(forge, OfflineForge) else OfflineForge(ws.repo, remote)
    found = scan.scan(
        ws.repo, remote, mainline_commit(ws.repo, remote), [f.path for f in files], len(offline.numbers())
    )
    unmerged = [p for p in found.pulls if not p.merged]
    if not found.heads:
        return (
            offline.source,
            [],
            (f"no PR heads under refs/remotes/{remote}/pr/ to search: --fetch fetches them (or run online)"),
            {},
        )
    notes.append(
        f"offline: {found.heads} PR heads under refs/remotes/{remote}/pr/ searched; "
        f"{len(found.pulls) - len(unmerged)} that touch these files are merged into {remote}/main, "
        "left out; open or closed is unknown offline (--fetch refreshes the heads)"
    )
    candidates = rank(files, unmerged, lambda pr: found.files[pr.number])
    if candidates:
        notes.append(
            "vLLM's duplicate-bot score needs each PR's title and body from the GitHub API: not computed from git refs"
        )
    return offline.source, candidates, None, {}


def send(
    ws: Workspace,
    name: str,
    forge: Forge,
    proposal: Proposal,
    remote: str,
    owner: str | None,
    step: Callable[[str], None],
) -> Sent:
    repo = ws.repo
    done = proposal.replayed
    assert done is not None and proposal.description is not None
    if not forge.api or not ws.series.upstream.github:
        raise SeriesError(
            "opening the draft PR needs the GitHub API",
            "set upstream.github in series.yaml and drop --offline (or SERIES_OFFLINE); --dry-run shows the rest",
        )
    refuse_if_halted(repo, "propose")
    if owner is None:
        owner = forge.viewer_login()
    step("push")
    proc = git(
        workdir(repo),
        "push",
        "--porcelain",
        "--end-of-options",
        remote,
        f"{done.head}:refs/heads/{done.branch}",
        check=False,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        hint = (
            f"the fork already has a different {done.branch}: delete it there "
            f"('git push {remote} --delete {done.branch}') or pass --branch NAME"
            if "rejected" in proc.stdout + proc.stderr
            else None
        )
        raise SeriesError(f"git push to {remote} failed: {_CREDENTIALS.sub('://', last)}", hint)
    proposal.steps.append("push")
    step("pull request")
    head = f"{owner}:{done.branch}"
    try:
        pr = forge.create_pull(
            head=head, base=proposal.base_branch, title=proposal.title, body=proposal.description.body, draft=True
        )
    except SeriesError as exc:
        raise SeriesError(
            f"{exc.text}; {done.branch} is pushed to {remote} ({done.head[:12]}), no PR was opened",
            "fix the cause and open it from that branch, or run again with --branch NAME",
        ) from None
    proposal.steps.append("pull request")
    op = record(ws, name, int(pr.number), done)
    return Sent(remote, head, int(pr.number), pr.url, op)


def record(ws: Workspace, name: str, number: int, done: Replayed) -> str:
    """upstream_pr: N on the topic and the local PR branch, as one journaled operation."""
    with ws.transaction("propose", f"{name} proposed upstream as PR #{number}") as tx:
        tx.set_topic(name, upstream_pr=number)
        tx.move(f"refs/heads/{done.branch}", done.head)
        return tx.commit().id


# --- output -------------------------------------------------------------------------------


def to_json(p: Proposal) -> dict[str, Any]:
    g, r, d, done = p.grade, p.reviewers, p.description, p.replayed
    return {
        "topic": p.topic,
        "title": p.title,
        "base": p.base_branch,
        "steps": p.steps,
        "branch": done.branch if done else None,
        "head": done.head if done else None,
        "onto": done.onto if done else None,
        "commits": [
            {"sha": c.sha, "subject": c.subject, "signed_off": pr_grade.signed_off(c.message)} for c in done.commits
        ]
        if done
        else [],
        "grade": {
            "first_pr": g.first_pr,
            "lines": g.lines,
            "files": g.files,
            "flags": len(g.flags),
            "findings": [
                {"rule": f.rule, "level": f.level.value, "what": f.what, "why": f.why, "fix": f.fix, "source": f.source}
                for f in g.findings
            ],
        }
        if g
        else None,
        "reviewers": r.to_json() if r else None,
        "description": {"template": d.template, "body": d.body, "filled": list(d.filled), "results": d.results}
        if d
        else None,
        "duplicates": {
            "source": p.source,
            "searched": p.unsearched is None,
            "unsearched": p.unsearched,
            "candidates": [
                {
                    "number": c.number,
                    "title": c.title,
                    "author": c.author,
                    "state": c.state.value,
                    "url": c.url,
                    "shared_files": c.shared_files,
                    "overlapping_hunks": c.overlapping_hunks,
                    "duplicate_bot": p.bot_scores[c.number].to_json() if c.number in p.bot_scores else None,
                }
                for c in p.candidates
            ],
            "despite": p.despite,
            "stopped": p.stopped,
            "duplicate_bot": duplicates_score.summary_json(p.title, p.bot_scores) if p.bot_scores else None,
        },
        "command": p.command,
        "pull_request": {
            "number": p.sent.number,
            "url": p.sent.url,
            "head": p.sent.head,
            "remote": p.sent.remote,
            "operation": p.sent.operation,
        }
        if p.sent
        else None,
        "skipped": [{"step": s.step, "reason": s.reason} for s in p.skipped],
        "notes": p.notes,
    }


def render(p: Proposal, dry_run: bool) -> str:
    done, g = p.replayed, p.grade
    assert done is not None and g is not None and p.reviewers is not None and p.description is not None
    out = [
        f"1. replay: {len(done.commits)} commit(s) of '{p.topic}' onto {done.onto_name} "
        f"({done.onto[:12]}) as {done.branch} -> {done.head[:12]}"
        + (", Signed-off-by added" if done.signed_off_added else "")
        + (f"; {done.dropped} already upstream, left out" if done.dropped else "")
    ]
    limits = "first-PR limits" if g.first_pr else "not a first PR"
    out.append(f"2. grade ({limits}; {len(g.flags)} to fix): {p.title}")
    for f in g.findings:
        out.append(f"   {f.level.value.upper():<4}  {f.rule}: {f.what}")
        if f.level is not pr_grade.Level.OK:
            out.append(f"         why: {f.why}" + (f" (upstream's {f.source})" if f.source else ""))
            out.append(f"         fix: {f.fix}")
    out.append("3. " + "\n   ".join(reviewers.render(p.reviewers)))
    d = p.description
    where = d.template or "series' fallback"
    out.append(
        f"4. description (from {where}; filled: {', '.join(d.filled) or 'nothing'}"
        + ("; test results from the evidence file" if d.results else "")
        + "):"
    )
    out += [f"   {s.step}: skipped: {s.reason}" for s in p.skipped if s.step == "test plan"]
    out.append("   " + "\n   ".join(prbody.strip_comments(d.body).rstrip().splitlines()))
    if p.unsearched is not None:
        out.append(f"5. duplicates: not searched: {p.unsearched}")
    else:
        out.append(
            f"5. duplicates (open PRs of any age, source: {p.source}): "
            + ("none share a file" if not p.candidates else f"{len(p.candidates)} share files")
        )
    for c in p.candidates:
        mark = "  (read; going on despite it)" if c.number in p.despite else ""
        out.append(f"   #{c.number} {c.state.value} {c.author}: {c.title}{mark}")
        out.append(
            f"      {len(c.shared_files)} shared file(s), {c.overlapping_hunks} overlapping hunk(s): "
            + ", ".join(c.shared_files)
        )
        if c.number in p.bot_scores:
            out.append(f"      {duplicates_score.line(p.bot_scores[c.number])}")
    if p.bot_scores:
        out.append(f"   {duplicates_score.note(p.title)}")
    if p.stopped:
        numbers = " ".join(f"--despite {c.number}" for c in p.blocking)
        first = p.blocking[0].number
        out.append("stopped: someone upstream may already be fixing this; nothing was pushed. Two honest ways on:")
        out.append(f"   series adopt-upstream {first} --replaces {p.topic}   carry their PR instead, and measure it")
        out.append(f"   series propose {p.topic} {numbers}   after reading it, if yours is different")
    elif dry_run:
        out.append("6. would run (--dry-run: nothing pushed, no PR opened):")
        out += [f"   {c}" for c in p.command]
    elif p.sent is not None:
        s = p.sent
        out.append(
            f"6. pushed {done.branch} to {s.remote}; opened draft PR #{s.number} (head {s.head})"
            + (f": {s.url}" if s.url else "")
        )
        out.append(
            f"   recorded upstream_pr: {s.number} on '{p.topic}' ('series undo' reverts the record, "
            f"not the PR; operation {s.operation})"
        )
    out += [f"note: {n}" for n in p.notes]
    return "\n".join(out)
