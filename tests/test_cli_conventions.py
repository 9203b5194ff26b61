"""Shell conventions: completion with topic names, "schema": 1 in JSON, touches' exit codes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import run_series


def complete(words: str, cwd: Path) -> list[str]:
    env = dict(os.environ, COMP_WORDS=words, COMP_CWORD=str(len(words.split()) - (0 if words.endswith(" ") else 1)),
               _SERIES_COMPLETE="bash_complete")
    proc = subprocess.run([sys.executable, "-m", "series"], cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line]
    assert all("," in line for line in lines), repr(proc.stdout)
    return [line.split(",", 1)[1] for line in lines]


def test_completion_scripts_and_topic_names(fork: Path) -> None:
    for shell, marker in (("bash", "complete -o"), ("zsh", "#compdef series"), ("fish", "complete --no-files")):
        out = run_series("completion", shell, cwd=fork).stdout
        assert marker in out and "_SERIES_COMPLETE" in out, (shell, out[:200])
    assert complete("series test off", fork) == ["offload-evict-fix"]
    assert "ipc-backport" in complete("series test --without ", fork)
    assert "rebase" in complete("series reb", fork)
    assert complete("series test off", fork.parent) == []   # no series.yaml: nothing, and no traceback


def test_json_documents_lead_with_the_schema(fork: Path) -> None:
    data = json.loads(run_series("status", "--json", cwd=fork).stdout)
    assert next(iter(data)) == "schema" and data["schema"] == 1, list(data)[:3]


def test_touches_not_touched_is_1_and_an_error_is_2(fork: Path) -> None:
    assert run_series("touches", "docs", cwd=fork, expect=1).stderr == ""
    proc = run_series("touches", "--between", "v0.30.0..nope", cwd=fork, expect=2)
    assert "unknown ref 'nope'" in proc.stderr, proc.stderr
