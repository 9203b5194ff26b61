"""`series build --from-source`: vLLM's own build of the integration tree, in a worktree.

For a series the overlay cannot carry (it changes setup.py, pyproject.toml,
requirements/, or compiled sources). Two recipes, both vLLM's documented ones:
  - precompiled: VLLM_USE_PRECOMPILED=1 with VLLM_PRECOMPILED_WHEEL_LOCATION=<release
    wheel> reuses the release's compiled kernels; right when only Python or packaging
    inputs changed. Needs no CUDA toolchain.
  - full: when csrc/, cmake/ or CMakeLists.txt changed the kernels must be compiled
    (precompiled ones would silently ignore the change): a CUDA toolchain is needed.
Both run `pip wheel --no-build-isolation --no-deps` in the current environment, which must
already hold vLLM's build requirements (REQUIREMENTS). VLLM_VERSION_OVERRIDE stamps the
same local version the overlay would. The worktree is a temporary `git worktree` of the
integration commit, removed afterwards.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from series.errors import SeriesError
from series.git.command import clean_env, git

KERNEL_SOURCES = ("csrc/", "cmake/", "CMakeLists.txt")
REQUIREMENTS = (
    "the current environment must hold vLLM's build requirements, since "
    "--no-build-isolation uses them: torch (the version the release pins), "
    "setuptools>=77, setuptools-scm>=8, wheel, packaging, jinja2; "
    "a full build (csrc/ or cmake/ changed) also needs cmake>=3.26, ninja and the CUDA toolkit"
)
# What a precompiled build imports from the environment (import name -> requirement).
_NEEDED = {
    "torch": "torch",
    "setuptools": "setuptools",
    "setuptools_scm": "setuptools-scm",
    "wheel": "wheel",
    "packaging": "packaging",
    "jinja2": "jinja2",
}

Runner = Callable[..., subprocess.CompletedProcess[str]]


@dataclass(frozen=True)
class SourcePlan:
    recipe: str  # "precompiled" or "full"
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]  # the variables we set (the rest is inherited)
    why: str

    def describe(self) -> str:
        env = " ".join(f"{k}={v}" for k, v in self.env)
        return f"{env} {' '.join(self.argv)}".strip()


def plan(release_wheel: Path, version: str, wheel_dir: Path, changed: list[str]) -> SourcePlan:
    kernels = sorted(p for p in changed if any(p == k or p.startswith(k) for k in KERNEL_SOURCES))
    argv = (
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-build-isolation",
        "--no-deps",
        "--wheel-dir",
        str(wheel_dir),
        ".",
    )
    if kernels:
        shown = ", ".join(kernels[:3]) + (" ..." if len(kernels) > 3 else "")
        return SourcePlan(
            "full",
            argv,
            (("VLLM_VERSION_OVERRIDE", version),),
            f"compiled sources changed ({shown}): the kernels are rebuilt",
        )
    env = (
        ("VLLM_USE_PRECOMPILED", "1"),
        ("VLLM_PRECOMPILED_WHEEL_LOCATION", str(release_wheel)),
        ("VLLM_VERSION_OVERRIDE", version),
    )
    return SourcePlan("precompiled", argv, env, "kernels from the release wheel; Python and packaging from the series")


def missing_requirements() -> list[str]:
    return [req for module, req in _NEEDED.items() if importlib.util.find_spec(module) is None]


def build(
    root: Path,
    commit: str,
    release_wheel: Path,
    version: str,
    out_dir: Path,
    changed: list[str],
    runner: Runner = subprocess.run,
    check_requirements: bool = True,
) -> tuple[SourcePlan, Path]:
    """Run the plan in a temporary worktree of `commit`; return it and the wheel it wrote."""
    missing = missing_requirements() if check_requirements else []
    if missing:
        raise SeriesError(f"--from-source: missing in this environment: {', '.join(missing)} ({REQUIREMENTS})")
    scratch = Path(tempfile.mkdtemp(prefix="series-build-"))
    tree, wheels = scratch / "src", scratch / "dist"
    source_plan = plan(release_wheel, version, wheels, changed)
    git(root, "worktree", "add", "--detach", str(tree), commit)
    try:
        proc = runner(
            list(source_plan.argv), cwd=tree, env=clean_env(dict(source_plan.env)), capture_output=True, text=True
        )
        if proc.returncode != 0:
            tail = ((proc.stderr or "") + (proc.stdout or "")).strip().splitlines()[-5:]
            raise SeriesError(
                f"--from-source build failed ({source_plan.recipe}): " + " | ".join(tail) + f" ({REQUIREMENTS})"
            )
        made = sorted(wheels.glob("*.whl"))
        if not made:
            raise SeriesError("--from-source: pip reported success but wrote no wheel")
        out_dir.mkdir(parents=True, exist_ok=True)
        target = out_dir / made[-1].name
        shutil.move(str(made[-1]), target)
    finally:
        git(root, "worktree", "remove", "--force", str(tree), check=False)
        git(root, "worktree", "prune", check=False)
        shutil.rmtree(scratch, ignore_errors=True)
    return source_plan, target
