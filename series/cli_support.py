"""What a verb takes from the command line: its Context and its output (issue 35).

series.cli is the click group, its global options and the verb table; the verbs import
these from here, below both, so no verb imports series.cli (which finds the verbs) and the
packages form layers (docs/architecture.md, "Package order"):

    Context, pass_ctx   where the command runs (-C, --config) and the workspace it opens
    OUTPUT              the global output options, set by the group, read by emit()
    emit(text)          a verb's text output: nothing with --quiet; coloured and paged on a terminal
    emit_json(data)     --json output, led by "schema"
    unknown_verb        the usage error for a verb that is not there (the group's, and `series help`'s)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from series.errors import redact
from series.output import Output, page

if TYPE_CHECKING:  # imported when a verb opens it: --help loads no pygit2
    from series.workspace import Workspace


class Context:
    def __init__(self, config_file: Path | None, directory: Path | None):
        self.config_file = config_file
        self.directory = directory

    @property
    def here(self) -> Path:
        """Where the command runs (CONTRIBUTING.md rule 3): -C DIR, else the process's directory, as
        git -C changes directory first; repository PATHs and discovery start here."""
        return self.directory or Path.cwd()

    def workspace(self, check_branches: bool = True) -> Workspace:
        from series.workspace import open_workspace

        return open_workspace(self.config_file, self.directory, check_branches)


pass_ctx = click.make_pass_decorator(Context)


OUTPUT = Output()
# compiled by colorize (re's cache), on a terminal only: not at every command's start
_STYLES = (
    (r"^(\s*)(warning:|note:)", "yellow"),
    (r"^(\s*)(error:)", "red"),
    (r"()\b(conflicts?|CONFLICT|no longer applies|failed)\b", "red"),
    (r"()\b(clean|ok|passed)\b", "green"),
)


def colorize(text: str) -> str:
    def line(s: str) -> str:
        for pattern, colour in _STYLES:
            s = re.sub(pattern, lambda m: m.group(1) + click.style(m.group(2), fg=colour, bold=colour == "red"), s)
        return s

    return "\n".join(line(s) for s in text.split("\n"))


def unknown_verb(name: str, verbs: list[str]) -> str:
    import difflib

    near = difflib.get_close_matches(name, verbs, n=1)
    return f"No such command {name!r}." + (f" Did you mean {near[0]!r}?" if near else "")


def emit(text: str) -> None:
    """A verb's text output: nothing with --quiet; coloured and paged on a terminal."""
    if OUTPUT.quiet:
        return
    import shutil  # here, not at the top: --help and a command that fails early print nothing paged

    from series.validate import printable

    # text from outside (PR titles, subjects, server messages) may hold terminal escapes
    text = printable(redact(text))
    color = OUTPUT.colored(sys.stdout)
    shown = colorize(text) if color else text
    if OUTPUT.pager and sys.stdout.isatty() and text.count("\n") + 1 > shutil.get_terminal_size().lines - 1:
        pager = OUTPUT.pager_command()
        if pager is not None and page(pager, shown if shown.endswith("\n") else shown + "\n"):
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
