"""A fork's own tags are not upstream history: they must never hide a topic's commits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_series, sh


@pytest.mark.parametrize("tag", ["v0.30.0+fork.1", "fork-2026-02", "v0.30.0-ours"])
def test_a_fork_tag_on_a_topic_keeps_its_commits_its_own(fork: Path, tag: str) -> None:
    sh(f"git tag '{tag}' topic/api-hello", fork)
    rows = {t["name"]: t for t in json.loads(run_series("status", "--json", cwd=fork).stdout)["topics"]}
    assert rows["api-hello"]["commits"] == 1, rows["api-hello"]
    report = json.loads(
        run_series(
            "rebase", "--onto", "v0.31.0", "--dry-run", "--json", "--skip-topic", "offload-evict-fix", cwd=fork
        ).stdout
    )
    text = json.dumps(report)
    assert "api-hello" in text
    topics = {t["name"]: t for t in report["topics"]}
    assert topics["api-hello"]["outcome"] == "clean", topics["api-hello"]


def test_an_upstream_release_tag_past_the_base_is_upstream_history(fork: Path) -> None:
    # a topic rebased by hand onto v0.31.0 contains upstream's commits; those are not its own
    sh(
        "git checkout -q -B topic/api-hello v0.31.0 && "
        "echo '# ours' >> vllm/entrypoints/openai/api_server.py && git commit -qam ours && "
        "git checkout -q --detach v0.30.0",
        fork,
    )
    rows = {t["name"]: t for t in json.loads(run_series("status", "--json", cwd=fork).stdout)["topics"]}
    assert rows["api-hello"]["commits"] == 1 and rows["api-hello"]["on_base"] is False, rows["api-hello"]
