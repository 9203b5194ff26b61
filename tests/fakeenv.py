"""A throwaway environment with a tiny vLLM wheel installed, for the evidence-run tests.

The venv has no pip (fast to make); a .pth line makes pytest importable after the venv's
own packages, so the venv's `vllm` is the wheel's and nothing else. Only pytest and what it
requires are visible, not this interpreter's whole site-packages: its pytest plugins
(hypothesis, pytest-httpserver) would be auto-loaded by every pytest the evidence run
starts, about a second of imports each, and an environment vLLM's tests run in has none
of them either.
"""

from __future__ import annotations

import importlib.metadata
import site
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement


def make_env(path: Path, wheel: Path | None, pytest: bool = True, everything: bool = False) -> Path:
    """A venv at `path` with `wheel` installed; returns its python. `everything`: this
    interpreter's whole site-packages (pip, series' requirements) instead of pytest alone."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, capture_output=True)
    python = path / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    if everything:
        (purelib / "zz-series-test-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    elif pytest:
        (purelib / "zz-series-test-deps.pth").write_text(f"{pytest_only()}\n")
    if wheel is not None:
        from installer import install
        from installer.destinations import SchemeDictionaryDestination
        from installer.sources import WheelFile

        schemes = {
            k: str(purelib if k in ("purelib", "platlib") else path / k)
            for k in ("purelib", "platlib", "headers", "scripts", "data")
        }
        with WheelFile.open(wheel) as source:
            install(
                source,
                SchemeDictionaryDestination(schemes, interpreter=str(python), script_kind="posix"),
                {"INSTALLER": b"series-tests"},
            )
    return python


def pytest_only() -> Path:
    """A site directory holding pytest and its requirements (links into this interpreter's
    site-packages), made once per session."""
    from tests.harness import template_tree

    return template_tree("pytest-only", _link_pytest)


def _link_pytest(into: Path) -> None:
    todo, seen = ["pytest"], set()
    while todo:
        name = todo.pop()
        dist = importlib.metadata.distribution(name)
        if dist.metadata["Name"].lower() in seen:
            continue
        seen.add(dist.metadata["Name"].lower())
        # the top-level entries of its files: packages, modules, its .dist-info
        tops = {
            Path(f.parts[0]) for f in dist.files or () if f.parts and f.parts[0] not in ("..", "bin", "__pycache__")
        }
        base = Path(str(dist.locate_file("")))
        for top in tops:
            if not (into / top).exists() and (base / top).exists():
                (into / top).symlink_to(base / top)
        for text in dist.requires or ():
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
