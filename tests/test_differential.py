"""A deterministic slice of tools/differential.py: series rebase vs git rebase, topic by topic.

The full run uses real vLLM releases (../shared/bench); here the upstream is a small
repository with the same kinds of change between two releases (edits, moves, a near-copy,
deletions, additions, a directory moved wholesale, binaries, symlinks), and 46 topics
over it from the differential's own generator, every class included.
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys
from pathlib import Path

from tests.conftest import sh

TOOLS = Path(__file__).resolve().parent.parent / "tools"


def _tool():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("differential", TOOLS / "differential.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["differential"] = module
    spec.loader.exec_module(module)
    return module


def _module(rng: random.Random, name: str, functions: int) -> str:
    out = [f'"""{name}: generated for the differential slice."""', "import os", ""]
    for i in range(functions):
        out += [
            f"def {name}_{i}(value):",
            "    if value:",
            f"        return value * {rng.randrange(9)}",
            "    for i in range(value):",
            "        value += i",
            "    return value",
            "",
        ]
    return "\n".join(out) + "\n"


def _upstream(root: Path) -> Path:
    rng = random.Random(3)
    repo = root / "upstream"
    files = {f"vllm/core/m{i}.py": _module(rng, f"core{i}", 12) for i in range(8)}
    files.update({f"vllm/stable/k{i}.py": _module(rng, f"kernel{i}", 10) for i in range(4)})
    files.update({f"tests/test_m{i}.py": _module(rng, f"test{i}", 5) for i in range(4)})
    files["docs/logo.bin"] = "\0binary\0" * 20
    files["setup.py"] = "from setuptools import setup\nsetup()\n"
    files["vllm/core/NOTES.md"] = "".join(f"Note {i}: the scheduler keeps request order.\n" for i in range(20))
    sh("git init -q -b main upstream", root)
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    sh("git add -A && git commit -qm 'Release v0.1.0' && git tag v0.1.0", repo)
    for i in (0, 1, 2):  # edited: lines changed, added and removed
        path = repo / f"vllm/core/m{i}.py"
        text = path.read_text().replace("* 3\n", "* 30\n").replace("    return value\n", "    return value or 0\n", 3)
        path.write_text(text + _module(rng, f"extra{i}", 2))
    sh("git mv vllm/core/m3.py vllm/core/renamed3.py && git rm -q vllm/core/NOTES.md", repo)
    (repo / "vllm/core/m3_copy.py").write_text(
        (repo / "vllm/core/renamed3.py").read_text().replace("core3_1", "core3c_1")
    )
    sh("git mv vllm/stable vllm/kernels", repo)  # a directory moved wholesale
    (repo / "vllm/core/new.py").mkdir()  # a directory where there was none
    (repo / "vllm/core/new.py/__init__.py").write_text("x = 1\n")
    (repo / "vllm/added.py").write_text(_module(rng, "added", 3))
    (repo / "docs/logo.bin").write_text("\0binary v2\0" * 20)
    os.symlink("setup.py", repo / "setup_link.py")
    sh("git add -A && git commit -qm 'Release v0.2.0' && git tag v0.2.0", repo)
    return repo


def test_series_rebase_gives_git_rebase_answers(tmp_path: Path) -> None:
    tool = _tool()
    upstream = _upstream(tmp_path)
    differences, count, _, _ = tool.run_pair(upstream, "v0.1.0", "v0.2.0", 46, 1, tmp_path / "work", log=False)
    assert count == 46
    assert (
        tool.summary_line(count, differences) == "differential: 46 topics, 0 silent, 0 boundary, 0 history differences"
    ), "\n".join(f"{d['class']} {d['topic']}: {d['detail']}" for d in differences)


def test_the_slice_covers_every_class(tmp_path: Path) -> None:
    import pygit2

    tool = _tool()
    upstream = _upstream(tmp_path)
    repo = pygit2.Repository(str(upstream))
    change = tool.upstream_change(repo, upstream, "v0.1.0", "v0.2.0")
    assert change.renamed and change.deleted and change.added and change.moved_dirs, change
    specs = tool.build_specs(tool.Builder(repo, change, "v0.1.0", "v0.2.0", 1), 46)
    assert {s.kind for s in specs} == set(tool.KINDS)
