"""Whole-output snapshots of the verbs that ship or propose work: build, test (selection),
preflight and propose (offline, from git refs), predict, adopt-upstream and comment
(--dry-run --offline). The same mechanism as tests/test_snapshot_verbs.py: expected
outputs under tests/snapshots/, a unified diff on a change; accept one on purpose with
`pytest tests/test_snapshot_*.py --snapshot-update` (or SERIES_SNAPSHOT_UPDATE=1), and say
why in the commit message. What is normalized, and why: tests/snapshots.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import test_propose
from tests.conftest import from_template, run_series
from tests.fakewheel import build_wheel, tree_files
from tests.snapshots import WALL_CLOCK, Snapshot, Volatile
from tests.test_comment import REPORT
from tests.test_predict import TEXT as PREDICTIONS


# preflight's window starts --days before today: "heads since 2016-12-07", "since": "2016-12-07".
SINCE_TODAY: Volatile = (r'(?<=since )\d{4}-\d\d-\d\d|(?<="since": ")\d{4}-\d\d-\d\d', "YYYY-MM-DD")
# When predictions were frozen (the wall clock of the freeze, kept in the journal).
FROZEN_AT: Volatile = (
    r'(?<=frozen )\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00|(?<="time": ")\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00',
    "YYYY-MM-DDTHH:MM:SS+00:00",
)


def both(
    snapshot: Snapshot, label: str, *args: str, cwd: Path, expect: int = 0, volatile: tuple[Volatile, ...] = ()
) -> None:
    """`series ARGS` as text and as --json, each against its snapshot."""
    snapshot.run(run_series(*args, cwd=cwd, expect=expect), label, volatile=volatile)
    snapshot(run_series(*args, "--json", cwd=cwd, expect=expect).stdout, label, json=True, volatile=volatile)


def test_build(fork: Path, upstream: Path, tmp_path: Path, snapshot: Snapshot) -> None:
    snapshot.run(run_series("build", "--dry-run", cwd=fork), "dry")
    wheel = build_wheel(tmp_path / "wheels", tree_files(upstream, "v0.30.0"), version="0.30.0")
    both(snapshot, "wheel", "build", "--wheel", str(wheel), "--out", str(tmp_path / "dist"), cwd=fork)


def test_test_selection(fork: Path, snapshot: Snapshot) -> None:
    both(snapshot, "all", "test", cwd=fork)
    snapshot(run_series("test", "--format", "github-matrix", cwd=fork).stdout, "github-matrix", json=True)
    snapshot(run_series("test", "--format", "buildkite", cwd=fork).stdout, "buildkite")


def test_preflight_offline(served: Path, snapshot: Snapshot) -> None:
    run_series("preflight", "offload-evict-fix", "--fetch", "--days", "3650", cwd=served)
    both(
        snapshot,
        "offline",
        "preflight",
        "offload-evict-fix",
        "--offline",
        "--days",
        "3650",
        cwd=served,
        volatile=(SINCE_TODAY,),
    )


@pytest.fixture
def proposal(tmp_path: Path) -> Path:
    """tests/test_propose.py's layout, built once per session."""
    return from_template("proposal", test_propose.build_proposal, tmp_path)


def test_propose_dry_run_offline(proposal: Path, snapshot: Snapshot) -> None:
    both(snapshot, "duplicate", "propose", "serving-fix", "--dry-run", "--offline", "--fetch", cwd=proposal, expect=1)
    both(
        snapshot,
        "despite",
        "propose",
        "serving-fix",
        "--dry-run",
        "--offline",
        "--despite",
        "50001",
        "--signoff",
        cwd=proposal,
    )
    both(snapshot, "clean", "propose", "offload-note", "--dry-run", "--offline", cwd=proposal)


def test_predict(fork: Path, snapshot: Snapshot) -> None:
    (fork / "predictions.yaml").write_text(PREDICTIONS)
    snapshot.run(run_series("predict", "predictions.yaml", cwd=fork), "freeze", volatile=(WALL_CLOCK, FROZEN_AT))
    both(snapshot, "show", "predict", "predictions.yaml", "--show", cwd=fork, volatile=(WALL_CLOCK, FROZEN_AT))


def test_adopt_and_comment_dry_run(served: Path, tmp_path: Path, snapshot: Snapshot) -> None:
    snapshot.run(
        run_series("adopt-upstream", "61050", "--replaces", "offload-evict-fix", "--offline", cwd=served),
        "adopt",
        volatile=(WALL_CLOCK,),
    )
    report = tmp_path / "report.json"
    report.write_text(json.dumps(REPORT))
    both(snapshot, "comment", "comment", "61050", "--measurement", str(report), "--dry-run", "--offline", cwd=served)
