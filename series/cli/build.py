"""Verbs of the build area: build (integration branch, patched wheel) and test (upstream CI map)."""
from __future__ import annotations

from pathlib import Path

import click

from series.cli import Context, emit, emit_json, pass_ctx



@click.command()
@click.option("--wheel", metavar="vllm==X | PATH.whl",
              help="Also build the patched wheel from this release wheel (fetched once into "
                   "~/.cache/series/wheels: with pip, or from the index when there is no pip) or a local file.")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False),
              help="Where the wheel and its manifest go (default: dist/ beside series.yaml).")
@click.option("--from-source", is_flag=True,
              help="Build with vLLM's own setup in a temporary worktree (needed when the series "
                   "changes csrc/, cmake/, setup.py, pyproject.toml or requirements/).")
@click.option("--platform", metavar="TAG",
              help="With --wheel vllm==X: the platform the wheel is for, e.g. manylinux_2_28_x86_64 "
                   "(default: this machine's).")
@click.option("--python-version", metavar="3.X",
              help="With --wheel vllm==X: the Python the wheel is for (default: this interpreter's).")
@click.option("--dry-run", is_flag=True, help="Compute and report; move no branch, write no wheel.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def build(ctx: Context, wheel: str | None, out: Path | None, from_source: bool, platform: str | None,
          python_version: str | None, dry_run: bool, as_json: bool) -> None:
    """Build the integration branch (base + every active topic) and, with --wheel, the patched wheel.

    \b
    The integration commit is computed in memory and written to the 'integration:' branch
    of series.yaml (journaled: 'series undo' reverts it). With --wheel, a Python-only
    series is laid over the release wheel: unchanged members are copied as they are,
    RECORD is regenerated and one local version is stamped everywhere, e.g.
    0.31.0+series.g1a2b3c4. A manifest JSON goes beside the wheel. The wheel's path is
    the last line printed.
    \b
    Examples:
      series build                                 integration branch only
      series build --wheel vllm==0.31.0            patched wheel into dist/
      series build --wheel ~/wheels/vllm-0.31.0-cp38-abi3-manylinux_2_28_x86_64.whl --out /tmp/w
      series build --wheel vllm==0.31.0 --from-source --dry-run   show the build command
    """
    from series.build.fetch import Target
    from series.commands import build as cmd

    ws = ctx.workspace()
    result = cmd.run(ws, wheel=wheel, out=out, from_source=from_source, dry_run=dry_run,
                     progress=lambda msg: click.echo(msg, err=True),
                     target=Target(platform, python_version))
    if as_json:
        emit_json(cmd.as_json(result))
    else:
        emit(cmd.render(result))


@click.command("test")
@click.argument("topics", nargs=-1, metavar="[TOPIC]...")
@click.option("--run", "do_run", is_flag=True,
              help="Run the selected steps' pytest commands here (CPU steps, or those named with "
                   "--step) on the integration tree, with this environment's pytest and vLLM.")
@click.option("--step", "steps", multiple=True, metavar="KEY", help="With --run: run this step (repeatable).")
@click.option("--without", metavar="TOPIC",
              help="With --run: run again without TOPIC and list the tests that fail without it "
                   "and pass with it.")
@click.option("--use-installed", is_flag=True,
              help="With --run: import vllm from the environment (e.g. the installed patched wheel) "
                   "instead of the integration tree.")
@click.option("--all-steps", is_flag=True, help="Also list steps upstream runs on every change.")
@click.option("--format", "fmt", type=click.Choice(["text", "github-matrix", "buildkite"]), default="text",
              help="github-matrix: a GitHub Actions matrix (JSON); buildkite: a pipeline to upload.")
@click.option("--device", "devices", multiple=True, metavar="DEVICE",
              help="With --format: only steps of this upstream device, e.g. h100 (repeatable).")
@click.option("--exclude-optional", is_flag=True,
              help="With --format: leave out upstream's optional steps (else they sit behind a block step).")
@click.option("--max-steps", type=click.IntRange(min=0), metavar="N",
              help="With --format: at most N steps (the first in file order).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
@click.pass_context
def test(click_ctx: click.Context, ctx: Context, topics: tuple[str, ...], do_run: bool,
         steps: tuple[str, ...], without: str | None, use_installed: bool, all_steps: bool,
         fmt: str, devices: tuple[str, ...], exclude_optional: bool, max_steps: int | None,
         as_json: bool) -> None:
    """Upstream's CI steps that cover what the series (or the given TOPICs) touches.

    \b
    Steps come from the base's .buildkite/test_areas/*.yaml, chosen by upstream's own rule:
    a changed path selects a step when it is, or is below, one of the step's
    source_file_dependencies and under none of its '!' exclusions (an exclusion always
    wins), or is the step's YAML file; a run-all path (ci_config.yaml: setup.py, csrc/ ...)
    selects every step. Optional steps go behind a Buildkite block step. Devices map to
    your queues or runner labels through series.yaml 'ci: queues: {h100: my-h100}'.
    \b
    Examples:
      series test                               steps covering the whole series
      series test offload-evict-fix --run       run its CPU steps here
      series test --run --without offload-evict-fix   evidence the topic is needed
      series test --format github-matrix        one GitHub Actions job per step
      series test --format buildkite --device h100 --exclude-optional --max-steps 20
    """
    from series.commands import test as cmd

    if (steps or without or use_installed) and not do_run:
        raise click.UsageError("--step, --without and --use-installed go with --run")
    ws = ctx.workspace()
    plan = cmd.select(ws, topics, include_always=all_steps)
    if (devices or exclude_optional or max_steps is not None) and fmt == "text":
        raise click.UsageError("--device, --exclude-optional and --max-steps go with "
                               "--format github-matrix|buildkite")
    if fmt in ("github-matrix", "buildkite"):
        emit(cmd.formatted(ws, plan, fmt, devices, exclude_optional, max_steps))
        return
    if not do_run:
        if as_json:
            emit_json(cmd.plan_json(plan))
        else:
            emit(cmd.render_plan(plan))
        return
    report = cmd.run(ws, plan, steps, without, use_installed,
                     progress=lambda msg: click.echo(msg, err=True))
    if as_json:
        emit_json({**cmd.plan_json(plan), "run": cmd.run_json(report)})
    else:
        emit(cmd.render_run(report))
    if report.failed:
        click_ctx.exit(1)


COMMANDS = [build, test]
