"""The values every command passes around: frozen, typed, changed with replace()."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NewType

Sha = NewType("Sha", str)
PRNumber = NewType("PRNumber", int)


class Status(str, enum.Enum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    MERGED = "merged"
    DROPPED = "dropped"


@dataclass(frozen=True)
class Topic:
    name: str
    branch: str
    status: Status = Status.ACTIVE
    summary: str | None = None
    scope: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    superseded_by: str | None = None
    upstream_pr: PRNumber | None = None
    upstream_head: Sha | None = None
    merged_in: str | None = None
    reason: str | None = None
    measured: str | None = None  # URL of the comment with a measurement, on upstream_pr
    line: int = 0  # 1-based line of the entry in series.yaml, for error messages

    @property
    def active(self) -> bool:
        return self.status is Status.ACTIVE


def topic_name(branch: str) -> str:
    """The name `series init` and `series add` give a topic for its branch:
    'topic/Offload_Evict Fix' -> 'offload_evict-fix': the last path component, made
    to fit series.yaml's [a-z0-9._-] names."""
    last = branch.rstrip("/").rsplit("/", 1)[-1].lower()
    name = re.sub(r"[^a-z0-9._-]+", "-", last)
    name = re.sub(r"-{2,}", "-", name).strip("-._")
    return name or "topic"


@dataclass(frozen=True)
class Upstream:
    remote: str = "upstream"
    base: str = ""
    github: str | None = None
    api_url: str | None = None  # GitHub Enterprise: e.g. https://ghe.example.com/api/v3


# What vLLM's first-PR guide asks of a contribution: the `propose:` block of series.yaml
# overrides these (series.propose.grade applies them).
HOT_PATHS = (
    "vllm/v1/core/sched/",
    "vllm/core/scheduler.py",  # the scheduler
    "vllm/v1/attention/",
    "vllm/attention/",
    "vllm/model_executor/layers/attention/",
    "vllm/model_executor/kernels/attention/",
    "csrc/attention/",  # attention kernels
    "*cuda_graph*",
    "*cudagraph*",  # CUDA graphs
    "vllm/v1/sample/",
    "vllm/v1/worker/gpu/sample/",
    "vllm/model_executor/layers/sampler.py",
    "csrc/sampler.cu",  # samplers
)


@dataclass(frozen=True)
class ProposeSettings:
    max_lines: int = 200  # changed lines (added + deleted) in a first PR
    max_files: int = 3  # changed files in a first PR
    hot_paths: tuple[str, ...] = HOT_PATHS  # "dir/" prefixes or fnmatch patterns
    fork_remote: str = "origin"  # the git remote of the user's fork on GitHub


@dataclass(frozen=True)
class Series:
    path: Path
    upstream: Upstream
    topics: tuple[Topic, ...] = ()
    integration: str | None = None
    resolutions: str = "resolutions"  # directory beside series.yaml
    propose: ProposeSettings = field(default_factory=ProposeSettings)
    lines: dict[str, int] = field(default_factory=dict, compare=False)

    @property
    def root(self) -> Path:
        return self.path.parent

    def topic(self, name: str) -> Topic:
        for topic in self.topics:
            if topic.name == name:
                return topic
        from series.errors import SeriesError

        known = ", ".join(t.name for t in self.topics) or "none"
        raise SeriesError(f"no topic named '{name}' in {self.path.name} (topics: {known})")

    def active(self) -> tuple[Topic, ...]:
        return tuple(t for t in self.topics if t.active)
