"""The demo's repositories: a small upstream shaped like vLLM, a fork of it, a release wheel.

Upstream history (all offline, made with pygit2, fixed authors and dates):
  v0.30.0   the base our fork sits on
  PR #61050 refs/pull/61050/head: Ada Upstream's fix of the KV-offload LRU eviction order,
            the same bug our topic `offload-evict-fix` fixes
  v0.31.0   three squash-merged PRs and the release commit: #60990 edits the scheduler
            far from our note (clean), #61010 reworks the offload manager's store() (our
            `offload-stats` conflicts with it), #61020 ships the ipc change we backported
            (`ipc-backport` becomes merged)
  v0.32.0   squash-merges #61050 ("... (#61050)"): the adopted PR topic retires; carries a
            PR template and CODEOWNERS (what `series propose` reads)

The fork's topics are the example series in topics/ (export format, the source of truth):
the demo clones upstream and runs `series import` on it, as a new clone of a fork would.
"""

from __future__ import annotations

import hashlib
import base64
import io
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pygit2

from series.git.repo import edit_tree

BLOB = pygit2.enums.FileMode.BLOB
TREE = pygit2.enums.FileMode.TREE

UPSTREAM = ("vLLM Upstream", "upstream@vllm.example")
ADA = ("Ada Upstream", "ada@upstream.example")
MAINTAINER = ("Fork Maintainer", "maintainer@fork.example")

LRU = '''\
"""LRU eviction for KV blocks offloaded to CPU memory."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable


class LRUPolicy:
    """Evicts the least recently used offloaded block first."""

    def __init__(self) -> None:
        self.blocks: OrderedDict[int, int] = OrderedDict()

    def insert(self, key: int, slot: int) -> None:
        self.blocks[key] = slot

    def touch(self, keys: Iterable[int]) -> None:
        for key in list(keys):
            self.blocks.move_to_end(key)

    def evict(self) -> int:
        key, _ = self.blocks.popitem(last=False)
        return key
'''

# The eviction bug: touching a request's keys in order leaves its *first* key most recently
# used... and evicts the prefix a request needs first. Both fixes touch in reverse order.
LRU_FIXED = LRU.replace(
    "        for key in list(keys):\n",
    "        # keep request order: the first key of a request is evicted last\n"
    "        for key in reversed(list(keys)):\n",
)

MANAGER = '''\
"""CPU offloading manager: moves KV blocks between GPU and CPU memory."""
from __future__ import annotations

from vllm.v1.kv_offload.cpu.policies.lru import LRUPolicy


class CPUOffloadingManager:
    def __init__(self, num_blocks: int) -> None:
        self.num_blocks = num_blocks
        self.policy = LRUPolicy()
        self.free = list(range(num_blocks))

    def store(self, keys: list[int]) -> list[int]:
        slots = []
        for key in keys:
            if not self.free:
                self.free.append(self.policy.evict())
            slot = self.free.pop()
            self.policy.insert(key, slot)
            slots.append(slot)
        return slots

    def load(self, keys: list[int]) -> None:
        self.policy.touch(keys)
'''

MANAGER_V031 = MANAGER.replace(
    "            if not self.free:\n                self.free.append(self.policy.evict())\n",
    "            if not self.free:\n                self._evict_one()\n",
).replace(
    "    def load(self, keys: list[int]) -> None:\n",
    "    def _evict_one(self) -> None:\n        self.free.append(self.policy.evict())\n\n"
    "    def load(self, keys: list[int]) -> None:\n",
)

SCHEDULER = "".join(
    [
        '"""Scheduler for the v1 engine."""\n\n\nclass Scheduler:\n'
        "    def __init__(self, max_num_seqs: int = 256) -> None:\n"
        "        self.max_num_seqs = max_num_seqs\n"
    ]
    + [f"\n    def step_{i}(self) -> int:\n        return {i}\n" for i in range(12)]
)

API_SERVER = '''\
"""OpenAI-compatible API server."""


def build_app() -> dict[str, object]:
    return {"routes": ["/v1/completions", "/v1/chat/completions"]}
'''

TEST_LRU = '''\
from vllm.v1.kv_offload.cpu.policies.lru import LRUPolicy


def test_evicts_least_recently_used() -> None:
    policy = LRUPolicy()
    for key in range(3):
        policy.insert(key, key)
    policy.touch([0])
    assert policy.evict() == 1
'''

TEST_LRU_ORDER = (
    TEST_LRU
    + '''

def test_touch_keeps_request_order() -> None:
    policy = LRUPolicy()
    for key in range(4):
        policy.insert(key, key)
    policy.touch([0, 1])
    assert policy.evict() == 2
    assert policy.evict() == 3
    assert policy.evict() == 1, "the first key of a request is evicted last"
'''
)

TEST_AREA_KV = """\
group: KV Offload
depends_on:
  - image-build
steps:
- label: KV offload (CPU)
  key: kv-offload-cpu
  device: cpu
  source_file_dependencies: &kv_deps
    - vllm/v1/kv_offload
    - tests/v1/kv_offload
  commands:
    - pytest -v -s v1/kv_offload
- label: ":nvidia: KV offload GPU round trip"
  key: kv-offload-gpu
  device: h100
  source_file_dependencies: *kv_deps
  commands:
    - pytest -v -s v1/kv_offload -m gpu
"""

TEST_AREA_ENTRYPOINTS = """\
group: Entrypoints
steps:
- label: Entrypoints (API server)
  key: entrypoints-api
  device: cpu
  source_file_dependencies:
    - vllm/entrypoints
    - "!vllm/entrypoints/openai/tool_parsers"
    - tests/entrypoints
  commands:
    - pytest -v -s entrypoints
"""

BASE_FILES = {
    "README.md": "# vLLM (demo upstream)\n\nEasy, fast and cheap LLM serving.\n",
    "pyproject.toml": '[project]\nname = "vllm"\ndynamic = ["version"]\n',
    "csrc/cache_kernels.cu": "// CUDA kernels (not touched by the demo series)\n",
    "vllm/__init__.py": '"""vLLM: a high-throughput and memory-efficient inference engine."""\n',
    "vllm/_version.py": '__version__ = version = "0.30.0"\n__version_tuple__ = version_tuple = (0, 30, 0)\n',
    "vllm/v1/kv_offload/__init__.py": "",
    "vllm/v1/kv_offload/cpu/__init__.py": "",
    "vllm/v1/kv_offload/cpu/manager.py": MANAGER,
    "vllm/v1/kv_offload/cpu/policies/__init__.py": "",
    "vllm/v1/kv_offload/cpu/policies/lru.py": LRU,
    "vllm/v1/core/sched/scheduler.py": SCHEDULER,
    "vllm/entrypoints/openai/api_server.py": API_SERVER,
    "vllm/multimodal/ipc.py": "SHM_PREFIX = 'vllm'\n",
    "tests/v1/kv_offload/test_lru.py": TEST_LRU,
    "tests/entrypoints/test_api_server.py": "from vllm.entrypoints.openai.api_server import build_app\n\n\n"
    "def test_routes() -> None:\n    assert '/v1/completions' in build_app()['routes']\n",
    ".buildkite/test_areas/kv_offload.yaml": TEST_AREA_KV,
    ".buildkite/test_areas/entrypoints.yaml": TEST_AREA_ENTRYPOINTS,
    "docs/usage.md": "# Usage\n\nRun `vllm serve`.\n",
}


# What `series propose` reads from upstream's main: vLLM's PR template (shortened) and owners.
PR_TEMPLATE = """\
## Purpose

<!-- What the change does and why; link the issue it fixes. -->

## Test Plan

## Test Result

---

**BEFORE SUBMITTING, PLEASE READ <https://docs.vllm.ai/en/latest/contributing>** (anything written below this line will be removed by GitHub Actions)
"""
CODEOWNERS = "/vllm/v1/kv_offload @kv-offload-owner\n/vllm/entrypoints @frontend-owner\n"


def _version_file(version: str) -> str:
    parts = tuple(int(p) for p in version.split("."))
    return f'__version__ = version = "{version}"\n__version_tuple__ = version_tuple = {parts!r}\n'


@dataclass(frozen=True)
class Ident:
    name: str
    email: str

    def at(self, date: str) -> pygit2.Signature:
        import datetime

        when = datetime.datetime.fromisoformat(date.replace("Z", "+00:00"))
        return pygit2.Signature(self.name, self.email, int(when.timestamp()), 0)


def commit(
    repo: pygit2.Repository,
    parent: pygit2.Commit | None,
    files: Mapping[str, str | None],
    message: str,
    author: Ident,
    date: str,
    committer: Ident | None = None,
) -> pygit2.Commit:
    blobs = {
        path: None if text is None else (repo.create_blob(text.encode()), int(BLOB)) for path, text in files.items()
    }
    tree = edit_tree(repo, parent.tree if parent is not None else None, blobs, "demo")
    oid = repo.create_commit(
        None,
        author.at(date),
        (committer or author).at(date),
        message + "\n",
        tree,
        [parent.id] if parent is not None else [],
    )
    return repo[oid].peel(pygit2.Commit)


def build_upstream(path: Path) -> pygit2.Repository:
    repo = pygit2.init_repository(str(path), bare=True, initial_head="main")
    up = Ident(*UPSTREAM)
    v030 = commit(repo, None, BASE_FILES, "Release v0.30.0", up, "2026-01-15T00:00:00Z")
    repo.references.create("refs/tags/v0.30.0", v030.id)
    pr = commit(
        repo,
        v030,
        {"vllm/v1/kv_offload/cpu/policies/lru.py": LRU_FIXED, "tests/v1/kv_offload/test_lru.py": TEST_LRU_ORDER},
        "[Bugfix][KV offload] Fix eviction order of touched offloaded blocks\n\n"
        "Touching a request's blocks in order made its first block the next to be\n"
        "evicted. Touch in reverse so the prefix a request needs first stays.\n\n"
        "Signed-off-by: Ada Upstream <ada@upstream.example>",
        Ident(*ADA),
        "2026-02-03T09:30:00Z",
    )
    repo.references.create("refs/pull/61050/head", pr.id)
    # v0.31.0 lands as squash-merged PRs, as vLLM's releases do (the rebase names them)
    sched = commit(
        repo,
        v030,
        {"vllm/v1/core/sched/scheduler.py": SCHEDULER.replace("return 11\n", "return 11  # v0.31\n")},
        "[Core] Mark the scheduler's v0.31 step (#60990)",
        Ident("Sam Scheduler", "sam@upstream.example"),
        "2026-02-05T11:00:00Z",
        committer=up,
    )
    rework = commit(
        repo,
        sched,
        {"vllm/v1/kv_offload/cpu/manager.py": MANAGER_V031},
        "[KV offload] Evict lazily in store() (#61010)",
        Ident("Kai Offload", "kai@upstream.example"),
        "2026-02-08T15:20:00Z",
        committer=up,
    )
    ipc = commit(
        repo,
        rework,
        {"vllm/multimodal/ipc.py": "SHM_PREFIX = 'vllm'\nSHM_TIMEOUT_S = 30\n"},
        "[Multimodal] Time out shared-memory handles (#61020)",
        Ident("Mia Multimodal", "mia@upstream.example"),
        "2026-02-11T09:45:00Z",
        committer=up,
    )
    v031 = commit(
        repo, ipc, {"vllm/_version.py": _version_file("0.31.0")}, "Release v0.31.0", up, "2026-02-15T00:00:00Z"
    )
    repo.references.create("refs/tags/v0.31.0", v031.id)
    merged = commit(
        repo,
        v031,
        {"vllm/v1/kv_offload/cpu/policies/lru.py": LRU_FIXED, "tests/v1/kv_offload/test_lru.py": TEST_LRU_ORDER},
        "[Bugfix][KV offload] Fix eviction order of touched offloaded blocks (#61050)",
        Ident(*ADA),
        "2026-03-02T10:00:00Z",
        committer=up,
    )
    v032 = commit(
        repo,
        merged,
        {
            "vllm/_version.py": _version_file("0.32.0"),
            ".github/PULL_REQUEST_TEMPLATE.md": PR_TEMPLATE,
            ".github/CODEOWNERS": CODEOWNERS,
        },
        "Release v0.32.0",
        up,
        "2026-03-15T00:00:00Z",
    )
    repo.references.create("refs/tags/v0.32.0", v032.id)
    repo.references.create("refs/heads/main", v032.id, force=True)
    return repo


def land_follow_up(repo: pygit2.Repository) -> pygit2.Commit:
    """Upstream's main gains a fix for #61050 after v0.32.0: what `series status` then reports."""
    main = repo.references["refs/heads/main"].peel(pygit2.Commit)
    lru = LRU_FIXED.replace(
        "    def insert(self, key: int, slot: int) -> None:\n        self.blocks[key] = slot\n",
        "    def insert(self, key: int, slot: int) -> None:\n        self.blocks[key] = slot\n"
        "        self.blocks.move_to_end(key, last=key % 100 != 0)\n",
    )
    fix = commit(
        repo,
        main,
        {"vllm/v1/kv_offload/cpu/policies/lru.py": lru},
        "[Bugfix][KV offload] Keep a fresh prefix's chunk 0 when storing (#61210)\n\n"
        "Fix for #61050: it ordered touches only, so store() still inserted a fresh\n"
        "prefix's chunk 0 first and evicted it first.\n\n"
        "Signed-off-by: Ada Upstream <ada@upstream.example>",
        Ident(*ADA),
        "2026-03-20T10:00:00Z",
        committer=Ident(*UPSTREAM),
    )
    repo.references.create("refs/heads/main", fix.id, force=True)
    return fix


def example_topics() -> Path:
    """topics/, the example series in export format: in a source checkout, or installed."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "topics", here / "_topics"):
        if (candidate / "order").is_file():
            return candidate
    from series.errors import SeriesError

    raise SeriesError(
        "the example series (topics/) is not installed with this copy of series",
        "install from a source checkout ('pip install -e .')",
    )


def clone_fork(upstream: Path, path: Path) -> pygit2.Repository:
    """Clone `upstream` as remote 'upstream', the maintainer's identity set, HEAD on v0.30.0.

    The topics come next, from topics/ through `series import`, as a new clone of a real
    fork would get them.
    """

    def as_upstream(repo: pygit2.Repository, name: str, url: str) -> pygit2.Remote:
        return repo.remotes.create("upstream", url)

    repo = pygit2.clone_repository(str(upstream), str(path), remote=as_upstream, checkout_branch="main")
    repo.config["user.name"], repo.config["user.email"] = MAINTAINER
    base = repo.revparse_single("v0.30.0").peel(pygit2.Commit)
    # Detached on the base, so every topic branch is free to move.
    repo.checkout_tree(base.tree, strategy=pygit2.enums.CheckoutStrategy.FORCE)  # type: ignore[no-untyped-call]
    repo.set_head(base.id)
    return repo


def build_release_wheel(upstream: pygit2.Repository, tag: str, out_dir: Path) -> Path:
    """A wheel of the release's vllm/ package, laid out as upstream's wheels are."""
    commit_ = upstream.revparse_single(tag).peel(pygit2.Commit)
    version = tag.lstrip("v")
    dist_info = f"vllm-{version}.dist-info"
    members: dict[str, bytes] = {}

    def walk(tree: pygit2.Tree, prefix: str) -> None:
        for entry in tree:
            if entry.filemode == TREE:
                walk(upstream[entry.id].peel(pygit2.Tree), f"{prefix}{entry.name}/")
            else:
                members[f"{prefix}{entry.name}"] = upstream[entry.id].peel(pygit2.Blob).data

    walk(upstream[commit_.tree["vllm"].id].peel(pygit2.Tree), "vllm/")
    members[f"{dist_info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n"
        "Summary: A high-throughput and memory-efficient inference engine for LLMs\n"
    ).encode()
    members[f"{dist_info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: demo\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record_lines = []
    for name, data in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record_lines.append(f"{name},sha256={digest},{len(data)}")
    record_lines.append(f"{dist_info}/RECORD,,")
    members[f"{dist_info}/RECORD"] = ("\n".join(record_lines) + "\n").encode()
    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / f"vllm-{version}-py3-none-any.whl"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    wheel.write_bytes(buffer.getvalue())
    return wheel
