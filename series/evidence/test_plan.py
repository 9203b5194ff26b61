"""The upstream CI steps that cover what the series touches: the plan `series test` lists,
exports and runs, and `series ci report` tabulates (one selection for both).

StepSelection reads the base's `.buildkite/test_areas` (or, on an older base, its
`.buildkite/test-pipeline.yaml`; series.evidence.testmap) and each topic's own diff
(series.wheel.integration_tree.topic_paths).
"""

from __future__ import annotations

from dataclasses import dataclass

from series.evidence import testmap
from series.evidence.testmap import StepSelection
from series.wheel import integration_tree
from series.workspace import Workspace


@dataclass(frozen=True)
class Plan:
    base: str
    touched: dict[str, tuple[str, ...]]
    selected: tuple[StepSelection, ...]
    always: int  # steps upstream runs on every change (not listed)
    problems: tuple[str, ...]
    source: str = testmap.TEST_AREAS  # the CI map read
    rule: str = ""  # whose selection rule, of which era


def select(ws: Workspace, topics: tuple[str, ...] = (), include_always: bool = False) -> Plan:
    chosen = integration_tree.require_topics(ws, topics) if topics else None
    touched = integration_tree.topic_paths(ws, chosen)
    base = ws.base_commit()
    tmap = testmap.load_commit(ws.repo, base)
    selected = tuple(tmap.select(touched, include_always))
    return Plan(ws.series.upstream.base, touched, selected, tmap.always_count, tmap.problems, tmap.source, tmap.rule)
