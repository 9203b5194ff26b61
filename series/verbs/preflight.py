"""`series preflight TOPIC`: the last check before posting a topic upstream as a PR.

Is someone upstream already fixing this? Upstream PRs that touch the topic's files, ranked
by shared files, then overlapping hunks, then recency; never dropped for age alone (vLLM
PRs stay open for months), only when --days asks. From the API: every open PR, and PRs
closed in the last --days (30 by default). Offline: every PR head fetched into git refs,
found with one path-limited walk (series.forge.scan), merged or "unknown". Plus the
topic's exact paths (for an honest PR description) and the DCO check vLLM enforces
(every commit needs a Signed-off-by: trailer).

Each candidate also gets the score vLLM's duplicate-PR bot would give the PR once posted
(series.propose.duplicates_score: its text, weights and threshold) and whether the bot would
list it as potentially related: from the API only, which has each PR's title and body. The
PR scored is the one `series propose` would post (its title, its description from upstream's
template), or --title / --body-file.
"""

from __future__ import annotations

import datetime
import os
import sys
from dataclasses import asdict, dataclass, field
from typing import Callable, TextIO

import click

from series.propose import grade as pr_grade
from series.propose import prbody
from series.evidence import testmap
from series.propose.grade import signed_off
from series.cli_support import Context, emit, emit_json, pass_ctx
from series.errors import SeriesError
from series.forge import open_forge, scan
from series.forge.base import Forge, OfflineForge, PullFile, PullRequest, change_files, mainline_commit
from series.propose.duplicates import FROM_REFS_NOTE, Candidate, bot_scores, fetched_files, rank, updated_moment
from series.propose import duplicates_score
from series.propose.title import default_title
from series.validate import printable
from series.workspace import Workspace
from series.git.repo import message, subject


@dataclass(frozen=True)
class CommitCheck:
    sha: str
    subject: str
    signed_off: bool


@dataclass(frozen=True)
class Preflight:
    topic: str
    base: str
    source: str
    since: str
    paths: list[str]
    commits: list[CommitCheck]
    candidates: list[Candidate]
    checked: int  # PRs whose files were compared
    notes: list[str] = field(default_factory=list)
    unsearched: str | None = None  # why no PR could be read (no answer, never "none")
    title: str = ""  # the PR scored as vLLM's duplicate bot would score it
    bot_scores: dict[int, duplicates_score.BotScore] = field(default_factory=dict)  # by candidate number; API only

    @property
    def dco_ok(self) -> bool:
        return all(c.signed_off for c in self.commits)


def proposed_text(
    ws: Workspace,
    name: str,
    commits: tuple[pr_grade.Commit, ...],
    paths: list[str],
    title: str | None,
    body: str | None,
) -> tuple[str, str]:
    """The title and description `series propose` would post for the topic (its default title;
    upstream main's PR template filled from the commits and the CI steps covering the paths),
    unless given: what the duplicate bot reads of our PR."""
    title = title or default_title(ws.series.topic(name).summary, commits)
    if body is not None:
        return title, body
    main = mainline_commit(ws.repo, ws.series.upstream.remote)
    template_path, template = prbody.read_template(ws.repo, main.tree) if main is not None else (None, prbody.FALLBACK)
    selected = None
    if main is not None:
        try:
            selected = testmap.load_commit(ws.repo, main).select({p: (name,) for p in paths})
        except SeriesError:
            pass  # no CI map series can read: the description has no test plan, as propose's
    note = ws.series.topic(name).summary or pr_grade.title_tags(title)[1]
    return title, prbody.render(template_path, template, title, commits, selected, paths, note).body


def run(
    ws: Workspace,
    name: str,
    forge: Forge,
    *,
    days: int | None = None,
    now: datetime.datetime | None = None,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    title: str | None = None,
    body: str | None = None,
) -> Preflight:
    topic = ws.series.topic(name)
    repo = ws.repo
    own = ws.require_own(topic)  # series.topics: upstream's and its dependencies' commits hidden
    if not own.commits:
        raise SeriesError(f"topic '{name}' has no commits over {ws.series.upstream.base}: nothing to post")
    files = change_files(repo, own.changes)
    commits = [CommitCheck(str(c.id), subject(c), signed_off(message(c))) for c in own.commits]
    moment = now or datetime.datetime.now(datetime.timezone.utc)
    since = moment - datetime.timedelta(days=days if days is not None else 30)
    notes = []
    scanned: scan.Scan | None = None
    if isinstance(forge, OfflineForge):
        scanned = scan.scan(
            repo, forge.remote, mainline_commit(repo, forge.remote), [f.path for f in files], len(forge.numbers())
        )
        pulls = scanned.pulls
        notes.append(
            f"offline: {scanned.heads} PR heads from git refs, searched in one path-limited walk; "
            "merged when main has its '(#N)' commit or contains the head, else open or closed: unknown"
        )
        if not scanned.graph:
            notes.append(
                "no commit-graph in this clone: 'git commit-graph write --reachable --changed-paths' "
                "makes this walk faster"
            )
        if days is not None:
            recent = [p for p in pulls if p.updated_at is None or updated_moment(p.updated_at) >= since.timestamp()]
            if len(recent) < len(pulls):
                notes.append(f"{len(pulls) - len(recent)} PR head(s) older than {days} days left out (--days)")
            pulls = recent
    local: dict[int, list[PullFile]] = {}
    if scanned is None:
        pulls = forge.list_pulls(since)
        local = fetched_files(repo, ws.series.upstream.remote, pulls, [f.path for f in files])
        if local:
            notes.append(
                f"{len(local)} of {len(pulls)} PRs compared from their heads fetched into git refs "
                "(same head as GitHub's), not with an API request each"
            )
    if limit is not None and len(pulls) > limit:
        notes.append(f"checked the {limit} most recently updated of {len(pulls)} PRs (--limit)")
        pulls = pulls[:limit]
    budget = forge.rate_remaining if scanned is None else None
    asked = sum(1 for p in pulls if int(p.number) not in local)
    if budget is not None and budget < asked:
        raise SeriesError(
            f"comparing files of {asked} PRs needs {asked} GitHub API requests but only {budget} remain this hour",
            "set GITHUB_TOKEN, pass --limit N, or --fetch for git refs",
        )
    done = 0
    seen: dict[int, list[PullFile]] = {}

    def files_of(pr: PullRequest) -> list[PullFile]:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, len(pulls))
        if scanned is not None:
            return scanned.files[pr.number]
        found = local[int(pr.number)] if int(pr.number) in local else forge.pull_files(pr.number)
        seen[int(pr.number)] = found
        return found

    candidates = rank(files, pulls, files_of, own_pr=topic.upstream_pr)
    scored_title = ""
    scores: dict[int, duplicates_score.BotScore] = {}
    if scanned is None:
        own_commits = tuple(pr_grade.Commit(str(c.id), message(c)) for c in own.commits)
        scored_title, text = proposed_text(ws, name, own_commits, [f.path for f in files], title, body)
        # the bot reads file names (a rename by its new name); a PR fetched into git refs is
        # read for the topic's paths only, which gives the same intersection but not the union
        mine = duplicates_score.PullText(int(topic.upstream_pr or 0), scored_title, text, tuple(f.path for f in files))
        scores = bot_scores(mine, pulls, seen, candidates)
        if local:
            notes.append(FROM_REFS_NOTE)
    else:
        notes.append(
            "vLLM's duplicate-bot score needs each PR's title and body from the GitHub API: not computed from git refs"
        )
    return Preflight(
        topic=name,
        base=ws.series.upstream.base,
        source=forge.source,
        since=since.date().isoformat() if scanned is None or days is not None else "",
        paths=[f.path for f in files],
        commits=commits,
        candidates=candidates,
        checked=scanned.heads if scanned is not None else len(pulls),
        notes=notes,
        unsearched=None
        if scanned is None or scanned.heads
        else f"no PR heads under refs/remotes/{ws.series.upstream.remote}/pr/ to search: --fetch fetches them "
        "(or run online)",
        title=scored_title,
        bot_scores=scores,
    )


def to_json(result: Preflight) -> dict[str, object]:
    data = asdict(result)
    data["dco_ok"] = result.dco_ok
    del data["bot_scores"], data["title"]
    for candidate in data["candidates"]:
        score = result.bot_scores.get(candidate["number"])
        candidate["duplicate_bot"] = score.to_json() if score is not None else None
    if result.bot_scores:
        data["duplicate_bot"] = duplicates_score.summary_json(result.title, result.bot_scores)
    return data


def render(result: Preflight) -> str:
    out = [f"preflight {result.topic}: {len(result.commits)} commit(s) over {result.base}"]
    out.append(f"touched paths ({len(result.paths)}):")
    out += [f"  {p}" for p in result.paths]
    unsigned = [c for c in result.commits if not c.signed_off]
    if not unsigned:
        out.append(f"DCO: ok, all {len(result.commits)} commit(s) carry Signed-off-by")
    else:
        out.append(
            f"DCO: {len(unsigned)} of {len(result.commits)} commit(s) lack Signed-off-by "
            "(vLLM requires it; fix with 'git rebase --signoff <base>'):"
        )
        out += [f"  {c.sha[:12]} {c.subject}" for c in unsigned]
    if result.source == "github":
        window = f"open, or closed since {result.since}"
    else:
        window = f"heads since {result.since}" if result.since else "every head, whatever its age"
    where = f"(source: {result.source}; {window}; {result.checked} checked)"
    if result.unsearched is not None:
        out.append(f"upstream PRs touching the same files: not searched: {result.unsearched}")
    elif not result.candidates:
        out.append(f"upstream PRs touching the same files {where}: none")
    else:
        out.append(f"upstream PRs touching the same files {where}:")
        width = max(len(str(c.number)) for c in result.candidates)
        for c in result.candidates:
            mark = "  (this topic's PR)" if c.own else ""
            files = f"{len(c.shared_files)} shared file{'s' if len(c.shared_files) != 1 else ''}"
            hunks = f"{c.overlapping_hunks} overlapping hunk{'s' if c.overlapping_hunks != 1 else ''}"
            when = f"  {c.updated_at[:10]}" if c.updated_at else ""
            squash = f"  (merged as {c.merge_commit[:12]})" if c.merge_commit else ""
            out.append(
                f"  #{c.number:<{width}} {c.state.value:<8} {c.author:<16} {files}, {hunks}{when}  "
                f"{c.title}{mark}{squash}"
            )
            out += [f"  {'':<{width + 2}}{p}" for p in c.shared_files]
            score = result.bot_scores.get(c.number)
            if score is not None:
                out.append(f"  {'':<{width + 2}}{duplicates_score.line(score)}")
    if result.bot_scores:
        out.append(f"note: {duplicates_score.note(result.title)}")
    out += [f"note: {n}" for n in result.notes]
    return "\n".join(out)


_OFFLINE_HELP = "Do not ask the GitHub API (also SERIES_OFFLINE=1): work from git refs alone."


@click.command("preflight")
@click.argument("topic")
@click.option("--fetch", is_flag=True, help="First fetch every upstream PR head into refs/remotes/<remote>/pr/* (git).")
@click.option(
    "--days",
    type=click.IntRange(min=1),
    help="Narrow to PRs updated within this many days (offline: head commit date). Without "
    "it every PR head counts, whatever its age; from the API every open PR, and PRs "
    "closed in the last 30 days.",
)
@click.option("--limit", type=click.IntRange(min=1), help="Compare at most this many PRs (most recently updated).")
@click.option("--title", help="The PR title vLLM's duplicate bot is to score (default: the one propose would use).")
@click.option(
    "--body-file",
    type=click.File("r"),
    help="The PR description the duplicate bot is to score (default: the one propose would post).",
)
@click.option("--offline", is_flag=True, help=_OFFLINE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def command(
    ctx: Context,
    topic: str,
    fetch: bool,
    days: int | None,
    limit: int | None,
    title: str | None,
    body_file: TextIO | None,
    offline: bool,
    as_json: bool,
) -> None:
    """Before posting TOPIC upstream: duplicate PRs, exact paths, DCO sign-offs.

    \b
    Lists upstream PRs that touch the topic's files, most shared files first, then most
    overlapping hunks, then the most recent: number, state, author, date, title. An old
    open PR is never left out for its age (only --days narrows).
    Source: the GitHub API when upstream.github is set, else (or with --offline, or
    after --fetch) PR heads fetched into refs/remotes/<remote>/pr/N.
    Also prints the topic's exact touched paths and whether every commit carries
    Signed-off-by: (vLLM's DCO check), and, from the API, the score vLLM's duplicate-PR
    bot would give each candidate once the PR is posted, and whether it would flag it.
    """
    from series.forge.pulls import fetch_all_pulls

    ws = ctx.workspace(check_branches=False)
    if fetch:
        fetch_all_pulls(ws.repo, ws.series.upstream.remote)
    use_git = offline or fetch or os.environ.get("SERIES_OFFLINE") == "1"
    forge = open_forge(ws.repo, ws.series.upstream, offline=use_git)

    def counter(done: int, total: int) -> None:
        click.echo(f"\rcomparing PR files {done}/{total}", err=True, nl=done == total)

    progress = counter if sys.stderr.isatty() and not as_json else None

    from series.forge.base import ForgeUnreachable

    try:
        result = run(
            ws,
            topic,
            forge,
            days=days,
            limit=limit,
            progress=progress,
            title=title,
            body=body_file.read() if body_file is not None else None,
        )
    except ForgeUnreachable as exc:
        click.echo(f"note: {printable(str(exc))}; using PR heads fetched into git refs instead", err=True)
        result = run(ws, topic, open_forge(ws.repo, ws.series.upstream, offline=True), days=days, limit=limit)
    if as_json:
        emit_json(to_json(result))
    else:
        emit(render(result))
