"""The wheel carries every subpackage and the example series."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parent.parent


def test_every_subpackage_is_listed_in_pyproject() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "series").rglob("__init__.py")}
    # ci/'s directories are packages of data: setuptools warns about each one not listed
    templates = {"series._ci." + d.name for d in (ROOT / "ci").iterdir() if d.is_dir()}
    assert on_disk | {"series._topics", "series._ci"} | templates == listed, (sorted(on_disk), sorted(listed))
