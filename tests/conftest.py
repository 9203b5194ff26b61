"""A sealed environment for every test: fixed HOME, identities, dates; no system config.

Tests build real repositories with short shell scripts (`sh`) and drive the real CLI
(`series`, a subprocess of `python -m series`).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.repos import add_pull_request, build_fork, build_upstream

SEALED = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Fork Maintainer",
    "GIT_AUTHOR_EMAIL": "fork@example.com",
    "GIT_AUTHOR_DATE": "2026-02-01T12:00:00Z",
    "GIT_COMMITTER_NAME": "Fork Maintainer",
    "GIT_COMMITTER_EMAIL": "fork@example.com",
    "GIT_COMMITTER_DATE": "2026-02-01T12:00:00Z",
    "GIT_EDITOR": "false",
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
    "SERIES_HTTP_BACKOFF": "0.01",  # retries stay real, their waits short
}


@pytest.fixture(autouse=True)
def sealed_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    for key in list(os.environ):
        if key.startswith(("GIT_", "GITHUB_", "GH_", "SERIES_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("SERIES_LOG_DIR", str(tmp_path / "logs"))
    for key, value in SEALED.items():
        monkeypatch.setenv(key, value)
    (home / ".gitconfig").write_text(
        "[init]\n\tdefaultBranch = main\n[user]\n\tname = Fork Maintainer\n"
        "\temail = fork@example.com\n[advice]\n\tdetachedHead = false\n"
    )
    return home


def sh(script: str, cwd: Path) -> str:
    """Run a bash script (set -eu) in cwd; return stdout."""
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd,
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"script failed ({proc.returncode}):\n{script}\n{proc.stderr}"
    return proc.stdout


def run_series(*args: str, cwd: Path, expect: int | None = 0, input: str | None = None,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.run([sys.executable, "-m", "series", *args], cwd=cwd, input=input,
                          capture_output=True, text=True, env=full_env)
    if expect is not None:
        assert proc.returncode == expect, (
            f"series {' '.join(args)}: exit {proc.returncode}, expected {expect}\n"
            f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
        )
    return proc


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    return build_upstream(tmp_path / "upstream")


@pytest.fixture
def fork(tmp_path: Path, upstream: Path) -> Path:
    return build_fork(upstream, tmp_path / "fork")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """Upstream's working repository with PR #61050 (served to forks through a bare mirror)."""
    path = build_upstream(tmp_path / "upstream-work")
    add_pull_request(path, 61050)
    return path


@pytest.fixture
def served(tmp_path: Path, work: Path) -> Path:
    """A fork of `work` as GitHub serves it: through a bare mirror (PR heads included)."""
    bare = tmp_path / "upstream.git"
    sh(f"git clone -q --mirror {work} {bare}", tmp_path)
    return build_fork(bare, tmp_path / "fork")
