"""Tests that fail when the halted operation's record is wrong in small ways (issue 37:
each kills a mutant that survived; tools/mutate.py finds more)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pygit2
import pytest

from pytest_httpserver import HTTPServer

from series.ops import halted
from series.engine import rebase_state
from tests.conftest import run_series
from tests.test_comment import _env, _serve, adopted  # noqa: F401  (a fixture)


def test_the_halt_records_words_are_a_format_other_versions_read(fork: Path) -> None:
    """state.json outlives the series that wrote it (an upgrade in the middle of a halted
    rebase): its phase and outcome strings are a persisted format, pinned here as a halted
    rebase writes them, with the whole vocabulary."""
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    state = json.loads((fork / ".git/series/rebase/state.json").read_text())
    assert state["phase"] == "conflict", state["phase"]
    outcomes = {t["name"]: t["outcome"] for t in state["topics"]}
    assert outcomes["offload-evict-fix"] == "conflict", outcomes
    assert {p.value for p in rebase_state.Phase} == {"conflict", "committing"}
    state = rebase_state.load(pygit2.Repository(str(fork)))
    assert state is not None and state.topic("offload-evict-fix").outcome == rebase_state.TopicOutcome.CONFLICT
    with pytest.raises(KeyError):  # a name the record does not hold is never answered with None
        state.topic("no-such-topic")
    assert {o.value for o in rebase_state.TopicOutcome} == {
        "pending",
        "clean",
        "conflict",
        "merged",
        "blocked",
        "skipped",
        "dropped",
        "empty",
    }


def test_a_halt_written_before_the_verbs_handed_in_their_hints_reads_with_the_defaults() -> None:
    old: dict[str, Any] = {"kind": "adopt", "what": "adopting #1", "resume": "series adopt-upstream"}
    halt = halted.Halt.from_json(old)
    assert (halt.go_on, halt.stop) == ("series adopt-upstream --continue", "series adopt-upstream --abort")
    new = halted.Halt.from_json({**old, "go_on": "series adopt-upstream --go", "stop": "series adopt-upstream --stop"})
    assert (new.go_on, new.stop) == ("series adopt-upstream --go", "series adopt-upstream --stop")


def test_a_comment_is_not_posted_while_a_rebase_is_halted(
    adopted: tuple[Path, Path],  # noqa: F811
    httpserver: HTTPServer,
) -> None:
    """Its record would be lost when the halted rebase rewrites series.yaml: refused before
    the post, so nothing is said on the PR that series.yaml does not keep."""
    fork, report = adopted
    posted: list[dict[str, Any]] = []
    _serve(httpserver, posted)
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    proc = run_series("comment", "61050", "--measurement", str(report), cwd=fork, env=_env(httpserver), expect=1)
    assert "rebase" in proc.stderr and posted == [], proc.stderr
