"""Upstream's CI map before test_areas: one `.buildkite/test-pipeline.yaml`, and the rule of its era.

vLLM described its steps in one file until `.buildkite/test_areas/` replaced it: `steps:`, each
with `label`, `commands` (or `command`), `source_file_dependencies`, `working_dir`,
`optional`, `gpu` (a100), `no_gpu`, `num_gpus`, `num_nodes`, `fast_check`,
`fast_check_only`, `mirror_hardwares`, `soft_fail`, `parallelism`. The CI of that era did not
read it with the generator series.evidence.testmap follows: ci-infra's bootstrap script
(scripts/ci_aws_bootstrap.sh, later buildkite/bootstrap.sh) listed the changed files
(`git diff --name-only --diff-filter=ACMDR` from the merge base), decided run-all from
them, and rendered vLLM's file through a Jinja template (test-template-aws.j2, later
test-template-ci.j2). Restated from those sources, not copied:
- a step with `source_file_dependencies` runs when one of them is a SUBSTRING of a changed
  path (Jinja `source_file in file`): `tests/lora` also matches `tests/lora_extra/x.py`
  and `vllm/foo/tests/lora/x.py`; there are no `!` exclusions;
- a step without them (or with an empty list) always runs;
- a changed path matching a run-all pattern runs every step: bash `[[ $file == $pattern* ]]`,
  a glob prefix (`requirements*` matches `requirements-cuda.txt`), less the ignore
  patterns; the lists live in the bootstrap script, not in vLLM's tree, and changed over
  time (ERAS);
- a step that does not run, and every `optional: true` one, goes behind a block step;
  until 2024-11-19 so did every `gpu: a100` step, and from 2024-10-21 a `nightly: true`
  step runs only in run-all builds started with RUN_ALL: here these count as optional;
- `fast_check_only: true` steps are not part of that pipeline at all.
The era is the one in force when the base commit was made (its committer time): that is
when upstream's CI ran that file. Fastcheck (a separate pipeline of `fast_check: true`
steps, with no path rule) and the AMD mirror group (`mirror_hardwares`) are not modelled.
"""

from __future__ import annotations

import fnmatch
import io
from dataclasses import dataclass
from typing import Any, Iterable

import pygit2
from ruamel.yaml import YAML

TEST_PIPELINE = ".buildkite/test-pipeline.yaml"
DEFAULT_WORKING_DIR = "/vllm-workspace/tests"


@dataclass(frozen=True)
class Era:
    """One state of ci-infra's bootstrap script and template, from the commit `since`."""

    since: int  # that commit's committer time (unix seconds)
    commit: str  # vllm-project/ci-infra
    run_all: tuple[str, ...]  # bash glob prefixes of the bootstrap's patterns=(...)
    run_all_ignore: tuple[str, ...] = ()
    a100_blocked: bool = True
    nightly_blocked: bool = False


_P2024 = (".buildkite/test-pipeline", "Dockerfile", "CMakeLists.txt", "requirements*", "setup.py", "csrc/")
_P2025 = (
    ".buildkite/test-pipeline",
    "docker/Dockerfile",
    "CMakeLists.txt",
    "requirements/common.txt",
    "requirements/cuda.txt",
    "requirements/build.txt",
    "requirements/test.txt",
    "setup.py",
    "csrc/",
)
ERAS = (
    # eecf0b3: blocking by dependencies turned on, and run_all unblocks every step
    Era(1722832970, "eecf0b3", (".buildkite/", "Dockerfile", "CMakeLists.txt", "requirements*", "setup.py")),
    Era(1723479411, "2d5a36a", (".buildkite/", "Dockerfile", "CMakeLists.txt", "requirements*", "setup.py", "csrc/")),
    Era(1724092811, "6922c84", _P2024),
    Era(1729572245, "27496fb", _P2024, nightly_blocked=True),
    Era(1732078228, "544f0be", _P2024, a100_blocked=False, nightly_blocked=True),
    Era(
        1739474708,
        "98a7d2c",
        _P2024,
        ("Dockerfile.rocm", "Dockerfile.rocm_base"),
        a100_blocked=False,
        nightly_blocked=True,
    ),
    Era(
        1740010901,
        "8476545",
        _P2024,
        (
            "Dockerfile.rocm",
            "Dockerfile.rocm_base",
            "requirements-rocm",
            "requirements-hpu",
            "requirements-openvino",
            "requirements-neuron",
            "requirements-tpu",
            "requirements-xpu",
            "requirements-cpu",
        ),
        a100_blocked=False,
        nightly_blocked=True,
    ),
    Era(1743454064, "3fb2dd0", _P2025, ("docker/Dockerfile.",), a100_blocked=False, nightly_blocked=True),
    Era(1753825626, "0d4d33a", _P2025 + ("cmake/",), ("docker/Dockerfile.",), a100_blocked=False, nightly_blocked=True),
    Era(
        1759174453,
        "3008b04",
        _P2025[1:] + ("cmake/",),
        ("docker/Dockerfile.", "csrc/cpu", "csrc/rocm", "cmake/hipify.py", "cmake/cpu_extension.cmake"),
        a100_blocked=False,
        nightly_blocked=True,
    ),
)


def era_at(when: int | None) -> Era:
    """The rule in force at `when` (None: the last one). Before the first era every step ran
    on every change; the first era's rule is the closest that series can state."""
    if when is None:
        return ERAS[-1]
    current = ERAS[0]
    for era in ERAS:
        if era.since <= when:
            current = era
    return current


def run_all_regexes(patterns: Iterable[str]) -> tuple[str, ...]:
    """`[[ $file == $pattern* ]]` as a regular expression matched at the start (re.match):
    bash's `*` crosses '/', as fnmatch's does."""
    return tuple(fnmatch.translate(p + "*") for p in patterns)


def read(repo: pygit2.Repository, tree: pygit2.Tree) -> str | None:
    try:
        entry = tree[TEST_PIPELINE]
    except KeyError:
        return None
    if entry.filemode == pygit2.enums.FileMode.TREE:
        return None
    return repo[entry.id].peel(pygit2.Blob).data.decode("utf-8", errors="replace")


def parse_steps(text: str) -> list[dict[str, Any]]:
    """The raw step mappings the template loops over (`steps:`), in file order."""
    doc = YAML(typ="safe", pure=True).load(io.StringIO(text))
    if doc is None:
        return []
    if not isinstance(doc, dict):
        raise ValueError("expected a mapping with 'steps'")
    return [raw for raw in doc.get("steps") or [] if isinstance(raw, dict) and raw.get("label")]


def steps_of(raw_steps: list[dict[str, Any]], era: Era) -> Iterable[dict[str, Any]]:
    """Each step of the era's CI pipeline, as testmap.BuildkiteStep's fields."""
    for raw in raw_steps:
        if raw.get("fast_check_only") is True:
            continue
        commands = raw.get("commands", raw.get("command")) or []
        if isinstance(commands, str):
            commands = [commands]
        deps = raw.get("source_file_dependencies") or []
        if isinstance(deps, str):
            deps = list(deps)  # the template's loop over a string walks its characters
        device = "a100" if raw.get("gpu") == "a100" else ("cpu" if raw.get("no_gpu") else None)
        blocked = (
            bool(raw.get("optional"))
            or (era.a100_blocked and raw.get("gpu") == "a100")
            or (era.nightly_blocked and bool(raw.get("nightly")))
        )
        num_nodes = raw.get("num_nodes")
        yield {
            "label": str(raw["label"]),
            "device": device,
            "commands": tuple(str(c) for c in commands),
            "dependencies": tuple(str(d) for d in deps),
            "working_dir": str(raw.get("working_dir") or DEFAULT_WORKING_DIR),
            "optional": blocked,
            "parallelism": _int(raw.get("parallelism")),
            "num_devices": _int(raw.get("num_gpus")),
            "soft_fail": raw.get("soft_fail") is True,
            "num_nodes": _int(num_nodes),
        }


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
