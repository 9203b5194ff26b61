"""supersede and drop: status changes in series.yaml (comments kept), branches untouched, undo."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2

from series.seriesfile import config
from tests.conftest import run_series


def _refs(repo: Path) -> dict[str, str]:
    r = pygit2.Repository(str(repo))
    return {n: str(r.references[n].target) for n in r.references if n.startswith("refs/heads/")}


def test_supersede_marks_status_keeps_branch_and_comments(fork: Path) -> None:
    before = _refs(fork)
    out = run_series("supersede", "ipc-backport", "--by", "sched-note", "--reason", "folded in", cwd=fork).stdout
    assert "superseded by 'sched-note'" in out and "branch topic/ipc-backport kept" in out, out
    series = config.load(fork / "series.yaml")
    topic = series.topic("ipc-backport")
    assert (topic.status.value, topic.superseded_by, topic.reason) == ("superseded", "sched-note", "folded in")
    text = (fork / "series.yaml").read_text()
    assert "# our fork's topics over upstream vLLM" in text and "# bumped by 'series rebase'" in text, text
    assert _refs(fork) == before, "supersede must not move any branch"


def test_drop_records_reason_and_undo_puts_series_yaml_back(fork: Path) -> None:
    original = (fork / "series.yaml").read_text()
    before = _refs(fork)
    out = run_series("drop", "api-hello", "--reason", "upstream has /health now", cwd=fork).stdout
    assert "dropped 'api-hello'" in out, out
    topic = config.load(fork / "series.yaml").topic("api-hello")
    assert (topic.status.value, topic.reason) == ("dropped", "upstream has /health now")
    assert _refs(fork) == before
    run_series("undo", cwd=fork)
    assert (fork / "series.yaml").read_text() == original


def test_dry_run_writes_nothing(fork: Path) -> None:
    original = (fork / "series.yaml").read_text()
    out = run_series("drop", "api-hello", "--dry-run", cwd=fork).stdout
    assert out.startswith("would drop"), out
    out = run_series("supersede", "api-hello", "--by", "sched-note", "--dry-run", cwd=fork).stdout
    assert out.startswith("would mark"), out
    data = json.loads(run_series("drop", "api-hello", "--reason", "r", "--dry-run", "--json", cwd=fork).stdout)
    assert data == {
        "schema": 1,
        "topic": "api-hello",
        "old_status": "active",
        "new_status": "dropped",
        "by": None,
        "reason": "r",
        "operation": None,
    }, data
    assert (fork / "series.yaml").read_text() == original


def test_lifecycle_errors_are_one_line(fork: Path) -> None:
    cases = [
        (("supersede", "api-hello", "--by", "api-hello"), "cannot supersede itself"),
        (("supersede", "api-hello", "--by", "nope"), "no topic named 'nope'"),
        (("drop", "nope"), "no topic named 'nope'"),
    ]
    for args, message in cases:
        proc = run_series(*args, cwd=fork, expect=1)
        assert message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    run_series("drop", "api-hello", cwd=fork)
    proc = run_series("drop", "api-hello", cwd=fork, expect=1)
    assert "already dropped" in proc.stderr, proc.stderr
    proc = run_series("supersede", "sched-note", "--by", "api-hello", cwd=fork, expect=1)
    assert "'api-hello' is dropped itself" in proc.stderr, proc.stderr


def test_status_changes_wait_for_a_halted_rebase(fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)  # offload-evict-fix conflicts
    before = (fork / "series.yaml").read_text()
    for args in (
        ("drop", "api-hello"),
        ("supersede", "api-hello", "--by", "sched-note"),
        ("adopt-upstream", "1", "--offline"),
    ):
        proc = run_series(*args, cwd=fork, expect=1)
        assert "a series rebase is in progress" in proc.stderr, proc.stderr
    assert (fork / "series.yaml").read_text() == before
    run_series("rebase", "--abort", cwd=fork)
    run_series("drop", "api-hello", cwd=fork)
