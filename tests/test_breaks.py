"""The semantic check after a clean replay (issue 24): what a topic uses that upstream removed
or changed between the old base and the new one, named with the upstream PR that did it;
--strict holds the rebase like a conflict."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from series.semantic import breaks
from series.engine.odb import MemOdb
from tests.conftest import run_series
from tests.harness import ALL_FRESH
from tests.repos import commit_all, git, write

UTIL_V030 = '''\
def old_helper(x):
    return x


def scale(value, factor=1):
    return value * factor
'''
UTIL_V031 = '''\
def scale(value, multiplier=1):
    return value * multiplier
'''
LAYER_V030 = '''\
class Layer:
    def forward(self, x):
        return x

    def name(self):
        return "layer"
'''
LAYER_V031 = LAYER_V030.replace("def forward(self, x):", "def forward(self, x, context=None):")
ENVS_V030 = '''\
import os
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    VLLM_OLD_FLAG: bool = False
    VLLM_KEPT: int = 0

environment_variables: dict[str, Callable[[], Any]] = {
    "VLLM_OLD_FLAG": lambda: bool(os.getenv("VLLM_OLD_FLAG")),
    "VLLM_KEPT": lambda: int(os.getenv("VLLM_KEPT", "0")),
}


def __getattr__(name: str) -> Any:
    return environment_variables[name]()
'''
ENVS_V031 = ENVS_V030.replace('    VLLM_OLD_FLAG: bool = False\n', '').replace(
    '    "VLLM_OLD_FLAG": lambda: bool(os.getenv("VLLM_OLD_FLAG")),\n', ''
)
WORKER_TAIL = "".join(f"\n\ndef step{i}():\n    return {i}\n" for i in range(8))
WORKER_V030 = (
    '''\
def _prepare(batch):
    return list(batch)


def run(batch):
    items = list(batch)
    return items
'''
    + WORKER_TAIL
)
WORKER_V031 = WORKER_V030.replace("def _prepare(batch):\n    return list(batch)\n\n\n", "")
SCHED_V030 = "from vllm.utils import scale\n\n\ndef first():\n    return scale(1)\n" + WORKER_TAIL
SCHED_V031 = WORKER_TAIL.lstrip("\n")
CONFIG_V030 = '''\
from dataclasses import dataclass, field


@dataclass
class CacheConfig:
    block_size: int = 16
    swap_space: float = 4
    legacy_mode: bool = False


@dataclass
class VllmConfig:
    cache_config: CacheConfig = field(default_factory=CacheConfig)
    seed: int = 0
'''
CONFIG_V031 = CONFIG_V030.replace(
    "    swap_space: float = 4\n    legacy_mode: bool = False\n", "    swap_space_gib: float = 4\n"
)
REGISTRY = '''\
_MODELS = {
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
}
'''
MODELS = "vllm/model_executor/models"
# what upstream's #110 moves elsewhere (tests/test_breaks_kinds.py)
MOVED_ARCH = "class MovedArchForCausalLM:\n    def forward(self, x):\n        return x\n"
HELPERS = "def kept(x):\n    return x\n"
MOVED_FN = "\n\ndef moved_fn(x, y=0):\n    return x + y\n"
OLDMOD = "VALUE = 1\n\n\ndef use():\n    return VALUE\n"
# what upstream's #111 stops assigning in __init__
WORKERBASE_V030 = '''\
import torch.nn as nn

from vllm.config import VllmConfig


class WorkerBase:
    def __init__(self, vllm_config: VllmConfig, rank: int):
        self.vllm_config = vllm_config
        self.rank = rank
        self.local_rank = rank

    def info(self):   # reads its attributes by name, sets none
        return {k: getattr(self, k) for k in self.__dict__}


class Worker(WorkerBase):
    def load(self):
        return self.rank


class TorchLayer(nn.Module):
    def __init__(self):
        self.local_rank = 0


class Dynamic(WorkerBase):
    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)
        self.flag = True
'''
# what upstream's #112 stops registering (old_op), or registers from another file (moved_op)
BINDINGS_V030 = '''\
TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("old_op(Tensor! out, Tensor x) -> ()");
  ops.impl("old_op", torch::kCUDA, &old_op);
  ops.def(
      "kept_op(Tensor x) -> Tensor");
  ops.def("moved_op.out(Tensor x, Tensor! out) -> ()");
}
'''
BINDINGS_V031 = BINDINGS_V030.replace('  ops.def("old_op(Tensor! out, Tensor x) -> ()");\n', "").replace(
    '  ops.def("moved_op.out(Tensor x, Tensor! out) -> ()");\n', ""
)
KERNEL_V031 = 'STABLE_TORCH_LIBRARY_FRAGMENT(_C, m) {\n  m.def("moved_op(Tensor x) -> Tensor");\n}\n'
WORKERBASE_V031 = (
    WORKERBASE_V030.replace("        self.local_rank = rank\n", "")
    .replace("        self.local_rank = 0\n", "        pass\n")
    .replace("        self.flag = True\n", "")
)
FILES_V030 = {
    "vllm/config.py": CONFIG_V030,
    "vllm/model_executor/__init__.py": "",
    f"{MODELS}/__init__.py": "",
    f"{MODELS}/registry.py": REGISTRY,
    f"{MODELS}/llama.py": "class LlamaForCausalLM:\n    pass\n",
    f"{MODELS}/old_arch.py": "class OldArchForCausalLM:\n    pass\n",
    "vllm/sched.py": SCHED_V030,
    "vllm/__init__.py": "",
    "vllm/utils.py": UTIL_V030,
    "vllm/layer.py": LAYER_V030,
    "vllm/envs.py": ENVS_V030,
    "vllm/worker.py": WORKER_V030,
    "vllm/other.py": "A = 1\n",
    f"{MODELS}/moved_arch.py": MOVED_ARCH,
    "vllm/helpers.py": HELPERS + MOVED_FN,
    "vllm/oldmod.py": OLDMOD,
    "vllm/workerbase.py": WORKERBASE_V030,
    "csrc/torch_bindings.cpp": BINDINGS_V030,
}

UPSTREAM = {
    "GIT_AUTHOR_NAME": "Ada Upstream",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Upstream",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
}
FORK = {
    "GIT_AUTHOR_NAME": "Fork Maintainer",
    "GIT_AUTHOR_EMAIL": "fork@example.com",
    "GIT_COMMITTER_NAME": "Fork Maintainer",
    "GIT_COMMITTER_EMAIL": "fork@example.com",
}

TOPICS = {
    "uses-removed": {"vllm/fork_a.py": "from vllm.utils import old_helper\n\n\ndef f():\n    return old_helper(1)\n"},
    "kw-renamed": {"vllm/fork_b.py": "from vllm import utils\n\n\ndef g():\n    return utils.scale(2, factor=3)\n"},
    "override": {
        "vllm/fork_c.py": "from vllm.layer import Layer\n\n\nclass MyLayer(Layer):\n"
        "    def forward(self, x):\n        return x + 1\n"
    },
    "env-gone": {
        "vllm/fork_d.py": "import vllm.envs as envs\n\n\ndef h():\n    return envs.VLLM_OLD_FLAG or envs.VLLM_KEPT\n"
    },
    "same-file": {
        "vllm/worker.py": WORKER_V030.replace(
            "def step7():\n    return 7\n", "def step7():\n    return _prepare([7])\n"
        )
    },
    "import-gone": {
        "vllm/sched.py": SCHED_V030.replace("def step7():\n    return 7\n", "def step7():\n    return scale(7)\n")
    },
    "ordinary": {
        "vllm/fork_e.py": "from vllm.utils import scale\nfrom vllm.layer import Layer\n"
        "from vllm.config import VllmConfig\n"
        "import vllm.envs as envs\n\n\nclass Plain(Layer):\n"
        "    def name(self):\n        return 'plain'\n\n\n"
        "def k():\n    return scale(1, 2) if envs.VLLM_KEPT else Layer()\n\n\n"
        "def bs(config: VllmConfig) -> int:\n"
        "    return config.cache_config.block_size + config.seed\n\n\n"
        "def log() -> str:\n    return 'vllm.other' + 'vllm.worker.run'\n"
    },
    "config-field": {
        "vllm/fork_g.py": "from vllm.config import CacheConfig, VllmConfig\n\n\n"
        "def size(vllm_config: VllmConfig) -> float:\n"
        "    return vllm_config.cache_config.swap_space * vllm_config.cache_config.block_size\n"
        "\n\ndef legacy(cache_config: CacheConfig | None) -> bool:\n"
        "    return cache_config.legacy_mode if cache_config else False\n"
    },
    "registry-entry": {
        f"{MODELS}/registry.py": REGISTRY.replace(
            "}", '    "OldArchForCausalLM": ("old_arch", "OldArchForCausalLM"),\n}'
        )
    },
    "qualname": {
        "vllm/fork_h.py": "import vllm.envs as envs\n\n\ndef worker_cls() -> str:\n"
        "    return 'vllm.worker:_prepare' if envs.VLLM_KEPT else 'vllm.worker.run'\n"
    },
    "new-code": {
        "vllm/fork_f.py": "def brand_new(a, b=2):\n    return a + b\n\n\n"
        "def user():\n    return brand_new(1, b=3) + missing_on_purpose\n"
    },
}


def _pr(repo: Path, files: dict[str, str], subject: str, date: str) -> None:
    write(repo, files)
    commit_all(repo, subject, date, env=UPSTREAM)


@pytest.fixture
def broken_fork(tmp_path: Path) -> Path:
    """Upstream v0.30.0 -> its PRs -> v0.31.0; a fork with one topic per kind of break."""
    return fork_of(tmp_path, upstream_history(tmp_path), TOPICS)


def upstream_history(tmp_path: Path) -> Path:
    up = tmp_path / "upstream"
    up.mkdir()
    git(up, "init", "-q", "-b", "main")
    _pr(up, FILES_V030, "v0.30.0", "2026-01-01T00:00:00Z")
    git(up, "tag", "v0.30.0")
    _pr(
        up, {"vllm/utils.py": UTIL_V031}, "[Core] drop old_helper, rename scale's factor (#101)", "2026-01-05T00:00:00Z"
    )
    _pr(up, {"vllm/layer.py": LAYER_V031}, "[Model] forward takes a context (#102)", "2026-01-06T00:00:00Z")
    _pr(up, {"vllm/envs.py": ENVS_V031}, "[Misc] remove VLLM_OLD_FLAG (#103)", "2026-01-07T00:00:00Z")
    _pr(up, {"vllm/worker.py": WORKER_V031}, "[Worker] inline _prepare (#104)", "2026-01-08T00:00:00Z")
    _pr(up, {"vllm/sched.py": SCHED_V031}, "[Sched] drop first (#106)", "2026-01-09T00:00:00Z")
    _pr(
        up, {"vllm/config.py": CONFIG_V031}, "[Config] swap_space in GiB, no legacy_mode (#107)", "2026-01-09T00:00:00Z"
    )
    (up / MODELS / "old_arch.py").unlink()
    _pr(up, {}, "[Model] remove OldArch (#108)", "2026-01-09T00:00:00Z")
    _pr(up, {"vllm/other.py": "A = 2\n"}, "[Misc] unrelated (#105)", "2026-01-09T00:00:00Z")
    git(up, "mv", f"{MODELS}/moved_arch.py", f"{MODELS}/moved_home.py")
    git(up, "mv", "vllm/oldmod.py", "vllm/common_mod.py")
    _pr(
        up,
        {"vllm/helpers.py": HELPERS, "vllm/common/__init__.py": "", "vllm/common/funcs.py": "import os" + MOVED_FN},
        "[Refactor] move MovedArch, moved_fn and oldmod (#110)",
        "2026-01-09T00:00:00Z",
    )
    _pr(up, {"vllm/workerbase.py": WORKERBASE_V031}, "[Worker] no local_rank (#111)", "2026-01-09T00:00:00Z")
    _pr(
        up,
        {"csrc/torch_bindings.cpp": BINDINGS_V031, "csrc/kernels/moved.cu": KERNEL_V031},
        "[Kernel] drop old_op, moved_op in its kernel (#112)",
        "2026-01-09T00:00:00Z",
    )
    git(up, "tag", "v0.31.0")
    return up


def fork_of(tmp_path: Path, up: Path, topics: dict[str, dict[str, str]]) -> Path:
    """A clone of `up` with one topic branch per entry on v0.30.0, and its series.yaml."""
    fork = tmp_path / "fork"
    subprocess.run(["git", "clone", "-q", "-o", "upstream", str(up), str(fork)], check=True)
    yaml = ["upstream:", "  remote: upstream", "  base: v0.30.0", "topics:"]
    for name, files in topics.items():
        git(fork, "checkout", "-q", "-B", f"topic/{name}", "v0.30.0")
        write(fork, files)
        commit_all(fork, f"[Fork] {name}", "2026-01-10T00:00:00Z", env=FORK)
        yaml += [f"  - name: {name}", f"    branch: topic/{name}"]
    git(fork, "checkout", "-q", "--detach", "v0.30.0")
    (fork / "series.yaml").write_text("\n".join(yaml) + "\n")
    return fork


def rebase_breaks(fork: Path, *args: str, expect: int = 0) -> dict[str, list[dict[str, object]]]:
    out = run_series("rebase", "--onto", "v0.31.0", "--json", *args, cwd=fork, expect=expect)
    return {t["name"]: t["breaks"] for t in json.loads(out.stdout)["topics"]}


def test_each_break_named_with_its_upstream_pr(broken_fork: Path) -> None:
    found = rebase_breaks(broken_fork, "--dry-run")
    assert found["ordinary"] == [] and found["new-code"] == []
    (removed,) = found["uses-removed"]
    assert (removed["file"], removed["line"], removed["name"]) == ("vllm/fork_a.py", 1, "vllm.utils.old_helper")
    assert removed["kind"] == "removed" and removed["upstream"]["pr"] == 101  # type: ignore[index]
    (kw,) = found["kw-renamed"]
    assert kw["kind"] == "signature-changed" and "factor renamed to multiplier" in str(kw["detail"])
    assert kw["upstream"]["pr"] == 101 and "multiplier=" in str(kw["fix"])  # type: ignore[index]
    (over,) = found["override"]
    assert over["name"] == "vllm.layer.Layer.forward" and over["upstream"]["pr"] == 102  # type: ignore[index]
    assert "(self, x) -> (self, x, context)" in str(over["detail"])
    (env,) = found["env-gone"]
    assert env["name"] == "vllm.envs.VLLM_OLD_FLAG" and env["upstream"]["pr"] == 103  # type: ignore[index]
    assert env["line"] == 5
    (local,) = found["same-file"]
    assert (local["name"], local["kind"], local["file"]) == ("_prepare", "undefined", "vllm/worker.py")
    assert local["upstream"]["pr"] == 104 and local["upstream"]["author"] == "Ada Upstream"  # type: ignore[index]
    (gone,) = found["import-gone"]  # upstream's side of the merge removed the import step7 still uses
    assert (gone["name"], gone["kind"], gone["line"]) == ("scale", "undefined", 30), gone
    assert "removed its import" in str(gone["detail"]) and gone["upstream"]["pr"] == 106  # type: ignore[index]


def test_config_fields_registry_entries_and_qualified_names(broken_fork: Path) -> None:
    """A config field read through an annotated parameter (one class's field typed with
    another), a model registry entry naming an upstream module's class, a string naming an
    upstream object (what platform and worker registries import by name)."""
    found = rebase_breaks(broken_fork, "--dry-run")
    renamed, removed = found["config-field"]
    assert (renamed["name"], renamed["kind"], renamed["line"]) == (
        "vllm.config.VllmConfig.cache_config.swap_space",
        "renamed",
        5,
    ), renamed
    assert "swap_space renamed to swap_space_gib in CacheConfig" in str(renamed["detail"])
    assert renamed["upstream"]["pr"] == 107  # type: ignore[index]
    assert (removed["name"], removed["kind"]) == ("vllm.config.CacheConfig.legacy_mode", "removed"), removed
    (entry,) = found["registry-entry"]
    assert entry["name"] == "vllm.model_executor.models.old_arch.OldArchForCausalLM", entry
    assert entry["upstream"]["pr"] == 108 and entry["file"] == f"{MODELS}/registry.py"  # type: ignore[index]
    (qual,) = found["qualname"]
    assert (qual["name"], qual["line"]) == ("vllm.worker._prepare", 5) and qual["upstream"]["pr"] == 104  # type: ignore[index]
    assert found["ordinary"] == []


def test_text_says_clean_with_breaks(broken_fork: Path) -> None:
    out = run_series("rebase", "--onto", "v0.31.0", "--dry-run", cwd=broken_fork).stdout
    line = next(x for x in out.splitlines() if x.strip().startswith("uses-removed"))
    assert line.strip().startswith("uses-removed") and line.endswith(", 1 break")
    assert "break vllm/fork_a.py:1 vllm.utils.old_helper: removed from vllm/utils.py by #101" in out
    ordinary = next(x for x in out.splitlines() if x.strip().startswith("ordinary "))
    assert "break" not in ordinary


def test_strict_exits_3_and_moves_nothing(broken_fork: Path) -> None:
    before = git(broken_fork, "for-each-ref", "refs/heads")
    yaml = (broken_fork / "series.yaml").read_text()
    out = run_series("rebase", "--onto", "v0.31.0", "--strict", cwd=broken_fork, expect=3)
    assert "--strict: 10 break(s) count as conflicts; nothing was changed" in out.stdout
    assert git(broken_fork, "for-each-ref", "refs/heads") == before
    assert (broken_fork / "series.yaml").read_text() == yaml
    report = Path(out.stdout.strip().rsplit("report: ", 1)[1])
    assert "break vllm/fork_d.py:5 vllm.envs.VLLM_OLD_FLAG" in report.read_text()


def test_without_strict_the_rebase_moves_and_warns(broken_fork: Path) -> None:
    found = rebase_breaks(broken_fork)
    assert len(found["uses-removed"]) == 1
    assert "v0.31.0" in (broken_fork / "series.yaml").read_text()


def test_strict_with_only_ordinary_topics_moves(broken_fork: Path) -> None:
    found = rebase_breaks(
        broken_fork, "--strict", *[f"--skip-topic={n}" for n in TOPICS if n not in ("ordinary", "new-code")]
    )
    assert found["ordinary"] == [] and found["new-code"] == []
    assert git(broken_fork, "rev-parse", "topic/ordinary") != git(broken_fork, "rev-parse", "v0.30.0")


def test_status_and_check_warn_until_the_branch_is_fixed(broken_fork: Path) -> None:
    """After a rebase that moved with breaks, status and check warn about each one, from the
    branches as they are now: a fix committed on the topic clears its warning."""
    run_series("rebase", "--onto", "v0.31.0", cwd=broken_fork)
    status = json.loads(run_series("status", "--json", cwd=broken_fork).stdout)
    found = {t["name"]: t["breaks"] for t in status["topics"]}
    assert [b["name"] for b in found["uses-removed"]] == ["vllm.utils.old_helper"]
    assert found["ordinary"] == [] and found["new-code"] == [] and len(found["same-file"]) == 1
    text = run_series("status", cwd=broken_fork).stdout
    assert "warning: 1 break against the base" in text, text
    assert "break vllm/fork_a.py:1 vllm.utils.old_helper: removed from vllm/utils.py by #101" in text, text
    check = run_series("check", cwd=broken_fork, expect=6).stdout  # warnings, not problems
    assert "warning: topics (kw-renamed).branch: break vllm/fork_b.py:5 vllm.utils.scale(factor=)" in check, check
    assert check.splitlines()[-1].startswith("10 warnings, no problem: "), check

    git(broken_fork, "checkout", "-q", "topic/uses-removed")
    write(broken_fork, {"vllm/fork_a.py": "def f():\n    return 1\n"})
    git(broken_fork, "commit", "-q", "-m", "[Fork] uses-removed: no more old_helper", "vllm/fork_a.py")
    status = json.loads(run_series("status", "--json", cwd=broken_fork).stdout)
    found = {t["name"]: t["breaks"] for t in status["topics"]}
    assert found["uses-removed"] == [] and len(found["kw-renamed"]) == 1

    git(broken_fork, "reset", "-q", "--hard", "HEAD~1")
    run_series("undo", cwd=broken_fork)
    status = json.loads(run_series("status", "--json", cwd=broken_fork).stdout)
    assert all(t["breaks"] == [] for t in status["topics"]), "back on v0.30.0: no rebase to judge"


def test_status_before_any_rebase_has_no_breaks(broken_fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", "--dry-run", cwd=broken_fork)
    status = json.loads(run_series("status", "--json", cwd=broken_fork).stdout)
    assert all(t["breaks"] == [] for t in status["topics"])


def _with_conflict(fork: Path) -> None:
    """One more topic, which conflicts with upstream's #105."""
    config = fork / "series.yaml"
    yaml = config.read_text()
    config.unlink()  # untracked: not part of the topic's commit
    git(fork, "checkout", "-q", "-B", "topic/conflicts", "v0.30.0")
    write(fork, {"vllm/other.py": "A = 3\n"})
    commit_all(fork, "[Fork] conflicts", "2026-01-10T00:00:00Z", env=FORK)
    git(fork, "checkout", "-q", "--detach", "v0.30.0")
    config.write_text(yaml + "  - name: conflicts\n    branch: topic/conflicts\n")


def test_a_conflict_elsewhere_still_reports_the_clean_topics_breaks(broken_fork: Path) -> None:
    """The check runs once the replay is done, whatever its outcome: a dry run that stops on
    one topic's conflict still names the breaks of the topics that replayed cleanly."""
    _with_conflict(broken_fork)
    out = run_series("rebase", "--onto", "v0.31.0", "--dry-run", "--json", cwd=broken_fork, expect=3)
    found = {t["name"]: (t["outcome"], t["breaks"]) for t in json.loads(out.stdout)["topics"]}
    assert found["conflicts"] == ("conflict", [])
    assert [b["name"] for b in found["uses-removed"][1]] == ["vllm.utils.old_helper"], found
    assert found["ordinary"] == ("clean", [])
    text = run_series("rebase", "--onto", "v0.31.0", "--dry-run", cwd=broken_fork, expect=3).stdout
    assert "break vllm/fork_a.py:1 vllm.utils.old_helper: removed from vllm/utils.py by #101" in text, text


def test_a_halted_rebase_reports_the_clean_topics_breaks(broken_fork: Path) -> None:
    """A real run that halts on the conflict names them too (and --strict halts as ever)."""
    _with_conflict(broken_fork)
    out = run_series("rebase", "--onto", "v0.31.0", "--strict", "--json", cwd=broken_fork, expect=3)
    report = json.loads(out.stdout)
    found = {t["name"]: t["breaks"] for t in report["topics"]}
    assert len(found["kw-renamed"]) == 1 and found["conflicts"] == []
    assert (broken_fork / ".git" / "series" / "rebase").exists()  # halted, the worktree laid out


@pytest.mark.skipif(ALL_FRESH, reason="counts the calls in this process")
@pytest.mark.parametrize("conflict", [False, True])
def test_the_check_runs_once(broken_fork: Path, monkeypatch: pytest.MonkeyPatch, conflict: bool) -> None:
    """Once per replay, whether it ends (integration asked for) or halts."""
    if conflict:
        _with_conflict(broken_fork)
    calls: list[int] = []
    real = breaks.TopicBreaks.check
    monkeypatch.setattr(breaks.TopicBreaks, "check", lambda *a: calls.append(1) or real(*a))
    run_series("rebase", "--onto", "v0.31.0", cwd=broken_fork, expect=3 if conflict else 0)
    assert calls == [1]


@pytest.mark.skipif(ALL_FRESH, reason="changes when the work handed to the replay's waits runs, in this process")
def test_what_runs_while_git_answers_gives_the_report_it_gives_at_the_end(
    broken_fork: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The semantic check of a replayed topic and a conflicting topic's upstream history are
    handed to the replay's waits for git (MemOdb.when_waiting). Run at the earliest moment
    (as each topic is replayed) or never (all at the end), the report is the same."""
    _with_conflict(broken_fork)

    def report(when_waiting: Callable[[MemOdb, Callable[[], object]], None]) -> list[object]:
        with monkeypatch.context() as patch:
            patch.setattr(MemOdb, "when_waiting", when_waiting)
            out = run_series("rebase", "--onto", "v0.31.0", "--dry-run", "--json", cwd=broken_fork, expect=3)
        return [(t["name"], t["outcome"], t["breaks"], t.get("upstream")) for t in json.loads(out.stdout)["topics"]]

    ran: list[object] = []
    eager = report(lambda odb, task: ran.append(task()))
    assert report(lambda odb, task: None) == eager
    assert len(ran) >= 4  # every clean topic's check, and the conflict's history, ran early
    names = {row[0]: row for row in eager}
    assert names["kw-renamed"][2] and names["conflicts"][3], eager  # a break and a culprit are in it
