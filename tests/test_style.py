"""CONTRIBUTING.md: the code stays `ruff check` and `ruff format --check` clean, with the settings
in pyproject.toml, as it stays mypy-clean (tests/test_typing.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _ruff(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("ruff", reason="ruff is in the test extras: pip install -e '.[test]'")
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=cwd, capture_output=True, text=True)


def test_code_is_ruff_check_clean() -> None:
    proc = _ruff("check", ".")
    assert proc.returncode == 0, f"ruff check (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}"


def test_code_is_ruff_formatted() -> None:
    proc = _ruff("format", "--check", ".")
    assert proc.returncode == 0, f"ruff format --check (exit {proc.returncode}); run `ruff format .`:\n{proc.stdout}"


def test_the_settings_catch_what_they_are_there_to_catch(tmp_path: Path) -> None:
    # The two checks above pass on an empty selection too: a planted file under the project's
    # own settings must fail both, or the settings (or the invocation) check nothing.
    planted = tmp_path / "planted.py"
    planted.write_text("import os\nx = ( 1 )\n")
    config = str(ROOT / "pyproject.toml")
    lint = _ruff("check", "--no-cache", "--config", config, str(planted), cwd=tmp_path)
    fmt = _ruff("format", "--check", "--no-cache", "--config", config, str(planted), cwd=tmp_path)
    assert lint.returncode == 1 and "F401" in lint.stdout, lint.stdout + lint.stderr
    assert fmt.returncode == 1 and "planted.py" in fmt.stdout, fmt.stdout + fmt.stderr
