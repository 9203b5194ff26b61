"""`series test`: selection on the fork, --format outputs, and how step commands are read
(the runs themselves: tests/test_evidence.py)."""
from __future__ import annotations

import json
from pathlib import Path

from ruamel.yaml import YAML

from series.verbs.test.step_commands import local_args, parse_command
from tests.conftest import run_series


def test_selection_lists_the_step_with_its_topics(fork: Path) -> None:
    data = json.loads(run_series("test", "--json", cwd=fork).stdout)
    assert [s["key"] for s in data["steps"]] == ["kv-offload"], data
    step = data["steps"][0]
    assert step["topics"] == ["offload-evict-fix"] and step["device"] == "cpu", step
    assert step["commands"] == ["pytest -v -s v1/kv_offload"]
    assert json.loads(run_series("test", "api-hello", "--json", cwd=fork).stdout)["steps"] == []
    proc = run_series("test", "no-such-topic", cwd=fork, expect=1)
    assert "no topic named 'no-such-topic'" in proc.stderr, proc.stderr


def test_formats_for_github_and_buildkite(fork: Path) -> None:
    matrix = json.loads(run_series("test", "--format", "github-matrix", cwd=fork).stdout)
    assert matrix["include"][0]["key"] == "kv-offload", matrix
    assert matrix["include"][0]["working_directory"] == "tests"
    pipeline = YAML(typ="safe").load(run_series("test", "--format", "buildkite", cwd=fork).stdout)
    step = pipeline["steps"][0]
    assert step["key"] == "series-kv-offload", step
    assert step["agents"] == {"queue": "cpu_queue_premerge_us_east_1"}, step   # upstream's queue for cpu
    assert step["commands"][0] == "cd /vllm-workspace/tests" and step["commands"][-1] == "pytest -v -s v1/kv_offload"
    assert "docker#v5.2.0" in step["plugins"][0], step


def test_run_needs_run_for_its_options(fork: Path) -> None:
    proc = run_series("test", "--without", "api-hello", cwd=fork, expect=2)
    assert "go with --run" in proc.stderr
    proc = run_series("test", "--format", "markdown", cwd=fork, expect=2)
    assert "add --run" in proc.stderr


def test_only_plain_pytest_commands_are_run() -> None:
    assert parse_command("pytest -v -s v1/core") == ("pytest", {}, ["-v", "-s", "v1/core"])
    assert parse_command("DP_SIZE=2 pytest -v x.py") == ("pytest", {"DP_SIZE": "2"}, ["-v", "x.py"])
    assert parse_command("export VLLM_WORKER_MULTIPROC_METHOD=spawn") == (
        "export", {"VLLM_WORKER_MULTIPROC_METHOD": "spawn"}, [])
    assert parse_command("pytest lora --shard-id=$$BUILDKITE_PARALLEL_JOB")[2][-1] == \
        "--shard-id=$BUILDKITE_PARALLEL_JOB"
    from series.analysis.pipeline import SHARD_TEXT
    assert SHARD_TEXT.sub("", "pytest lora --shard-id=$J --num-shards 4 -x") == "pytest lora -x"
    sharded = parse_command("pytest -v lora --shard-id=$$BUILDKITE_PARALLEL_JOB --num-shards 4 -k $$SEL")
    assert local_args(sharded[2], {"SEL": "fast"}) == ["-v", "lora", "-k", "fast"], "a shard runs whole"
    assert parse_command("pip install -U lm-eval") is None
    assert parse_command('test "$$JOB" != "3" || pytest -v x.py') is None
    assert parse_command("bash /vllm-workspace/.buildkite/scripts/install.sh") is None
