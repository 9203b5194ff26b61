"""The selected upstream steps as a fork's CI runs them: a Buildkite pipeline or a GitHub matrix.

The Buildkite form is the step upstream's generator (vllm-project/ci-infra,
buildkite_step.py) emits, restated: `cd working_dir` first, the step's commands (with
`$BUILDKITE_COMMIT` escaped as `$$BUILDKITE_COMMIT` and every other `$` as upstream wrote
it, so `buildkite-agent pipeline upload` leaves them for the job's shell), the docker
plugin (`docker#v5.2.0`, upstream's options, the image upstream pulls unless series.yaml
`ci.image` names the fork's), a one-time retry when the agent is lost, and an optional
step behind a block step (`block: Run <label>`, key `block-<key>`) instead of running it.
Keys carry a prefix (default `series-`) so they cannot clash with a build's own steps,
and a device goes to the queue series.yaml maps it to (`ci.queues`), else to upstream's.

StepSelection is narrowed the same way for both forms: `devices` keeps the steps of those
devices, `exclude_optional` drops optional ones, `max_steps` keeps the first N.
"""

from __future__ import annotations

import enum
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from series.evidence import testmap
from series.evidence.testmap import StepSelection, BuildkiteStep

DOCKER_PLUGIN = "docker#v5.2.0"
# Upstream's test image: the CI image their build pushed for the commit under test. A fork
# testing upstream's release commit can pull it as it is; `ci.image` overrides it.
DEFAULT_IMAGE = "public.ecr.aws/q9t5s3a7/vllm-ci-postmerge-repo:$BUILDKITE_COMMIT"
# Upstream's queues for the devices test_areas use (constants.py AgentQueue).
UPSTREAM_QUEUES = {
    "cpu": "cpu_queue_premerge_us_east_1",
    "cpu-small": "small_cpu_queue_premerge",
    "cpu-medium": "medium_cpu_queue_premerge",
    "a100": "a100_queue",
    "h100": "mithril-h100-pool",
    "h200": "H200",
    "h200_18gb": "h200_18gb",
    "h200_35gb": "h200_35gb",
    "b200": "B200",
    "b200-k8s": "b200-k8s",
    "gh200": "gh200_queue",
    "dgx-spark": "dgx-spark",
    "intel_cpu": "intel-cpu",
    "intel_hpu": "intel-hpu",
    "intel_gpu": "intel-gpu",
    "arm_cpu": "arm-cpu",
    "ascend_npu": "ascend",
    "amd_cpu": "amd-cpu",
    "zen5": "amd-zen5-cpu",
    **{d: f"amd_{d}" for d in testmap.AMD_GPU_DEVICES},
}
_ENVIRONMENT = [
    "VLLM_USAGE_SOURCE=ci-test",
    "NCCL_CUMEM_HOST_ENABLE=0",
    "HF_HOME=/fsx/hf_cache",
    "HF_TOKEN",
    "CODECOV_TOKEN",
    "BUILDKITE_ANALYTICS_TOKEN",
]
_VOLUMES = ["/dev/shm:/dev/shm", "/fsx/hf_cache:/fsx/hf_cache"]
_CPU = ("cpu", "cpu-small", "cpu-medium")
_LOST_AGENT_RETRY = {"automatic": [{"exit_status": -1, "limit": 1}]}
SHARD_TEXT = re.compile(r"\s+--(?:shard-id|num-shards)(?:=|\s+)\S+")


class BreaksPolicy(str, enum.Enum):
    """`ci.breaks`: what the nightly does with a semantic break of a clean rebase."""

    WARN = "warn"  # rebase, list the breaks in report.md
    FAIL = "fail"  # `series rebase --strict`: exit 3, nothing moved, the issue lists them


@dataclass(frozen=True)
class CiSettings:
    """series.yaml `ci:`: how this fork runs upstream's steps."""

    queues: dict[str, str] = field(default_factory=dict)  # upstream device -> queue / runner label
    image: str = DEFAULT_IMAGE
    key_prefix: str = "series-"
    owners: dict[str, str] = field(default_factory=dict)  # topic -> @handle (topics' owner:)
    breaks: BreaksPolicy = BreaksPolicy.WARN


def queue(step: BuildkiteStep, settings: CiSettings) -> str:
    device = step.device or ""
    if device in settings.queues:
        return settings.queues[device]
    if device in UPSTREAM_QUEUES:
        return UPSTREAM_QUEUES[device]
    return "gpu_4_queue" if step.num_devices in (2, 4) else "gpu_1_queue"


def narrow(
    selected: Iterable[StepSelection],
    devices: tuple[str, ...] = (),
    exclude_optional: bool = False,
    max_steps: int | None = None,
) -> list[StepSelection]:
    out = [
        s
        for s in selected
        if (not devices or (s.step.device or "") in devices) and not (exclude_optional and s.step.optional)
    ]
    return out[:max_steps] if max_steps is not None else out


def step_key(step: BuildkiteStep, prefix: str) -> str:
    """Upstream's key (the step's, or made from its label as their generator does), prefixed."""
    key = step.key or (
        step.label.replace(" ", "-")
        .lower()
        .replace("(", "")
        .replace(")", "")
        .replace("%", "")
        .replace(",", "-")
        .replace("+", "-")
        .replace(":", "-")
        .replace(".", "-")
        .replace("/", "-")
    )
    return f"{prefix}{key}"


def _inject(command: str, image: str) -> str:
    """Upstream's generation-time variables: `$BUILDKITE_COMMIT` escaped for upload (the
    job's shell expands it), then `$IMAGE_TAG` replaced by the image, whose own
    `$BUILDKITE_COMMIT` upload fills in, as upstream's does."""
    command = re.sub(r"(?<!\$)\$BUILDKITE_COMMIT\b", "$$BUILDKITE_COMMIT", command)
    return re.sub(r"(?<!\$)\$IMAGE_TAG\b", image.replace("\\", "\\\\"), command)


def _commands(step: BuildkiteStep, image: str) -> list[str]:
    setup = [] if step.no_plugin else ["echo '--- :nvidia: GPU Info'", "(command nvidia-smi || true)"]
    commands = setup + [_inject(c, image) for c in step.commands]
    if not step.num_nodes:
        commands = [c.replace("'", '"') for c in commands]  # as upstream: the plugin runs them in sh -c '...'
    wd = step.working_dir
    if wd and not (step.num_nodes and step.num_nodes >= 2):
        commands.insert(0, f"cd {wd}")
    return commands


def _plugin(step: BuildkiteStep, image: str) -> dict[str, Any]:
    options: dict[str, Any] = {"image": image, "always-pull": True, "propagate-environment": True}
    if step.device not in _CPU:
        options["gpus"] = "all"
    options["environment"] = list(_ENVIRONMENT)
    options["volumes"] = list(_VOLUMES)
    if step.mount_buildkite_agent or step.label == "Benchmarks":
        options["mount_buildkite_agent"] = True
    return {DOCKER_PLUGIN: options}


def buildkite_steps(selected: Iterable[StepSelection], settings: CiSettings) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for sel in selected:
        s = sel.step
        key = step_key(s, settings.key_prefix)
        command: dict[str, Any] = {
            "label": s.label,
            "key": key,
            "agents": {"queue": queue(s, settings)},
            "commands": _commands(s, settings.image),
        }
        if s.optional:
            block = f"{settings.key_prefix}block-{key[len(settings.key_prefix) :]}"
            out.append({"block": f"Run {s.label}", "key": block, "depends_on": []})
            command["depends_on"] = [block]
        if s.soft_fail:
            command["soft_fail"] = True
        command["retry"] = _LOST_AGENT_RETRY
        if s.env:
            command["env"] = dict(s.env)
        if s.parallelism:
            command["parallelism"] = s.parallelism
        if s.timeout_in_minutes:
            command["timeout_in_minutes"] = s.timeout_in_minutes
        if not s.no_plugin and not (s.num_nodes and s.num_nodes >= 2):
            command["plugins"] = [_plugin(s, settings.image)]
        out.append(command)
    return out


def buildkite(selected: Iterable[StepSelection], settings: CiSettings) -> str:
    from ruamel.yaml import YAML

    out = io.StringIO()
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 1 << 16  # one command, one line
    yaml.dump({"steps": buildkite_steps(selected, settings)}, out)
    return out.getvalue()


def github_matrix(selected: Iterable[StepSelection], settings: CiSettings) -> str:
    """One job per step; a Buildkite-sharded step runs whole (GitHub has no BUILDKITE_PARALLEL_JOB).

    `runner` is the device's runner label from series.yaml `ci.queues` (else the device)."""
    include = [
        {
            "key": s.step.ident,
            "label": s.step.label,
            "device": s.step.device or "",
            "runner": settings.queues.get(s.step.device or "", s.step.device or "ubuntu-latest"),
            "file": s.step.file,
            "working_directory": s.step.repo_dir or ".",
            "run": "\n".join(SHARD_TEXT.sub("", testmap.unescape(c)).strip() for c in s.step.commands),
            "topics": ",".join(s.topics),
            "optional": s.step.optional,
        }
        for s in selected
    ]
    return json.dumps({"include": include})


CI_KEYS = ("queues", "image", "key_prefix", "breaks")


def settings_from(raw: Any, where: str = "series.yaml") -> CiSettings:
    """Validate series.yaml's `ci:` mapping (read with a safe loader) into CiSettings."""
    from series.errors import SeriesError

    if raw is None:
        return CiSettings()
    if not isinstance(raw, dict):
        raise SeriesError(f"{where}: ci: expected a mapping ({', '.join(CI_KEYS)})")
    unknown = sorted(set(raw) - set(CI_KEYS))
    if unknown:
        raise SeriesError(f"{where}: ci.{unknown[0]}: unknown key (allowed: {', '.join(CI_KEYS)})")
    queues = raw.get("queues") or {}
    if not isinstance(queues, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in queues.items()
    ):
        raise SeriesError(f"{where}: ci.queues: expected DEVICE: QUEUE pairs, e.g. h100: gpu-h100")
    image = raw.get("image", DEFAULT_IMAGE)
    prefix = raw.get("key_prefix", "series-")
    if not isinstance(image, str) or not image:
        raise SeriesError(f"{where}: ci.image: expected an image reference")
    if not isinstance(prefix, str) or not re.fullmatch(r"[a-z0-9_-]*", prefix):
        raise SeriesError(f"{where}: ci.key_prefix: letters, digits, '-' and '_' only")
    policy = raw.get("breaks", BreaksPolicy.WARN.value)
    if policy not in [p.value for p in BreaksPolicy]:
        raise SeriesError(
            f"{where}: ci.breaks: {policy!r} is not fail or warn (fail: a semantic break "
            "stops the nightly like a conflict; warn, the default: it is listed in the report)"
        )
    return CiSettings(queues=dict(queues), image=image, key_prefix=prefix, breaks=BreaksPolicy(policy))


def load_settings(series_path: Any) -> CiSettings:
    """The `ci:` section and each topic's `owner:` of series.yaml."""
    from pathlib import Path

    from ruamel.yaml import YAML

    path = Path(series_path)
    doc = YAML(typ="safe", pure=True).load(path.read_text()) or {}
    settings = settings_from(doc.get("ci"), path.name)
    owners = {}
    for topic in doc.get("topics") or []:
        if isinstance(topic, dict) and isinstance(topic.get("owner"), str) and topic.get("name"):
            owners[str(topic["name"])] = topic["owner"]
    return CiSettings(settings.queues, settings.image, settings.key_prefix, owners, settings.breaks)
