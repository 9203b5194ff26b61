"""topics/, the example series, is kept in the export format: import and export round-trip it."""

from __future__ import annotations

import filecmp
from pathlib import Path

from series import demo
from tests.conftest import run_series, sh

TOPICS = Path(__file__).resolve().parent.parent / "topics"


def _fresh_clone(tmp_path: Path) -> Path:
    demo.build_upstream(tmp_path / "upstream.git")
    demo.clone_fork(tmp_path / "upstream.git", tmp_path / "fork")
    return tmp_path / "fork"


def _same_tree(a: Path, b: Path) -> list[str]:
    cmp = filecmp.dircmp(a, b)
    diffs = [f"{a.name}/{n}" for n in cmp.diff_files + cmp.left_only + cmp.right_only]
    for sub in cmp.common_dirs:
        diffs += _same_tree(a / sub, b / sub)
    return diffs


def test_topics_imports_onto_the_demo_upstream_and_exports_back_byte_for_byte(tmp_path: Path) -> None:
    fork = _fresh_clone(tmp_path)
    out = run_series("import", str(TOPICS), cwd=fork).stdout
    assert "copied series.yaml" in out, out
    assert (fork / "series.yaml").read_text() == (TOPICS / "series.yaml").read_text()
    run_series("export", str(tmp_path / "again"), cwd=fork)
    assert _same_tree(TOPICS, tmp_path / "again") == [], "re-export of topics/ differs"


def test_imported_topics_keep_the_patch_authors_and_dates(tmp_path: Path) -> None:
    fork = _fresh_clone(tmp_path)
    run_series("import", str(TOPICS), cwd=fork)
    log = sh("git log --format='%an <%ae> %aI %s' v0.30.0..topic/offload-evict-fix", fork)
    assert log.splitlines() == [
        "Fork Maintainer <maintainer@fork.example> 2026-01-03T12:00:00+00:00 [Test][KV offload] cover touch order",
        "Fork Maintainer <maintainer@fork.example> 2026-01-02T12:00:00+00:00 [Bugfix][KV offload] keep request order on touch",
    ], log
