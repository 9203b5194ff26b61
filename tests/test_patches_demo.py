"""topics/, the example series, is kept in the export format and imports onto the demo upstream."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from series import demo
from tests.conftest import run_series, sh

TOPICS = Path(__file__).resolve().parent.parent / "topics"
REGENERATE = ("topics/ is out of date with series/demo.py: regenerate it with `series export "
              "<repo>/topics` run in a fork made by series.demo.build_fork (series.yaml from "
              "series.demo.series_yaml())")


def _demo_fork(tmp_path: Path) -> Path:
    demo.build_upstream(tmp_path / "upstream")
    demo.build_fork(tmp_path / "upstream", tmp_path / "fork")
    (tmp_path / "fork" / "series.yaml").write_text(demo.series_yaml())
    return tmp_path / "fork"


def _log(repo: Path, branch: str) -> str:
    return sh(f"git log --format='%T %an <%ae> %ad%n%B' --date=raw v0.30.0..{branch}", repo)


def test_topics_is_what_series_export_writes_for_the_demo_fork(tmp_path: Path) -> None:
    fork = _demo_fork(tmp_path)
    shutil.copytree(TOPICS, tmp_path / "check")
    out = run_series("export", str(tmp_path / "check"), cwd=fork).stdout
    assert "nothing changed" in out, f"{REGENERATE}\n{out}"


def test_importing_topics_onto_the_demo_upstream_reproduces_the_fork(tmp_path: Path) -> None:
    fork = _demo_fork(tmp_path)
    fresh = tmp_path / "fresh"
    subprocess.run(["git", "clone", "-q", "-o", "upstream", str(tmp_path / "upstream"), str(fresh)],
                   check=True)
    out = run_series("import", str(TOPICS), cwd=fresh).stdout
    assert "copied series.yaml" in out, out
    assert (fresh / "series.yaml").read_text() == demo.series_yaml()
    for topic in demo.EXAMPLE_TOPICS:
        branch = f"topic/{topic['name']}"
        assert _log(fresh, branch) == _log(fork, branch), branch
