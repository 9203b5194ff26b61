"""The plugin series puts into every evidence pytest (series.evidence.testrun.PLUGIN), run for
real over a one-file layout: what collection imported is frozen for upstream's per-test
gc.collect(), and SERIES_GC_FREEZE=0 turns that off."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from series.evidence import pytestrun, testrun
from series.evidence.interpreter import Environment
from series.evidence.testrun import CaseOutcome

FROZEN = """import gc

KEPT = [object() for _ in range(1000)]  # an import's objects, alive for the whole run


def test_frozen():
    assert gc.get_freeze_count() >= len(KEPT)


def test_frozen_through_a_cleanup_that_unfreezes():
    gc.unfreeze()  # as vLLM's cleanup_dist_env_and_memory() does before its gc.collect()
    gc.collect()
    assert gc.get_freeze_count() >= len(KEPT)


def test_what_the_code_under_test_froze_is_unfrozen_for_real():
    gc.freeze()
    gc.unfreeze()
    assert gc.get_freeze_count() == 0


def test_own_garbage_is_still_collected():
    import weakref

    class Cycle:
        pass

    a = Cycle()
    a.me = a
    gone = weakref.ref(a)
    del a
    gc.collect()
    assert gone() is None
"""


@pytest.mark.parametrize("freeze, frozen", [(None, CaseOutcome.PASSED), ("0", CaseOutcome.FAILED)])
def test_collection_is_frozen_unless_asked_not_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, freeze: str | None, frozen: CaseOutcome
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    if freeze is None:
        monkeypatch.delenv("SERIES_GC_FREEZE", raising=False)
    else:
        monkeypatch.setenv("SERIES_GC_FREEZE", freeze)
    env = Environment(
        python=sys.executable, version="0", package_dir=tmp_path / "no-such-package", pytest="pytest", build_key="test"
    )
    with testrun.Scratch() as scratch:
        (scratch.tests_root / "test_gc.py").write_text(FROZEN)
        reports = scratch.root / "base"
        reports.mkdir()
        result = pytestrun.run_pytest(
            env,
            scratch.tests_root,
            ["test_gc.py"],
            pythonpath=[],
            workdir=scratch.tests_root,
            report=reports / "report.xml",
        )
    assert result.outcomes == {
        "test_gc.py::test_frozen": frozen,
        "test_gc.py::test_frozen_through_a_cleanup_that_unfreezes": frozen,
        "test_gc.py::test_what_the_code_under_test_froze_is_unfrozen_for_real": CaseOutcome.PASSED,
        "test_gc.py::test_own_garbage_is_still_collected": CaseOutcome.PASSED,
    }, result
