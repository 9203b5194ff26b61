"""`series init`: write a series.yaml for an existing fork clone from its topic branches.

Topics are ordered by the author date of each branch's first own commit, then by name:
author dates survive rebases, so this is the order the work was started in, which is
the order a maintainer most often wants to replay it. A branch that contains another
matched branch's commits (a stacked topic) gets depends_on and comes after it.

The file is built by the one series.yaml editor (a skeleton plus one edit per topic) and
written through the transaction, journaled: `series undo` removes it again (or, after
--force, puts the file it replaced back), refusing if it was edited since.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import click
import pygit2

from series.seriesfile import config, edit as seriesedit
from series import validate
from series.cli_support import Context, emit, pass_ctx
from series.errors import SeriesError
from series.git import releases
from series.git.repo import open_repo, resolve_release, workdir
from series.model import Series, Topic, Upstream, topic_name
from series.topics import OwnWork, OwnWorks, built_on
from series.workspace import transaction

_GITHUB_URL = re.compile(r"github\.com[:/]+([\w.-]+)/([\w.-]+?)(?:\.git)?/?$")


@dataclass(frozen=True)
class FoundTopic:
    name: str
    branch: str
    commits: int
    first_time: int
    depends_on: str | None


@dataclass(frozen=True)
class InitResult:
    path: Path
    base: str
    base_sha: str
    patterns: tuple[str, ...]
    topics: tuple[FoundTopic, ...]
    warnings: tuple[str, ...]
    inferred: bool  # no --base: the newest release every topic branch forks from


def _github_from_remote(repo: pygit2.Repository, remote: str) -> str | None:
    try:
        url = repo.remotes[remote].url or ""
    except (KeyError, ValueError):
        return None
    m = _GITHUB_URL.search(url)
    return f"{m.group(1)}/{m.group(2)}" if m else None


def _topic_heads(repo: pygit2.Repository, patterns: Sequence[str], integration: str | None) -> dict[str, pygit2.Commit]:
    heads: dict[str, pygit2.Commit] = {}
    for ref in repo.references:
        if not ref.startswith("refs/heads/"):
            continue
        branch = ref[len("refs/heads/") :]
        if branch != integration and any(fnmatch.fnmatchcase(branch, p) for p in patterns):
            heads[branch] = repo.references[ref].peel(pygit2.Commit)
    return heads


def infer_base(
    repo: pygit2.Repository, heads: dict[str, pygit2.Commit], patterns: Sequence[str], remote: str = releases.UPSTREAM
) -> str:
    """The newest release every topic branch forks from (series.git.releases.closest_common);
    none, or two that neither contains, is an error naming the candidates."""
    matching = ", ".join(patterns)
    if not heads:
        raise SeriesError(
            f"no local branch matches {matching}, so there is no base to infer",
            "pass --base REF (e.g. --base latest), or --topics GLOB",
        )
    found = releases.closest_common(repo, workdir(repo), [h.id for h in heads.values()], remote)
    if len(found) == 1:
        return found[0].tag
    if found:
        raise SeriesError(
            f"the branches matching {matching} fork from more than one release ({releases.names(found)})",
            "pass --base with the one they sit on",
        )
    newest = releases.names(releases.releases(repo, remote)[:3]) or "no release tags here; git fetch --tags"
    raise SeriesError(
        f"no release tag is in every branch matching {matching} (newest here: {newest})",
        "pass --base REF, a tag, branch or commit",
    )


def _find_topics(
    repo: pygit2.Repository, base: pygit2.Commit, remote: str, heads: dict[str, pygit2.Commit], target: Path
) -> list[FoundTopic]:
    # There is no series yet: each branch's own commits come from the one answer
    # (series.topics) asked of a provisional series, first with no dependencies, then with
    # the ones found, which is what `series status` answers once the file is written.
    alone = {b: Topic(b, b) for b in heads}  # named by branch: provisional, never written
    provisional = Series(target, Upstream(remote=remote), tuple(alone.values()))

    def own_of(works: OwnWorks, branch: str) -> OwnWork:
        own = works.of(works.series.topic(branch))
        assert own is not None, branch  # found among the branches just now
        return own

    alone_works = OwnWorks(repo, provisional, base)
    spans = {b: own_of(alone_works, b) for b in heads}
    # a stacked branch contains another topic's own commits (series.topics.built_on); with
    # no order yet, two branches that each answer the other are siblings, neither under
    under = {b: built_on(alone_works, alone[b], [alone[o] for o in sorted(heads) if o != b]) for b in heads}
    parents = {b: on.name for b, on in under.items() if on is not None and not _answers(under[on.name], b)}
    parents = {b: p for b, p in parents.items() if not _cycles(parents, b)}
    stacked = OwnWorks(
        repo,
        replace(
            provisional,
            topics=tuple(replace(t, depends_on=(parents[b],)) if b in parents else t for b, t in alone.items()),
        ),
        base,
    )
    found: dict[str, tuple[str, pygit2.Commit, tuple[pygit2.Commit, ...]]] = {}
    for branch, head in heads.items():
        own = own_of(stacked, branch) if branch in parents else spans[branch]
        found[branch] = (branch, head, own.commits)
    names: dict[str, str] = {}
    taken: set[str] = set()
    for branch in sorted(heads):
        name, n = topic_name(branch), 2
        while name in taken:
            name, n = f"{topic_name(branch)}-{n}", n + 1
        taken.add(name)
        names[branch] = name

    def first_time(branch: str) -> int:
        commits = found[branch][2]
        return commits[0].author.time if commits else found[branch][1].author.time

    ordered = sorted(heads, key=lambda b: (first_time(b), b))
    # dependencies first, whatever the dates say (series.yaml requires it)
    placed: list[str] = []

    def place(branch: str) -> None:
        if branch in placed:
            return
        if branch in parents:
            place(parents[branch])
        placed.append(branch)

    for branch in ordered:
        place(branch)
    return [
        FoundTopic(names[b], b, len(found[b][2]), first_time(b), names[parents[b]] if b in parents else None)
        for b in placed
    ]


def _answers(topic: Topic | None, branch: str) -> bool:
    return topic is not None and topic.name == branch


def _cycles(parents: dict[str, str], branch: str) -> bool:
    """Does following depends_on from `branch` come back to it (histories built on each
    other's commits)? Such a branch gets no depends_on: series.yaml cannot hold a cycle."""
    seen, at = {branch}, parents.get(branch)
    while at is not None:
        if at in seen:
            return True
        seen.add(at)
        at = parents.get(at)
    return False


def run(
    start: Path,
    *,
    base: str | None,
    remote: str,
    github: str | None,
    patterns: Sequence[str],
    integration: str | None,
    force: bool,
    target: Path | None = None,
) -> InitResult:
    repo = open_repo(start)
    if target is None:
        if repo.workdir is None:
            raise SeriesError(f"{repo.path} is a bare repository", "pass --config FILE to say where series.yaml goes")
        target = workdir(repo) / config.FILENAME
    _refuse_existing(target, force)
    heads = _topic_heads(repo, patterns, integration)
    inferred = base is None
    base_name, base_commit = resolve_release(
        repo, infer_base(repo, heads, patterns, remote) if base is None else base, remote
    )
    warnings: list[str] = []
    # series.yaml's remote reaches 'git fetch': a name this clone has, never an option
    remote = validate.existing_remote([r.name for r in repo.remotes], remote, "--remote")
    if github is None:
        github = _github_from_remote(repo, remote)
    elif not config.GITHUB_SLUG_RE.match(github):
        raise SeriesError(f"--github {github}: expected OWNER/REPO, e.g. vllm-project/vllm")
    topics = _find_topics(repo, base_commit, remote, heads, target)
    if not topics:
        warnings.append(f"no local branch matches {', '.join(patterns)}: add topics with 'series add BRANCH'")
    for t in topics:
        if t.commits == 0:
            warnings.append(f"{t.branch} has no commits of its own over {base_name}")
    edits = []
    for i, t in enumerate(topics):
        fields: dict[str, Any] = {"name": t.name, "branch": t.branch}
        if t.depends_on:
            fields["depends_on"] = [t.depends_on]
        edits.append(seriesedit.Edit(("topics", t.name), None, fields, after=topics[i - 1].name if i else None))
    text = seriesedit.apply(seriesedit.skeleton(remote, base_name, github, integration), target, edits)
    assert text is not None
    with transaction(repo, "init", f"{target.name}: {len(topics)} topic(s) over {base_name}", config_path=target) as tx:
        _refuse_existing(target, force)  # again, under the lock
        tx.write_file(text)
        tx.commit()
    return InitResult(target, base_name, str(base_commit.id), tuple(patterns), tuple(topics), tuple(warnings), inferred)


def _refuse_existing(target: Path, force: bool) -> None:
    if target.exists() and not force:
        raise SeriesError(
            f"{target} already exists: edit it, or pass --force to overwrite it "
            "(its comments and settings would be lost; 'series undo' would bring it back)"
        )


def render(result: InitResult) -> str:
    n = len(result.topics)
    out = [f"base: {result.base} (the newest release every topic branch forks from)"] if result.inferred else []
    out += [
        f"wrote {result.path}: {n} topic{'s' if n != 1 else ''} over {result.base} "
        f"({result.base_sha[:12]}) from branches matching {', '.join(result.patterns)}"
    ]
    if result.topics:
        nw = max(len(t.name) for t in result.topics)
        bw = max(len(t.branch) for t in result.topics)
        for t in result.topics:
            dep = f"  (on {t.depends_on})" if t.depends_on else ""
            out.append(f"  {t.name:<{nw}}  {t.branch:<{bw}}  {t.commits} commit{'s' if t.commits != 1 else ''}{dep}")
    out.extend(f"warning: {w}" for w in result.warnings)
    out.append("next: 'series status' to see them, 'series check' to validate, add scope: claims by hand")
    out += where_it_lives(result)
    return "\n".join(out)


def where_it_lives(result: InitResult) -> list[str]:
    """Where series.yaml and resolutions/ are committed, and the day-to-day loop, with
    commands that run as written here (README: "Where series.yaml lives")."""
    branch = result.topics[0].branch if result.topics else "topic/x"
    return [
        f"where: commit {result.path.name} and resolutions/ (once a rebase records one) on the fork's default branch",
        "  (the one its CI checks out), never on a topic branch (its PR and every rebase would carry",
        "  them), nor on the integration branch, which series rebuilds",
        "day to day:",
        f"  git switch {branch}   # edit, then git commit: a topic is plain git",
        f"  series rebase --onto {result.base}   # the same base: the topics stacked on it follow it",
        "  series check   # a break or a problem names its line; fix it on the topic, commit, check again",
    ]


@click.command("init")
@click.option(
    "--base",
    metavar="REF",
    help="Upstream release the topics sit on: a tag (v0.30.0, or v0.30 for its newest "
    "release, or latest), branch or commit (default: the newest release tag every "
    "topic branch forks from).",
)
@click.option("--remote", default="upstream", show_default=True, metavar="NAME", help="Git remote of upstream vLLM.")
@click.option(
    "--github",
    metavar="OWNER/REPO",
    help="Upstream on GitHub, for pull requests (default: read from the remote's URL).",
)
@click.option(
    "--topics",
    "patterns",
    multiple=True,
    default=("topic/*",),
    show_default=True,
    metavar="GLOB",
    help="Local branches to list as topics (repeatable).",
)
@click.option(
    "--integration",
    metavar="BRANCH",
    default="series/integration",
    show_default=True,
    help="Branch that will hold base + all active topics (never listed as a topic); build and the nightly push it.",
)
@click.option("--force", is_flag=True, help="Overwrite an existing series.yaml.")
@pass_ctx
def command(
    ctx: Context,
    base: str | None,
    remote: str,
    github: str | None,
    patterns: tuple[str, ...],
    integration: str | None,
    force: bool,
) -> None:
    """Write series.yaml for an existing fork clone, listing its topic branches.

    \b
    The file goes to the work tree's root (or --config FILE). Topics are the local
    branches matching --topics, ordered by the author date of each branch's first
    commit over the base, then by name (author dates survive rebases: this is the
    order the work began in). A branch built on another matched branch gets
    depends_on and follows it. Names come from the branch's last path component.
    Reorder, add summary: and scope: lines by hand; the tool keeps your edits.
    Without --base, the base is the newest release tag every topic branch forks
    from (said on the first line); if there is none, or two, it names them.
      series init
      series init --base v0.30.0 --topics 'topic/*' --topics 'fix/*'
    """

    result = run(
        ctx.here,
        base=base,
        remote=remote,
        github=github,
        patterns=patterns,
        integration=integration,
        force=force,
        target=ctx.config_file,
    )
    emit(render(result))
