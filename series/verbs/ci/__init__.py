"""`series ci`: the nightly pipeline's templates, written into a fork; whom a conflict concerns.

The templates are ci/ in a source checkout and ship inside the wheel as series._ci, so an
installed series has them too. Both install series by one spec,
series.distribution.pip_spec(), written into them as text (a copied template, and the
reusable workflow a fork calls, must work as they are); tests/test_workflows.py keeps
every copy equal to it. `init` writes the workflow (GitHub) or pipeline
(Buildkite) into the fork and never overwrites a file that differs without --force;
the workflow runs the installed copy of nightly.sh (`series ci path nightly.sh`), so a
new release of series brings its fixes without a new copy in the fork.

Owners: a topic's `owner:` in series.yaml (e.g. "@alice"), else the GitHub logins of its
commits' authors where their address is GitHub's no-reply one, else their names.
"""

from __future__ import annotations

import enum
import os
import re
from dataclasses import dataclass
from pathlib import Path

import click

from series.cli_support import Context, emit, emit_json, pass_ctx
from series.distribution import pip_spec
from series.errors import SeriesError
from series.git.repo import person

TARGETS = {
    "github": (("github/nightly.yml", ".github/workflows/series-nightly.yml"),),
    "buildkite": (("buildkite/nightly.yml", ".buildkite/series-nightly.yml"),),
}
_NOREPLY = re.compile(r"^(?:\d+\+)?(?P<login>[A-Za-z0-9-]+)@users\.noreply\.github\.com$")


def templates() -> Path:
    """ci/ in a source checkout, or series/_ci in an installed wheel."""
    import series

    here = Path(series.__file__).resolve().parent  # the package: series/_ci in a wheel
    for candidate in (here.parent / "ci", here / "_ci"):
        if (candidate / "nightly.sh").is_file():
            return candidate
    raise SeriesError(
        "the CI templates (ci/) are not installed with this copy of series: "
        f"reinstall it ('pipx install {pip_spec()}' or 'pip install -e .')"
    )


def path(name: str) -> Path:
    found = templates() / name
    if not found.is_file() or ".." in Path(name).parts:
        known = sorted(str(p.relative_to(templates())) for p in templates().rglob("*") if p.is_file())
        raise SeriesError(f"no CI template {name!r} (there are: {', '.join(known)})")
    return found


class TemplateState(str, enum.Enum):
    """What ci init does to one file of the template."""

    CREATED = "created"
    UPDATED = "updated"  # it differed, and --force replaces it
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class Written:
    path: str  # relative to the fork's root
    state: TemplateState
    dry_run: bool = False  # planned, not written

    @property
    def label(self) -> str:
        """created | updated | unchanged | would create | would update"""
        if self.dry_run and self.state != TemplateState.UNCHANGED:
            return f"would {self.state.value[:-1]}"
        return self.state.value


def init(target: str, root: Path, force: bool = False, dry_run: bool = False) -> list[Written]:
    from series.ops.fs import write_atomically

    if target not in TARGETS:
        raise SeriesError(f"unknown CI {target!r}: choose one of {', '.join(TARGETS)}")
    planned = []
    for source, dest in TARGETS[target]:  # every target checked before the first is written
        text = path(source).read_text()
        where = _inside(root, dest)
        state = _state(where, dest, source, text, force)
        planned.append((dest, where, text, state))
    out = []
    for dest, where, text, state in planned:
        if state == TemplateState.UNCHANGED or dry_run:
            out.append(Written(dest, state, dry_run))
            continue
        try:
            where.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise SeriesError(
                f"{dest}: a part of {where.parent.relative_to(root.resolve())} is a file, "
                "not a directory: move it away and run this again"
            ) from None
        write_atomically(where, text)
        out.append(Written(dest, state))
    return out


def _inside(root: Path, dest: str) -> Path:
    """Where `dest` really is. A symlink on the way (.github, workflows, the file itself) may
    lead anywhere: a fork's clone is not to be trusted to keep ci init inside it."""
    top = root.resolve()
    try:
        real = (top / dest).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise SeriesError(f"{dest}: cannot follow its symlinks ({exc})") from None
    if real.is_relative_to(top) and not real.is_relative_to(top / ".git"):
        return real
    link = next(
        (
            top.joinpath(*Path(dest).parts[:n])
            for n in range(1, len(Path(dest).parts) + 1)
            if top.joinpath(*Path(dest).parts[:n]).is_symlink()
        ),
        top / dest,
    )
    raise SeriesError(
        f"{dest}: {link.relative_to(top)} is a symlink to {os.readlink(link)}, which leads "
        f"to {real}, outside the repository's work tree {top}: ci init writes only inside "
        "it (with or without --force); replace the symlink with a directory"
    )


def _state(where: Path, dest: str, source: str, text: str, force: bool) -> TemplateState:
    """A file that differs is replaced only with --force."""
    if not where.exists():
        return TemplateState.CREATED
    if not where.is_file():
        kind = "a directory" if where.is_dir() else "not a regular file"
        raise SeriesError(f"{dest} is {kind}: ci init writes the workflow file there; move it away and run this again")
    try:
        same = where.read_bytes().decode("utf-8").replace("\r\n", "\n") == text
        differs = "differs from the template"
    except UnicodeDecodeError:
        same, differs = False, "is not UTF-8 (so not the template)"
    if same:
        return TemplateState.UNCHANGED
    if not force:
        raise SeriesError(
            f"{dest} exists and {differs}: keep your edits, or pass --force to "
            f"replace it (see the difference: diff {dest} \"$(series ci path {source})\")"
        )
    return TemplateState.UPDATED


def owners_of(ws: object, names: list[str]) -> list[str]:
    """@handles (or names) for these topics, one per person, in topic order."""
    from series.evidence import pipeline

    series = ws.series  # type: ignore[attr-defined]
    declared = pipeline.load_settings(series.path).owners
    out: list[str] = []
    for name in names:
        if name in declared:
            handles = [h if h.startswith("@") else f"@{h}" for h in declared[name].split()]
        else:
            handles = []
            for commit in ws.require_own(series.topic(name)).commits:  # type: ignore[attr-defined]
                who, email = person(commit, commit.author)
                m = _NOREPLY.match(email or "")
                handles.append(f"@{m['login']}" if m else who)
        out.extend(h for h in handles if h and h not in out)
    return out


def conflicting_topics(report: Path) -> list[str]:
    """The topics a `series rebase --dry-run --json` report names as conflicting, and under
    --strict those whose clean replay breaks something (they hold the rebase as well)."""
    from series.verbs.ci.report import read_rebase

    rebased = read_rebase(report)
    return [row.name for row in rebased.topics if row.conflict or (rebased.strict and row.breaks)]


@click.group("ci")
def ci() -> None:
    """The nightly pipeline for your fork: write it in, find its files, say whom it concerns.

    \b
      series ci init github       .github/workflows/series-nightly.yml in this fork
      series ci init buildkite    .buildkite/series-nightly.yml (upload it from a pipeline step)
      series ci path nightly.sh   where the installed nightly script is (the workflow runs it)
      series ci owners TOPIC...   @handles to mention: owner: in series.yaml, else the authors
      series ci report            the job summary / issue body in Markdown
      series ci setting breaks    a validated ci: setting of series.yaml (the nightly reads it)
    Settings and secrets: 'series ci path README.md'. GitHub Actions are off by default in a
    fork (enable them under Actions), and a scheduled workflow stops after 60 days without
    repository activity: re-enable it there, or push to the fork now and then.
    """


@ci.command("init")
@click.argument("target", type=click.Choice(["github", "buildkite"]))
@click.option("--force", is_flag=True, help="Replace a file that differs from the template.")
@click.option("--dry-run", is_flag=True, help="Say what would be written; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def ci_init(ctx: Context, target: str, force: bool, dry_run: bool, as_json: bool) -> None:
    """Write the nightly workflow (github) or pipeline (buildkite) into the fork.

    The fork is where series.yaml is (or the git top level, or -C DIR). The workflow
    installs the version of series that wrote it (its release tag in the repository until
    it is on the package index; vars.SERIES_PIP_SPEC overrides) and runs its nightly.sh.
    """

    root = _fork_root(ctx)
    written = init(target, root, force=force, dry_run=dry_run)
    if as_json:
        emit_json({"schema": 1, "root": str(root), "files": [{"path": w.path, "state": w.label} for w in written]})
        return
    emit("\n".join(f"{w.label}: {w.path}" for w in written))


def _fork_root(ctx: Context) -> Path:
    """The fork's git top level (workflows live there even when series.yaml sits deeper)."""
    from series.seriesfile.config import find
    from series.errors import SeriesError

    start = ctx.here.resolve()
    try:
        start = find(start, ctx.config_file).parent
    except SeriesError:
        pass  # no series.yaml yet: the files can be written first
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    raise SeriesError(f"{start} is not inside a git repository", "run this in your fork's clone (or pass -C DIR)")


@ci.command("path")
@click.argument("name", default="nightly.sh")
def ci_path(name: str) -> None:
    """Print where the installed template NAME is (nightly.sh, README.md, github/nightly.yml ...)."""

    emit(str(path(name)))


@ci.command("owners")
@click.argument("topics", nargs=-1, metavar="[TOPIC]...")
@click.option(
    "--report",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Take the conflicting topics from a 'series rebase --dry-run --json' report.",
)
@pass_ctx
def ci_owners(ctx: Context, topics: tuple[str, ...], report: Path | None) -> None:
    """The @handles to mention for TOPICs: owner: in series.yaml, else their commits' authors."""

    ws = ctx.workspace(check_branches=False)
    names = list(topics) + (conflicting_topics(report) if report else [])
    if not names:
        raise click.UsageError("name a TOPIC or pass --report FILE")
    emit(" ".join(owners_of(ws, names)))


@ci.command("setting")
@click.argument("name", type=click.Choice(["breaks"]))
@pass_ctx
def ci_setting(ctx: Context, name: str) -> None:
    """Print a ci: setting of series.yaml, validated (its default when unset).

    \b
      breaks   fail: the nightly rebases with --strict (a semantic break stops it like a
               conflict, exit 3, listed in report.md and the issue); warn (default): it
               rebases and lists the breaks in report.md
    """
    from series.evidence import pipeline

    emit(pipeline.load_settings(ctx.workspace(check_branches=False).series.path).breaks.value)


@ci.command("report")
@click.option(
    "--rebase",
    "rebase",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="A 'series rebase --json' report: its outcome per topic goes in the table.",
)
@click.option(
    "--build",
    "built",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="A 'series build --json' result: the wheel and integration commit.",
)
@click.option("--onto", metavar="REF", help="The release the night targeted (for the title).")
@click.option("--depth", default=2, show_default=True, metavar="N", help="Directory depth of the picture.")
@pass_ctx
def ci_report(ctx: Context, rebase: Path | None, built: Path | None, onto: str | None, depth: int) -> None:
    """The series as Markdown for a job summary or an issue: tables, a <details> block per
    topic, a Mermaid picture of topics x directories, the upstream CI steps."""
    from series.verbs.ci.report import build

    emit(build(ctx.workspace(check_branches=False), rebase, built, onto, depth))


command = ci
