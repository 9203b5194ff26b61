"""Offline: which fetched PR heads touch some paths, at vLLM's scale, in one git walk.

vLLM serves tens of thousands of refs/pull/N/head. A diff per PR head (its merge-base
with main, then a tree diff) costs seconds per thousand; instead one path-limited
`git log --source` over every PR head, with upstream's main hidden, lists exactly the PR
commits that change those paths and the ref each was reached from. git prunes the walk
with the commit-graph and its changed-path Bloom filters when the clone has them
(`git commit-graph write --reachable --changed-paths`; a plain `git fetch` leaves PR
heads out of it, so preflight says so).

A PR's state comes from main alone: merged when main has its squash commit "(#N)" or
contains its head; otherwise open or closed, which git cannot tell ("unknown"). Only
the candidates' states are looked up, in one walk of main back to the oldest of them.
A PR merged by fast-forward or rebase (main contains its commits themselves) has no
commits of its own left to find, so it is not a candidate: its change is upstream
history, which `series touches --between` and the rebase's attribution show.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from series.git.upstream_commit import pr_number, subject_of
from series.forge.base import PullFile, PullRequest, PullState, pr_ref
from series.git.command import git
from series.git.repo import person, workdir
from series.model import PRNumber, Sha

_RECORD, _FIELD = "\x1e", "\x1f"


@dataclass
class _Touch:
    """What the walk saw of one PR: its commits that change the paths, newest first."""

    ref: str
    paths: dict[str, str] = field(default_factory=dict)  # path -> parent of the oldest commit changing it


@dataclass(frozen=True)
class Scan:
    pulls: list[PullRequest]  # the PRs touching the paths, newest head first
    files: dict[int, list[PullFile]]  # PR -> the paths it changes among those asked, with hunks
    heads: int  # PR heads looked at
    graph: bool  # the clone has a commit-graph file


def _has_graph(repo: pygit2.Repository) -> bool:
    info = Path(repo.path) / "objects" / "info"
    return (info / "commit-graph").exists() or (info / "commit-graphs").is_dir()


def _walk(repo: pygit2.Repository, remote: str, main: pygit2.Commit | None, paths: list[str]) -> dict[int, _Touch]:
    args = [
        "log",
        "--no-color",
        "--no-renames",
        "--source",
        "--name-only",
        f"--format={_RECORD}%H{_FIELD}%P{_FIELD}%S",
        f"--glob=refs/remotes/{remote}/pr/*",
    ]
    if main is not None:
        args += ["--not", str(main.id)]
    out = git(workdir(repo), *args, "--", *paths).stdout
    prefix = f"refs/remotes/{remote}/pr/"
    found: dict[int, _Touch] = {}
    for record in out.split(_RECORD)[1:]:
        head, _, names = record.partition("\n")
        _sha, parents, ref = head.split(_FIELD)
        number = ref[len(prefix) :] if ref.startswith(prefix) else ""
        if not number.isdigit() or not parents:
            continue
        touch = found.setdefault(int(number), _Touch(ref))
        for name in names.split("\n"):
            if name:
                touch.paths[name] = parents.split()[0]  # newest first: the last one seen is the oldest
    return found


def _states(
    repo: pygit2.Repository, main: pygit2.Commit | None, heads: dict[int, pygit2.Commit]
) -> dict[int, pygit2.Commit | bool]:
    """PR -> main's squash commit of it, or True when main contains its head; one walk of
    main, newest first, back to the oldest head (a PR merges after its last push)."""
    if main is None or not heads:
        return {}
    oldest = min(c.commit_time for c in heads.values())
    wanted = {c.id: n for n, c in heads.items()}
    found: dict[int, pygit2.Commit | bool] = {}
    for commit in repo.walk(main.id, pygit2.enums.SortMode.TIME):
        if commit.commit_time < oldest:
            break
        number = pr_number(subject_of(commit))
        if number in heads and number not in found:
            found[number] = commit
        if commit.id in wanted:
            found.setdefault(wanted[commit.id], True)
    return found


def _hunks(repo: pygit2.Repository, start: str, head: pygit2.Commit, path: str) -> tuple[tuple[int, int], ...]:
    def data(tree: pygit2.Tree) -> bytes:
        try:
            return repo[tree[path].id].peel(pygit2.Blob).data
        except KeyError:
            return b""

    old, new = data(repo[pygit2.Oid(hex=start)].peel(pygit2.Commit).tree), data(head.tree)
    if b"\0" in old[:8000] or b"\0" in new[:8000]:
        return ()
    patch = pygit2.Patch.create_from(old, new, context_lines=0)
    return tuple((h.old_start, h.old_lines) for h in patch.hunks)


def scan(repo: pygit2.Repository, remote: str, main: pygit2.Commit | None, paths: list[str], heads: int) -> Scan:
    """The PR heads under refs/remotes/<remote>/pr/ whose own commits change `paths`."""
    touched = _walk(repo, remote, main, paths) if paths else {}
    commits = {}
    for number, touch in touched.items():
        ref = repo.references.get(pr_ref(remote, number))
        if ref is not None:
            commits[number] = ref.peel(pygit2.Commit)
    states = _states(repo, main, commits)
    pulls, files = [], {}
    for number, head in sorted(commits.items(), key=lambda kv: (-kv[1].commit_time, -kv[0])):
        when = datetime.datetime.fromtimestamp(head.commit_time, datetime.timezone.utc)
        merged = states.get(number)
        squash = merged if isinstance(merged, pygit2.Commit) else None
        pulls.append(
            PullRequest(
                number=PRNumber(number),
                title=subject_of(head),
                author=person(head, head.author)[0],
                state=PullState.MERGED if merged else PullState.UNKNOWN,
                head_sha=Sha(str(head.id)),
                merge_commit=Sha(str(squash.id)) if squash is not None else None,
                updated_at=when.isoformat(timespec="seconds").replace("+00:00", "Z"),
            )
        )
        # the paths' change in this PR: from before its oldest commit that changes each one
        # (its earlier commits leave them alone) to its head
        files[number] = [
            PullFile(path, _hunks(repo, start, head, path)) for path, start in sorted(touched[number].paths.items())
        ]
    return Scan(pulls, files, heads, _has_graph(repo))
