"""What the release job publishes: sdist and wheel build, pass `twine check --strict`, and
the wheel alone (installed, not this checkout) writes a fork's CI files that lint clean.
The sdist is the whole source: the suite runs from it unpacked (the release job runs it
there before it publishes). The install spec the README and the templates give installs
this version from a clone of the repository.

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
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


def tracked() -> list[str]:
    """Every file git tracks here; skips outside a git checkout (an unpacked sdist)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, text=True, check=True)
    return [
        name for name in out.stdout.split("\0") if name and (ROOT / name).is_file()
    ]  # a deletion not staged: not built


def test_twine_check_strict_passes(dist: Path) -> None:
    files = sorted(map(str, dist.iterdir()))
    assert len(files) == 2, files
    proc = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *files], capture_output=True, text=True)
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
    for shipped in (
        "series/_ci/nightly.sh",
        "series/_ci/README.md",
        "series/_ci/github/nightly.yml",
        "series/_ci/buildkite/nightly.yml",
        "series/_topics/order",
    ):
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
    env = dict(os.environ, PYTHONPATH=str(target / "purelib"))  # the wheel, not this checkout
    proc = subprocess.run(
        [sys.executable, "-m", "series", "ci", "init", "github"], cwd=fork, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "created: .github/workflows/series-nightly.yml"
    where = subprocess.run(
        [sys.executable, "-m", "series", "ci", "path", "nightly.sh"], cwd=fork, env=env, capture_output=True, text=True
    ).stdout.strip()
    assert where.startswith(str(target)), where
    workflow = fork / ".github/workflows/series-nightly.yml"
    for tool, args in (("actionlint", ["-no-color"]), ("zizmor", ["--offline", "--no-progress"])):
        exe = Path(sys.executable).parent / tool
        if exe.is_file():
            lint = subprocess.run([str(exe), *args, str(workflow)], capture_output=True, text=True)
            assert lint.returncode == 0, (tool, lint.stdout, lint.stderr)


def test_the_sdist_carries_every_tracked_file(dist: Path) -> None:
    with tarfile.open(next(dist.glob("*.tar.gz"))) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if m.isfile()}
    missing = sorted(set(tracked()) - members)
    assert not missing, missing  # tests/ with its helpers and fixtures, tools/, the workflows
    assert not [m for m in members if "__pycache__" in m or m.endswith(".pyc")]


def test_pytest_runs_from_the_unpacked_sdist(dist: Path, tmp_path: Path) -> None:
    """A few files of the suite, with helpers and fixtures, over the sdist's own package:
    test_status builds its repositories from the session templates (conftest, harness,
    repos) and runs the CLI; test_testmap reads tests/fixtures; test_packaging reads the
    project's metadata. Quick ones: the suite itself runs every file from the checkout."""
    with tarfile.open(next(dist.glob("*.tar.gz"))) as sdist:
        top = {m.name.split("/", 1)[0] for m in sdist.getmembers()}
        if hasattr(tarfile, "data_filter"):
            sdist.extractall(tmp_path, filter="data")
        else:  # Python < 3.10.12 has no filters; the sdist was built just now
            sdist.extractall(tmp_path)
    assert len(top) == 1, top
    unpacked = tmp_path / top.pop()
    env = dict(os.environ, PYTHONPATH=str(unpacked))  # before the editable install of this checkout
    where = subprocess.run(
        [sys.executable, "-c", "import series, tests.repos; print(series.__file__)"],
        cwd=unpacked,
        env=env,
        capture_output=True,
        text=True,
    )
    assert where.stdout.startswith(str(unpacked)), where.stdout + where.stderr
    # its own basetemp: in the default one, pytest would first remove the oldest numbered
    # directories there, this very suite's earlier runs (seconds of unlinking per thousand repos)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--basetemp={tmp_path / 'inner'}",
            "tests/test_status.py",
            "tests/test_testmap.py",
            "tests/test_packaging.py",
        ],
        cwd=unpacked,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and "error" not in proc.stdout.lower(), proc.stdout[-3000:]


def test_the_documented_spec_installs_this_version_from_a_clone(tmp_path: Path) -> None:
    """README and templates say `pip install git+REPOSITORY@vVERSION`: pip takes that spec,
    checks out the tag and builds this package (the repository a local clone; no index)."""
    from series import __version__, distribution

    tracked()
    if distribution.ON_INDEX:
        pytest.skip("the spec names the package index")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "tag", "-f", f"v{__version__}", "HEAD"], check=True, capture_output=True)
    spec = distribution.pip_spec().replace(distribution.REPOSITORY, clone.as_uri())
    assert spec == f"git+{clone.as_uri()}@v{__version__}"
    site = tmp_path / "site"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            spec,
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    env = dict(os.environ, PYTHONPATH=str(site))
    proc = subprocess.run(
        [sys.executable, "-m", "series", "ci", "path", "github/nightly.yml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and proc.stdout.startswith(str(site)), proc.stdout + proc.stderr
    assert f"'{distribution.pip_spec()}'" in Path(proc.stdout.strip()).read_text()


def test_the_release_job_tests_the_sdist_before_it_publishes_with_an_action_that_reads_it(dist: Path) -> None:
    import re

    from packaging.version import Version
    from ruamel.yaml import YAML

    with tarfile.open(next(dist.glob("*.tar.gz"))) as sdist:
        pkg_info = next(m for m in sdist.getmembers() if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO"))
        metadata = email.message_from_bytes(sdist.extractfile(pkg_info).read())  # type: ignore[union-attr]
    text = (ROOT / ".github" / "workflows" / "release.yml").read_text()
    jobs = YAML(typ="safe").load(text)["jobs"]
    # the action's release that reads this metadata: 2.4 (License-Expression) from v1.12
    pinned = re.search(r"pypa/gh-action-pypi-publish@[0-9a-f]{40} # v(\S+)", text)
    assert pinned, "the publishing action is pinned by commit, its release in a comment"
    # a newer metadata version needs a newer action: read its release notes, then move both
    assert metadata["Metadata-Version"] == "2.4", metadata["Metadata-Version"]
    assert Version(pinned[1]) >= Version("1.12"), pinned[1]
    publish = next(
        job for job in jobs.values() if any("gh-action-pypi-publish" in s.get("uses", "") for s in job["steps"])
    )
    needs = publish["needs"] if isinstance(publish["needs"], list) else [publish["needs"]]
    scripts = {name: "\n".join(s.get("run", "") for s in jobs[name]["steps"]) for name in needs}
    assert any("python -m build" in s for s in scripts.values()), scripts
    tested = [s for s in scripts.values() if "tar -xzf dist/*.tar.gz" in s]
    assert tested and "pip install '.[test]'" in tested[0] and "pytest" in tested[0], scripts
