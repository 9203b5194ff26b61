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
    sh(
        "git branch -f topic/api-hello upstream/main~0 && git checkout -q topic/api-hello && "
        "echo x >> vllm/entrypoints/openai/api_server.py && git commit -qam 'on main' && "
        "git checkout -q --detach v0.30.0",
        fork,
    )
    text = run_series("status", cwd=fork).stdout
    line = next(l for l in text.splitlines() if "api-hello" in l)
    assert "not on v0.30.0" in line, text


def test_status_from_a_subdirectory_and_with_C(fork: Path, tmp_path: Path) -> None:
    run_series("status", cwd=fork / "vllm")
    run_series("-C", str(fork), "status", cwd=tmp_path)
    proc = run_series("status", cwd=tmp_path, expect=1)
    assert "no series.yaml" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_status_and_touches_agree_on_a_stacked_topics_own_work(fork: Path) -> None:
    """series.topics: a stacked topic's dependency commits are not its own, for every verb."""
    sh(
        "git checkout -q -B topic/offload-more topic/offload-evict-fix && "
        "echo '# more' >> vllm/v1/kv_offload/cpu/policies/lru.py && git commit -qam more && "
        "git checkout -q --detach v0.30.0",
        fork,
    )
    with (fork / "series.yaml").open("a") as f:
        f.write("  - name: offload-more\n    branch: topic/offload-more\n    depends_on: [offload-evict-fix]\n")
    rows = {t["name"]: t for t in json.loads(run_series("status", "--json", cwd=fork).stdout)["topics"]}
    more = rows["offload-more"]
    assert (more["commits"], more["files"], more["added"], more["on_base"]) == (1, 1, 1, True), more
    touched = json.loads(run_series("touches", "--json", "vllm", "tests", cwd=fork).stdout)
    files = {t["name"]: [f["path"] for f in t["files"]] for t in touched["topics"]}
    assert len(files["offload-more"]) == more["files"], (files, more)
    assert "offload-more" not in run_series("check", cwd=fork, expect=1).stdout  # on its dependency: fine
