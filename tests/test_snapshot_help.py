"""Whole-output snapshots of `series --help` and every verb's `--help` (tests/snapshots.py).

A snapshot is the expected output, kept in tests/snapshots/<test>.txt; a change fails with
a unified diff. To accept a change on purpose: `pytest tests/test_snapshot_*.py
--snapshot-update` (or SERIES_SNAPSHOT_UPDATE=1), look at `git diff tests/snapshots`, and
say in the commit message why the output changed.
"""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from series.cli import group
from tests.conftest import run_series
from tests.snapshots import SNAPSHOT_DIR, Snapshot

# Help text is wrapped to the terminal's width: one width for every machine.
WIDTH = {"COLUMNS": "80"}


def _verbs() -> list[tuple[str, ...]]:
    """Every verb, and every subcommand of a verb that has them (`ci init`), read from the
    commands themselves: a new verb or subcommand gets a test, failing until its snapshot is written."""
    ctx = click.Context(group)
    verbs: list[tuple[str, ...]] = []
    for name in group.list_commands(ctx):
        verbs.append((name,))
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            verbs += [(name, sub) for sub in command.list_commands(click.Context(command))]
    return verbs


def test_series_help(tmp_path: Path, snapshot: Snapshot) -> None:
    snapshot.run(run_series("--help", cwd=tmp_path, env=WIDTH))


@pytest.mark.parametrize("verb", _verbs(), ids="-".join)
def test_verb_help(verb: tuple[str, ...], tmp_path: Path, snapshot: Snapshot) -> None:
    snapshot.run(run_series(*verb, "--help", cwd=tmp_path, env=WIDTH))


def test_every_snapshot_belongs_to_a_test() -> None:
    """A renamed or removed test leaves its snapshots behind: they would mislead a reader."""
    from tests import test_snapshot_ship, test_snapshot_verbs

    tests = {
        name for module in (test_snapshot_ship, test_snapshot_verbs) for name in dir(module) if name.startswith("test_")
    }
    tests |= {"test_series_help"} | {"test_verb_help-" + "-".join(verb) for verb in _verbs()}
    stale = sorted(p.name for p in SNAPSHOT_DIR.iterdir() if p.name.split(".", 1)[0] not in tests)
    assert not stale, f"snapshots of no test (delete them): {stale}"
