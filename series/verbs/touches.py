"""`series touches`: which topics change a path, the topics x directories matrix, and
the forecast of where upstream's next release meets our changes.

Exit codes follow grep: 0 when a topic touches what was asked, 1 when none does (a
sentence on stdout says so), so `series touches X || echo "we do not touch X"` works.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import click
import pygit2

from series.history import attribution
from series.history import touches
from series.git.upstream_commit import UpstreamCommit
from series.history.touches import Hotspot, MatrixResult, PathSpec, Scope, TopicDiff, TouchedFile
from series.cli_support import Context, emit, emit_json, pass_ctx
from series.errors import SeriesError
from series.git import partial
from series.git.repo import repo_path, resolve_release
from series.workspace import Workspace


def _topics_word(scope: Scope) -> str:
    return "topics" if scope.include_all else "active topics"


# --- touches PATH... ---------------------------------------------------------------------


@dataclass(frozen=True)
class PathsResult:
    scope: Scope
    specs: tuple[PathSpec, ...]
    found: list[tuple[TopicDiff, list[TouchedFile]]]
    unknown: tuple[str, ...]  # plain paths that exist neither upstream nor in any topic

    @property
    def touched(self) -> bool:
        return bool(self.found)


def run_paths(ws: Workspace, paths: Sequence[str], include_all: bool) -> PathsResult:
    specs = tuple(touches.parse_spec(p) for p in paths)
    scope, diffs = touches.scope_of(ws, include_all)
    touches.fetch_blobs(ws, diffs, specs)
    found = touches.touching(diffs, specs)
    base_tree = ws.base_commit().tree
    ours = {p for d in diffs for p in d.paths}
    unknown = tuple(
        s.text for s in specs if not touches.exists_in(base_tree, s) and not any(s.matches(p) for p in ours)
    )
    return PathsResult(scope, specs, found, unknown)


def paths_json(result: PathsResult) -> dict[str, Any]:
    return {
        "paths": [s.text for s in result.specs],
        "base": result.scope.base,
        "topics": [
            {
                "name": d.topic.name,
                "branch": d.topic.branch,
                "status": d.topic.status.value,
                "files": [touches.file_json(f) for f in files],
            }
            for d, files in result.found
        ],
        "checked": list(result.scope.checked),
        "skipped_missing_branch": [t.name for t in result.scope.missing],
    }


def _counts(files: Sequence[TouchedFile]) -> str:
    n = len(files)
    added, deleted = sum(f.added for f in files), sum(f.deleted for f in files)
    return f"{n} file{'s' if n != 1 else ''}  +{added} -{deleted}"


def _file_lines(files: Sequence[TouchedFile], indent: str = "    ") -> list[str]:
    wa = max(len(str(f.added)) for f in files) + 1
    wd = max(len(str(f.deleted)) for f in files) + 1
    return [
        f"{indent}{'+' + str(f.added):>{wa}} {'-' + str(f.deleted):>{wd}}  {f.path}"
        + ("  (new)" if f.status == "A" else "  (deleted)" if f.status == "D" else "")
        for f in files
    ]


def _notes(scope: Scope) -> list[str]:
    notes = [f"note: skipped {t.name}: branch {t.branch} does not exist" for t in scope.missing]
    if scope.inactive:
        notes.append(f"(--all adds the {scope.inactive} inactive topic{'s' if scope.inactive != 1 else ''})")
    return notes


def render_paths(result: PathsResult) -> str:
    scope = result.scope
    what = ", ".join(s.text for s in result.specs)
    if not result.touched:
        out = [
            f"No {'topic' if scope.include_all else 'active topic'} touches {what} "
            f"({len(scope.checked)} {_topics_word(scope)} over {scope.base} checked)."
        ]
        for text in result.unknown:
            out.append(f"note: {text} does not exist in {scope.base} either: check the spelling.")
        return "\n".join(out + _notes(scope))
    out = [f"{what}: touched by {len(result.found)} of {len(scope.checked)} {_topics_word(scope)} (base {scope.base})"]
    width = max(len(d.topic.name) for d, _ in result.found)
    for diff, files in result.found:
        state = "" if diff.topic.active else f"  [{diff.topic.status.value}]"
        out.append(f"  {diff.topic.name:<{width}}  {_counts(files)}{state}")
        out.extend(_file_lines(files))
    return "\n".join(out + _notes(scope))


# --- touches (matrix) --------------------------------------------------------------------


def render_matrix(result: MatrixResult) -> str:
    scope, m = result.scope, result.matrix
    if not m.topics:
        return "\n".join([f"No {_topics_word(scope)} to show."] + _notes(scope))
    # columns are numbered: 23 topic names side by side would not fit a terminal
    out = [f"{len(m.topics)} {_topics_word(scope)} over {scope.base}, files changed per directory (depth {m.depth}):"]
    nw = max(len(n) for n in m.topics)
    for i, name in enumerate(m.topics, 1):
        count = result.files[name]
        out.append(f"  {i:>2}  {name:<{nw}}  {count} file{'s' if count != 1 else ''}")
    out.append("")
    dw = max([len(d) for d in m.cells] + [len("directory")])
    cw = max(len(str(len(m.topics))), max((len(str(v)) for r in m.cells.values() for v in r.values()), default=1))
    out.append(f"  {'directory':<{dw}}  " + " ".join(f"{i:>{cw}}" for i in range(1, len(m.topics) + 1)))
    for directory, row in m.cells.items():
        cells = " ".join(f"{row.get(n, '.')!s:>{cw}}" for n in m.topics)
        many = "  <- " + str(len(row)) + " topics" if len(row) > 1 else ""
        out.append(f"  {directory:<{dw}}  {cells}{many}")
    out.append("")
    if not result.collisions:
        out.append("No file is changed by more than one topic.")
    else:
        out.append(f"Files changed by more than one topic ({len(result.collisions)}): these topics meet when replayed")
        for c in result.collisions:
            users = ", ".join(f"{n} +{f.added} -{f.deleted}" for n, f in c.files)
            out.append(f"  {c.path}: {users}")
    return "\n".join(out + _notes(scope))


# --- touches --between A..B --------------------------------------------------------------


@dataclass(frozen=True)
class ForecastResult:
    scope: Scope
    old: str
    new: str
    old_sha: str
    new_sha: str
    specs: tuple[PathSpec, ...]
    found: list[tuple[TopicDiff, list[Hotspot]]]
    pulls: list[UpstreamPull] = field(default_factory=list)

    @property
    def touched(self) -> bool:
        return bool(self.found)


@dataclass(frozen=True)
class UpstreamPull:
    """One upstream commit (a PR's squash, "(#N)") in the range that changes our files."""

    commit: UpstreamCommit
    files: tuple[tuple[str, tuple[str, ...]], ...]  # (path, the topics that change it)


def _pulls(
    repo: pygit2.Repository, old: pygit2.Commit, new: pygit2.Commit, found: list[tuple[TopicDiff, list[Hotspot]]]
) -> list[UpstreamPull]:
    """The forecast by upstream PR: which of its commits change which of our files; the
    PRs that meet the most of them first (read those before the rebase)."""
    users: dict[str, list[str]] = {}
    for diff, spots in found:
        for h in spots:
            users.setdefault(h.path, []).append(diff.topic.name)
    by_commit: dict[pygit2.Oid, tuple[pygit2.Commit, list[str]]] = {}
    for path, commits in attribution.path_commits(repo, old.id, new.id, list(users)).items():
        for commit in commits:
            by_commit.setdefault(commit.id, (commit, []))[1].append(path)
    pulls = [
        UpstreamPull(UpstreamCommit.of(c), tuple((p, tuple(users[p])) for p in sorted(paths)))
        for c, paths in by_commit.values()
    ]
    pulls.sort(key=lambda u: (-len(u.files), u.commit.date, u.commit.sha))
    return pulls


def _split_range(between: str) -> tuple[str, str, bool]:
    for sep, symmetric in (("...", True), ("..", False)):
        if sep in between:
            old, new = between.split(sep, 1)
            if old and new:
                return old, new, symmetric
    raise SeriesError(f"--between {between}: expected OLD..NEW, e.g. --between v0.30.0..v0.31.0")


def run_forecast(ws: Workspace, between: str, paths: Sequence[str], include_all: bool) -> ForecastResult:
    old_spec, new_spec, symmetric = _split_range(between)
    remote = ws.series.upstream.remote
    old_name, old = resolve_release(ws.repo, old_spec, remote)
    new_name, new = resolve_release(ws.repo, new_spec, remote)
    if symmetric:  # A...B: what B changed since it forked from A
        merge_base = ws.repo.merge_base(old.id, new.id)
        if merge_base is None:
            raise SeriesError(f"--between {between}: {old_name} and {new_name} share no history")
        old = ws.repo[merge_base].peel(pygit2.Commit)
    specs = tuple(touches.parse_spec(p) for p in paths)
    scope, diffs = touches.scope_of(ws, include_all)
    touches.fetch_blobs(ws, diffs, specs, (old.tree, new.tree))
    found = touches.forecast(ws.repo, diffs, old, new, specs)
    return ForecastResult(
        scope, old_name, new_name, str(old.id), str(new.id), specs, found, _pulls(ws.repo, old, new, found)
    )


def forecast_json(result: ForecastResult) -> dict[str, Any]:
    return {
        "between": {"old": result.old, "new": result.new, "old_sha": result.old_sha, "new_sha": result.new_sha},
        "paths": [s.text for s in result.specs],
        "base": result.scope.base,
        "topics": [
            {
                "name": d.topic.name,
                "branch": d.topic.branch,
                "files": [
                    {
                        "path": h.path,
                        "upstream": touches.file_json(h.upstream),
                        "ours": touches.file_json(h.ours),
                        "same_as_upstream": h.same_as_upstream,
                    }
                    for h in spots
                ],
            }
            for d, spots in result.found
        ],
        "upstream_pulls": [
            {**asdict(u.commit), "files": [{"path": p, "topics": list(t)} for p, t in u.files]} for u in result.pulls
        ],
        "checked": list(result.scope.checked),
        "skipped_missing_branch": [t.name for t in result.scope.missing],
    }


def render_forecast(result: ForecastResult) -> str:
    scope = result.scope
    span = f"{result.old}..{result.new}"
    limit = f" under {', '.join(s.text for s in result.specs)}" if result.specs else ""
    if not result.touched:
        return "\n".join(
            [
                f"Upstream {span} changes no file{limit} that our {len(scope.checked)} "
                f"{_topics_word(scope)} change: expect a quiet rebase."
            ]
            + _notes(scope)
        )
    spots = sum(len(s) for _, s in result.found)
    out = [
        f"Upstream {span} also changes {spots} file{'s' if spots != 1 else ''}{limit} of "
        f"{len(result.found)} of our {len(scope.checked)} {_topics_word(scope)}:",
        "  (upstream's lines changed, then ours)",
    ]
    width = max(len(d.topic.name) for d, _ in result.found)
    for diff, hotspots in result.found:
        n = len(hotspots)
        out.append(f"  {diff.topic.name:<{width}}  {n} file{'s' if n != 1 else ''}")
        for h in hotspots:
            u, o = h.upstream, h.ours
            gone = (
                "  (upstream deletes or moves it)"
                if u.status == "D"
                else "  (ours is upstream's new version: already merged?)"
                if h.same_as_upstream
                else ""
            )
            out.append(f"    upstream +{u.added} -{u.deleted}, ours +{o.added} -{o.deleted}  {h.path}{gone}")
    if result.pulls:
        out.append(f"By upstream PR ({len(result.pulls)}), the ones meeting most of our files first:")
        for pull in result.pulls:
            c = pull.commit
            title = c.subject[: -len(f"(#{c.pr})")].rstrip() if c.pr is not None else c.subject
            out.append(f"  {c.label:<8} {c.date} {c.author:<16} {title}")
            out.append("      " + ", ".join(f"{p} ({', '.join(t)})" for p, t in pull.files))
    return "\n".join(out + _notes(scope))


EXIT_TOUCHES_ERROR = 2  # touches: grep's 'trouble' code (1 is 'not touched')


@click.command("touches")
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@click.option(
    "--all",
    "include_all",
    is_flag=True,
    help="Include superseded, merged and dropped topics whose branches still exist.",
)
@click.option(
    "--depth", default=3, show_default=True, metavar="N", help="Directory depth of the matrix (without PATH)."
)
@click.option(
    "--between",
    metavar="OLD..NEW",
    help="Forecast: files upstream changed between two refs that our topics change too.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def command(
    ctx: Context, paths: tuple[str, ...], include_all: bool, depth: int, between: str | None, as_json: bool
) -> int:
    """Which topics change PATH, with files and +/- lines (each topic's own diff over the base).

    \b
    PATH is a directory (matched at a '/' boundary: vllm/v1 is not vllm/v10),
    a file, or a glob ('*' within a path component, '**' across them), relative to the
    current directory as in git (from vllm/v1, kv_offload is vllm/v1/kv_offload):
      series touches vllm/v1/kv_offload
      series touches 'vllm/**/lru.py' tests/v1
    Exit status is grep's: 0 when a topic touches PATH, 1 when none does, 2 on an error
    (a missing branch, a bad ref), so 'not touched' is never an error in disguise:
      series touches vllm/v1/kv_offload || echo "we really don't touch it"

    \b
    Without PATH: a matrix of topics x directories (--depth N), and the files that more
    than one topic changes (where topics will collide when replayed).
    With --between OLD..NEW (e.g. v0.30.0..v0.31.0): the files upstream changed in that
    range that our topics also change, with upstream's and our line counts: where the
    next rebase will hurt, before running it (exit 1: no overlap). OLD...NEW diffs NEW
    against its merge base with OLD. PATH limits the forecast.
    """
    from series.errors import SeriesError

    here = ctx.here  # where the command runs: PATHs are read from here
    try:
        # a missing active branch is an error, not a skip: a silent skip would let
        # `series touches X || echo "not touched"` claim something nobody checked
        ws = ctx.workspace(check_branches=True)
        paths = tuple(repo_path(ws.repo, p, here) for p in paths)
        output: dict[str, object] | str
        if between is not None:
            forecast = run_forecast(ws, between, paths, include_all)
            output = forecast_json(forecast) if as_json else render_forecast(forecast)
            touched = forecast.touched
        elif paths:
            found = run_paths(ws, paths, include_all)
            output = paths_json(found) if as_json else render_paths(found)
            touched = found.touched
        else:
            grid = touches.matrix_of(ws, depth, include_all)
            output = touches.matrix_json(grid) if as_json else render_matrix(grid)
            touched = grid.touched
        if isinstance(output, str):
            emit(output)
        else:
            emit_json(output)
    except SeriesError as exc:
        # grep's convention: 1 means "no topic touches it", so an error must not be 1 too
        exc.exit_code = EXIT_TOUCHES_ERROR
        raise
    except (KeyError, pygit2.GitError) as exc:
        # an object a partial or shallow clone lacks (one touches.fetch_blobs could not foresee, or
        # a treeless clone): main() would say so with exit 1, which here means 'not touched'
        known = partial.explain(exc, here)
        if known is None:
            raise
        error = SeriesError(known)
        error.exit_code = EXIT_TOUCHES_ERROR
        raise error from None
    return 0 if touched else 1
