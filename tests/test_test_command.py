"""`series test`: selection on the fork, --format outputs, and --run/--without on a fixture
whose test fails without the topic that fixes the code."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from series.commands.test import parse_command
from tests.conftest import run_series, sh
from tests.repos import write

ORDER_TEST = '''\
from vllm.v1.kv_offload.cpu.policies.lru import LRUPolicy


def test_touch_keeps_request_order():
    policy = LRUPolicy()
    for key in (1, 2, 3):
        policy.blocks[key] = key
    policy.touch([1, 2])
    assert [policy.evict(), policy.evict()] == [3, 1]
'''

SERIES = """\
upstream:
  remote: upstream
  base: v0.30.0
integration: series/integration
topics:
  - name: order-fix
    branch: topic/order-fix
  - name: api-hello
    branch: topic/api-hello
"""


@pytest.fixture
def fixed(fork: Path) -> Path:
    """A topic that fixes the LRU touch order and adds the test proving it."""
    sh("git checkout -q -b topic/order-fix v0.30.0", fork)
    lru = (fork / "vllm/v1/kv_offload/cpu/policies/lru.py").read_text()
    write(fork, {"vllm/v1/kv_offload/cpu/policies/lru.py": lru.replace("reversed(list(keys))", "list(keys)"),
                 "tests/v1/kv_offload/test_order.py": ORDER_TEST})
    sh("git add vllm tests && git commit -qm 'fix touch order' && git checkout -q --detach v0.30.0", fork)
    (fork / "series.yaml").write_text(SERIES)
    return fork


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


def test_run_and_without_find_the_evidence(fixed: Path) -> None:
    proc = run_series("test", "--run", "--without", "order-fix", "--json", cwd=fixed)
    run = json.loads(proc.stdout)["run"]
    with_series = run["with_series"][0]
    assert with_series["status"] == "passed", with_series
    tests = with_series["commands"][0]["tests"]
    assert tests.get("v1.kv_offload.test_order::test_touch_keeps_request_order") == "passed", tests
    without = run["without"]
    assert without["steps"][0]["status"] == "failed", without
    assert without["evidence"] == [{"step": "kv-offload",
                                    "test": "v1.kv_offload.test_order::test_touch_keeps_request_order"}], without
    assert "series-test-" not in sh("git worktree list", fixed), "temporary worktrees are removed"

    from series.commands.test import CommandRun, RunReport, StepRun, render_run
    step = lambda outcome: StepRun("kv-offload", "KV offload tests", (CommandRun(  # noqa: E731
        "pytest v1", outcome, "", {"t::order": outcome}),))
    text = render_run(RunReport([step("passed")], "order-fix", [step("failed")]))
    assert "tests that fail without order-fix and pass with it:\n  t::order  [kv-offload]" in text, text


def test_run_exits_non_zero_when_a_step_fails(fixed: Path) -> None:
    sh("git checkout -q topic/order-fix && "
       "printf 'def test_broken():\\n    assert False\\n' > tests/v1/kv_offload/test_broken.py && "
       "git add tests && git commit -qm broken && git checkout -q --detach v0.30.0", fixed)
    proc = run_series("test", "--run", cwd=fixed, expect=1)
    assert "failed  KV offload tests [kv-offload]: 2 passed, 1 failed" in proc.stdout, proc.stdout


def test_run_needs_a_runnable_step(fork: Path) -> None:
    proc = run_series("test", "api-hello", "--run", cwd=fork, expect=1)
    assert "no selected step can run here" in proc.stderr, proc.stderr
    proc = run_series("test", "--without", "api-hello", cwd=fork, expect=2)
    assert "go with --run" in proc.stderr


def test_only_plain_pytest_commands_are_run() -> None:
    assert parse_command("pytest -v -s v1/core") == ("pytest", {}, ["-v", "-s", "v1/core"])
    assert parse_command("DP_SIZE=2 pytest -v x.py") == ("pytest", {"DP_SIZE": "2"}, ["-v", "x.py"])
    assert parse_command("export VLLM_WORKER_MULTIPROC_METHOD=spawn") == (
        "export", {"VLLM_WORKER_MULTIPROC_METHOD": "spawn"}, [])
    assert parse_command("pytest lora --shard-id=$$BUILDKITE_PARALLEL_JOB")[2][-1] == \
        "--shard-id=$BUILDKITE_PARALLEL_JOB"
    from series.commands.test import _SHARD_TEXT, local_args
    assert _SHARD_TEXT.sub("", "pytest lora --shard-id=$J --num-shards 4 -x") == "pytest lora -x"
    sharded = parse_command("pytest -v lora --shard-id=$$BUILDKITE_PARALLEL_JOB --num-shards 4 -k $$SEL")
    assert local_args(sharded[2], {"SEL": "fast"}) == ["-v", "lora", "-k", "fast"], "a shard runs whole"
    assert parse_command("pip install -U lm-eval") is None
    assert parse_command('test "$$JOB" != "3" || pytest -v x.py') is None
    assert parse_command("bash /vllm-workspace/.buildkite/scripts/install.sh") is None
