"""Small real repositories shaped like vLLM and a fork of it, for the tests.

upstream: v0.30.0, then v0.31.0 which rewrites the LRU policy (our offload fix conflicts),
          takes our backport verbatim (that topic is merged), and edits the scheduler far
          from our change (a clean rebase).
fork:     clone with remote 'upstream', four topics over v0.30.0 and a series.yaml
          (untracked, in the work tree root).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

LRU_V030 = '''\
"""LRU eviction policy for CPU-offloaded KV blocks."""
from collections import OrderedDict


class LRUPolicy:
    def __init__(self) -> None:
        self.blocks: OrderedDict[int, int] = OrderedDict()

    def touch(self, keys: list[int]) -> None:
        for key in reversed(list(keys)):
            self.blocks.move_to_end(key)

    def evict(self) -> int:
        key, _ = self.blocks.popitem(last=False)
        return key
'''

LRU_V031 = LRU_V030.replace(
    "        for key in reversed(list(keys)):\n            self.blocks.move_to_end(key)\n",
    "        for key in keys[::-1]:\n            if key in self.blocks:\n"
    "                self.blocks.move_to_end(key)\n",
)

SCHED_V030 = "".join(f"# scheduler line {i}\n" for i in range(1, 41))
SCHED_V031 = SCHED_V030.replace("# scheduler line 38\n", "# scheduler line 38 (v0.31)\n")

TEST_AREA = """\
group: KV Offload
steps:
- label: KV offload tests
  key: kv-offload
  device: cpu
  source_file_dependencies:
    - vllm/v1/kv_offload
    - tests/v1/kv_offload
  commands:
    - pytest -v -s v1/kv_offload
"""

ENV = {
    "GIT_AUTHOR_NAME": "vLLM Upstream",
    "GIT_AUTHOR_EMAIL": "upstream@example.com",
    "GIT_COMMITTER_NAME": "vLLM Upstream",
    "GIT_COMMITTER_EMAIL": "upstream@example.com",
}


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    import os

    full = dict(os.environ, **(env or {}))
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=full)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def commit_all(repo: Path, message: str, date: str, env: dict[str, str] | None = None) -> None:
    git(repo, "add", "-A")
    full = dict(ENV if env is None else env, GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    git(repo, "commit", "-qm", message, env=full)


def build_upstream(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    write(
        path,
        {
            "README.md": "# vLLM\n",
            "vllm/__init__.py": "",
            "vllm/v1/kv_offload/cpu/policies/lru.py": LRU_V030,
            "vllm/v1/core/sched/scheduler.py": SCHED_V030,
            "vllm/entrypoints/openai/api_server.py": "def serve():\n    return 'ok'\n",
            "vllm/multimodal/ipc.py": "VERSION = 1\n",
            "tests/v1/kv_offload/test_lru.py": "def test_lru():\n    assert True\n",
            ".buildkite/test_areas/kv_offload.yaml": TEST_AREA,
        },
    )
    commit_all(path, "Release v0.30.0", "2026-01-01T00:00:00Z")
    git(path, "tag", "v0.30.0")
    write(
        path,
        {
            "vllm/v1/kv_offload/cpu/policies/lru.py": LRU_V031,
            "vllm/v1/core/sched/scheduler.py": SCHED_V031,
            "vllm/multimodal/ipc.py": "VERSION = 2\n",
        },
    )
    commit_all(path, "[KV offload] rewrite LRU touch (#60001)", "2026-02-10T00:00:00Z")
    git(path, "tag", "v0.31.0")
    return path


SERIES_YAML = """\
# our fork's topics over upstream vLLM
upstream:
  remote: upstream
  base: v0.30.0   # bumped by 'series rebase'
  github: vllm-project/vllm
integration: series/integration
topics:
  - name: sched-note
    branch: topic/sched-note
    summary: a note in the scheduler
    scope: [vllm/v1/core/]
  - name: offload-evict-fix
    branch: topic/offload-evict-fix
    summary: keep request order when touching offloaded chunks
    scope: [vllm/v1/kv_offload/]
  - name: ipc-backport
    branch: topic/ipc-backport
  - name: api-hello
    branch: topic/api-hello
    scope: [vllm/entrypoints/]
"""


def build_fork(upstream: Path, path: Path) -> Path:
    """A fork clone with four topics; series.yaml at the root (untracked)."""
    subprocess.run(["git", "clone", "-q", "-o", "upstream", str(upstream), str(path)], check=True, capture_output=True)
    git(path, "checkout", "-q", "--detach", "v0.30.0")
    me = {
        "GIT_AUTHOR_NAME": "Fork Maintainer",
        "GIT_AUTHOR_EMAIL": "fork@example.com",
        "GIT_COMMITTER_NAME": "Fork Maintainer",
        "GIT_COMMITTER_EMAIL": "fork@example.com",
    }

    def topic(branch: str, edits: list[tuple[str, dict[str, str]]]) -> None:
        git(path, "checkout", "-q", "-B", branch, "v0.30.0")
        for i, (message, files) in enumerate(edits):
            write(path, files)
            commit_all(path, message, f"2026-01-1{i}T12:00:00Z", env=me)

    sched = (path / "vllm/v1/core/sched/scheduler.py").read_text()
    topic(
        "topic/sched-note",
        [
            (
                "[Fork] scheduler note",
                {
                    "vllm/v1/core/sched/scheduler.py": sched.replace(
                        "# scheduler line 3\n", "# scheduler line 3\n# fork note\n"
                    )
                },
            ),
        ],
    )
    lru = LRU_V030.replace(
        "        for key in reversed(list(keys)):\n",
        "        # keep request order: the first key is evicted last\n        for key in reversed(list(keys)):\n",
    )
    topic(
        "topic/offload-evict-fix",
        [
            ("[Bugfix][KV offload] keep request order on touch", {"vllm/v1/kv_offload/cpu/policies/lru.py": lru}),
            (
                "[Test] cover touch order",
                {
                    "tests/v1/kv_offload/test_lru.py": "def test_lru():\n    assert True\n\n\ndef test_order():\n    assert True\n"
                },
            ),
        ],
    )
    topic("topic/ipc-backport", [("[Backport] ipc VERSION 2", {"vllm/multimodal/ipc.py": "VERSION = 2\n"})])
    topic(
        "topic/api-hello",
        [
            (
                "[Fork] hello endpoint",
                {
                    "vllm/entrypoints/openai/api_server.py": "def serve():\n    return 'ok'\n\n\ndef hello():\n    return 'hi'\n"
                },
            ),
        ],
    )
    git(path, "checkout", "-q", "--detach", "v0.30.0")
    (path / "series.yaml").write_text(SERIES_YAML)
    return path


# -- upstream pull requests (refs/pull/N/head), as GitHub and its mirrors serve them ------

ADA = {"GIT_AUTHOR_NAME": "Ada Upstream", "GIT_AUTHOR_EMAIL": "ada@example.com"}

LRU_FIXED = LRU_V030.replace(
    "        for key in reversed(list(keys)):\n",
    "        # keep request order: the first key is evicted last\n        for key in reversed(list(keys)):\n",
)
TEST_LRU_ORDER = "def test_lru():\n    assert True\n\n\ndef test_order():\n    assert True\n"


def commit_files(
    repo: Path,
    parent: str,
    files: dict[str, str | None],
    message: str,
    date: str,
    author: dict[str, str] | None = None,
    committer: dict[str, str] | None = None,
) -> str:
    """A commit on `parent` with `files` changed (None deletes), made with plumbing:
    no checkout, works in a bare repository too. Returns its sha."""
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(repo, "read-tree", parent, env=index)
        for rel, text in files.items():
            if text is None:
                git(repo, "update-index", "--force-remove", rel, env=index)
                continue
            blob_file = Path(tmp) / "blob"
            blob_file.write_text(text)
            blob = git(repo, "hash-object", "-w", str(blob_file)).strip()
            git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{rel}", env=index)
        tree = git(repo, "write-tree", env=index).strip()
    who = dict(author or ADA)
    who.setdefault("GIT_AUTHOR_NAME", "Ada Upstream")
    who.update({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
    who.update(
        committer
        or {"GIT_COMMITTER_NAME": ENV["GIT_COMMITTER_NAME"], "GIT_COMMITTER_EMAIL": ENV["GIT_COMMITTER_EMAIL"]}
    )
    return git(repo, "commit-tree", tree, "-p", parent, "-m", message, env=dict(os.environ, **who)).strip()


def add_pull_request(upstream: Path, number: int = 61050, parent: str = "v0.30.0") -> str:
    """PR #61050 by Ada Upstream: fixes lru.py the way our offload-evict-fix does, and
    adds the test, in two commits; served as refs/pull/N/head. Returns the head sha."""
    first = commit_files(
        upstream,
        parent,
        {"vllm/v1/kv_offload/cpu/policies/lru.py": LRU_FIXED},
        "[Bugfix][KV offload] Fix eviction order of touched blocks\n\nSigned-off-by: Ada Upstream <ada@example.com>",
        "2026-01-20T09:30:00+01:00",
    )
    head = commit_files(
        upstream,
        first,
        {"tests/v1/kv_offload/test_lru.py": TEST_LRU_ORDER},
        "[Test][KV offload] cover touch order\n\nSigned-off-by: Ada Upstream <ada@example.com>",
        "2026-01-21T10:45:00-05:00",
    )
    git(upstream, "update-ref", f"refs/pull/{number}/head", head)
    return head


def github_fixture(name: str, **values: str) -> object:
    """A recorded-shape GitHub REST answer from tests/fixtures/github/NAME.json.

    Placeholders are filled from `values`: {API} the local server, {HEAD_SHA}, {BASE_SHA},
    {MERGE_SHA} shas of the test repositories, {RECENT}/{OLD}/{CREATED} times (by default
    2 days, 90 days and 10 days before now: inside / outside preflight's 30-day window).
    """
    import datetime as dt
    import json

    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    stamp = lambda days: (now - dt.timedelta(days=days)).isoformat().replace("+00:00", "Z")  # noqa: E731
    defaults = {
        "RECENT": stamp(2),
        "OLD": stamp(90),
        "CREATED": stamp(10),
        "API": "",
        "HEAD_SHA": "0" * 40,
        "BASE_SHA": "0" * 40,
        "MERGE_SHA": "0" * 40,
    }
    defaults.update(values)
    text = (Path(__file__).parent / "fixtures" / "github" / f"{name}.json").read_text()
    for key, value in defaults.items():
        text = text.replace("{" + key + "}", value)
    return json.loads(text)
