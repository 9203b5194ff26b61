"""series.semantic.file_reading: the full reading of a file comes back from the disk cache
equal to what the parse gave, without parsing again."""

from __future__ import annotations

from pathlib import Path

import pytest

from series.semantic import file_reading
from series.semantic.uses import UseKind

SOURCE = b'''import os
from vllm.config import VllmConfig
from vllm.worker.worker_base import WorkerBase
from vllm import envs

REGISTRY = {"Arcee": ("arcee", "ArceeForCausalLM")}


def helper(x, *, y=1):
    return os.path.join(x, str(y))


class Worker(WorkerBase):
    def __init__(self, vllm_config: VllmConfig):
        self.vllm_config = vllm_config

    def load_model(self, path, strict=False):
        helper(path, y=2)
        VllmConfig(model=path)
        return envs.VLLM_USE_V1, self.vllm_config.cache_config.block_size
'''


def test_a_reading_comes_back_from_the_cache_without_a_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = "vllm/worker/mine.py"
    first = file_reading.read(path, SOURCE, frozenset({"gone_helper"}), cache=tmp_path)
    assert first is not None and first.uses, first
    assert {"helper", "Worker", "REGISTRY"} <= first.top and "os" in first.imported
    assert first.first_line["helper"] == 18 and first.loads["helper"] == 1
    kinds = {u.kind for u in first.uses}
    assert {UseKind.NAME, UseKind.KEYWORD, UseKind.OVERRIDE} <= kinds, kinds
    assert any(u.method is not None for u in first.uses), "an override keeps the topic's own signature"

    def no_parse(source: bytes) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(file_reading, "parse", no_parse)
    again = file_reading.read(path, SOURCE, frozenset({"gone_helper"}), cache=tmp_path)
    assert again == first
    assert [(u.line, u.method) for u in again.uses] == [(u.line, u.method) for u in first.uses]
    with pytest.raises(AssertionError, match="parsed again"):  # other top names: another reading
        file_reading.read(path, SOURCE, frozenset(), cache=tmp_path)


def test_what_does_not_parse_is_no_reading(tmp_path: Path) -> None:
    assert file_reading.read("vllm/x.py", b"def (:\n", cache=tmp_path) is None
    assert file_reading.read("vllm/x.py", b"def (:\n", cache=tmp_path) is None
