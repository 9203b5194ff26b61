"""Verbs of the build area: build (integration branch, patched wheel) and test (upstream CI map)."""
from __future__ import annotations

import json
from pathlib import Path

import click

from series.cli import Context, emit, pass_ctx


def print_json(data: object) -> None:
    click.echo(json.dumps(data, indent=2))


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
        print_json(cmd.as_json(result))
    else:
        emit(cmd.render(result))


COMMANDS = [build]
