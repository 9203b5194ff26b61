"""What the release job publishes: sdist and wheel build, pass `twine check --strict`, and
the wheel alone (installed, not this checkout) writes a fork's CI files that lint clean.

The full user path (`pipx install` of the wheel, then `series ci init github` in a fresh
fork) is tools/check_install.py: it needs a network index for the dependencies.
"""
from __future__ import annotations

import email
import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NEEDED = ("build", "twine", "setuptools")


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (pip install -e '.[test]')")
    out = tmp_path_factory.mktemp("dist")
    src = tmp_path_factory.mktemp("src") / "series"
    # a copy: building in place would leave build/ and *.egg-info in the checkout
    junk = shutil.ignore_patterns(".git", ".venv*", "*.egg-info", "__pycache__", ".mypy_cache", ".pytest_cache")

    def ignore(directory: str, names: list[str]) -> set[str]:
        top = {"build", "dist"} if Path(directory) == ROOT else set()
        return set(junk(directory, names)) | (top & set(names))
    shutil.copytree(ROOT, src, ignore=ignore)
    proc = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


def test_twine_check_strict_passes(dist: Path) -> None:
    files = sorted(map(str, dist.iterdir()))
    assert len(files) == 2, files
    proc = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *files],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_metadata_names_the_free_distribution_and_its_licence(dist: Path) -> None:
    from series import __version__

    wheel = next(dist.glob("*.whl"))
    assert wheel.name == f"vllm_series-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = email.message_from_bytes(z.read(f"vllm_series-{__version__}.dist-info/METADATA"))
    assert meta["Name"] == "vllm-series" and meta["Version"] == __version__
    assert meta["License-Expression"] == "Apache-2.0", meta["License-Expression"]
    assert any(u.startswith("Source, ") for u in meta.get_all("Project-URL")), meta.get_all("Project-URL")
    assert "Typing :: Typed" in meta.get_all("Classifier")
    assert f"vllm_series-{__version__}.dist-info/licenses/LICENSE" in names
    for shipped in ("series/_ci/nightly.sh", "series/_ci/README.md", "series/_ci/github/nightly.yml",
                    "series/_ci/buildkite/nightly.yml", "series/_topics/order"):
        assert shipped in names, shipped
    with tarfile.open(next(dist.glob("*.tar.gz"))) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    assert {"LICENSE", "ci/nightly.sh", "pyproject.toml"} <= members


def test_the_installed_wheel_writes_a_forks_ci(dist: Path, tmp_path: Path) -> None:
    from installer import install
    from installer.destinations import SchemeDictionaryDestination
    from installer.sources import WheelFile

    target = tmp_path / "site"
    scheme = {k: str(target / k) for k in ("purelib", "platlib", "headers", "scripts", "data")}
    with WheelFile.open(next(dist.glob("*.whl"))) as source:
        install(source, SchemeDictionaryDestination(scheme, sys.executable, "posix"), {})
    fork = tmp_path / "fork"
    fork.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=fork, check=True)
    env = dict(os.environ, PYTHONPATH=str(target / "purelib"))   # the wheel, not this checkout
    proc = subprocess.run([sys.executable, "-m", "series", "ci", "init", "github"], cwd=fork, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "created: .github/workflows/series-nightly.yml"
    where = subprocess.run([sys.executable, "-m", "series", "ci", "path", "nightly.sh"], cwd=fork, env=env,
                           capture_output=True, text=True).stdout.strip()
    assert where.startswith(str(target)), where
    workflow = fork / ".github/workflows/series-nightly.yml"
    for tool, args in (("actionlint", ["-no-color"]), ("zizmor", ["--offline", "--no-progress"])):
        exe = Path(sys.executable).parent / tool
        if exe.is_file():
            lint = subprocess.run([str(exe), *args, str(workflow)], capture_output=True, text=True)
            assert lint.returncode == 0, (tool, lint.stdout, lint.stderr)
