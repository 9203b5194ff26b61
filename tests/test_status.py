from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_series, sh


def test_status_rows_count_commits_files_and_lines(fork: Path) -> None:
    out = run_series("status", "--json", cwd=fork).stdout
    rows = {t["name"]: t for t in json.loads(out)["topics"]}
    assert rows["offload-evict-fix"]["commits"] == 2, rows
    assert rows["offload-evict-fix"]["files"] == 2, rows
    assert (rows["ipc-backport"]["added"], rows["ipc-backport"]["deleted"]) == (1, 1), rows
    assert all(r["on_base"] for r in rows.values()), rows


def test_status_warns_about_a_topic_on_another_base(fork: Path) -> None:
    sh("git branch -f topic/api-hello upstream/main~0 && git checkout -q topic/api-hello && "
       "echo x >> vllm/entrypoints/openai/api_server.py && git commit -qam 'on main' && "
       "git checkout -q --detach v0.30.0", fork)
    text = run_series("status", cwd=fork).stdout
    line = next(l for l in text.splitlines() if "api-hello" in l)
    assert "not on v0.30.0" in line, text


def test_status_from_a_subdirectory_and_with_C(fork: Path, tmp_path: Path) -> None:
    run_series("status", cwd=fork / "vllm")
    run_series("-C", str(fork), "status", cwd=tmp_path)
    proc = run_series("status", cwd=tmp_path, expect=1)
    assert "no series.yaml" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
