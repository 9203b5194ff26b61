"""Breaks are a property of the branches against their base (issue 33): `status`, `check` and
a rebase onto the base the series is already on report them from the branches, whatever rebase
ran last, and so does a fresh clone made with `series import`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import run_series
from tests.test_breaks import broken_fork  # noqa: F401  (the fixture)

# what the rebase v0.30.0 -> v0.31.0 finds (tests/test_breaks.py): the same from the branches
EXPECTED = {
    "uses-removed": ["vllm.utils.old_helper"],
    "kw-renamed": ["vllm.utils.scale(factor=)"],
    "same-file": ["_prepare"],
    "import-gone": ["scale"],
    "ordinary": [],
    "new-code": [],
}


def _status_breaks(fork: Path) -> dict[str, list[str]]:
    status = json.loads(run_series("status", "--json", cwd=fork).stdout)
    return {t["name"]: [b["name"] for b in t["breaks"]] for t in status["topics"]}


def _reported_everywhere(fork: Path) -> None:
    found = _status_breaks(fork)
    assert {k: found[k] for k in EXPECTED} == EXPECTED, found
    assert sum(map(len, found.values())) == 10, found
    text = run_series("status", cwd=fork).stdout
    assert "break vllm/fork_a.py:1 vllm.utils.old_helper: removed from vllm/utils.py by #101" in text, text
    check = run_series("check", cwd=fork, expect=6).stdout  # warnings only: its own exit code
    assert "warning: topics (kw-renamed).branch: break vllm/fork_b.py:5 vllm.utils.scale(factor=)" in check, check
    assert check.splitlines()[-1].startswith("10 warnings, no problem: "), check


def test_breaks_stay_after_a_rebase_onto_the_same_base(broken_fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=broken_fork)
    _reported_everywhere(broken_fork)
    # how a user re-stacks: a rebase onto the base it is on reports them, and keeps them
    again = json.loads(run_series("rebase", "--onto", "v0.31.0", "--json", cwd=broken_fork).stdout)
    assert [b["name"] for t in again["topics"] if t["name"] == "uses-removed" for b in t["breaks"]] == [
        "vllm.utils.old_helper"
    ], again
    _reported_everywhere(broken_fork)


def test_breaks_in_a_fresh_clone_made_with_import(broken_fork: Path, tmp_path: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=broken_fork)
    run_series("export", cwd=broken_fork)
    fresh = tmp_path / "fresh"
    subprocess.run(["git", "clone", "-q", "-o", "upstream", str(tmp_path / "upstream"), str(fresh)], check=True)
    run_series("import", str(broken_fork / "patches"), cwd=fresh)
    assert not (fresh / ".git" / "series" / "reports").exists() or not list(
        (fresh / ".git" / "series" / "reports").glob("*.json")
    ), "no rebase ran here"
    _reported_everywhere(fresh)


def test_a_fix_on_the_branch_clears_its_break(broken_fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=broken_fork)
    subprocess.run(["git", "checkout", "-q", "topic/uses-removed"], cwd=broken_fork, check=True)
    (broken_fork / "vllm" / "fork_a.py").write_text("def f():\n    return 1\n")
    subprocess.run(["git", "commit", "-qam", "[Fork] no more old_helper"], cwd=broken_fork, check=True)
    assert _status_breaks(broken_fork)["uses-removed"] == []


def test_check_exits_1_on_a_problem_even_with_warnings(broken_fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=broken_fork)
    subprocess.run(["git", "branch", "-q", "-D", "topic/ordinary"], cwd=broken_fork, check=True)
    out = run_series("check", cwd=broken_fork, expect=1).stdout
    assert "warning: topics (uses-removed).branch: break" in out and "branch 'topic/ordinary' does not exist" in out
    assert out.splitlines()[-1].startswith("check failed: 1 problem"), out
