"""The user's path, end to end, with the index for dependencies (too slow for the suite):

1. the README's two set-up commands in a fresh clone of this repository (a new venv,
   `pip install -e .` + `series demo`; `pip install -e '.[test]'` + the linters present);
2. `python -m build` (isolated, as the release job builds) and `twine check --strict`;
3. the README's install line: `pipx install` of the spec it and the CI templates share
   (series.distribution.pip_spec(), `git+REPOSITORY@vX.Y.Z` until the package is on the
   index), the repository being the fresh clone with that tag (or, with --as-written, the
   spec unchanged: the real repository over the network, once the tag is pushed);
4. `pipx install` of the built wheel into a throwaway PIPX_HOME (what `pipx install
   vllm-series` installs once published), then, in a fresh fork (`git init`), `series ci
   init github` and `series ci init buildkite` from that pipx command, and actionlint +
   zizmor on what it wrote.

    python tools/check_install.py            # prints each stage with its time; exit 1 on a failure
    python tools/check_install.py --as-written   # stage 3 from the real repository

Needs git, python3 with venv, pipx (`pip install pipx` is enough: it runs as `python -m
pipx`), and actionlint / zizmor on PATH or beside this interpreter for stage 3's lint.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(cmd: list[str] | str, cwd: Path, env: dict[str, str] | None = None) -> str:
    shell = isinstance(cmd, str)
    proc = subprocess.run(
        cmd,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        shell=shell,
        executable="/bin/bash" if shell else None,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"FAILED ({proc.returncode}): {cmd}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc.stdout


def tool(name: str) -> str | None:
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() else shutil.which(name)


def stage(title: str, started: float) -> float:
    now = time.perf_counter()
    print(f"ok  {title}  ({now - started:.1f} s)", flush=True)
    return now


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from series import __version__, distribution

    as_written = "--as-written" in sys.argv[1:]
    scratch = Path(tempfile.mkdtemp(prefix="series-install-"))
    clean = {"PYTHONPATH": "", "VIRTUAL_ENV": ""}
    try:
        t = time.perf_counter()
        clone = scratch / "clone"
        run(["git", "clone", "-q", str(ROOT), str(clone)], scratch)
        run("python3 -m venv .venv && . .venv/bin/activate && pip install -q -e . && series demo", clone, clean)
        t = stage("README set-up 1: pip install -e . && series demo (fresh clone, fresh venv)", t)
        run(
            "python3 -m venv .venv2 && . .venv2/bin/activate && pip install -q -e '.[test]' && "
            "command -v actionlint && command -v zizmor && python -c 'import build, twine'",
            clone,
            clean,
        )
        t = stage("README set-up 2: pip install -e '.[test]' (pytest itself: .ci/run)", t)

        dist = scratch / "dist"
        run([sys.executable, "-m", "build", "--outdir", str(dist), str(clone)], scratch)
        run([sys.executable, "-m", "twine", "check", "--strict", *map(str, dist.iterdir())], scratch)
        t = stage("python -m build (isolated) + twine check --strict", t)

        pipx = [sys.executable, "-m", "pipx"] if not shutil.which("pipx") else ["pipx"]
        spec = distribution.pip_spec()
        if not as_written:
            run(["git", "tag", "-f", f"v{__version__}", "HEAD"], clone)
            spec = spec.replace(distribution.REPOSITORY, clone.as_uri())
        spec_home = scratch / "pipx-spec"
        spec_env = {**clean, "PIPX_HOME": str(spec_home), "PIPX_BIN_DIR": str(spec_home / "bin")}
        run([*pipx, "install", spec], scratch, spec_env)
        shown = run([str(spec_home / "bin" / "series"), "--version"], scratch, spec_env).strip()
        if __version__ not in shown:
            raise SystemExit(f"FAILED: pipx install {spec} installed {shown!r}, not {__version__}")
        t = stage(f"README install line: pipx install {spec}", t)

        home, bin_dir = scratch / "pipx-home", scratch / "pipx-bin"
        env = {
            **clean,
            "PIPX_HOME": str(home),
            "PIPX_BIN_DIR": str(bin_dir),
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        }
        wheel = next(dist.glob("*.whl"))
        run([*pipx, "install", str(wheel)], scratch, env)
        t = stage(f"pipx install {wheel.name}", t)

        fork = scratch / "fork"
        fork.mkdir()
        run(["git", "init", "-q"], fork)
        series = str(bin_dir / "series")
        print(run([series, "ci", "init", "github"], fork, env).strip())
        print(run([series, "ci", "init", "buildkite"], fork, env).strip())
        workflow = fork / ".github" / "workflows" / "series-nightly.yml"
        linted = []
        for name, args in (("actionlint", ["-no-color"]), ("zizmor", ["--offline", "--no-progress"])):
            exe = tool(name)
            if exe:
                run([exe, *args, str(workflow)], fork)
                linted.append(name)
        stage(
            f"series ci init github|buildkite from the pipx install; clean under {', '.join(linted) or 'no linter'}", t
        )
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
