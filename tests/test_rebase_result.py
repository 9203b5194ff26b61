"""The rebase's result is one typed value (series.report.rebase_result): its --json
document and the report saved under .git/series/reports read back with from_json give the
same document again, every field included (culprits, evidence, the first breaking commit,
breaks, --as-far-as-possible, --strict); a saved report with a wrong field is refused,
naming the field, and `series status` then adds nothing rather than fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from series.report.rebase_result import RebaseResult
from tests.conftest import run_series
from tests.test_breaks import broken_fork  # noqa: F401  (a fixture)
from tests.test_upstream_history import fork_over, rebase


def _round_trip(document: dict) -> None:
    document = {k: v for k, v in document.items() if k != "schema"}
    assert RebaseResult.from_json(document).to_json() == document
    saved = json.loads(Path(document["report"]).with_suffix(".json").read_text())
    assert "report" not in saved
    assert RebaseResult.from_json(saved).to_json() == saved
    assert saved == {k: v for k, v in document.items() if k != "report"}


def test_every_field_of_a_conflict_a_merged_topic_and_bisect_reads_back(tmp_path: Path) -> None:
    fork, _ = fork_over(tmp_path, 3)
    document = rebase(fork, "--dry-run", "--bisect", expect=3)
    names = {t["name"]: t for t in document["topics"]}
    assert "first_breaking" in names["offload-evict-fix"] and "evidence" in names["ipc-backport"]
    _round_trip(document)


def test_as_far_as_possible_reads_back(tmp_path: Path) -> None:
    fork, _ = fork_over(tmp_path, 4)
    document = rebase(fork, "--as-far-as-possible", "--dry-run")
    assert document["as_far_as_possible"]["blocker"] is not None
    _round_trip(document)


def test_breaks_and_strict_read_back(broken_fork: Path) -> None:  # noqa: F811
    out = run_series("rebase", "--onto", "v0.31.0", "--strict", "--json", cwd=broken_fork, expect=3)
    document = json.loads(out.stdout)
    assert document["status"] == "conflict" and any(t["breaks"] for t in document["topics"])
    assert RebaseResult.from_json(document).held
    _round_trip(document)


def test_a_wrong_field_is_refused_by_name(tmp_path: Path) -> None:
    fork, _ = fork_over(tmp_path, 3)
    good = json.dumps(rebase(fork, "--dry-run", expect=3))
    for path, value, named in [
        (("topics", 0, "outcome"), "sideways", "'outcome'"),
        (("topics", 0, "upstream"), [], "'upstream'"),
        (("topics", 1, "breaks"), None, "'breaks'"),
        (("behind",), {"commits": "many"}, "'commits'"),
        (("onto",), None, "'onto'"),
    ]:
        document = json.loads(good)
        where = document
        for key in path[:-1]:
            where = where[key]
        where[path[-1]] = value
        with pytest.raises(ValueError, match=named):
            RebaseResult.from_json(document)


def test_status_adds_nothing_from_a_report_edited_by_hand(tmp_path: Path) -> None:
    fork, _ = fork_over(tmp_path, 3)
    document = json.loads(run_series("rebase", "--onto", "v0.31.0", "--json", cwd=fork, expect=3).stdout)
    assert "read it first" in run_series("status", cwd=fork).stdout
    saved = Path(document["report"]).with_suffix(".json")
    broken = json.loads(saved.read_text())
    broken["topics"][0]["commits"] = "three"
    saved.write_text(json.dumps(broken))
    assert "read it first" not in run_series("status", cwd=fork).stdout
    run_series("rebase", "--abort", cwd=fork)
