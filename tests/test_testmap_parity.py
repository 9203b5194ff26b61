"""Test selection is upstream's: series against answers of vllm-project/ci-infra's own generator.

tests/fixtures/testmap_parity.json.gz holds, for vLLM v0.30.0..v0.33.0, the real
.buildkite/test_areas files and ci_config.yaml, and what upstream's pipeline generator
selects and runs for a sample of paths: every boundary path made from each dependency
(`dep`, `dep/x.py`, `dep_extra/foo.py`, `depx`), every run-all trigger, every 10th path of
the tree, as hex bitmasks [selected, runs] over the tree's sorted (label, key) list.
tools/testmap_parity.py made it by running their code, and compares all paths.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pygit2
import pytest

from series.evidence import testmap

FIXTURE = Path(__file__).parent / "fixtures" / "testmap_parity.json.gz"
DATA = json.loads(gzip.decompress(FIXTURE.read_bytes()))


def tree_of(tmp_path: Path, files: dict[str, str]) -> tuple[pygit2.Repository, pygit2.Tree]:
    repo = pygit2.init_repository(str(tmp_path / "t"), bare=True)
    index = pygit2.Index()
    for path, text in files.items():
        index.add(pygit2.IndexEntry(path, repo.create_blob(text.encode()), pygit2.enums.FileMode.BLOB))
    return repo, repo[index.write_tree(repo)].peel(pygit2.Tree)


@pytest.mark.parametrize("tag", sorted(DATA))
def test_selection_matches_upstreams_generator(tmp_path: Path, tag: str) -> None:
    repo, tree = tree_of(tmp_path, DATA[tag]["files"])
    tmap = testmap.load(repo, tree)
    assert not tmap.problems, tmap.problems
    index = {(label, key): n for n, (label, key) in enumerate(DATA[tag]["steps"])}
    assert sorted(index) == sorted((s.label, s.key) for s in tmap.steps)
    wrong = []
    for path, (selected, runs) in DATA[tag]["cases"].items():
        chosen = tmap.select({path: ("t",)}, include_always=True)
        ours = sum(1 << index[(s.step.label, s.step.key)] for s in chosen)
        ours_runs = sum(1 << index[(s.step.label, s.step.key)] for s in chosen if not s.step.optional)
        if (ours, ours_runs) != (int(selected, 16), int(runs, 16)):
            wrong.append(path)
    assert not wrong, f"{len(wrong)} of {len(DATA[tag]['cases'])} paths differ, e.g. {wrong[:5]}"


def test_the_sample_has_the_cases_that_tell_the_rules_apart() -> None:
    """A fixture that cannot tell a plain prefix from upstream's rule would prove nothing."""
    cases = {path: (int(s, 16), int(r, 16)) for path, (s, r) in DATA["v0.31.0"]["cases"].items()}
    assert len(cases) > 2000, len(cases)
    assert cases["vllm/v1/kv_offload_extra/foo.py"][0] != cases["vllm/v1/kv_offload/x.py"][0]
    assert any(s & ~r for s, r in cases.values())  # optional: selected, blocked
    assert any(bin(s).count("1") > 200 for s, _ in cases.values())  # a run-all trigger


def test_prefix_and_exclusion_rules() -> None:
    step = testmap.BuildkiteStep(
        file="a.yaml",
        group=None,
        label="x",
        key="x",
        device=None,
        commands=(),
        dependencies=("vllm/v1/kv_offload", "vllm/", "!vllm/distributed/", "vllm/distributed/special.py"),
    )
    assert step.covers("vllm/v1/kv_offload/x.py") and step.covers("vllm/v1/kv_offload")
    assert not testmap.BuildkiteStep(
        file="a.yaml", group=None, label="y", key="y", device=None, commands=(), dependencies=("vllm/v1/kv_offload",)
    ).covers("vllm/v1/kv_offload_extra/foo.py")
    assert step.covers("vllm/engine.py")
    assert not step.covers("vllm/distributed/other.py")
    assert not step.covers("vllm/distributed/special.py")  # an exclusion always wins


LEGACY = json.loads(
    gzip.decompress((Path(__file__).parent / "fixtures" / "testmap_parity_legacy.json.gz").read_bytes())
)


def test_test_pipeline_selection_matches_its_eras_template(tmp_path: Path) -> None:
    """vLLM v0.6.2's .buildkite/test-pipeline.yaml (Apache-2.0, commands cut to the first) and
    what ci-infra's bootstrap and Jinja template of that era ran for each sample path
    (tools/testmap_parity_legacy.py ran their files): run-all, and the steps not blocked."""
    repo, tree = tree_of(tmp_path, {".buildkite/test-pipeline.yaml": LEGACY["pipeline"]})
    tmap = testmap.load(repo, tree, when=LEGACY["commit_time"])
    assert tmap.source == ".buildkite/test-pipeline.yaml" and LEGACY["era"] in tmap.rule
    assert len(tmap.steps) == 38 and not tmap.problems
    wrong = []
    for path, (run_all, runs) in LEGACY["cases"].items():
        ours = sorted(s.step.label for s in tmap.select({path: ("t",)}, include_always=True) if not s.step.optional)
        if (tmap.runs_all(path), ours) != (run_all, runs):
            wrong.append(path)
    assert not wrong, f"{len(wrong)} of {len(LEGACY['cases'])} paths differ, e.g. {wrong[:5]}"
    cases = LEGACY["cases"]
    # the sample tells the era's rule from test_areas': a dependency anywhere in the path,
    # run-all by glob prefix, and steps without dependencies on every change
    assert "LoRA Test %N" in cases["x/tests/lora/y.py"][1] and "LoRA Test %N" in cases["tests/lora_extra/foo.py"][1]
    assert cases["requirements-rocm.txt"][0] and not cases["x/requirements"][0]
    assert "Documentation Build" in cases["x/tests/lora/y.py"][1]
