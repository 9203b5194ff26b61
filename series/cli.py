"""The command line: the group, its global options, output, and the one exit-code mapper.

The verbs are the modules of series.verbs (STYLE rule 5): `series adopt-upstream` is
series/verbs/adopt_upstream.py (or a package of that name), whose `command` is its click
command. A verb is found by its module's name and imported only when it runs, so
`series rebase` pays for the rebase engine alone; a new verb is one new module.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import sys
from dataclasses import dataclass
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


@dataclass
class Output:
    """How text reaches the user: set once by the global options, read by emit()."""
    quiet: bool = False
    color: str = "auto"      # auto | always | never
    pager: bool = True

    def colored(self, stream: object) -> bool:
        if self.color == "never" or (self.color == "auto" and os.environ.get("NO_COLOR")):
            return False  # https://no-color.org: any non-empty NO_COLOR means no colour
        if self.color == "always":
            return True
        return bool(getattr(stream, "isatty", lambda: False)()) and os.environ.get("TERM") != "dumb"


OUTPUT = Output()
_STYLES = ((re.compile(r"^(\s*)(warning:|note:)"), "yellow"), (re.compile(r"^(\s*)(error:)"), "red"),
           (re.compile(r"()\b(conflicts?|CONFLICT|no longer applies|failed)\b"), "red"),
           (re.compile(r"()\b(clean|ok|passed)\b"), "green"))


def colorize(text: str) -> str:
    def line(s: str) -> str:
        for pattern, colour in _STYLES:
            s = pattern.sub(lambda m: m.group(1) + click.style(m.group(2), fg=colour, bold=colour == "red"), s)
        return s
    return "\n".join(line(s) for s in text.split("\n"))


class VerbTable(click.Group):
    """The verbs, one per module of series.verbs, imported when asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        import pkgutil

        import series.verbs

        return sorted(verb_name(m.name) for m in pkgutil.iter_modules(series.verbs.__path__)
                      if not m.name.startswith("_"))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        import importlib

        if cmd_name not in self.list_commands(ctx):
            return None
        module = importlib.import_module(f"series.verbs.{module_name(cmd_name)}")
        command: click.Command = module.command
        _complete_topic_names(command)
        return command


def verb_name(module: str) -> str:
    """adopt_upstream -> adopt-upstream; import_ (a Python keyword) -> import."""
    return module.rstrip("_").replace("_", "-")


def module_name(verb: str) -> str:
    import keyword

    name = verb.replace("-", "_")
    return name + "_" if keyword.iskeyword(name) else name


@click.group(cls=VerbTable, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="series")
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False),
              help="series.yaml to use (default: found in this directory or its parents).")
@click.option("-C", "directory", type=click.Path(path_type=Path, file_okay=False),
              help="Run as if started in DIR.")
@click.option("-v", "--verbose", is_flag=True, help="Log git commands and timings to stderr.")
@click.option("-q", "--quiet", is_flag=True,
              help="Print only errors and --json documents; the exit code tells the outcome.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour: on a terminal (auto), always, or never. NO_COLOR=1 means never.")
@click.option("--no-pager", is_flag=True,
              help="Do not page long output on a terminal (default: $PAGER, else less -FRX).")
@click.pass_context
def group(ctx: click.Context, config_file: Path | None, directory: Path | None, verbose: bool,
          quiet: bool, color: str, no_pager: bool) -> None:
    """Manage a downstream fork of vLLM as an ordered series of topic branches.

    \b
    series.yaml lists the topics over an upstream release tag. Typical day:
      series status                      what the fork carries
      series touches vllm/v1/kv_offload  which topics change that path (exit 1: none)
      series rebase --onto v0.31         move every topic onto a new release
      series adopt-upstream 61050        carry an upstream PR instead of our topic
    Try 'series demo' for a five-minute tour in a scratch directory.
    """
    logging.basicConfig(level=logging.DEBUG if verbose else logging.ERROR if quiet else logging.WARNING,
                        format="%(name)s: %(message)s", stream=sys.stderr)
    OUTPUT.quiet, OUTPUT.color, OUTPUT.pager = quiet, color, not no_pager
    if quiet:  # progress lines go to stderr from many verbs: silence them all, errors excepted
        saved, sys.stderr = sys.stderr, open(os.devnull, "w")  # noqa: SIM115 (closed below)

        def restore() -> None:
            sys.stderr.close()
            sys.stderr = saved
        ctx.call_on_close(restore)  # before main() prints an error
    ctx.obj = Context(config_file, directory)


def emit(text: str) -> None:
    """A verb's text output: nothing with --quiet; coloured and paged on a terminal."""
    if OUTPUT.quiet:
        return
    # text from outside (PR titles, subjects, server messages) may hold terminal escapes
    text = printable(redact(text))
    color = OUTPUT.colored(sys.stdout)
    shown = colorize(text) if color else text
    if OUTPUT.pager and sys.stdout.isatty() and text.count("\n") + 1 > shutil.get_terminal_size().lines - 1:
        os.environ.setdefault("LESS", "FRX")  # quit when it fits, keep colour, leave it on screen
        click.echo_via_pager(shown if shown.endswith("\n") else shown + "\n", color=color)
        return
    click.echo(shown, nl=not text.endswith("\n"), color=color)


JSON_SCHEMA = 1  # bumped when a --json shape changes incompatibly


def emit_json(data: object) -> None:
    """--json output: one indented document on stdout, keys in the order the command built,
    led by "schema": 1 so CI can tell shapes apart."""
    import json

    if isinstance(data, dict) and "schema" not in data:
        data = {"schema": JSON_SCHEMA, **data}
    click.echo(redact(json.dumps(data, indent=2)))


# Parameters that take a topic name, whichever verb declares them: they complete topic names.
_TOPIC_PARAMS = ("topic", "topics", "without", "replaces", "after", "depends_on", "by")


def _complete_topic_names(command: click.Command) -> None:
    for param in command.params:
        if param.name in _TOPIC_PARAMS and getattr(param, "_custom_shell_complete", None) is None:
            param._custom_shell_complete = complete_topics
    for sub in getattr(command, "commands", {}).values():
        _complete_topic_names(sub)


def complete_topics(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Topic names from the series.yaml found from here; nothing when there is none."""
    try:
        from series.config import find, load

        params = ctx.find_root().params
        found = find(Path(params.get("directory") or os.getcwd()), params.get("config_file"))
        return [t.name for t in load(found).topics if t.name.startswith(incomplete)]
    except Exception:  # completion must never print a traceback into the shell
        return []


def _start_dir(argv: list[str] | None) -> Path:
    args = list(sys.argv[1:] if argv is None else argv)
    for i, arg in enumerate(args[:-1]):
        if arg == "-C":
            return Path(args[i + 1])
    return Path.cwd()


def main(argv: list[str] | None = None) -> None:
    try:
        code = group.main(args=argv, prog_name="series", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except SeriesError as exc:
        prefix = "series: error:"
        if OUTPUT.colored(sys.stderr):
            prefix = click.style(prefix, fg="red", bold=True)
        click.echo(f"{prefix} {printable(redact(str(exc)))}", err=True, color=OUTPUT.colored(sys.stderr))
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
