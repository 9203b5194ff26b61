"""Choices during a halted `series rebase` (issue 33): leave a topic out (--skip-topic) or
stop carrying it (--drop-topic) without aborting; a topic emptied by a human resolution
is not "merged upstream"; --abort names the recorded resolutions it keeps.

The fork (tests/repos.py): offload-evict-fix conflicts in lru.py on v0.30.0 -> v0.31.0.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_series, sh
from tests.test_rebase import LRU, rebase_json, refs_of, resolve_lru, snapshot, topics

WORKTREE = ".git/series/rebase/worktree"
SCHED = "vllm/v1/core/sched/scheduler.py"


def _add_topic(fork: Path, name: str, script: str, depends_on: str | None = None) -> None:
    """A topic `name` on branch topic/<name>, made by `script` on a checkout of it."""
    dep = f"    depends_on: [{depends_on}]\n" if depends_on else ""
    sh(
        f"""
    {script}
    git checkout -q --detach v0.30.0
    printf '  - name: {name}\\n    branch: topic/{name}\\n{dep}' >> series.yaml
    """,
        fork,
    )


def _sched_38(fork: Path) -> None:
    """A second conflicting topic (upstream rewrote scheduler line 38 in v0.31.0)."""
    _add_topic(
        fork,
        "sched-38",
        f"""
    git checkout -q -B topic/sched-38 v0.30.0
    sed -i 's/# scheduler line 38$/# scheduler line 38 (fork)/' {SCHED}
    git commit -qam "fork line 38"
    """,
    )


def _take_upstream_side(worktree: Path, path: str) -> None:
    sh(f"git checkout --ours -- {path} && git add -- {path}", worktree)


def test_drop_during_a_halted_rebase_retires_the_topic_and_undo_restores_it(fork: Path) -> None:
    before = snapshot(fork)
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    proc = run_series("rebase", "--drop-topic", "offload-evict-fix", "--reason", "upstream fixed it its way", cwd=fork)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("  offload-evict-fix"))
    assert line.startswith("  offload-evict-fix  dropped    upstream fixed it its way") and "merged" not in line, (
        proc.stdout
    )
    report = json.loads(Path(proc.stdout.rsplit("report: ", 1)[1].strip()).with_suffix(".json").read_text())
    row = topics(report)["offload-evict-fix"]
    assert report["status"] == "done" and row["outcome"] == "dropped", row
    assert row["reason"] == "upstream fixed it its way" and "merged_in" not in row, row
    text = (fork / "series.yaml").read_text()
    assert "    status: dropped\n    reason: upstream fixed it its way\n" in text, text
    assert "base: v0.31.0" in text
    after = refs_of(fork)
    assert after["refs/heads/topic/offload-evict-fix"] == before[0]["refs/heads/topic/offload-evict-fix"], (
        "a dropped topic's branch is kept"
    )
    assert not (fork / WORKTREE).exists() and not (fork / ".git/series/rebase").exists()
    assert not sh("git for-each-ref refs/series/rebase", fork).strip()
    log = json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"]
    assert [op["command"] for op in log] == ["rebase"] and "drop offload-evict-fix" in log[0]["summary"], log
    run_series("undo", cwd=fork)
    assert snapshot(fork)[1] == before[1], "undo puts series.yaml back: the topic is active again"
    assert {k: v for k, v in refs_of(fork).items() if k in before[0]} == before[0]


def test_drop_of_the_halted_topic_goes_on_to_the_next_conflict(fork: Path) -> None:
    _sched_38(fork)
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    proc = run_series("rebase", "--drop-topic", "offload-evict-fix", cwd=fork, expect=3)
    assert "resolve sched-38" in proc.stdout, proc.stdout
    assert "<<<<<<<" in (fork / WORKTREE / SCHED).read_text()
    state = json.loads((fork / ".git/series/rebase/state.json").read_text())
    assert {t["name"]: t["outcome"] for t in state["topics"]}["offload-evict-fix"] == "dropped"
    report = rebase_json(fork, "--skip-topic", "sched-38")
    rows = topics(report)
    assert rows["offload-evict-fix"]["outcome"] == "dropped" and rows["sched-38"]["outcome"] == "skipped", rows
    text = (fork / "series.yaml").read_text()
    assert text.count("status: dropped") == 1 and "reason:" not in text, text


def test_skip_during_a_halted_rebase_leaves_the_topic_and_its_dependents_where_they_were(fork: Path) -> None:
    _add_topic(
        fork,
        "evict-more",
        """
    git checkout -q -B topic/evict-more topic/offload-evict-fix
    echo "# more tests" >> tests/v1/kv_offload/test_lru.py
    git commit -qam "more lru tests"
    """,
        depends_on="offload-evict-fix",
    )
    before = snapshot(fork)
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    proc = run_series("rebase", "--skip-topic", "offload-evict-fix", cwd=fork)
    assert "offload-evict-fix  skipped" in proc.stdout, proc.stdout
    assert "evict-more         skipped    depends on offload-evict-fix, which is skipped" in proc.stdout, proc.stdout
    after = refs_of(fork)
    for branch in ("topic/offload-evict-fix", "topic/evict-more"):
        assert after[f"refs/heads/{branch}"] == before[0][f"refs/heads/{branch}"], branch
    assert sh("git merge-base --is-ancestor v0.31.0 topic/api-hello && echo moved", fork).strip() == "moved"
    text = (fork / "series.yaml").read_text()
    assert "base: v0.31.0" in text and "status: dropped" not in text and text.count("status:") == 1, text


def test_drop_refuses_while_an_active_topic_depends_on_it(fork: Path) -> None:
    _add_topic(
        fork,
        "evict-more",
        """
    git checkout -q -B topic/evict-more topic/offload-evict-fix
    echo "# more tests" >> tests/v1/kv_offload/test_lru.py
    git commit -qam "more lru tests"
    """,
        depends_on="offload-evict-fix",
    )
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    state = (fork / ".git/series/rebase/state.json").read_text()
    proc = run_series("rebase", "--drop-topic", "offload-evict-fix", cwd=fork, expect=1)
    assert "cannot drop offload-evict-fix: evict-more depends on it and stays active" in proc.stderr, proc.stderr
    assert (fork / ".git/series/rebase/state.json").read_text() == state, "nothing changed"
    for name, code in (("nosuch", 1), ("ipc-backport", 1)):
        proc = run_series("rebase", "--skip-topic", name, cwd=fork, expect=code)
        assert "Traceback" not in proc.stderr and proc.stderr.strip(), proc.stderr
    run_series("rebase", "--drop-topic", "evict-more", "--drop-topic", "offload-evict-fix", cwd=fork)
    assert (fork / "series.yaml").read_text().count("status: dropped") == 2


def test_drop_or_skip_with_no_rebase_halted_is_an_error(fork: Path) -> None:
    proc = run_series("rebase", "--drop-topic", "api-hello", cwd=fork, expect=1)
    assert "no rebase in progress" in proc.stderr, proc.stderr
    proc = run_series("rebase", "--skip-topic", "api-hello", cwd=fork, expect=1)
    assert "no rebase in progress: nothing to skip" in proc.stderr, proc.stderr
    proc = run_series("rebase", "--onto", "v0.31.0", "--drop-topic", "api-hello", cwd=fork, expect=2)
    assert "--drop-topic" in proc.stderr, proc.stderr


def test_a_topic_resolved_to_upstreams_side_is_not_reported_merged(fork: Path) -> None:
    _add_topic(fork, "lru-only", "git checkout -q -B topic/lru-only topic/offload-evict-fix~1")
    before = snapshot(fork)
    run_series("rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", cwd=fork, expect=3)
    _take_upstream_side(fork / WORKTREE, LRU)
    proc = run_series("rebase", "--continue", cwd=fork)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("  lru-only"))
    assert "merged" not in line and "empty after resolution" in line, proc.stdout
    assert "already upstream" not in proc.stdout.split("  lru-only", 1)[1], proc.stdout
    assert "'series drop lru-only'" in proc.stdout, proc.stdout
    report = json.loads(Path(proc.stdout.rsplit("report: ", 1)[1].strip()).with_suffix(".json").read_text())
    row = topics(report)["lru-only"]
    assert row["outcome"] == "empty" and "merged_in" not in row, row
    text = (fork / "series.yaml").read_text()
    assert text.endswith("  - name: lru-only\n    branch: topic/lru-only\n"), "status and merged_in left alone"
    assert refs_of(fork)["refs/heads/topic/lru-only"] == sh("git rev-parse v0.31.0", fork).strip(), (
        "the branch goes where the replay left it: on the new base, with no commit of its own"
    )
    run_series("undo", cwd=fork)
    assert snapshot(fork) == before


def test_a_recorded_resolution_to_upstreams_side_replayed_is_not_reported_merged(fork: Path) -> None:
    """As on the HabanaAI fork: the resolution recorded then (upstream's side) is replayed
    by the next rebase from a clone at the old base. Replayed or typed, a resolution proves
    nothing about what upstream contains: the topic is empty, never "merged"."""
    _add_topic(fork, "lru-only", "git checkout -q -B topic/lru-only topic/offload-evict-fix~1")
    run_series("rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", cwd=fork, expect=3)
    _take_upstream_side(fork / WORKTREE, LRU)
    run_series("rebase", "--continue", cwd=fork)
    kept = {p: p.read_bytes() for p in (fork / "resolutions").rglob("*.txt")}
    assert kept, "the resolution was recorded"
    run_series("undo", cwd=fork)  # the branches back at v0.30.0; the recorded resolution put back too
    for path, data in kept.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    proc = run_series("rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", "--dry-run", cwd=fork)
    part = proc.stdout.split("  lru-only", 1)[1].split("\n  ", 1)[0]
    assert "empty after resolution" in part and "merged" not in part, proc.stdout
    assert "resolved from memory" in proc.stdout.split("  lru-only", 1)[1], proc.stdout


def test_a_commit_resolved_to_upstreams_side_is_not_said_to_be_already_upstream(fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    _take_upstream_side(fork / WORKTREE, LRU)
    proc = run_series("rebase", "--continue", cwd=fork)
    part = proc.stdout.split("  offload-evict-fix", 1)[1].split("\n  ipc-backport", 1)[0]
    assert "already upstream" not in part and "dropped (empty after resolution)" in part, proc.stdout


def test_a_topic_emptied_while_another_still_conflicts_offers_drop_topic(fork: Path) -> None:
    _add_topic(fork, "lru-only", "git checkout -q -B topic/lru-only topic/offload-evict-fix~1")
    _sched_38(fork)
    run_series("rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", cwd=fork, expect=3)
    _take_upstream_side(fork / WORKTREE, LRU)
    proc = run_series("rebase", "--continue", cwd=fork, expect=3)
    assert "resolve sched-38" in proc.stdout, proc.stdout
    assert "'series rebase --drop-topic lru-only' stops carrying it" in proc.stdout, proc.stdout
    run_series("rebase", "--drop-topic", "lru-only", "--skip-topic", "sched-38", cwd=fork)
    text = (fork / "series.yaml").read_text()
    assert "  - name: lru-only\n    branch: topic/lru-only\n    status: dropped\n  - name: sched-38\n" in text, text


def test_abort_names_the_resolutions_it_keeps_and_how_to_remove_them(fork: Path) -> None:
    _sched_38(fork)
    before = snapshot(fork)
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    resolve_lru(fork / WORKTREE)
    run_series("rebase", "--continue", cwd=fork, expect=3)
    kept = sorted(p.relative_to(fork).as_posix() for p in (fork / "resolutions").rglob("*.txt"))
    assert len(kept) == 1, kept
    proc = run_series("rebase", "--abort", cwd=fork)
    assert "kept 1 recorded conflict resolution in resolutions/" in proc.stdout, proc.stdout
    assert "remove it with 'series undo'" in proc.stdout, proc.stdout
    assert snapshot(fork) == before
    run_series("undo", cwd=fork)
    assert not list((fork / "resolutions").rglob("*.txt")), "the command the message gives works as written"


def test_abort_with_nothing_recorded_says_nothing_about_resolutions(fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    proc = run_series("rebase", "--abort", cwd=fork)
    assert "resolution" not in proc.stdout, proc.stdout


def test_killed_after_leaving_a_topic_out_continue_goes_on_from_there(fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    proc = run_series(
        "rebase",
        "--drop-topic",
        "offload-evict-fix",
        cwd=fork,
        expect=None,
        env={"SERIES_FAULT": "setaside-after-state"},
    )
    assert proc.returncode == 99, proc.stderr
    report = rebase_json(fork, "--continue")
    assert topics(report)["offload-evict-fix"]["outcome"] == "dropped", report
    assert "status: dropped" in (fork / "series.yaml").read_text()
    assert sh("git worktree list", fork).count("\n") == 1
