"""docs/cli.md is what tools/cli_reference.py writes now: a `--help` changed without
regenerating it fails here (run `python tools/cli_reference.py`)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "tools" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_cli_reference_is_what_the_generator_writes_now() -> None:
    committed = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert committed == generator().render(), "docs/cli.md is out of date: run python tools/cli_reference.py"


def test_the_reference_lists_every_verb_the_lazy_verb_table_offers() -> None:
    """The group's `commands` is empty (verbs are imported when they run): the generator
    must still reach every module of series.verbs, and the subcommands of a verb group."""
    import click

    from series.cli import group

    verbs = group.list_commands(click.Context(group))
    assert len(verbs) >= 25 and "rebase" in verbs and "adopt-upstream" in verbs and "import" in verbs
    headings = re.findall(r"^## (.+)$", (ROOT / "docs" / "cli.md").read_text(encoding="utf-8"), re.M)
    assert {f"series {v}" for v in verbs} <= set(headings), sorted({f"series {v}" for v in verbs} - set(headings))
    assert "series ci init" in headings


def test_a_changed_help_makes_the_reference_stale(monkeypatch: object) -> None:
    """The check can fail: a verb's help edited in memory no longer matches the file."""
    import pytest

    from series.cli import group

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    command = group.get_command(__import__("click").Context(group), "undo")
    assert command is not None
    monkeypatch.setattr(command, "help", (command.help or "") + " Changed.")
    committed = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert committed != generator().render()
