"""The import graph that picks test files: edges as CPython runs imports, read from git blobs."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from series.evidence import imports
from tests.conftest import sh
from tests.repos import write

TREE = {
    "vllm/__init__.py": "",
    "vllm/a/__init__.py": "from vllm.a.core import thing  # a package __init__ that imports\n",
    "vllm/a/core.py": "thing = 1\n",
    "vllm/a/typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from vllm.b import heavy\n",
    "vllm/a/lazy.py": "def f():\n    from vllm.b import heavy\n    return heavy\n",
    "vllm/a/rel.py": "from .core import thing\nfrom .. import b\n",
    "vllm/a/registry.py": "NAMES = {'x': 'vllm.b.heavy'}  # by name: no edge\n",
    "vllm/b/__init__.py": "",
    "vllm/b/heavy.py": "x = (\n",  # does not parse
    "tests/__init__.py": "",
    "tests/conftest.py": "import vllm.b.heavy\n",
    "tests/utils.py": "from vllm.a.rel import thing\n",
    "tests/t/test_pkg.py": "import vllm.a\n",
    "tests/t/test_typed.py": "import vllm.a.typed\n",
    "tests/t/test_lazy.py": "import vllm.a.lazy\n",
    "tests/t/test_helper.py": "from ..utils import thing\n",
    "tests/t/test_registry.py": "from vllm.a import registry\n",
    "tests/t/check_helper.py": "import vllm.a.core\n",
}


def graph(tmp_path: Path) -> imports.ImportGraph:
    repo_dir = tmp_path / "g"
    repo_dir.mkdir()
    write(repo_dir, TREE)
    sh("git init -q && git add -A && git commit -qm t", repo_dir)
    repo = pygit2.Repository(str(repo_dir))
    files = imports.flatten(repo, repo.head.peel(pygit2.Commit).tree)
    return imports.build(repo, files, imports.ImportCache(tmp_path / "cache.json"))


def reached_tests(g: imports.ImportGraph, *changed: str) -> list[str]:
    return sorted(p for p in g.reaching(changed) if imports.is_test_file(p))


def test_edges_follow_how_python_imports(tmp_path: Path) -> None:
    g = graph(tmp_path)
    # the package __init__ imports core: every importer of vllm.a reaches it; relative
    # imports and a tests/ helper carry it on; a function-level import counts
    assert reached_tests(g, "vllm/a/core.py") == [
        "tests/t/test_helper.py",
        "tests/t/test_lazy.py",
        "tests/t/test_pkg.py",
        "tests/t/test_registry.py",
        "tests/t/test_typed.py",
    ]
    # TYPE_CHECKING imports never run, a name in a string is no edge, conftest is not followed
    assert reached_tests(g, "vllm/b/heavy.py") == ["tests/t/test_lazy.py"]
    assert g.unparsed == ("vllm/b/heavy.py",)
    assert "vllm/a/core.py" in g.closure("tests/t/test_helper.py")


def test_import_cache_is_reused(tmp_path: Path) -> None:
    graph(tmp_path)
    cached = imports.ImportCache(tmp_path / "cache.json")
    repo = pygit2.Repository(str(tmp_path / "g"))
    imports.build(repo, imports.flatten(repo, repo.head.peel(pygit2.Commit).tree), cached)
    assert cached.data and not cached.dirty, "a second build parses nothing"


def test_step_targets_as_ci_selector_reads_them() -> None:
    targets, ignored = imports.pytest_targets(
        [
            "pytest -v -s v1/e2e --ignore v1/e2e/test_slow.py -k 'not mrv2'",
            "export A=1",
            'VLLM_X=1 pytest -m "core_model" models/ --shard-id=$$BUILDKITE_PARALLEL_JOB',
            "cd /vllm-workspace/examples && python3 -m pytest x/test_y.py::test_z",
        ],  # cd lasts
        "tests",
    )
    assert targets == ["tests/v1/e2e", "tests/models", "examples/x/test_y.py"], targets
    assert ignored == ["tests/v1/e2e/test_slow.py"]
    files = [
        "tests/v1/e2e/test_a.py",
        "tests/v1/e2e/test_slow.py",
        "tests/v1/e2e/helper.py",
        "examples/x/test_y.py",
        "tests/models/sub/test_m.py",
        "tests/other/test_o.py",
    ]
    assert sorted(imports.invoked_files(files, targets, ignored)) == [
        "examples/x/test_y.py",
        "tests/models/sub/test_m.py",
        "tests/v1/e2e/test_a.py",
    ]


def test_a_first_run_parses_on_all_cores_to_the_same_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past imports._PARALLEL_FROM uncached modules, prefetch parses them in a process
    pool: the same records, the unparsable ones included, as one by one."""
    monkeypatch.setattr(imports.os, "cpu_count", lambda: 2)  # a pool even on one core
    monkeypatch.setattr(imports, "_PARALLEL_FROM", 5)
    for side in ("pooled", "alone"):
        (tmp_path / side).mkdir()
    pooled = graph(tmp_path / "pooled")
    cache = imports.ImportCache(tmp_path / "pooled" / "cache.json")
    monkeypatch.setattr(imports, "_PARALLEL_FROM", 10**9)
    alone = graph(tmp_path / "alone")
    assert pooled.edges == alone.edges and pooled.unparsed == alone.unparsed == ("vllm/b/heavy.py",)
    assert cache.data == imports.ImportCache(tmp_path / "alone" / "cache.json").data
    assert reached_tests(pooled, "vllm/a/core.py") == reached_tests(alone, "vllm/a/core.py")
