"""`series test`: selection on the fork, --format outputs, and how step commands are read
(the runs themselves: tests/test_evidence.py)."""

from __future__ import annotations

import json
from pathlib import Path

from ruamel.yaml import YAML

from series.verbs.test.step_commands import local_args, parse_command
from tests.conftest import run_series
from tests.repos import commit_all, git, write


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
    assert step["agents"] == {"queue": "cpu_queue_premerge_us_east_1"}, step  # upstream's queue for cpu
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
        "export",
        {"VLLM_WORKER_MULTIPROC_METHOD": "spawn"},
        [],
    )
    assert (
        parse_command("pytest lora --shard-id=$$BUILDKITE_PARALLEL_JOB")[2][-1] == "--shard-id=$BUILDKITE_PARALLEL_JOB"
    )
    from series.evidence.pipeline import SHARD_TEXT

    assert SHARD_TEXT.sub("", "pytest lora --shard-id=$J --num-shards 4 -x") == "pytest lora -x"
    sharded = parse_command("pytest -v lora --shard-id=$$BUILDKITE_PARALLEL_JOB --num-shards 4 -k $$SEL")
    assert local_args(sharded[2], {"SEL": "fast"}) == ["-v", "lora", "-k", "fast"], "a shard runs whole"
    assert parse_command("pip install -U lm-eval") is None
    assert parse_command('test "$$JOB" != "3" || pytest -v x.py') is None
    assert parse_command("bash /vllm-workspace/.buildkite/scripts/install.sh") is None


TEST_PIPELINE = """\
steps:
- label: Documentation Build
  commands: [make html]
- label: KV offload
  source_file_dependencies: [vllm/v1/kv_offload]
  commands: [pytest -v -s v1/kv_offload]
- label: Core sub
  source_file_dependencies: [v1/core]
  commands: [pytest -v -s v1/core]
- label: Entrypoints
  source_file_dependencies: [vllm/entrypoints, tests/entrypoints]
  commands: [pytest -v -s entrypoints]
- label: Fast only
  fast_check_only: true
  source_file_dependencies: [vllm/]
  commands: [pytest -v -s fast]
- label: Optional GPU
  optional: true
  gpu: a100
  source_file_dependencies: [vllm/]
  commands: [pytest -v -s big]
"""


def _base_with(fork: Path, files: dict[str, str | None]) -> None:
    """A base commit on v0.30.0 whose CI map is `files` (None: removed); series.yaml uses it."""
    git(fork, "checkout", "-q", "--detach", "v0.30.0")
    git(fork, "rm", "-rq", ".buildkite")
    write(fork, {p: t for p, t in files.items() if t is not None})
    commit_all(fork, "older CI layout", "2024-10-01T00:00:00Z")
    git(fork, "tag", "v0.30.0-older")
    config = fork / "series.yaml"
    config.write_text(config.read_text().replace("base: v0.30.0 ", "base: v0.30.0-older "))


def test_an_older_base_selects_from_test_pipeline_yaml_by_its_eras_rule(fork: Path) -> None:
    """vLLM before test_areas: a dependency anywhere in a path selects its step (`v1/core`
    covers vllm/v1/core/...), a step without dependencies runs on every change, and a
    fast-check-only step is no part of the pipeline."""
    _base_with(fork, {".buildkite/test-pipeline.yaml": TEST_PIPELINE})
    data = json.loads(run_series("test", "--json", cwd=fork).stdout)
    assert data["source"] == ".buildkite/test-pipeline.yaml" and "ci-infra" in data["rule"], data
    got = {s["label"]: sorted(s["topics"]) for s in data["steps"]}
    assert got == {
        "KV offload": ["offload-evict-fix"],
        "Core sub": ["sched-note"],
        "Entrypoints": ["api-hello"],
        "Optional GPU": ["api-hello", "ipc-backport", "offload-evict-fix", "sched-note"],
    }, got
    assert [s["label"] for s in data["steps"]] == ["KV offload", "Core sub", "Entrypoints", "Optional GPU"]
    assert data["always_steps_not_listed"] == 1
    assert next(s for s in data["steps"] if s["label"] == "Optional GPU")["optional"]  # a100: blocked in 2024
    everything = json.loads(run_series("test", "--json", "--all-steps", cwd=fork).stdout)["steps"]
    assert [s["label"] for s in everything][0] == "Documentation Build"
    text = run_series("test", "offload-evict-fix", cwd=fork).stdout
    assert text.startswith("2 upstream CI steps of v0.30.0-older (.buildkite/test-pipeline.yaml)"), text
    pipeline = YAML(typ="safe").load(run_series("test", "--format", "buildkite", "--exclude-optional", cwd=fork).stdout)
    assert [s["label"] for s in pipeline["steps"]] == ["KV offload", "Core sub", "Entrypoints"], pipeline


def test_a_base_with_neither_ci_layout_is_a_one_line_error(fork: Path) -> None:
    _base_with(fork, {})
    proc = run_series("test", cwd=fork, expect=1)
    assert proc.stderr.count("\n") <= 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "no .buildkite/test_areas/ nor .buildkite/test-pipeline.yaml in the base tree" in proc.stderr
