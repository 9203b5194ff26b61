"""A sealed environment for every test: fixed HOME, identities, dates; no system config.

Tests build real repositories (tests/repos.py; the common ones copied from per-session
templates) and drive the real CLI (`run_series`); the machinery is tests/harness.py,
re-exported here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import forkserver
from tests.harness import SEALED, from_template, refs_of, run_series, sealed, set_template_base, sh, template_tree
from tests.repos import add_pull_request, build_fork, build_upstream
from tests.snapshots import UPDATE_FROM_ENV, Snapshot

__all__ = ["SEALED", "from_template", "run_series", "sh"]

# pytest-httpserver's werkzeug adds a stderr handler of its own on its first request unless
# one is there: one that never writes keeps its request lines out of in-process runs' stderr
logging.getLogger("werkzeug").addHandler(logging.NullHandler())


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--snapshot-update",
        action="store_true",
        default=False,
        help="rewrite tests/snapshots/ with the current output (say why in the commit)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """`-n auto` hands the tests out with xdist's work stealing, unless --dist says
    otherwise: each worker starts with one half of the files in order, so a file's session
    templates and module fixtures are mostly built by one worker, not both (the default
    `load` deals tests round-robin). Measured on 2 idle cores: 205-215 s of CPU and
    115-121 s wall with `load`, 166-176 s and 96-114 s with `worksteal`."""
    given = any(arg == "--dist" or arg.startswith("--dist=") for arg in config.invocation_params.args)
    if getattr(config.option, "dist", None) == "load" and not given:
        config.option.dist = "worksteal"


@pytest.fixture
def snapshot(request: pytest.FixtureRequest, tmp_path: Path) -> Snapshot:
    """Compares a command's whole output with tests/snapshots/<test>.txt|.json (tests/snapshots.py)."""
    update = UPDATE_FROM_ENV or bool(request.config.getoption("--snapshot-update"))
    return Snapshot(request.node.name, tmp_path, update)


@pytest.fixture(scope="session", autouse=True)
def _template_base(tmp_path_factory: pytest.TempPathFactory) -> None:
    set_template_base(lambda: tmp_path_factory.mktemp("templates"))


@pytest.fixture(scope="session", autouse=True)
def _forkserver() -> Iterator[None]:
    """The fork server (tests/forkserver.py) ends with the test process that started it."""
    yield
    forkserver.shutdown()


@pytest.fixture(autouse=True)
def sealed_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    values, drop = sealed(tmp_path)
    for key in drop:
        monkeypatch.delenv(key)
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    return Path(values["HOME"])


def _upstream(root: Path) -> Path:
    return build_upstream(root / "upstream")


def _fork(root: Path) -> Path:
    return build_fork(_upstream(root), root / "fork")


def _work(root: Path) -> Path:
    path = build_upstream(root / "upstream-work")
    add_pull_request(path, 61050)
    return path


def _served(root: Path) -> Path:
    bare = root / "upstream.git"
    sh(f"git clone -q --mirror {_work(root)} {bare}", root)
    return build_fork(bare, root / "fork")


_PRISTINE: dict[str, tuple[tuple[str, str], ...]] = {}


def _unchanged(repo: Path, key: str, build: object, name: str) -> bool:
    """Whether a fixture's repository still has the refs its template started with (a
    fixture in between may have added some: then what depends on it is built, not copied)."""
    if key not in _PRISTINE:
        _PRISTINE[key] = refs_of(template_tree(key, build) / name)  # type: ignore[arg-type]
    return refs_of(repo) == _PRISTINE[key]


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    return from_template("upstream", _upstream, tmp_path)


@pytest.fixture
def fork(tmp_path: Path, upstream: Path) -> Path:
    if not _unchanged(upstream, "upstream", _upstream, "upstream"):
        return build_fork(upstream, tmp_path / "fork")
    return from_template("fork", _fork, tmp_path, only=("fork",))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """Upstream's working repository with PR #61050 (served to forks through a bare mirror)."""
    return from_template("work", _work, tmp_path)


@pytest.fixture
def served(tmp_path: Path, work: Path) -> Path:
    """A fork of `work` as GitHub serves it: through a bare mirror (PR heads included)."""
    if not _unchanged(work, "work", _work, "upstream-work"):
        bare = tmp_path / "upstream.git"
        sh(f"git clone -q --mirror {work} {bare}", tmp_path)
        return build_fork(bare, tmp_path / "fork")
    return from_template("served", _served, tmp_path, only=("upstream.git", "fork"))
