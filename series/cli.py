"""The command line: the group, its global options, the verb table and the one exit-code mapper.

The verbs are the modules of series.verbs (CONTRIBUTING.md rule 5): `series adopt-upstream` is
series/verbs/adopt_upstream.py (or a package of that name), whose `command` is its click
command. A verb is found by its module's name and imported only when it runs, so
`series rebase` pays for the rebase engine alone; a new verb is one new module. What a
verb takes from here (its Context, emit, emit_json) is series.cli_support's, below the
verbs: no verb imports this module (docs/architecture.md, "Package order").
"""

from __future__ import annotations

import os
import pkgutil
import re
import sys
from pathlib import Path
from typing import Any

import click

from series import __version__
from series.cli_support import OUTPUT, Context, unknown_verb
from series.errors import EXIT_BUG, SeriesError, redact, write_bug_log


class VerbTable(click.Group):
    """The verbs, one per module of series.verbs, imported when asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_verb_modules())

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        import importlib

        if cmd_name not in _verb_modules():
            return None
        module = importlib.import_module(f"series.verbs.{module_name(cmd_name)}")
        command: click.Command = module.command
        _complete_topic_names(command)
        _accept_output_options(command)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and not ctx.resilient_parsing and args[0] not in _verb_modules() and not args[0].startswith("-"):
            ctx.fail(unknown_verb(args[0], self.list_commands(ctx)))
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing, but each line read from the verb's source: `series --help`
        imports no verb (and so not pygit2). tests/test_layout.py proves the lines equal
        the imported commands' own short help."""
        verbs = self.list_commands(ctx)
        if verbs:
            limit = formatter.width - 6 - max(len(v) for v in verbs)
            with formatter.section("Commands"):
                formatter.write_dl([(v, self.listed_help(ctx, v, limit)) for v in verbs])

    def listed_help(self, ctx: click.Context, verb: str, limit: int) -> str:
        """The verb's short help, made by click from its command's docstring read from the
        source; a module this cannot read is imported instead."""
        info = _verb_modules()[verb]
        path = getattr(info.module_finder, "path", None)
        if path is not None:
            source = Path(path) / info.name / "__init__.py" if info.ispkg else Path(path) / f"{info.name}.py"
            doc = _command_docstring(source)
            if doc is not None:
                return click.Command(verb, help=doc).get_short_help_str(limit)
        command = self.get_command(ctx, verb)
        return command.get_short_help_str(limit) if command is not None else ""


_VERBS: dict[tuple[str, ...], dict[str, pkgutil.ModuleInfo]] = {}


def _verb_modules() -> dict[str, pkgutil.ModuleInfo]:
    """Listed once per process (`--help` asks for every verb's line): keyed by the package's
    path, which a test extends with a verb of its own."""
    import series.verbs

    where = tuple(series.verbs.__path__)
    if where not in _VERBS:
        _VERBS[where] = {verb_name(m.name): m for m in pkgutil.iter_modules(where) if not m.name.startswith("_")}
    return _VERBS[where]


def _command_docstring(source: Path) -> str | None:
    """The docstring of the function the module names `command` (`command = ci` names ci),
    parsed from that def to its end: the rest of the module is not parsed."""
    try:
        text = source.read_text(encoding="utf-8")
    except OSError:
        return None
    alias = re.search(r"^command = (\w+)$", text, re.M) if "\ncommand = " in text else None
    # the def at a line's start (str.find: a multi-line regex tries every position of the file)
    head = f"def {alias.group(1) if alias else 'command'}("
    start = 0 if text.startswith(head) else text.find("\n" + head) + 1
    if start == 0 and not text.startswith(head):  # find gave -1: no such def
        return None
    # `series --help` reads every verb's: parsing the def up to its docstring's end is enough
    quote = text.find('"""', start)
    end_quote = text.find('"""', quote + 3) if quote >= 0 else -1
    if end_quote >= 0:
        doc = _docstring_of(text[start : end_quote + 3])
        if doc is not None:
            return doc
    lines = text[start:].split("\n")
    end = next((i for i, line in enumerate(lines[1:], 1) if line[:1] not in ("", " ", "\t", "#", ")")), len(lines))
    return _docstring_of("\n".join(lines[:end]))


def _docstring_of(source: str) -> str | None:
    """The docstring of the function `source` begins with, or None (no docstring, or no
    function there)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    func = tree.body[0] if tree.body else None
    return ast.get_docstring(func) if isinstance(func, ast.FunctionDef) else None


def verb_name(module: str) -> str:
    """adopt_upstream -> adopt-upstream; import_ (a Python keyword) -> import."""
    return module.rstrip("_").replace("_", "-")


def module_name(verb: str) -> str:
    import keyword

    name = verb.replace("-", "_")
    return name + "_" if keyword.iskeyword(name) else name


# The output options: the group's, and accepted after the verb too (`series status --color
# always`): get_command gives every verb hidden copies whose callbacks override the group's.
_OUTPUT_OPTIONS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("-v", "--verbose"), {"is_flag": True, "help": "Log git commands and timings to stderr."}),
    (
        ("-q", "--quiet"),
        {"is_flag": True, "help": "Print only errors and --json documents; the exit code tells the outcome."},
    ),
    (
        ("--color",),
        {
            "type": click.Choice(["auto", "always", "never"]),
            "help": "Colour: on a terminal (auto, the default), always, or never. Under auto, "
            "NO_COLOR=1 means never, else CLICOLOR_FORCE=1 means always.",
        },
    ),
    (
        ("--no-pager",),
        {
            "is_flag": True,
            "help": "Do not page long output on a terminal (pager: $SERIES_PAGER, $GIT_PAGER, "
            "core.pager, $PAGER, else less -FRX).",
        },
    ),
)


def _output_options(func: Any) -> Any:
    for decls, attrs in reversed(_OUTPUT_OPTIONS):
        func = click.option(*decls, **attrs)(func)
    return func


def _accept_output_options(command: click.Command) -> None:
    if not any(p.name == "color" for p in command.params):
        command.params += [
            click.Option(list(decls), expose_value=False, hidden=True, callback=_late_output, **attrs)
            for decls, attrs in _OUTPUT_OPTIONS
        ]
    for sub in getattr(command, "commands", {}).values():
        _accept_output_options(sub)


def _late_output(ctx: click.Context, param: click.Parameter, value: object) -> None:
    """An output option after the verb: the group has set the output up, this amends it."""
    if value is None or value is False:
        return
    if param.name == "color":
        OUTPUT.color = str(value)
    elif param.name == "no_pager":
        OUTPUT.pager = False
    elif param.name == "verbose":
        OUTPUT.verbose = True
    elif param.name == "quiet" and not OUTPUT.quiet:
        OUTPUT.quiet = True
        _silence(ctx.find_root())
    import logging

    logging.getLogger().setLevel(OUTPUT.log_level())


def _silence(ctx: click.Context) -> None:
    """--quiet: progress lines go to stderr from many verbs; silence them all, errors excepted."""
    saved, sys.stderr = sys.stderr, open(os.devnull, "w")  # noqa: SIM115 (closed below)

    def restore() -> None:
        sys.stderr.close()
        sys.stderr = saved

    ctx.call_on_close(restore)  # before main() prints an error


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(versions())
        ctx.exit()


def versions() -> str:
    """series, and what it runs on: a bug report wants all three, even when one is missing."""
    from series.git.command import git

    lines = [f"series {__version__}"]
    try:
        lines.append(git(Path(os.sep), "--version").stdout.strip())
    except SeriesError as exc:
        lines.append(f"git: {exc.text}")
    try:
        import pygit2
    except ImportError as exc:
        lines.append(f"pygit2: cannot be imported ({exc})")
    else:
        lines.append(f"pygit2 {getattr(pygit2, '__version__', '?')} (libgit2 {pygit2.LIBGIT2_VERSION})")
    return "\n".join(lines)


EPILOG = """\b
The output options (-v, -q, --color, --no-pager) may also follow the verb.
'series help VERB' is 'series VERB --help'.
\b
Exit codes: 0 ok, 1 an error you can fix (the message says how), 2 usage,
3 conflict, 4 a bug in series (the message names a log file), 5 'test --run':
a test got worse than on the base release, 6 'check': warnings, no problem.
touches: 0 touched, 1 not touched, 2 an error.
"""


@click.group(cls=VerbTable, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EPILOG)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Show the versions of series, git, pygit2 and libgit2, and exit.",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="series.yaml to use (default: found in this directory or its parents).",
)
@click.option("-C", "directory", type=click.Path(path_type=Path, file_okay=False), help="Run as if started in DIR.")
@_output_options
@click.pass_context
def group(
    ctx: click.Context,
    config_file: Path | None,
    directory: Path | None,
    verbose: bool,
    quiet: bool,
    color: str | None,
    no_pager: bool,
) -> None:
    """Manage a downstream fork of vLLM as an ordered series of topic branches.

    \b
    series.yaml lists the topics over an upstream release tag. Typical day:
      series status                      what the fork carries
      series touches vllm/v1/kv_offload  which topics change that path (exit 1: none)
      series rebase --onto v0.31         move every topic onto a new release
      series adopt-upstream 61050        carry an upstream PR instead of our topic
    Try 'series demo' for a five-minute tour in a scratch directory.
    """
    OUTPUT.quiet, OUTPUT.verbose, OUTPUT.color, OUTPUT.pager = quiet, verbose, color or "auto", not no_pager
    if directory is not None:
        # git -C changes directory first, so every relative path the command is given (a PATH,
        # --config, export's DIRECTORY, build --out) is read from DIR, not only discovery's
        try:
            os.chdir(directory)
        except OSError as exc:
            raise SeriesError(
                f"-C {directory}: cannot change to that directory ({exc.strerror or exc})", "give an existing directory"
            ) from None
        directory = Path.cwd()
    OUTPUT.directory = directory
    import logging  # here, not at the top: `series --help` and usage errors never get here

    logging.basicConfig(level=OUTPUT.log_level(), format="%(name)s: %(message)s", stream=sys.stderr)
    if quiet:
        _silence(ctx)
    ctx.obj = Context(config_file, directory)


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
        from series.seriesfile.config import find, load

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
        from series.validate import printable  # here: its patterns compile only for an error shown

        prefix = "series: error:"
        if OUTPUT.colored(sys.stderr):
            prefix = click.style(prefix, fg="red", bold=True)
        click.echo(f"{prefix} {printable(redact(str(exc)))}", err=True, color=OUTPUT.colored(sys.stderr))
        if exc.hint:
            click.echo(f"hint: {printable(redact(exc.hint))}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except OSError as exc:
        from series.validate import printable
        from series.workspace import NO_SPACE, disk_error

        if exc.errno not in NO_SPACE:
            raise _bug(exc) from None
        click.echo(
            f"series: error: {printable(redact(str(disk_error(exc))))}", err=True
        )  # the user's to fix, never a bug
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
    from series.validate import printable

    path = write_bug_log(exc)
    click.echo(
        f"series: internal error ({type(exc).__name__}: {printable(redact(str(exc)))}); "
        f"details in {path}; please report it",
        err=True,
    )
    return SystemExit(EXIT_BUG)
