"""`series preflight TOPIC`: the last check before posting a topic upstream as a PR.

Is someone upstream already fixing this? Upstream PRs (open, and closed recently) that
touch the topic's files, ranked by shared files, then by overlapping hunks. Plus the
topic's exact paths (for an honest PR description) and the DCO check vLLM enforces
(every commit needs a Signed-off-by: trailer).
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import asdict, dataclass, field
from typing import Callable

from series.analysis.grade import signed_off
from series.errors import SeriesError
from series.forge.base import Forge, PullFile, PullRequest, ranges_overlap, tree_files
from series.git.repo import topic_range
from series.workspace import Workspace



@dataclass(frozen=True)
class Candidate:
    number: int
    title: str
    author: str
    state: str
    url: str | None
    shared_files: list[str]
    overlapping_hunks: int
    own: bool = False  # the PR this topic was adopted from


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
    checked: int                        # PRs whose files were compared
    notes: list[str] = field(default_factory=list)

    @property
    def dco_ok(self) -> bool:
        return all(c.signed_off for c in self.commits)


def rank(topic_files: list[PullFile], pulls: list[PullRequest],
         files_of: Callable[[PullRequest], list[PullFile]], own_pr: int | None = None) -> list[Candidate]:
    """PRs sharing a file with the topic: most shared files first, then most overlapping hunks."""
    mine = {f.path: f for f in topic_files}
    found = []
    for pr in pulls:
        shared: list[str] = []
        hunks = 0
        for theirs in files_of(pr):
            for path in (theirs.path, theirs.previous_path):
                if path and path in mine and path not in shared:
                    shared.append(path)
                    hunks += ranges_overlap(mine[path].hunks, theirs.hunks)
        if shared:
            found.append(Candidate(int(pr.number), pr.title, pr.author, pr.state, pr.url,
                                   sorted(shared), hunks, own=own_pr == pr.number))
    found.sort(key=lambda c: (-len(c.shared_files), -c.overlapping_hunks, -c.number))
    return found


def run(ws: Workspace, name: str, forge: Forge, *, days: int = 30,
        now: _dt.datetime | None = None, limit: int | None = None,
        progress: Callable[[int, int], None] | None = None) -> Preflight:
    topic = ws.series.topic(name)
    repo = ws.repo
    head = ws.head(topic)
    base = ws.base_commit()
    hide = [ws.head(ws.series.topic(dep)).id for dep in topic.depends_on]
    span = topic_range(repo, base, head, ws.series.upstream.remote, hide=hide)
    if not span.commits:
        raise SeriesError(f"topic '{name}' has no commits over {ws.series.upstream.base}: nothing to post")
    files = tree_files(repo, span.start.tree, head.tree)
    commits = [CommitCheck(str(c.id), c.message.split("\n", 1)[0].strip(), signed_off(c.message))
               for c in span.commits]
    moment = now or _dt.datetime.now(_dt.timezone.utc)
    since = moment - _dt.timedelta(days=days)
    pulls = forge.list_pulls(since)
    notes = []
    if forge.source != "github":
        # Without the API, a PR's state and close date are unknown: a head updated in the
        # window stands in for "open, or closed recently".
        recent = [p for p in pulls if p.updated_at is None or
                  _dt.datetime.fromisoformat(p.updated_at.replace("Z", "+00:00")) >= since]
        notes.append("offline: PR heads from git refs, state unknown, recent by head commit date")
        if len(recent) < len(pulls):
            notes.append(f"{len(pulls) - len(recent)} PR head(s) older than {days} days not compared (--days)")
        pulls = recent
    if limit is not None and len(pulls) > limit:
        notes.append(f"checked the {limit} most recently updated of {len(pulls)} PRs (--limit)")
        pulls = pulls[:limit]
    budget = getattr(forge, "rate_remaining", None)
    if budget is not None and budget < len(pulls):
        raise SeriesError(
            f"comparing files of {len(pulls)} PRs needs {len(pulls)} GitHub API requests but only "
            f"{budget} remain this hour; set GITHUB_TOKEN, pass --limit N, or --fetch for git refs")
    done = 0

    def files_of(pr: PullRequest) -> list[PullFile]:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, len(pulls))
        return forge.pull_files(pr.number)

    candidates = rank(files, pulls, files_of, own_pr=topic.upstream_pr)
    return Preflight(
        topic=name, base=ws.series.upstream.base, source=forge.source,
        since=since.date().isoformat(), paths=[f.path for f in files], commits=commits,
        candidates=candidates, checked=len(pulls), notes=notes,
    )


def as_json(result: Preflight) -> dict[str, object]:
    data = asdict(result)
    data["dco_ok"] = result.dco_ok
    return data


def render(result: Preflight) -> str:
    out = [f"preflight {result.topic}: {len(result.commits)} commit(s) over {result.base}"]
    out.append(f"touched paths ({len(result.paths)}):")
    out += [f"  {p}" for p in result.paths]
    unsigned = [c for c in result.commits if not c.signed_off]
    if not unsigned:
        out.append(f"DCO: ok, all {len(result.commits)} commit(s) carry Signed-off-by")
    else:
        out.append(f"DCO: {len(unsigned)} of {len(result.commits)} commit(s) lack Signed-off-by "
                   "(vLLM requires it; fix with 'git rebase --signoff <base>'):")
        out += [f"  {c.sha[:12]} {c.subject}" for c in unsigned]
    where = (f"(source: {result.source}; open, or closed since {result.since}; "
             f"{result.checked} checked)")
    if not result.candidates:
        out.append(f"upstream PRs touching the same files {where}: none")
    else:
        out.append(f"upstream PRs touching the same files {where}:")
        width = max(len(str(c.number)) for c in result.candidates)
        for c in result.candidates:
            mark = "  (this topic's PR)" if c.own else ""
            files = f"{len(c.shared_files)} shared file{'s' if len(c.shared_files) != 1 else ''}"
            hunks = f"{c.overlapping_hunks} overlapping hunk{'s' if c.overlapping_hunks != 1 else ''}"
            out.append(f"  #{c.number:<{width}} {c.state:<8} {c.author:<16} {files}, {hunks}  {c.title}{mark}")
            out += [f"  {'':<{width + 2}}{p}" for p in c.shared_files]
    out += [f"note: {n}" for n in result.notes]
    return "\n".join(out)
