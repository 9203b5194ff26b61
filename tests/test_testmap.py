"""Upstream test selection on real vLLM test_areas YAML: negations, anchors, own-file rule."""

from __future__ import annotations

import shutil
from pathlib import Path

import pygit2
import pytest

from series.evidence import testmap
from tests.conftest import sh

FIXTURES = Path(__file__).parent / "fixtures" / "test_areas"
BENCH = Path("/tmp/bench/upstream")


@pytest.fixture
def real_areas(tmp_path: Path) -> testmap.TestMap:
    """Three files copied from vLLM v0.30.0 (misc has the anchors), in a real repository."""
    repo = tmp_path / "areas"
    (repo / ".buildkite").mkdir(parents=True)
    shutil.copytree(FIXTURES, repo / ".buildkite/test_areas")
    sh("git init -q && git add -A && git commit -qm areas", repo)
    r = pygit2.Repository(str(repo))
    return testmap.load(r, r.head.peel(pygit2.Commit).tree)


def keys(selections: list[testmap.StepSelection]) -> list[str]:
    return [s.step.ident for s in selections]


def test_anchors_resolve_to_the_shared_dependency_list(real_areas: testmap.TestMap) -> None:
    steps = {s.ident: s for s in real_areas.steps}
    assert real_areas.files == (
        ".buildkite/test_areas/basic_correctness.yaml",
        ".buildkite/test_areas/misc.yaml",
        ".buildkite/test_areas/torch_abi.yaml",
    ), real_areas.files
    assert steps["v1-logits-oracle"].dependencies == steps["v1-sample"].dependencies
    assert "vllm/v1/" in steps["v1-kv-offload"].dependencies, steps["v1-kv-offload"]
    assert steps["v1-kv-offload"].device == "h200_35gb"
    assert steps["cpu-tool-parsers"].cpu and not steps["v1-kv-offload"].cpu
    assert steps["basic-correctness"].group == "Basic Correctness"
    assert steps["cpu-tool-parsers"].commands == ("pytest -v -s tool_parsers",)
    assert steps["cpu-tool-parsers"].repo_dir == "tests"


def test_negation_excludes_a_subtree_of_a_broad_prefix(real_areas: testmap.TestMap) -> None:
    inside = real_areas.select({"vllm/distributed/kv_transfer/kv_connector/base.py": ("t",)})
    outside = real_areas.select({"vllm/distributed/parallel_state.py": ("t",)})
    assert "basic-correctness" not in keys(inside), keys(inside)
    assert "v1-core" not in keys(inside), keys(inside)
    assert {"basic-correctness", "v1-core", "v1-others-cpu"} <= set(keys(outside)), keys(outside)


def test_offload_change_selects_the_offload_steps_and_names_topics(real_areas: testmap.TestMap) -> None:
    selected = real_areas.select(
        {"vllm/v1/kv_offload/cpu/policies/lru.py": ("offload-evict-fix",), "docs/README.md": ("docs-typo",)}
    )
    by_key = {s.step.ident: s for s in selected}
    assert "v1-kv-offload" in by_key and "v1-others-cpu" in by_key, list(by_key)
    assert by_key["v1-kv-offload"].topics == ("offload-evict-fix",)
    assert by_key["v1-kv-offload"].paths == ("vllm/v1/kv_offload/cpu/policies/lru.py",)
    assert "torch-stable-abi-audit" not in by_key


def test_a_steps_own_yaml_file_counts_as_a_dependency(real_areas: testmap.TestMap) -> None:
    own = real_areas.select({".buildkite/test_areas/torch_abi.yaml": ("t",)})
    assert keys(own) == ["torch-stable-abi-audit"], keys(own)
    assert keys(real_areas.select({"csrc/attention/attention.cu": ("t",)})) == ["torch-stable-abi-audit"]
    assert keys(real_areas.select({"docs/index.md": ("t",)})) == []


def test_broken_yaml_is_reported_not_fatal(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    (repo / ".buildkite/test_areas").mkdir(parents=True)
    (repo / ".buildkite/test_areas/bad.yaml").write_text("steps: [\n")
    shutil.copy(FIXTURES / "torch_abi.yaml", repo / ".buildkite/test_areas/")
    sh("git init -q && git add -A && git commit -qm x", repo)
    r = pygit2.Repository(str(repo))
    m = testmap.load(r, r.head.peel(pygit2.Commit).tree)
    assert [s.ident for s in m.steps] == ["torch-stable-abi-audit"]
    assert m.problems and m.problems[0].startswith(".buildkite/test_areas/bad.yaml"), m.problems


@pytest.mark.skipif(
    not (BENCH / ".git").exists() and not (BENCH / "HEAD").exists(),
    reason="the real vLLM bench (/tmp/bench/upstream) is not on this machine",
)
def test_real_vllm_v030_test_areas() -> None:
    r = pygit2.Repository(str(BENCH))
    m = testmap.load(r, r.revparse_single("v0.30.0").peel(pygit2.Commit).tree)
    assert len(m.files) >= 30 and not m.problems, (len(m.files), m.problems)
    assert len(m.steps) > 150, len(m.steps)
    offload = keys(m.select({"vllm/v1/kv_offload/cpu/policies/lru.py": ("t",)}))
    assert "v1-kv-offload" in offload and "v1-others-cpu" in offload, offload
    nixl = keys(m.select({"vllm/distributed/kv_transfer/kv_connector/v1/nixl/connector.py": ("t",)}))
    assert nixl and all(k not in nixl for k in ("basic-correctness", "v1-core")), nixl
    assert any(s.cpu for s in m.steps)
