"""`series measure`: run a workload in named trees and judge frozen predictions (issue 23).

The predictions file must be frozen (`series predict FILE`) and unchanged: that is checked
before anything runs. Each tree (base, series, without:T, only:T alias topic:T) is put
under the command by series.measure.workload: a checkout of the tree, or with --python the
installed build with the tree's Python changes over it, as `series test --run` does. With
--repeat N the trees take turns, N rounds, and numbers are their median. The report
(series.measure.measurement) is the metrics by tree, every prediction held or failed, and
the environment. `--artifact DIR` leaves it per tree for another machine to collect;
`--collect DIR` makes the same report from such measurement_artifacts.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Callable

import click
import pygit2

from series.measure import measurement
from series.measure import artifacts as measurement_artifacts
from series.measure import predictions
from series.measure.measurement import MeasuredTree, Measurement, Values
from series.cli_support import Context, emit, emit_json, pass_ctx
from series.seriesfile.config import NAME_RE
from series.errors import SeriesError
from series.workspace import Workspace

Say = Callable[[str], None]


def parse_trees(values: tuple[str, ...]) -> list[tuple[str, str]]:
    """--tree NAME=SPEC values as (name, spec); `base`, `series` and `main` may stand alone."""
    out: list[tuple[str, str]] = []
    for value in values:
        name, sep, spec = value.partition("=")
        if not sep:
            if value not in ("base", "series", "main"):
                raise click.UsageError(
                    f"--tree {value}: give it a name, e.g. --tree ours={value} "
                    "(NAME=SPEC; only base, series and main may stand alone)"
                )
            name, spec = value, value
        if not NAME_RE.match(name):
            raise click.UsageError(
                f"--tree {value}: {name!r} is not a tree name (lowercase letters, "
                "digits, '.', '_', '-'; it names a directory of --artifact)"
            )
        if not spec:
            raise click.UsageError(f"--tree {value}: no SPEC after '='")
        if any(name == n for n, _ in out):
            raise click.UsageError(f"--tree {name} is given twice: each tree has its own name")
        out.append((name, spec))
    return out


def run(
    ws: Workspace,
    frozen: predictions.FrozenPredictions,
    plan: list[tuple[str, str]],
    command: tuple[str, ...],
    *,
    python: str | None = None,
    repeat: int = 1,
    only: tuple[str, ...] = (),
    say: Say = lambda _: None,
) -> Measurement:
    """Measure the trees of `plan` ((name, spec), in order), or `only` those of them named."""
    from series.evidence import interpreter, named_trees, pytestrun, testrun
    from series.measure import workload

    for _, spec in plan:
        named_trees.check_spec(spec)  # a typo is refused before the claims are checked
    measurement.check_trees(frozen.file, [n for n, _ in plan])
    trees = [(n, s) for n, s in plan if not only or n in only]
    resolved = {spec: named_trees.resolve(ws, spec) for spec in dict.fromkeys(s for _, s in trees)}
    describe = {spec: tree.describe for spec, tree in resolved.items()}
    machine = measurement.machine_from_json(
        interpreter.machine(python or sys.executable), f"the environment of {python or sys.executable}"
    )
    runs: dict[str, list[Values]] = {n: [] for n, _ in trees}
    with pytestrun.trapped(), testrun.Scratch() as scratch:
        stages = []
        if python is not None:
            env = interpreter.probe(python, need_pytest=False)
            built = named_trees.installed_commit(ws, env)
            package = env.package_dir.name
            say(f"{package} {env.version} at {env.package_dir}")
            for name, spec in trees:
                changes = named_trees.package_changes(ws.repo, built, resolved[spec].commit, package)
                over = named_trees.laid_over(resolved[spec].trunk, package, env.version)
                say(f"{name}: {resolved[spec].describe}; {len(changes)} package files {over}")
                if resolved[spec].on_trunk:
                    describe[spec] = f"{resolved[spec].describe}; {over}"
                    for path in named_trees.compiled_drift(ws.repo, built, resolved[spec].commit)[:1]:
                        say(
                            f"warning: {name}: {path} (and the rest of csrc/ the release built) differs from "
                            f"the build's sources: custom ops the tree calls run as {package} {env.version} "
                            "compiled them"
                        )
                stages.append(workload.build_stage(name, env.python, env.package_dir, changes, scratch))
        else:
            for name, spec in trees:
                say(f"{name}: {resolved[spec].describe}; a checkout of {str(resolved[spec].commit.id)[:12]}")
                stages.append(workload.checkout_stage(ws.repo, name, resolved[spec].commit, scratch))
        for round_ in range(1, repeat + 1):
            for stage in stages:  # the trees take turns: a drifting machine drifts for all of them
                say(f"{stage.tree}: run {round_} of {repeat}" if repeat > 1 else f"{stage.tree}: running")
                where = scratch.fresh(f"{stage.tree}-run{round_}")
                runs[stage.tree].append(workload.run(stage, command, where / "metrics.json", where / "log"))
    metrics = {n: measurement.combine(r, n) for n, r in runs.items()}
    measured = tuple(MeasuredTree(n, s, str(resolved[s].commit.id), describe[s]) for n, s in trees)
    return Measurement(
        measured,
        metrics,
        runs,
        {n: machine for n, _ in trees},
        frozen.file.name,
        frozen.file.sha256,
        measurement.judged(frozen, metrics),
        command,
        repeat,
        python,
        tuple(plan) if only else (),
    )


def emit_jobs(
    ctx: Context,
    ws: Workspace,
    frozen: predictions.FrozenPredictions,
    path: Path,
    given: str,
    trees: list[tuple[str, str]],
    command: tuple[str, ...],
    *,
    seat: str,
    out: str | None,
    overlay: bool,
    repeat: int,
    as_json: bool,
) -> None:
    """--emit: the measurement written as jobs (series.measure.jobs); nothing runs
    here. Refused as a local run would be: the predictions frozen, every tree resolved."""
    from series import distribution
    from series.measure import jobs as measure_jobs
    from series.evidence import named_trees
    from series.git.repo import workdir

    for _, spec in trees:
        named_trees.check_spec(spec)
    measurement.check_trees(frozen.file, [n for n, _ in trees])
    for spec in dict.fromkeys(s for _, s in trees):
        named_trees.resolve(ws, spec)  # a topic that is not in series.yaml is refused here, not there
    trunk = None
    if any(named_trees.on_trunk(named_trees.check_spec(s)) for _, s in trees):
        main, main_name = named_trees.trunk(ws)
        trunk = (main_name[len(ws.series.upstream.remote) + 1 :], str(main.id))
    try:
        release: str | None = named_trees.base_release(ws)
    except SeriesError:
        if overlay:
            raise
        release = None  # no release wheel to install: CMD runs in checkouts
    where = measure_jobs.Seat(seat)
    jobs = measure_jobs.plan(
        ws.repo,
        path,
        frozen,
        ctx.here,
        tuple(trees),
        command,
        repeat=repeat,
        overlay=overlay,
        base=ws.series.upstream.base,
        remote=ws.series.upstream.remote,
        release=release,
        pip_spec=distribution.pip_spec(),
        trunk=trunk,
    )
    text = measure_jobs.render(where, jobs)
    top = workdir(ws.repo)
    if out == "-":
        click.echo(text, nl=False)
        shown = measure_jobs.DEFAULT_PATHS[where]
    else:
        target = None if out is None else (Path(out) if Path(out).is_absolute() else ctx.here / out)
        written = measure_jobs.write(where, text, target, top)
        shown = (
            str(written.resolve().relative_to(top.resolve()))
            if written.resolve().is_relative_to(top.resolve())
            else str(written)
        )
    steps = measure_jobs.collect_steps(where, shown, jobs, given)
    notes = [
        f"{rel}: CMD names it, but it is not committed at HEAD: the job's checkout will not have it "
        "(commit and push it)"
        for rel in measure_jobs.unshipped(ws.repo, command)
    ]
    if overlay:
        notes.append("--python: the jobs use the runner's python, with the patched wheel installed in it")
    if as_json:
        emit_json(
            {
                "schema": measurement.SCHEMA,
                "emit": where.value,
                "path": shown,
                "jobs": [{"tree": n, "spec": s} for n, s in trees],
                "predictions_sha256": jobs.sha256,
                "next": steps,
                "notes": notes,
            }
        )
        return
    lines = [
        f"{'printed' if out == '-' else 'wrote'} {shown}: {len(trees)} job(s), one per tree "
        f"({', '.join(n for n, _ in trees)}); nothing ran here",
        *(f"note: {n}" for n in notes),
        "next:",
        *(f"  {n}. {step}" for n, step in enumerate(steps, 1)),
    ]
    if out == "-":
        click.echo("\n".join(lines), err=True)  # stdout holds the jobs
    else:
        emit("\n".join(lines))


def write_artifacts(m: Measurement, directory: Path) -> list[Path]:
    import json

    from series.ops.fs import write_atomically

    written = []
    for tree in m.trees:
        into = directory / tree.name
        try:
            into.mkdir(parents=True, exist_ok=True)
            for file, doc in measurement_artifacts.files(m, tree).items():
                write_atomically(into / file, json.dumps(doc, indent=2) + "\n")
                written.append(into / file)
        except OSError as exc:
            raise SeriesError(f"--artifact {directory}: cannot write {into} ({exc.strerror or exc})") from None
    return written


def collect_artifacts(repo: pygit2.Repository, frozen: predictions.FrozenPredictions, directory: Path) -> Measurement:
    found = []
    for top, dirs, files in os.walk(directory):  # not into symlinked directories
        dirs.sort()
        if measurement_artifacts.TREE_FILE not in files:
            continue
        here = Path(top)
        docs = [
            measurement_artifacts.parse(_read(here / f, limit), str(here / f), limit)
            for f, limit in (
                (measurement_artifacts.TREE_FILE, measurement_artifacts.TREE_LIMIT),
                (measurement_artifacts.METRICS_FILE, measurement.METRICS_LIMIT),
                (measurement_artifacts.ENVIRONMENT_FILE, measurement.METRICS_LIMIT),
            )
        ]
        found.append(
            measurement_artifacts.read_collected(
                docs[0], docs[1], docs[2], str(here / measurement_artifacts.TREE_FILE), str(here)
            )
        )
    return measurement_artifacts.assemble(found, frozen)


def collected_notes(ctx: Context, repo: pygit2.Repository, report: Measurement) -> list[str]:
    """What --collect can tell about the commits the jobs measured, against this checkout.

    The report holds what was measured, as a local run would have; these notes say when
    that is not what the trees are here now (a topic amended after the jobs were sent, a
    job that ran on another branch), so a number is never read as a tree's it is not."""
    from series.evidence import named_trees

    notes: list[str] = []
    try:
        ws: Workspace | None = ctx.workspace()
    except SeriesError:
        ws = None  # no series here: only whether the commits exist can be said
    for tree in report.trees:
        if tree.commit is None:
            continue
        try:
            measured = repo[tree.commit].peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError):
            notes.append(
                f"tree {tree.name} ({tree.spec}) was measured at {tree.commit[:12]}, which this "
                "repository does not have: fetch the branch the job ran on to check what it measured"
            )
            continue
        if ws is None:
            continue
        try:
            here = named_trees.resolve(ws, tree.spec).commit
        except SeriesError as exc:
            notes.append(
                f"tree {tree.name} ({tree.spec}) cannot be resolved here ({exc}); the report "
                f"holds what was measured at {tree.commit[:12]}"
            )
            continue
        if here.tree_id != measured.tree_id:
            notes.append(
                f"tree {tree.name} ({tree.spec}) was measured at {tree.commit[:12]}, but here it is "
                f"{str(here.id)[:12]} with other files: the numbers are of what was measured; "
                "rerun the jobs to measure the trees as they are now"
            )
    return notes


def _read(path: Path, limit: int) -> bytes:
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block the read
            raise SeriesError(f"{path}: not a regular file")
        with open(path, "rb") as f:
            return f.read(limit + 1)
    except OSError as exc:
        raise SeriesError(
            f"{path}: cannot read ({exc.strerror or exc}); an artifact holds "
            f"{measurement_artifacts.TREE_FILE}, {measurement_artifacts.METRICS_FILE} and {measurement_artifacts.ENVIRONMENT_FILE}"
        ) from None


@click.command("measure", context_settings={"allow_interspersed_args": False})
@click.option(
    "--predictions",
    "predictions_file",
    required=True,
    metavar="FILE",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The predictions, frozen first with 'series predict FILE' (refused otherwise).",
)
@click.option(
    "--tree",
    "trees",
    multiple=True,
    metavar="NAME=SPEC",
    help="A tree to measure, e.g. ours=only:our-topic, theirs=topic:predictions-61050 (SPEC: base, "
    "series, without:TOPIC, only:TOPIC alias topic:TOPIC; main, pr:TOPIC: the topic replayed "
    "onto upstream's main, as the PR holds it, or pr:TOPIC@REV; repeatable).",
)
@click.option(
    "--python",
    "python",
    metavar="PY",
    help="Run over the release build installed in PY's environment, with each tree's Python "
    "changes laid over it as 'series test --run' does; `python` in CMD is PY. "
    "Default: CMD runs in a checkout of each tree.",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Run N rounds (the trees take turns); numbers are their median, anything else must agree.",
)
@click.option(
    "--artifact",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Also write DIR/<tree>/tree.json, metrics.json and environment.json, for --collect.",
)
@click.option(
    "--only",
    "only",
    multiple=True,
    metavar="NAME",
    help="Measure only this one of the --tree trees (repeatable): a CI job per tree, each "
    "with --artifact, then --collect joins them into the report of all of them.",
)
@click.option(
    "--collect",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    metavar="DIR",
    help="Run nothing: make the report from the measurement_artifacts under DIR (CI downloads), checking "
    "each was measured against the frozen predictions.",
)
@click.option("--json", "as_json", is_flag=True, help="The report for CI and 'series comment --measurement'.")
@click.option(
    "--emit",
    "seat",
    type=click.Choice(["github", "buildkite"]),
    help="Run nothing here: write this measurement as jobs for the machine with the GPU, a "
    "GitHub workflow_dispatch job or a Buildkite step per tree; --collect reads back what "
    "they upload.",
)
@click.option(
    "--out",
    "emit_out",
    metavar="PATH",
    help="With --emit: the file to write (default: .github/workflows/series-measure.yml or "
    ".buildkite/series-measure.yml in the fork); '-' prints it.",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- CMD...")
@pass_ctx
def command(
    ctx: Context,
    predictions_file: Path,
    trees: tuple[str, ...],
    python: str | None,
    repeat: int,
    artifact: Path | None,
    only: tuple[str, ...],
    collect: Path | None,
    as_json: bool,
    seat: str | None,
    emit_out: str | None,
    command: tuple[str, ...],
) -> None:
    """Run a workload in named trees; judge frozen predictions against its metrics.

    \b
    CMD runs once per tree (per round with --repeat) with SERIES_TREE set to the tree's
    name and SERIES_METRICS to a path where it writes one JSON object, metric -> number,
    true/false or string (at most 1 MB). Without --python it runs in a checkout of the
    tree (a scratch copy, removed after; the checkout is first on PYTHONPATH); with
    --python PY it runs in an empty directory over PY's installed release build with the
    tree's Python changes laid over it, as 'series test --run' does. Name files outside
    the tree (the workload script) by absolute path. The predictions file must be frozen
    and unchanged; every prediction is reported, held or failed (struck, with the reason
    'series predict FILE --explain ID WHY' recorded).
    Exit 0 when it ran, whatever held; 1 when refused or the workload failed.
    \b
    Examples:
      series predict predictions.yaml
      series measure --predictions predictions.yaml --tree ours=only:offload-evict-fix \\
          --tree theirs=topic:predictions-61050 -- python "$PWD/workload.py"
      series measure ... --python ~/vllm-0.31/bin/python --repeat 3 --artifact out/
      series measure --collect downloaded/ --predictions predictions.yaml --json
      series measure ... --emit github      the same, as a workflow for the GPU runner
    """
    from series.git.repo import open_repo
    from series.workspace import repair

    if collect is not None and (trees or command or python or repeat != 1 or artifact or only):
        raise click.UsageError(
            "--collect makes the report from measurement_artifacts: no --tree, --python, --repeat, "
            "--artifact, --only or CMD with it"
        )
    if seat is not None and (collect is not None or artifact is not None or only):
        raise click.UsageError(
            "--emit writes the jobs that make the measurement_artifacts, one per tree: no --collect, "
            "--artifact or --only with it"
        )
    if emit_out is not None and seat is None:
        raise click.UsageError("--out is where --emit writes the jobs: pass --emit github|buildkite")
    if seat is not None and as_json and emit_out == "-":
        raise click.UsageError("--out - prints the jobs on stdout: --json cannot go there too")
    if collect is None and not trees:
        raise click.UsageError("name the trees to measure: --tree NAME=SPEC (repeatable)")
    if collect is None and not command:
        raise click.UsageError("no command: put it after '--', e.g. -- python \"$PWD/workload.py\"")
    named = parse_trees(trees)
    for name in only:
        if name not in (n for n, _ in named):
            raise click.UsageError(f"--only {name}: not one of the --tree names ({', '.join(n for n, _ in named)})")
    path = predictions_file if predictions_file.is_absolute() else ctx.here / predictions_file
    if not path.is_file():
        raise SeriesError(f"{predictions_file}: no such file")
    if collect is not None:
        repo = open_repo(ctx.here)
        repair(repo)
        report = collect_artifacts(repo, predictions.require_frozen(repo, path), collect)
        for note in collected_notes(ctx, repo, report):
            click.echo(f"note: {note}", err=True)
    else:
        ws = ctx.workspace()
        frozen = predictions.require_frozen(ws.repo, path)
        if seat is not None:
            emit_jobs(
                ctx,
                ws,
                frozen,
                path,
                str(predictions_file),
                named,
                command,
                seat=seat,
                out=emit_out,
                overlay=python is not None,
                repeat=repeat,
                as_json=as_json,
            )
            return
        from series.evidence.pytestrun import Stopped

        try:
            report = run(
                ws,
                frozen,
                named,
                command,
                python=python,
                repeat=repeat,
                only=only,
                say=lambda msg: click.echo(msg, err=True),
            )
        except Stopped as stop:
            click.echo(f"series: interrupted ({stop}); the workload was stopped, temporary files removed", err=True)
            click.get_current_context().exit(128 + stop.signum)
        if artifact is not None:
            written = write_artifacts(report, artifact if artifact.is_absolute() else ctx.here / artifact)
            click.echo(f"wrote {len(written)} artifact files under {artifact}", err=True)
    if as_json:
        emit_json(measurement.to_json(report))
    else:
        from series.measure.tables import render_text

        emit(render_text(report))
