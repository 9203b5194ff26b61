"""The demo is the five-minute introduction and an end-to-end check of every verb."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2

from tests.conftest import run_series


def test_demo_runs_the_whole_story_offline(tmp_path: Path) -> None:
    out = run_series("demo", str(tmp_path / "d"), cwd=tmp_path).stdout
    for expected in (
        "$ series touches vllm/v1/kv_offload",
        "touched by 2 of 5 active topics",
        "$ series adopt-upstream 61050",
        "CONFLICT",
        "$ series rebase --continue",
        # the evidence run, over the demo's own release wheel in its own venv
        "--run --python",
        "vllm 0.32.0 at ",
        "tests that fail without offload-stats and pass "
        "with it:\n  tests/v1/kv_offload/test_manager.py::test_store_counts_evictions",
        "as far as possible: stopped at 1 of 4 commits on v0.31.0's first-parent line",
        "upstream #61010 rewrote store() in manager.py",
        "read it first (git show ",
        "landed by PR #61020",
        "merged upstream",
        "$ series propose offload-stats --dry-run",
        # their PR and ours measured: predictions frozen first, one failed and explained,
        # the numbers rendered as a comment on #61050 (nothing posted)
        "froze ",
        "(superseded: its kept branch topic/offload-evict-fix)",
        "| `chunk0_lost` | 151 | 100 | 100 |",
        "2 of 3 held",
        "FAILED  no-chunk0: ~~chunk0_lost on theirs equals 0~~ (observed 100)",
        "~~chunk0\\_lost on theirs equals 0~~",
        "Why it failed: store() still inserts",
        "--dry-run: nothing posted, nothing recorded; would post these",
        "2. grade (first-PR limits;",
        "FLAG  dco:",
        "may be @-mentioned: @kv-offload-owner",
        "5. duplicates (open PRs of any age, source: git refs): none share a file",
        # after posting: whose turn it is (the demo's loopback GitHub), merged in which
        # release, and a fix for #61050 landing upstream later, which status reports
        "$ series upstream\n#61050 pr-61050: open, ours turn for 3 days, past 48 h",
        "waiting on us: review thread: @kv-offload-owner commented last",
        "gates: dco ok; ready missing",
        "#61050 pr-61050: merged in v0.32.0, done",
        "PR #61050; merged in v0.32.0; not carried: fix #61210",
        "Done.",
    ):
        assert expected in out, f"{expected!r} missing from the demo:\n{out}"
    fork = tmp_path / "d" / "fork"
    status = json.loads(run_series("status", "--json", cwd=fork).stdout)
    states = {t["name"]: t["status"] for t in status["topics"]}
    assert status["base"] == "v0.32.0", status
    assert states == {
        "pr-61050": "merged",
        "offload-evict-fix": "superseded",
        "offload-stats": "active",
        "ipc-backport": "merged",
        "sched-note": "active",
        "api-health": "active",
    }, states
    repo = pygit2.Repository(str(fork))
    adopted = repo.references["refs/heads/topic/pr-61050"].peel(pygit2.Commit)
    assert (adopted.author.name, adopted.author.email) == ("Ada Upstream", "ada@upstream.example"), adopted.author
    assert list((fork / "dist").glob("vllm-0.32.0+series.g*.whl")), list((fork / "dist").iterdir())


def test_demo_refuses_a_directory_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "keep.txt").write_text("mine")
    proc = run_series("demo", str(tmp_path / "d"), cwd=tmp_path, expect=1)
    assert "not empty" in proc.stderr, proc.stderr
