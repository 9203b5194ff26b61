"""`series ci`: the nightly pipeline's templates, written into a fork; whom a conflict concerns.

The templates are ci/ in a source checkout and ship inside the wheel as series._ci, so an
installed series has them too. Both install series by one spec, `pip_spec()`, written into
them as text (a copied template, and the reusable workflow a fork calls, must work as they
are); tests/test_workflows.py keeps every copy equal to it. `init` writes the workflow (GitHub) or pipeline
(Buildkite) into the fork and never overwrites a file that differs without --force;
the workflow runs the installed copy of nightly.sh (`series ci path nightly.sh`), so a
new release of series brings its fixes without a new copy in the fork.

Owners: a topic's `owner:` in series.yaml (e.g. "@alice"), else the GitHub logins of its
commits' authors where their address is GitHub's no-reply one, else their names.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import click

from series import __version__
from series.cli import Context, emit, emit_json, pass_ctx
from series.errors import SeriesError

TARGETS = {
    "github": (("github/nightly.yml", ".github/workflows/series-nightly.yml"),),
    "buildkite": (("buildkite/nightly.yml", ".buildkite/series-nightly.yml"),),
}
DISTRIBUTION = "vllm-series"
REPOSITORY = "https://github.com/vllm-series/vllm-series"   # pyproject's Source URL
# False until the first release is on the package index: until then only the release tag
# in the repository installs this version. Flip it with the release that is published.
ON_INDEX = False
_NOREPLY = re.compile(r"^(?:\d+\+)?(?P<login>[A-Za-z0-9-]+)@users\.noreply\.github\.com$")


def templates() -> Path:
    """ci/ in a source checkout, or series/_ci in an installed wheel."""
    import series

    here = Path(series.__file__).resolve().parent  # the package: series/_ci in a wheel
    for candidate in (here.parent / "ci", here / "_ci"):
        if (candidate / "nightly.sh").is_file():
            return candidate
    raise SeriesError("the CI templates (ci/) are not installed with this copy of series: "
                      f"reinstall it ('pipx install {pip_spec()}' or 'pip install -e .')")


def path(name: str) -> Path:
    found = templates() / name
    if not found.is_file() or ".." in Path(name).parts:
        known = sorted(str(p.relative_to(templates())) for p in templates().rglob("*") if p.is_file())
        raise SeriesError(f"no CI template {name!r} (there are: {', '.join(known)})")
    return found


def pip_spec() -> str:
    """What `pip install` / `pipx install` takes to install this version of series."""
    return f"{DISTRIBUTION}=={__version__}" if ON_INDEX else f"git+{REPOSITORY}@v{__version__}"


@dataclass(frozen=True)
class Written:
    path: str            # relative to the fork's root
    state: str           # created | updated | unchanged | would create | would update


def init(target: str, root: Path, force: bool = False, dry_run: bool = False) -> list[Written]:
    from series.config import write_text_atomically

    if target not in TARGETS:
        raise SeriesError(f"unknown CI {target!r}: choose one of {', '.join(TARGETS)}")
    out = []
    for source, dest in TARGETS[target]:
        text = path(source).read_text()
        where = root / dest
        if where.is_file():
            if where.read_text() == text:
                out.append(Written(dest, "unchanged"))
                continue
            if not force:
                raise SeriesError(f"{dest} exists and differs from the template: keep your edits, or "
                                  "pass --force to replace it (see the difference with --dry-run --force)")
            state = "updated"
        else:
            state = "created"
        if dry_run:
            out.append(Written(dest, f"would {state[:-1]}"))
            continue
        where.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(where, text)
        out.append(Written(dest, state))
    return out


def owners_of(ws: object, names: list[str]) -> list[str]:
    """@handles (or names) for these topics, one per person, in topic order."""
    from series.analysis import pipeline

    series = ws.series  # type: ignore[attr-defined]
    declared = pipeline.load_settings(series.path).owners
    out: list[str] = []
    for name in names:
        if name in declared:
            handles = [h if h.startswith("@") else f"@{h}" for h in declared[name].split()]
        else:
            handles = []
            for commit in ws.require_own(series.topic(name)).commits:  # type: ignore[attr-defined]
                m = _NOREPLY.match(commit.author.email or "")
                handles.append(f"@{m['login']}" if m else commit.author.name)
        out.extend(h for h in handles if h and h not in out)
    return out


def conflicting_topics(report: Path) -> list[str]:
    """The topics a `series rebase --dry-run --json` report names as conflicting."""
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError) as exc:
        raise SeriesError(f"{report}: not a series rebase --json report ({exc})") from None
    rows = data.get("topics") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise SeriesError(f"{report}: not a series rebase --json report (no 'topics')")
    return [str(r["name"]) for r in rows if isinstance(r, dict) and r.get("conflict") and r.get("name")]


@click.group("ci")
def ci() -> None:
    """The nightly pipeline for your fork: write it in, find its files, say whom it concerns.

    \b
      series ci init github       .github/workflows/series-nightly.yml in this fork
      series ci init buildkite    .buildkite/series-nightly.yml (upload it from a pipeline step)
      series ci path nightly.sh   where the installed nightly script is (the workflow runs it)
      series ci owners TOPIC...   @handles to mention: owner: in series.yaml, else the authors
      series ci report            the job summary / issue body in Markdown
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
        emit_json({"schema": 1, "root": str(root),
                   "files": [{"path": w.path, "state": w.state} for w in written]})
        return
    emit("\n".join(f"{w.state}: {w.path}" for w in written))


def _fork_root(ctx: Context) -> Path:
    """The fork's git top level (workflows live there even when series.yaml sits deeper)."""
    from series.config import find
    from series.errors import SeriesError

    start = (ctx.directory or Path.cwd()).resolve()
    try:
        start = find(start, ctx.config_file).parent
    except SeriesError:
        pass  # no series.yaml yet: the files can be written first
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    raise SeriesError(f"{start} is not inside a git repository: run this in your fork's clone "
                      "(or pass -C DIR)")


@ci.command("path")
@click.argument("name", default="nightly.sh")
def ci_path(name: str) -> None:
    """Print where the installed template NAME is (nightly.sh, README.md, github/nightly.yml ...)."""

    emit(str(path(name)))


@ci.command("owners")
@click.argument("topics", nargs=-1, metavar="[TOPIC]...")
@click.option("--report", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="Take the conflicting topics from a 'series rebase --dry-run --json' report.")
@pass_ctx
def ci_owners(ctx: Context, topics: tuple[str, ...], report: Path | None) -> None:
    """The @handles to mention for TOPICs: owner: in series.yaml, else their commits' authors."""

    ws = ctx.workspace(check_branches=False)
    names = list(topics) + (conflicting_topics(report) if report else [])
    if not names:
        raise click.UsageError("name a TOPIC or pass --report FILE")
    emit(" ".join(owners_of(ws, names)))


@ci.command("report")
@click.option("--rebase", "rebase", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="A 'series rebase --json' report: its outcome per topic goes in the table.")
@click.option("--build", "built", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="A 'series build --json' result: the wheel and integration commit.")
@click.option("--onto", metavar="REF", help="The release the night targeted (for the title).")
@click.option("--depth", default=2, show_default=True, metavar="N", help="Directory depth of the picture.")
@pass_ctx
def ci_report(ctx: Context, rebase: Path | None, built: Path | None, onto: str | None, depth: int) -> None:
    """The series as Markdown for a job summary or an issue: tables, a <details> block per
    topic, a Mermaid picture of topics x directories, the upstream CI steps."""
    from series.verbs.ci.report import build

    emit(build(ctx.workspace(check_branches=False), rebase, built, onto, depth))


command = ci
