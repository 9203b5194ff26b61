"""The semantic check's rarer kinds of break (issue 24), on the upstream history of
tests/test_breaks.py: a name or a module upstream moved (named with where it lives now),
each with the upstream PR that did it; ordinary topics report none."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_breaks import MODELS, REGISTRY, fork_of, rebase_breaks, upstream_history

SELF_ATTR = """\
from vllm.workerbase import Worker, WorkerBase


class MyWorker(Worker):
    def where(self):
        return self.local_rank + self.rank


class MyBase(WorkerBase):
    def legacy(self):
        return self.vllm_config.cache_config.legacy_mode


class Deeper(Worker):
    def legacy(self):
        return self.vllm_config.cache_config.legacy_mode
"""
# what holds: kept fields, the topic's own, a base outside the tree (torch), attributes set
# by name, a mixin beside the upstream base, a nested class's own self, a field never defined
SELF_ORDINARY = """\
from vllm.workerbase import Dynamic, TorchLayer, Worker


class Kept(Worker):
    def __init__(self, vllm_config, rank):
        super().__init__(vllm_config, rank)
        self.local_rank = 1

    def where(self):
        return self.local_rank + self.rank + self.vllm_config.cache_config.block_size + self.load()


class Torchy(TorchLayer):
    def where(self):
        return self.local_rank


class Dyn(Dynamic):
    def where(self):
        return self.flag


class Mixin:
    local_rank = 0


class Mixed(Mixin, Worker):
    def where(self):
        return self.local_rank


class Outer(Worker):
    def make(self):
        class Inner:
            def __init__(self):
                self.local_rank = 2

            def get(self):
                return self.local_rank
        return Inner().get() + self.never_had_it
"""
PYPROJECT = """\
[project]
name = "fork-plugin"

[project.entry-points."vllm.general_plugins"]
fork = "vllm.helpers:moved_fn"

[project.scripts]
fork-serve = "vllm.utils:old_helper"
fork-ok = "vllm.helpers:kept"
fork-own = "fork_plugin.main:run"
"""
LOCAL_ALIAS = """\
from vllm.config import VllmConfig
from vllm.workerbase import WorkerBase


def swap(vllm_config: VllmConfig) -> float:
    cache = vllm_config.cache_config
    return cache.swap_space


class W(WorkerBase):
    def legacy(self):
        config = self.vllm_config
        cache = config.cache_config
        return cache.legacy_mode
"""
# locals bound more than once, or not to an upstream chain, mean nothing known
LOCAL_ORDINARY = """\
from vllm.config import CacheConfig, VllmConfig


def twice(vllm_config: VllmConfig, other) -> float:
    cache = vllm_config.cache_config
    if other:
        cache = other
    return cache.swap_space


def looped(vllm_config: VllmConfig, others) -> float:
    cache = vllm_config.cache_config
    for cache in others:
        pass
    return cache.legacy_mode


def kept(vllm_config: VllmConfig) -> int:
    cache = vllm_config.cache_config
    made = CacheConfig()
    return cache.block_size + made.block_size
"""
TOPICS = {
    "moved-entry": {
        f"{MODELS}/registry.py": REGISTRY.replace(
            "}", '    "MovedArchForCausalLM": ("moved_arch", "MovedArchForCausalLM"),\n}'
        )
    },
    "moved-name": {
        "vllm/fork_m.py": "from vllm.helpers import kept, moved_fn\n\n\ndef m():\n    return moved_fn(kept(1))\n"
    },
    "moved-module": {"vllm/fork_n.py": "from vllm import oldmod\n\n\ndef n():\n    return oldmod.use()\n"},
    "self-attr": {"vllm/fork_s.py": SELF_ATTR},
    "entry-points": {
        "plugins/fork/pyproject.toml": PYPROJECT,
        "plugins/other/setup.py": "from setuptools import setup\n\nsetup(\n    name='other',\n"
        "    entry_points={'vllm.general_plugins': ['o = vllm.oldmod:use']},\n)\n",
    },
    "local-alias": {"vllm/fork_l.py": LOCAL_ALIAS},
    "custom-op": {"vllm/fork_c.py": "import torch\n\n\ndef c(x):\n    return torch.ops._C.old_op(x, x)\n"},
    "ordinary": {
        "vllm/fork_o.py": "from vllm.helpers import kept\n\n\ndef o():\n    return kept(2)\n",
        "vllm/fork_p.py": SELF_ORDINARY,
        "vllm/fork_r.py": LOCAL_ORDINARY,
        "vllm/fork_q.py": "import torch\n\n\ndef q(x):\n    return torch.ops._C.kept_op(x) + "
        "torch.ops._C.moved_op.default(x) + torch.ops._C.fork_own_op(x)\n",
        "plugins/ok/setup.cfg": "[metadata]\nname = ok\n\n[options.entry_points]\n"
        "vllm.general_plugins =\n    ok = vllm.helpers:kept\n"
        "console_scripts =\n    ok-own = ok.main:run\n",
    },
}


@pytest.fixture
def fork(tmp_path: Path) -> Path:
    return fork_of(tmp_path, upstream_history(tmp_path), TOPICS)


def test_moved_names_say_where_they_live_now(fork: Path) -> None:
    found = rebase_breaks(fork, "--dry-run")
    assert found["ordinary"] == []
    (entry,) = found["moved-entry"]
    assert (entry["kind"], entry["detail"]) == ("moved", "moved to vllm.model_executor.models.moved_home"), entry
    assert entry["fix"] == 'register ("moved_home", "MovedArchForCausalLM") (moved in #110)', entry
    assert entry["upstream"]["pr"] == 110  # type: ignore[index]
    (name,) = found["moved-name"]
    assert (name["name"], name["kind"], name["line"]) == ("vllm.helpers.moved_fn", "moved", 1), name
    assert name["fix"] == "from vllm.common.funcs import moved_fn (moved in #110)", name
    module = found["moved-module"]
    assert [(b["name"], b["detail"], b["fix"]) for b in module] == [
        ("vllm.oldmod", "moved to vllm.common_mod", "import vllm.common_mod (moved in #110)")
    ], module


def test_attributes_read_on_self_of_an_upstream_base(fork: Path) -> None:
    """`self.x` in a topic's subclass of an upstream class reads the base's x: assigned in
    its __init__ in the old base and nowhere in the new one (nor in its bases) is a break;
    whatever cannot be told from the tree is none."""
    found = rebase_breaks(fork, "--dry-run")
    assert found["ordinary"] == []
    got = sorted((b["name"], b["kind"], b["line"], b["upstream"]["pr"]) for b in found["self-attr"])  # type: ignore[index]
    assert got == [
        ("vllm.workerbase.Worker.local_rank", "removed", 6, 111),
        ("vllm.workerbase.Worker.vllm_config.cache_config.legacy_mode", "removed", 16, 107),
        ("vllm.workerbase.WorkerBase.vllm_config.cache_config.legacy_mode", "removed", 11, 107),
    ], got


def test_a_custom_op_upstream_stopped_registering(fork: Path) -> None:
    """torch.ops._C.x: registered by a `.def("x(...)` in the old base's csrc, by none in the
    new one's; an op registered from another file now still holds."""
    found = rebase_breaks(fork, "--dry-run")
    assert found["ordinary"] == []
    (op,) = found["custom-op"]
    assert (op["name"], op["kind"], op["line"]) == ("torch.ops._C.old_op", "removed", 5), op
    assert "was in csrc/torch_bindings.cpp" in str(op["detail"]) and op["upstream"]["pr"] == 112  # type: ignore[index]


def test_entry_points_that_name_what_upstream_moved_or_removed(fork: Path) -> None:
    """A plugin's or a script's `module:attr` in the topic's pyproject.toml, setup.py or
    setup.cfg, judged like an import; the topic's own modules and kept names hold."""
    found = rebase_breaks(fork, "--dry-run")
    assert found["ordinary"] == []
    got = {
        (b["file"], b["line"], b["name"], b["kind"], b["fix"], b["upstream"]["pr"])  # type: ignore[index]
        for b in found["entry-points"]
    }
    assert got == {
        (
            "plugins/fork/pyproject.toml",
            5,
            "vllm.helpers.moved_fn",
            "moved",
            "point it at vllm.common.funcs:moved_fn (moved in #110)",
            110,
        ),
        (
            "plugins/fork/pyproject.toml",
            8,
            "vllm.utils.old_helper",
            "removed",
            "removed in #101: use what it put in its place",
            101,
        ),
        (
            "plugins/other/setup.py",
            5,
            "vllm.oldmod.use",
            "moved",
            "point it at vllm.common_mod:use (moved in #110)",
            110,
        ),
    }, found["entry-points"]
    assert all(str(b["detail"]).startswith("entry point target ") for b in found["entry-points"])


def test_a_local_bound_once_to_an_upstream_chain(fork: Path) -> None:
    """`cache = vllm_config.cache_config` then `cache.x`: x read on the upstream class; a
    local bound twice, or in a loop, is not judged."""
    found = rebase_breaks(fork, "--dry-run")
    assert found["ordinary"] == []
    got = sorted((b["name"], b["kind"], b["line"], b["upstream"]["pr"]) for b in found["local-alias"])  # type: ignore[index]
    assert got == [
        ("vllm.config.VllmConfig.cache_config.swap_space", "renamed", 7, 107),
        ("vllm.workerbase.WorkerBase.vllm_config.cache_config.legacy_mode", "removed", 14, 107),
    ], got
