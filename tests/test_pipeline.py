"""The selected steps as upstream's generator would emit them: block steps, queues, image, `$$`."""

from __future__ import annotations

import json
from pathlib import Path

from ruamel.yaml import YAML

from series.evidence import pipeline
from series.evidence.testmap import StepSelection, BuildkiteStep
from tests.conftest import run_series


def step(
    key: str,
    device: str | None = "h100",
    optional: bool = False,
    commands: tuple[str, ...] = ("pytest -v -s x",),
    **kw: object,
) -> StepSelection:
    return StepSelection(
        BuildkiteStep(
            file="a.yaml",
            group="g",
            label=f"Label {key}",
            key=key,
            device=device,
            commands=commands,
            dependencies=("vllm/",),
            optional=optional,
            **kw,
        ),  # type: ignore[arg-type]
        ("vllm/x.py",),
        ("topic-a",),
    )


def test_optional_steps_wait_behind_a_block_step() -> None:
    out = pipeline.buildkite_steps([step("opt", optional=True), step("plain")], pipeline.CiSettings())
    block, command, plain = out
    assert block == {"block": "Run Label opt", "key": "series-block-opt", "depends_on": []}, block
    assert command["key"] == "series-opt" and command["depends_on"] == ["series-block-opt"], command
    assert "soft_fail" not in command and "depends_on" not in plain, (command, plain)
    assert command["retry"] == {"automatic": [{"exit_status": -1, "limit": 1}]}


def test_devices_go_to_the_forks_queues_else_upstreams() -> None:
    settings = pipeline.CiSettings(queues={"h100": "fork-h100"}, key_prefix="nightly-")
    out = pipeline.buildkite_steps(
        [step("a"), step("b", device="h200_18gb"), step("c", device="l4"), step("d", device=None, num_devices=2)],
        settings,
    )
    assert [s["agents"]["queue"] for s in out] == ["fork-h100", "h200_18gb", "gpu_1_queue", "gpu_4_queue"]
    assert [s["key"] for s in out] == ["nightly-a", "nightly-b", "nightly-c", "nightly-d"]


def test_docker_plugin_image_and_dollar_escapes() -> None:
    settings = pipeline.CiSettings(image="registry.example/fork:$BUILDKITE_COMMIT")
    cmds = ("docker pull $IMAGE_TAG", "git checkout $BUILDKITE_COMMIT", "pytest --shard-id=$$BUILDKITE_PARALLEL_JOB x")
    out = pipeline.buildkite_steps([step("a", commands=cmds), step("cpu", device="cpu-small")], settings)
    gpu, cpu = out
    plugin = gpu["plugins"][0]["docker#v5.2.0"]
    assert plugin["image"] == "registry.example/fork:$BUILDKITE_COMMIT" and plugin["gpus"] == "all", plugin
    assert "gpus" not in cpu["plugins"][0]["docker#v5.2.0"]  # as upstream: CPU steps get none
    assert "docker pull registry.example/fork:$BUILDKITE_COMMIT" in gpu["commands"]
    assert "git checkout $$BUILDKITE_COMMIT" in gpu["commands"]  # upload leaves it to the job
    assert "pytest --shard-id=$$BUILDKITE_PARALLEL_JOB x" in gpu["commands"]


def test_narrowing_by_device_optional_and_count() -> None:
    chosen = [step("a"), step("b", device="cpu"), step("c", optional=True), step("d")]
    assert [s.step.key for s in pipeline.narrow(chosen, ("h100",))] == ["a", "c", "d"]
    assert [s.step.key for s in pipeline.narrow(chosen, ("h100",), exclude_optional=True)] == ["a", "d"]
    assert [s.step.key for s in pipeline.narrow(chosen, max_steps=2)] == ["a", "b"]


def test_series_yaml_ci_section_reaches_the_cli(fork: Path) -> None:
    text = (fork / "series.yaml").read_text()
    (fork / "series.yaml").write_text(text + "ci:\n  queues:\n    cpu: fork-cpu-runners\n  key_prefix: fk-\n")
    out = YAML(typ="safe").load(run_series("test", "--format", "buildkite", "--device", "cpu", cwd=fork).stdout)
    assert [(s["key"], s["agents"]["queue"]) for s in out["steps"]] == [("fk-kv-offload", "fork-cpu-runners")]
    matrix = json.loads(run_series("test", "--format", "github-matrix", "--max-steps", "0", cwd=fork).stdout)
    assert matrix == {"include": []}
    matrix = json.loads(run_series("test", "--format", "github-matrix", cwd=fork).stdout)
    assert matrix["include"][0]["runner"] == "fork-cpu-runners", matrix
    (fork / "series.yaml").write_text(text + "ci:\n  queue: {}\n")
    proc = run_series("test", "--format", "buildkite", cwd=fork, expect=1)
    assert "ci.queue: unknown key" in proc.stderr, proc.stderr
    proc = run_series("test", "--device", "h100", cwd=fork, expect=2)
    assert "go with --format" in proc.stderr
