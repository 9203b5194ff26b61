"""The command line: parse flags, call series.commands.<verb>.run(...), map errors to exits.

series/cli/ is the only package that imports click: this module holds the group and the
error mapping, and one module per area holds its verbs (registered in _register()).
"""
from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import click

from series import __version__
from series.errors import EXIT_BUG, SeriesError, redact, write_bug_log
from series.validate import printable


class Context:
    def __init__(self, config_file: Path | None, directory: Path | None):
        self.config_file = config_file
        self.directory = directory

    def workspace(self, check_branches: bool = True) -> Any:
        from series.workspace import open_workspace

        return open_workspace(self.config_file, self.directory, check_branches)


pass_ctx = click.make_pass_decorator(Context)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="series")
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False),
              help="series.yaml to use (default: found in this directory or its parents).")
@click.option("-C", "directory", type=click.Path(path_type=Path, file_okay=False),
              help="Run as if started in DIR.")
@click.option("-v", "--verbose", is_flag=True, help="Log git commands and timings to stderr.")
@click.pass_context
def group(ctx: click.Context, config_file: Path | None, directory: Path | None, verbose: bool) -> None:
    """Manage a downstream fork of vLLM as an ordered series of topic branches.

    \b
    series.yaml lists the topics over an upstream release tag. Typical day:
      series status                      what the fork carries
      series touches vllm/v1/kv_offload  which topics change that path (exit 1: none)
      series rebase --onto v0.31         move every topic onto a new release
      series adopt-upstream 61050        carry an upstream PR instead of our topic
    Try 'series demo' for a five-minute tour in a scratch directory.
    """
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(name)s: %(message)s", stream=sys.stderr)
    ctx.obj = Context(config_file, directory)


def emit(text: str) -> None:
    # text from outside (PR titles, subjects, server messages) may hold terminal escapes
    click.echo(printable(redact(text)), nl=not text.endswith("\n"))


def emit_json(data: object) -> None:
    """--json output: one indented document on stdout, keys in the order the command built."""
    import json

    click.echo(redact(json.dumps(data, indent=2)))


_AREAS = ("basic", "history", "rebase", "upstream", "propose", "build", "patches", "demo")


def _register() -> None:
    import importlib

    for area in _AREAS:
        module = importlib.import_module(f"series.cli.{area}")
        for command in module.COMMANDS:
            group.add_command(command)


def _start_dir(argv: list[str] | None) -> Path:
    args = list(sys.argv[1:] if argv is None else argv)
    for i, arg in enumerate(args[:-1]):
        if arg == "-C":
            return Path(args[i + 1])
    return Path.cwd()


def main(argv: list[str] | None = None) -> None:
    _register()
    try:
        code = group.main(args=argv, prog_name="series", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except SeriesError as exc:
        click.echo(f"series: error: {printable(redact(str(exc)))}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except OSError as exc:
        from series.workspace import NO_SPACE, disk_error

        if exc.errno not in NO_SPACE:
            raise _bug(exc) from None
        click.echo(f"series: error: {printable(redact(str(disk_error(exc))))}", err=True)  # the user's to fix, never a bug
        sys.exit(1)
    except Exception as exc:  # a bug: log it, say where, exit with the bug code
        from series.git.partial import explain

        known = explain(exc, _start_dir(argv))
        if known is not None:  # a partial or shallow clone lacking an object: the user's to fix
            click.echo(f"series: error: {known}", err=True)
            sys.exit(1)
        raise _bug(exc) from None
    sys.exit(code if isinstance(code, int) else 0)


def _bug(exc: BaseException) -> SystemExit:
    path = write_bug_log(exc)
    click.echo(f"series: internal error ({type(exc).__name__}: {printable(redact(str(exc)))}); "
               f"details in {path}; please report it", err=True)
    return SystemExit(EXIT_BUG)
