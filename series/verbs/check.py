"""`series check`: series.yaml against the repository, and every scope: claim against
the real diff. The machine-checked form of "our series does not touch X".

Loading already rejects what the file alone shows (unknown keys, duplicate names,
dangling depends_on/superseded_by); this adds what needs the repository: the base
resolves, active branches exist and sit on the base (or on the topics they depend on),
and each active topic changes only files inside its scope. Every problem is reported,
not just the first, each with the line of series.yaml to fix.
"""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, field
from typing import Any

import click
import pygit2

from series.history.touches import matches_any, parse_spec
from series.cli_support import Context, emit, emit_json, pass_ctx
from series.errors import EXIT_ERROR, EXIT_OK, EXIT_WARNINGS, SeriesError
from series.git.repo import branch_commit, resolve_commit, workdir
from series.model import Topic
from series.topics import meant_start
from series.workspace import Workspace


@dataclass(frozen=True)
class CheckFinding:
    line: int
    key: str  # where in series.yaml, e.g. "topics (api-hello).scope"
    message: str
    topic: str | None = None
    files: tuple[str, ...] = ()


@dataclass
class CheckReport:
    config: str
    base: str
    topics: int
    active: int
    scopes_checked: int = 0
    problems: list[CheckFinding] = field(default_factory=list)
    warnings: list[CheckFinding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing to report: no problem and no warning."""
        return not self.problems and not self.warnings

    @property
    def exit_code(self) -> int:
        return EXIT_ERROR if self.problems else EXIT_WARNINGS if self.warnings else EXIT_OK


class _SeriesChecker:
    def __init__(self, ws: Workspace, report: CheckReport):
        self.ws, self.report = ws, report
        self.lines = ws.series.lines

    def _finding(self, topic: Topic | None, key: str, message: str, files: tuple[str, ...] = ()) -> CheckFinding:
        if topic is None:
            return CheckFinding(self.lines.get(key, 1), key, message, None, files)
        line = self.lines.get(f"topics.{topic.name}.{key}", topic.line)
        return CheckFinding(line, f"topics ({topic.name}).{key}", message, topic.name, files)

    def problem(self, topic: Topic | None, key: str, message: str, files: tuple[str, ...] = ()) -> None:
        self.report.problems.append(self._finding(topic, key, message, files))

    def warn(self, topic: Topic | None, key: str, message: str) -> None:
        self.report.warnings.append(self._finding(topic, key, message))


def run(ws: Workspace) -> CheckReport:
    series, repo = ws.series, ws.repo
    report = CheckReport(
        config=str(series.path), base=series.upstream.base, topics=len(series.topics), active=len(series.active())
    )
    check = _SeriesChecker(ws, report)
    try:
        base: pygit2.Commit | None = resolve_commit(repo, series.upstream.base, "ref")
    except SeriesError as exc:
        check.problem(None, "upstream.base", exc.text)
        base = None
    if series.upstream.remote not in [r.name for r in repo.remotes]:
        check.warn(
            None,
            "upstream.remote",
            f"'{series.upstream.remote}' is not a remote of this "
            f"repository (git remote add {series.upstream.remote} <vLLM url>)",
        )
    heads = {t.name: branch_commit(repo, t.branch) for t in series.topics}
    by_name = {t.name: t for t in series.topics}
    for topic in series.topics:
        head = heads[topic.name]
        for target in [topic.superseded_by] if topic.superseded_by else []:
            if not by_name[target].active:
                check.warn(topic, "superseded_by", f"'{target}' is {by_name[target].status.value}, not active")
        if topic.merged_in is not None:
            try:
                resolve_commit(repo, topic.merged_in, "ref")
            except SeriesError as exc:
                check.warn(topic, "merged_in", exc.text)
        if not topic.active:
            continue
        if head is None:
            check.problem(
                topic,
                "branch",
                f"branch '{topic.branch}' does not exist (create it, fix the name, or set status: dropped)",
            )
            continue
        for dep in topic.depends_on:
            if not by_name[dep].active:
                check.warn(
                    topic,
                    "depends_on",
                    f"'{dep}' is {by_name[dep].status.value}: "
                    "this topic will be replayed onto what it depends on next, or the base",
                )
            dep_head = heads[dep]
            if (
                by_name[dep].active
                and dep_head is not None
                and dep_head.id != head.id
                and not repo.descendant_of(head.id, dep_head.id)
            ):
                check.problem(
                    topic,
                    "depends_on",
                    f"branch '{topic.branch}' does not contain "
                    f"'{by_name[dep].branch}' (re-stack it on that branch: "
                    f"{restack(ws)}; or drop depends_on)",
                )
        if base is not None:
            _check_range(check, topic, base, head, heads)
            _check_stacked(check, topic)
    if base is not None:
        from series.semantic import base_breaks  # the semantic check: only when there is a base

        for name, found in base_breaks.of_branches(ws).items():
            for b in found:  # warnings: the code may be right (git cannot tell), the build decides
                check.warn(by_name[name], "branch", b.sentence())
    return report


def restack(ws: Workspace) -> str:
    """The command that puts every active topic back on the base, each dependent on the new
    head of what it depends on: a rebase onto the base the series is already on."""
    return f"'series rebase --onto {shlex.quote(ws.series.upstream.base)}'"


def _check_range(
    check: _SeriesChecker,
    topic: Topic,
    base: pygit2.Commit,
    head: pygit2.Commit,
    heads: dict[str, pygit2.Commit | None],
) -> None:
    ws = check.ws
    own = ws.own(topic)  # series.topics: upstream's and its dependencies' commits hidden
    assert own is not None, "checked by the caller: the branch exists"
    if not own.commits:
        check.warn(topic, "branch", f"'{topic.branch}' has no commits of its own over {ws.series.upstream.base}")
    elif not own.on_base:
        fix = (
            f"rebase it onto the base: {restack(ws)}"
            if not topic.depends_on
            else f"re-stack it on that branch: {restack(ws)}"
        )
        check.problem(
            topic,
            "branch",
            f"'{topic.branch}' sits on {str(own.start.id)[:12]}, not on "
            f"{meant_start(topic, ws.series.upstream.base)}: {fix}",
        )
    carried = _series_files(ws, own.paths)
    if carried:
        check.warn(
            topic,
            "branch",
            f"'{topic.branch}' commits {', '.join(carried[:3])}"
            f"{' and more' if len(carried) > 3 else ''}: the series' own files belong on the fork's "
            "default branch, not in a topic (its PR and every rebase would carry them); "
            "move that commit out of the topic",
        )
    if not topic.scope:
        return
    check.report.scopes_checked += 1
    specs = [parse_spec(s) for s in topic.scope]
    outside = tuple(path for path in own.paths if not matches_any(specs, path))
    if outside:
        n = len(outside)
        check.problem(
            topic, "scope", f"{n} file{'s' if n != 1 else ''} outside scope [{', '.join(topic.scope)}]", outside
        )


def _check_stacked(check: _SeriesChecker, topic: Topic) -> None:
    """A branch built on an earlier topic's commits without saying so: its own commits
    hold the other's, so the integration merges them twice (after a fixup on the other,
    a conflict) and a rebase replays them twice."""
    if topic.depends_on:
        return
    under = check.ws.built_on(topic)
    if under is not None:
        check.problem(
            topic,
            "depends_on",
            f"branch '{topic.branch}' is built on topic "
            f"{under.name} (it holds {under.branch}'s commits) but has no depends_on: "
            f"add 'depends_on: [{under.name}]' to topic {topic.name}",
        )


def _series_files(ws: Workspace, paths: tuple[str, ...]) -> list[str]:
    """Which of a topic's own changed paths are series.yaml or its resolutions directory
    (where this series.yaml is, relative to the work tree's top)."""
    top = workdir(ws.repo).resolve()
    try:
        here = ws.series.path.resolve().parent.relative_to(top).as_posix()
    except ValueError:
        return []  # series.yaml outside the work tree: no topic can commit it
    prefix = "" if here == "." else here + "/"
    mine = f"{prefix}{ws.series.path.name}"
    stored = f"{prefix}{ws.series.resolutions.strip('/')}/"
    return [p for p in paths if p == mine or p.startswith(stored)]


def to_json(report: CheckReport) -> dict[str, Any]:
    data = asdict(report)
    data["ok"] = report.ok
    data["exit"] = report.exit_code
    return data


def render(report: CheckReport) -> str:
    name = report.config.rsplit("/", 1)[-1]
    out = []
    for f in report.problems:
        out.append(f"{name}:{f.line}: {f.key}: {f.message}{':' if f.files else ''}")
        out.extend(f"    {path}" for path in f.files)
    for f in report.warnings:
        out.append(f"{name}:{f.line}: warning: {f.key}: {f.message}")
    if not report.problems:
        n = report.scopes_checked
        scopes = (
            "no scope: claims to check" if n == 0 else "1 scope claim holds" if n == 1 else f"{n} scope claims hold"
        )
        w = len(report.warnings)
        lead = f"{w} warning{'s' if w != 1 else ''}, no problem" if w else "ok"
        out.append(
            f"{lead}: {report.topics} topics ({report.active} active) over {report.base}: "
            f"branches exist and sit on the base, {scopes}"
        )
    else:
        topics = {f.topic for f in report.problems if f.topic}
        n = len(report.problems)
        out.append(
            f"check failed: {n} problem{'s' if n != 1 else ''}"
            + (f" in {len(topics)} of {report.active} active topics" if topics else "")
        )
    return "\n".join(out)


@click.command("check")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@click.option(
    "--warnings-ok",
    is_flag=True,
    help="Exit 0, not 6, when there are warnings and no problem (the pre-commit hook: a "
    "known break is not a reason to refuse every commit of series.yaml).",
)
@pass_ctx
def command(ctx: Context, as_json: bool, warnings_ok: bool) -> int:
    """Validate series.yaml against the repository, and every scope: claim against the diff.

    \b
    Checks that upstream.base resolves, that every active topic's branch exists and sits
    on the base (or on the topics it depends_on, which it must contain), and that each
    active topic with a scope: changes only files inside it (same matching as
    'series touches': directories at a '/' boundary, files, globs).
    Warns about each break the branches have against the base (an upstream name a topic
    uses that the base removed or changed; 'series status' lists them too).
    \b
    Exit 0 with a one-line ok; 1 when there is a problem (each topic, line and file out
    of place); 6 when there are warnings and no problem:
      series check || exit 1                # in CI: warnings fail too
      series check || [ $? -eq 6 ]          # in CI: only problems fail
      series check --warnings-ok            # the same, as one command
    """

    ws = ctx.workspace(check_branches=False)
    report = run(ws)
    if as_json:
        emit_json(to_json(report))
    else:
        emit(render(report))
    return EXIT_OK if warnings_ok and report.exit_code == EXIT_WARNINGS else report.exit_code
