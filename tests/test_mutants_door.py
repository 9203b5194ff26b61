"""Tests that fail when the write door is wrong in small, realistic ways (issue 37: each
one kills a mutant that survived the whole suite; tools/mutate.py finds more)."""
from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_series, sh
from tests.test_rebase_faults import SKIP, killed


def test_an_edit_made_to_series_yaml_after_a_kill_survives_the_finish(fork: Path) -> None:
    """Killed after the refs moved, before series.yaml was replaced; the user then edits
    series.yaml. Finishing re-applies the operation's own key edits to the file as it is:
    writing the text the operation computed would drop the user's edit."""
    killed(fork, "after-refs", "--onto", "v0.31.0", *SKIP)
    config = fork / "series.yaml"
    config.write_text("# kept: written while the rebase was interrupted\n" + config.read_text())
    run_series("rebase", "--continue", cwd=fork)
    text = config.read_text()
    assert text.startswith("# kept: written while the rebase was interrupted\n"), text
    assert "base: v0.31.0" in text and "merged_in: v0.31.0" in text, text


def _numbers(journal: Path, pattern: str) -> list[int]:
    return [int(p.name.split("-", 1)[0]) for p in journal.glob(pattern)]


def test_an_operation_rolled_back_keeps_its_number(fork: Path) -> None:
    """An entry set aside in journal/rolled-back/ still holds its number: the next operation
    takes a new one, so no two journal entries (kept or set aside) share an id."""
    sh("git branch topic/late v0.30.0", fork)
    proc = run_series("add", "topic/late", cwd=fork, expect=None, env={"SERIES_FAULT": "after-journal"})
    assert proc.returncode == 99, proc.stderr
    run_series("add", "topic/late", cwd=fork)  # the door rolls the killed one back first
    journal = fork / ".git/series/journal"
    aside, kept = _numbers(journal, "rolled-back/*.json"), _numbers(journal, "*.json")
    assert len(aside) == 1 and len(kept) >= 1, (aside, kept)
    assert max(kept) > max(aside), (aside, kept)
    rows = json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"]
    assert [r["command"] for r in rows][-1:] == ["add"], rows
