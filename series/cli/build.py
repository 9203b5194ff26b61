"""Verbs of the build area: build (integration branch, patched wheel) and test (upstream CI map)."""
from __future__ import annotations

from pathlib import Path

import click

from series.cli import Context, emit, emit_json, pass_ctx
from series.errors import EXIT_WORSE




@click.command()
@click.option("--wheel", metavar="vllm==X | PATH.whl",
              help="Also build the patched wheel from this release wheel (fetched once with pip into "
                   "~/.cache/series/wheels) or a local file.")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False),
              help="Where the wheel and its manifest go (default: dist/ beside series.yaml).")
@click.option("--from-source", is_flag=True,
              help="Build with vLLM's own setup in a temporary worktree (needed when the series "
                   "changes csrc/, cmake/, setup.py, pyproject.toml or requirements/).")
@click.option("--dry-run", is_flag=True, help="Compute and report; move no branch, write no wheel.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def build(ctx: Context, wheel: str | None, out: Path | None, from_source: bool, dry_run: bool,
          as_json: bool) -> None:
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
    from series.commands import build as cmd

    ws = ctx.workspace()
    result = cmd.run(ws, wheel=wheel, out=out, from_source=from_source, dry_run=dry_run,
                     progress=lambda msg: click.echo(msg, err=True))
    if as_json:
        emit_json(cmd.as_json(result))
    else:
        emit(cmd.render(result))


@click.command("test")
@click.argument("topics", nargs=-1, metavar="[TOPIC]...")
@click.option("--run", "do_run", is_flag=True,
              help="Run upstream's tests over the installed release build (see --python), in the "
                   "trees base and series (or those --without/--compare/--tree name), and compare.")
@click.option("--python", "python", metavar="PY",
              help="With --run: the interpreter of the environment that has the base release of vLLM "
                   "(or the patched wheel of 'series build') and pytest installed (default: this one).")
@click.option("--without", metavar="TOPIC",
              help="With --run: also the series without TOPIC; lists the tests that fail without it "
                   "and pass with it.")
@click.option("--compare", nargs=2, metavar="A B",
              help="With --run: topics A and B each alone on the base (ours vs the adopted PR), "
                   "instead of the series.")
@click.option("--tree", "trees", multiple=True, metavar="NAME",
              help="With --run: one more tree (base, series, without:TOPIC, only:TOPIC; repeatable).")
@click.option("--step", "steps", multiple=True, metavar="KEY",
              help="With --run: run this step's own pytest commands whole instead of the selected "
                   "test files (repeatable).")
@click.option("--no-cache", is_flag=True, help="With --run: rerun every tree, even cached results.")
@click.option("--all-steps", is_flag=True, help="Also list steps upstream runs on every change.")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "github-matrix", "buildkite"]),
              default="text",
              help="markdown: the --run table as a PR comment; github-matrix: a GitHub Actions matrix "
                   "(JSON); buildkite: a pipeline to upload.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI (per-test table with --run).")
@pass_ctx
@click.pass_context
def test(click_ctx: click.Context, ctx: Context, topics: tuple[str, ...], do_run: bool, python: str | None,
         without: str | None, compare: tuple[str, str] | None, trees: tuple[str, ...],
         steps: tuple[str, ...], no_cache: bool, all_steps: bool, fmt: str, as_json: bool) -> None:
    """Upstream's CI steps that cover what the series (or the given TOPICs) touches; with
    --run, upstream's own tests over the release build, with and without a topic.

    \b
    Steps come from the base's .buildkite/test_areas/*.yaml: a changed path selects a step
    when it falls under the step's source_file_dependencies (most specific prefix wins,
    '!' excludes) or is the step's own YAML file. Printed: label, device, commands.
    \b
    --run needs one environment with the base release of vLLM, torch and pytest (see the
    README). Every tree is the installed build with that tree's Python changes laid over
    it; the tests come from the tree, where the source cannot shadow the build. The test
    files are those of the covering steps (GPU steps too: what cannot run here skips or
    fails on base as well) that import a changed module, plus the topics' own tests.
    Tests failing on base are this machine's and count against no tree.
    Exit 0: no test worse than on base; 5: some test is worse; 130/143: interrupted
    (the partial table is printed).
    \b
    Examples:
      series test                               steps covering the whole series
      series test offload-evict-fix --run --python ~/vllm-0.31/bin/python
      series test --run --without offload-evict-fix   evidence the topic is needed
      series test --run --compare offload-evict-fix pr-61050 --format markdown
      series test --run --step kv-offload       that step's commands, whole
      series test --format github-matrix        one GitHub Actions job per step
    """
    from series.commands import test as cmd

    if (steps or without or compare or trees or python or no_cache) and not do_run:
        raise click.UsageError("--python, --without, --compare, --tree, --step and --no-cache go with --run")
    if fmt == "markdown" and not do_run:
        raise click.UsageError("--format markdown renders the --run table: add --run")
    ws = ctx.workspace()
    plan = cmd.select(ws, topics or (tuple(compare) if compare else ()), include_always=all_steps)
    if fmt == "github-matrix":
        emit(cmd.github_matrix(plan))
        return
    if fmt == "buildkite":
        emit(cmd.buildkite(plan))
        return
    if not do_run:
        if as_json:
            emit_json(cmd.plan_json(plan))
        else:
            emit(cmd.render_plan(plan))
        return
    import sys

    from series.build import matrix as table
    from series.commands.evidence import EvidenceInterrupted

    def show(result: "table.Matrix") -> None:
        if as_json:
            emit_json(table.as_json(result))
        elif fmt == "markdown":
            emit(table.render_markdown(result))
        else:
            emit(table.render_text(result))

    try:
        result = cmd.run(ws, plan, python=python or sys.executable, without=without,
                         compare=(compare[0], compare[1]) if compare else None, trees=trees, steps=steps,
                         use_cache=not no_cache, say=lambda msg: click.echo(msg, err=True))
    except EvidenceInterrupted as stop:
        show(stop.matrix)
        click.echo(f"series: interrupted ({stop.matrix.interrupted}); temporary files removed", err=True)
        click_ctx.exit(128 + stop.signum)
    show(result)
    if result.worse():
        click_ctx.exit(EXIT_WORSE)


COMMANDS = [build, test]
