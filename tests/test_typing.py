"""CONTRIBUTING.md rule 6: the package stays mypy-clean, checked with the settings in pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_package_is_mypy_clean() -> None:
    pytest.importorskip("mypy", reason="mypy is in the test extras: pip install -e '.[test]'")
    proc = subprocess.run([sys.executable, "-m", "mypy", "series"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, f"mypy series (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}"
