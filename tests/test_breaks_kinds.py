"""The semantic check's rarer kinds of break (issue 24), on the upstream history of
tests/test_breaks.py: a name or a module upstream moved (named with where it lives now),
each with the upstream PR that did it; ordinary topics report none."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_breaks import MODELS, REGISTRY, fork_of, rebase_breaks, upstream_history

TOPICS = {
    "moved-entry": {f"{MODELS}/registry.py": REGISTRY.replace(
        "}", '    "MovedArchForCausalLM": ("moved_arch", "MovedArchForCausalLM"),\n}')},
    "moved-name": {"vllm/fork_m.py": "from vllm.helpers import kept, moved_fn\n\n\n"
                                     "def m():\n    return moved_fn(kept(1))\n"},
    "moved-module": {"vllm/fork_n.py": "from vllm import oldmod\n\n\ndef n():\n    return oldmod.use()\n"},
    "ordinary": {"vllm/fork_o.py": "from vllm.helpers import kept\n\n\ndef o():\n    return kept(2)\n"},
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
        ("vllm.oldmod", "moved to vllm.common_mod", "import vllm.common_mod (moved in #110)")], module
