"""While a rebase is halted on a conflict, commands that move refs refuse and say why."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_series, sh


def test_import_refuses_while_a_rebase_is_halted(fork: Path, tmp_path: Path) -> None:
    run_series("export", str(tmp_path / "patches"), cwd=fork)
    sh("git branch -f topic/api-hello topic/sched-note", fork)  # so import would move it
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    before = sh("git for-each-ref refs/heads", fork)
    proc = run_series("import", str(tmp_path / "patches"), "--force", cwd=fork, expect=1)
    assert "rebase --continue" in proc.stderr or "--abort" in proc.stderr, proc.stderr
    assert sh("git for-each-ref refs/heads", fork) == before
    run_series("rebase", "--abort", cwd=fork)
    run_series("import", str(tmp_path / "patches"), "--force", cwd=fork)


def test_status_says_a_rebase_is_halted_and_how_to_go_on(fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    text = run_series("status", cwd=fork).stdout
    assert "series rebase --continue" in text and ".git/series/rebase/worktree" in text, text
    run_series("rebase", "--abort", cwd=fork)
    assert "--continue" not in run_series("status", cwd=fork).stdout


def test_the_halted_state_names_its_ending_as_data_read_back_by_every_verb(fork: Path) -> None:
    """What is halted and how to go on is in the state file (halted.Halt), so a verb that did
    not halt it (drop) and `status` word it without loading the verb that did."""
    import json

    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    state = json.loads((fork / ".git/series/rebase/state.json").read_text())
    assert state["halt"]["kind"] == "rebase" and state["halt"]["resume"] == "series rebase", state["halt"]
    assert {t["outcome"] for t in state["topics"]} <= {"clean", "conflict", "merged", "blocked", "pending"}
    proc = run_series("drop", "api-hello", cwd=fork, expect=1)
    assert (
        "a series rebase is in progress: finish it with 'series rebase --continue' or "
        "'series rebase --abort' before 'series drop'"
    ) in proc.stderr, proc.stderr
    proc = run_series("adopt-upstream", "--continue", cwd=fork, expect=1)
    assert "a series rebase is in progress, not an adoption\nhint: 'series rebase --continue'" in proc.stderr
    run_series("rebase", "--abort", cwd=fork)


@pytest.mark.parametrize(
    "damage",
    [
        "{not json",
        '{"version": 2, "id": 5}',
        "halt-kind-a-number",
        "outcome-unknown",
    ],
)
def test_a_damaged_state_file_is_a_one_line_error_and_a_hint(fork: Path, damage: str) -> None:
    import json

    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    path = fork / ".git/series/rebase/state.json"
    state = json.loads(path.read_text())
    if damage == "halt-kind-a-number":
        state["halt"]["kind"] = 7
        text = json.dumps(state)
    elif damage == "outcome-unknown":
        state["topics"][0]["outcome"] = "half-done"
        text = json.dumps(state)
    else:
        text = damage
    path.write_text(text)
    for argv in (("rebase", "--continue"), ("status",), ("drop", "api-hello")):
        if damage == "outcome-unknown" and argv[0] == "drop":
            # the guard reads only the record's `halt` (series.ops.halted; the topics are the
            # engine's, series.engine.rebase_state): it refuses as for any halted rebase
            proc = run_series(*argv, cwd=fork, expect=1)
            assert "a series rebase is in progress" in proc.stderr and "Traceback" not in proc.stderr
            continue
        proc = run_series(*argv, cwd=fork, expect=1)
        lines = proc.stderr.strip().splitlines()
        assert "state.json" in lines[0] and "Traceback" not in proc.stderr, proc.stderr
        assert lines[1:] == ["hint: remove it and 'git worktree prune' to start over"], lines
    if damage == "outcome-unknown":
        proc = run_series("status", cwd=fork, expect=1)
        assert "'outcome' is 'half-done', not one of" in proc.stderr, proc.stderr


def test_a_state_from_another_series_version_says_so(fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    path = fork / ".git/series/rebase/state.json"
    path.write_text('{"version": 1, "kind": "rebase"}')
    proc = run_series("rebase", "--continue", cwd=fork, expect=1)
    assert "written by another series version (state version 1)" in proc.stderr, proc.stderr
