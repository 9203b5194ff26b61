"""A small vLLM-shaped upstream, a fork of it and its release wheel, for the evidence runs.

The wheel holds one module the source tree does not (`vllm/_compiled.py`, standing in
for the compiled extensions), so a test that imports it passes only on the build.
Upstream's layout traps are kept: tests/__init__.py (pytest puts the directory above
tests/ first on sys.path) and a root conftest.py that imports vllm.

Steps: `kv-offload` (cpu) runs tests/v1/kv_offload; `kv-offload-gpu` (h100) runs
tests/v1/kv_offload_gpu, which runs fine on a CPU; `entrypoints` (cpu) depends on all of
vllm/ (as ninety upstream steps do) and runs tests/entrypoints, which imports nothing of
kv_offload.
"""

from __future__ import annotations

from pathlib import Path

from tests.fakewheel import build_wheel, tree_files
from tests.repos import commit_all, git, write

LRU = '''\
"""LRU eviction for offloaded KV blocks."""
from collections import OrderedDict


class LRUPolicy:
    def __init__(self) -> None:
        self.blocks: OrderedDict[int, int] = OrderedDict()

    def insert(self, key: int) -> None:
        self.blocks[key] = key

    def evict(self) -> int:
        key, _ = self.blocks.popitem(last=False)
        return key
'''

PEEK = (
    LRU
    + '''
    def peek(self) -> int:
        """The key evict() would take, left in place."""
        return next(iter(self.blocks))
'''
)

PEEK_PR = (
    LRU
    + '''
    def peek(self) -> "int | None":
        """Their version: None when nothing is cached."""
        return next(iter(self.blocks), None)
'''
)

MANAGER = '''\
from vllm.v1.kv_offload.cpu.policies.lru import LRUPolicy


class Manager:
    def __init__(self) -> None:
        self.policy = LRUPolicy()

    def store(self, key: int) -> int:
        self.policy.insert(key)
        return key
'''

TEST_LRU = '''\
from vllm.v1.kv_offload.cpu.policies.lru import LRUPolicy


def test_evicts_oldest():
    policy = LRUPolicy()
    for key in (1, 2, 3):
        policy.insert(key)
    assert policy.evict() == 1
'''

TEST_MANAGER = '''\
from vllm.v1.kv_offload.manager import Manager


def test_store():
    assert Manager().store(7) == 7
'''

TEST_BUILD = '''\
from pathlib import Path

import vllm


def test_runs_on_the_build():
    import vllm._compiled  # only in the wheel: the tree's source has no compiled parts
    assert vllm._compiled.BUILT
    layout = Path(__file__).resolve().parents[3]  # the directory that holds tests/
    assert not Path(vllm.__file__).resolve().is_relative_to(layout), vllm.__file__
'''

TEST_MACHINE = '''\
import pytest

import vllm.v1.kv_offload.cpu.policies.lru as lru


def test_needs_a_gpu():
    assert lru and False, "Failed to infer device type"


@pytest.fixture
def model():
    raise OSError("We couldn't connect to 'https://huggingface.co'")


def test_needs_the_hub(model):
    pass
'''

TEST_SLOW = '''\
import os
import tempfile
import time

from vllm.v1.kv_offload.cpu.policies.lru import LRUPolicy


def test_slow_when_asked():
    marker = os.environ.get("EVIDENCE_SLOW")
    if marker:
        with open(marker + ".tmpdir", "w") as f:
            f.write(tempfile.gettempdir())
        with open(marker, "w") as f:
            f.write(str(os.getpid()))
        try:
            time.sleep(120)
        except KeyboardInterrupt:  # series stops its pytest as Ctrl-C does: it can report
            open(marker + ".interrupted", "w").close()
            raise
    assert LRUPolicy
'''

TEST_UNRELATED = "def test_plain():\n    assert 1 + 1 == 2\n"

TEST_GPU_ROUNDTRIP = '''\
from vllm.v1.kv_offload.manager import Manager


def test_roundtrip():
    assert Manager().store(3) == 3
'''

TEST_API = "from vllm.entrypoints.api import serve\n\n\ndef test_serve():\n    assert serve() == 'ok'\n"

TEST_PEEK = '''\
from vllm.v1.kv_offload.cpu.policies.lru import LRUPolicy


def test_peek_keeps_the_block():
    policy = LRUPolicy()
    policy.insert(4)
    assert policy.peek() == 4 and policy.evict() == 4
'''

TEST_PEEK_PR = '''\
from vllm.v1.kv_offload.cpu.policies.lru import LRUPolicy


def test_peek_on_empty():
    assert LRUPolicy().peek() is None
'''

TEST_AREAS = {
    ".buildkite/test_areas/kv_offload.yaml": """\
group: KV Offload
steps:
- label: KV offload tests
  key: kv-offload
  device: cpu
  source_file_dependencies: &kv
    - vllm/v1/kv_offload
    - tests/v1/kv_offload
  commands:
    - pytest -v -s v1/kv_offload
- label: KV offload GPU round trip
  key: kv-offload-gpu
  device: h100
  source_file_dependencies: *kv
  commands:
    - pytest -v -s v1/kv_offload_gpu
""",
    ".buildkite/test_areas/entrypoints.yaml": """\
group: Entrypoints
steps:
- label: Entrypoints
  key: entrypoints
  device: cpu
  source_file_dependencies:
    - vllm/
    - tests/entrypoints
  commands:
    - pytest -v -s entrypoints
""",
}

BASE = {
    "vllm/__init__.py": '"""vLLM (test upstream)."""\n',
    "vllm/v1/__init__.py": "",
    "vllm/v1/kv_offload/__init__.py": "",
    "vllm/v1/kv_offload/cpu/__init__.py": "",
    "vllm/v1/kv_offload/cpu/policies/__init__.py": "",
    "vllm/v1/kv_offload/cpu/policies/lru.py": LRU,
    "vllm/v1/kv_offload/manager.py": MANAGER,
    "vllm/entrypoints/__init__.py": "",
    "vllm/entrypoints/api.py": "def serve():\n    return 'ok'\n",
    "pyproject.toml": '[project]\nname = "vllm"\n\n[tool.pytest.ini_options]\nmarkers = ["slow_test"]\n',
    "tests/__init__.py": "",
    "tests/conftest.py": "import vllm  # noqa: F401  (upstream's conftest imports vllm too)\n",
    "tests/v1/__init__.py": "",
    "tests/v1/kv_offload/__init__.py": "",
    "tests/v1/kv_offload/test_lru.py": TEST_LRU,
    "tests/v1/kv_offload/test_manager.py": TEST_MANAGER,
    "tests/v1/kv_offload/test_build.py": TEST_BUILD,
    "tests/v1/kv_offload/test_machine.py": TEST_MACHINE,
    "tests/v1/kv_offload/test_unrelated.py": TEST_UNRELATED,
    "tests/v1/kv_offload/test_zz_slow.py": TEST_SLOW,
    "tests/v1/kv_offload_gpu/__init__.py": "",
    "tests/v1/kv_offload_gpu/test_roundtrip.py": TEST_GPU_ROUNDTRIP,
    "tests/entrypoints/__init__.py": "",
    "tests/entrypoints/test_api.py": TEST_API,
    **TEST_AREAS,
}

TOPICS = {
    "lru-peek": (
        "add LRUPolicy.peek",
        {"vllm/v1/kv_offload/cpu/policies/lru.py": PEEK, "tests/v1/kv_offload/test_peek.py": TEST_PEEK},
    ),
    "peek-pr": (
        "their peek (#61100)",
        {"vllm/v1/kv_offload/cpu/policies/lru.py": PEEK_PR, "tests/v1/kv_offload/test_peek_pr.py": TEST_PEEK_PR},
    ),
    "api-note": (
        "a comment in the API server",
        {"vllm/entrypoints/api.py": "def serve():\n    return 'ok'  # fork note\n"},
    ),
    "manager-break": (
        "store returns nothing",
        {"vllm/v1/kv_offload/manager.py": MANAGER.replace("        return key\n", "        return -1\n")},
    ),
}


def build(root: Path) -> Path:
    """upstream (v0.30.0) and a fork clone of it with every topic branch; returns the fork."""
    import subprocess

    upstream = root / "upstream"
    upstream.mkdir(parents=True)
    git(upstream, "init", "-q", "-b", "main")
    write(upstream, BASE)
    commit_all(upstream, "Release v0.30.0", "2026-01-01T00:00:00Z")
    git(upstream, "tag", "v0.30.0")
    fork = root / "fork"
    subprocess.run(["git", "clone", "-q", "-o", "upstream", str(upstream), str(fork)], check=True, capture_output=True)
    me = {
        "GIT_AUTHOR_NAME": "Fork Maintainer",
        "GIT_AUTHOR_EMAIL": "fork@example.com",
        "GIT_COMMITTER_NAME": "Fork Maintainer",
        "GIT_COMMITTER_EMAIL": "fork@example.com",
    }
    for i, (name, (message, files)) in enumerate(TOPICS.items()):
        git(fork, "checkout", "-q", "-B", f"topic/{name}", "v0.30.0")
        write(fork, files)
        commit_all(fork, message, f"2026-01-1{i}T12:00:00Z", env=me)
    git(fork, "checkout", "-q", "--detach", "v0.30.0")
    return fork


def series_yaml(fork: Path, *topics: str, base: str = "v0.30.0") -> None:
    lines = ["upstream:", "  remote: upstream", f"  base: {base}", "integration: series/integration", "topics:"]
    for name in topics:
        lines += [f"  - name: {name}", f"    branch: topic/{name}"]
    (fork / "series.yaml").write_text("\n".join(lines) + "\n")


def release_wheel(upstream: Path, out: Path, version: str = "0.30.0") -> Path:
    files = tree_files(upstream, "v0.30.0")
    files["vllm/_compiled.py"] = b"BUILT = True  # stands in for vllm/_C.abi3.so\n"
    return build_wheel(out, files, version=version)
