"""A throwaway environment with a tiny vLLM wheel installed, for the evidence-run tests.

The venv has no pip (fast to make); a .pth line makes this interpreter's site-packages
(pytest and its plugins) importable after the venv's own, so the venv's `vllm` is the
wheel's and nothing else.
"""
from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path


def make_env(path: Path, wheel: Path | None, pytest: bool = True) -> Path:
    """A venv at `path` with `wheel` installed; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True,
                   capture_output=True)
    python = path / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    if pytest:
        (purelib / "zz-series-test-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    if wheel is not None:
        from installer import install
        from installer.destinations import SchemeDictionaryDestination
        from installer.sources import WheelFile

        schemes = {k: str(purelib if k in ("purelib", "platlib") else path / k)
                   for k in ("purelib", "platlib", "headers", "scripts", "data")}
        with WheelFile.open(wheel) as source:
            install(source, SchemeDictionaryDestination(schemes, interpreter=str(python),
                                                        script_kind="posix"), {"INSTALLER": b"series-tests"})
    return python
