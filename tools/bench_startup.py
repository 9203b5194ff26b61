#!/usr/bin/env python3
"""Benchmark: what a warm command pays before it does any work (issue 34).

    python tools/bench_startup.py [--runs 20]

Each figure is a fresh process, best and median of --runs (the best is the one to compare:
on a shared machine the others wait for a core):
  python -c pass        the bare interpreter (with site), the floor under every figure
  import series.cli     the CLI module alone
  series --help         the whole process
  rebase start-up       `series rebase --onto ONTO --dry-run` up to its first git call: the
                        interpreter, series.cli, click's parsing and the verb's imports, until
                        the verb opens the workspace (Context.workspace, whose repository
                        discovery is the first git call; it is stopped there, so no
                        repository is needed), series.workspace imported
  ... with the repository's modules
                        the same, and what open_workspace imports from its first git call on
                        (pygit2, the journal, the write path): the modules' whole cost before
                        the verb reads anything, whichever side of the first call it falls
The bytecode cache is warmed once and PYTHONDONTWRITEBYTECODE is dropped from the child
environment, as an installed package runs; with it set every run compiles from source.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs the CLI in this process, stopping it where the verb asks for its workspace: the time
# from interpreter start to there is the start-up. The interpreter's own start (before this
# script runs) is added from a bare `python -c pass` by the caller.
_UNTIL_WORKSPACE = """
import time
start = time.perf_counter()
import series.cli

def stop(self, *args, **kwargs):
    import series.workspace  # what opening the workspace imports before it opens the repository

    print(f"STARTUP {(time.perf_counter() - start) * 1000:.2f}")
    raise SystemExit(0)

series.cli.Context.workspace = stop
series.cli.main(ARGV)
"""
# open_workspace's imports from its first git call on (series.git.repo brings pygit2)
_REPOSITORY_MODULES = (
    "import series.workspace\n"
    "    import series.git.repo, series.git.partial, series.ops.changeset, series.ops.journal, "
    "series.ops.fs"
)


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


CPU: list[float] = []  # CPU ms (user + sys) of each child: less swayed than wall time by a busy machine


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def wall(argv: list[str], runs: int, env: dict[str, str]) -> list[float]:
    times = []
    CPU.clear()
    for _ in range(runs):
        start, cpu = time.perf_counter(), _cpu()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append((time.perf_counter() - start) * 1000)
        CPU.append(_cpu() - cpu)
    return times


def until_workspace(
    argv: list[str], runs: int, env: dict[str, str], cwd: Path, with_repository: bool = False
) -> tuple[list[float], list[float]]:
    """(whole process until the workspace, the same after the interpreter's own start)"""
    times, inside = [], []
    CPU.clear()
    script = _UNTIL_WORKSPACE.replace("ARGV", repr(argv))
    if with_repository:
        script = script.replace("import series.workspace", _REPOSITORY_MODULES, 1)
    for _ in range(runs):
        start, cpu = time.perf_counter(), _cpu()
        proc = subprocess.run([sys.executable, "-c", script], env=env, cwd=cwd, capture_output=True, text=True)
        CPU.append(_cpu() - cpu)
        elapsed = (time.perf_counter() - start) * 1000
        line = next((x for x in proc.stdout.splitlines() if x.startswith("STARTUP")), None)
        if line is None:
            sys.exit(f"the command never reached its workspace:\n{proc.stdout}{proc.stderr}")
        times.append(elapsed)
        inside.append(float(line.split()[1]))
    return times, inside


def show(label: str, times: list[float], target: float | None = None) -> None:
    goal = f"   target <= {target:.0f} ms" if target is not None else ""
    print(
        f"{label:<34} best {min(times):6.1f} ms   median {statistics.median(times):6.1f} ms   "
        f"CPU best {min(CPU):6.1f} ms{goal}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    env = environment()
    python = sys.executable
    series = [python, "-m", "series"]
    wall(series + ["--help"], 2, env)  # warm the bytecode cache
    wall([python, "-c", "import series.verbs.rebase"], 1, env)
    print(
        f"python {sys.version.split()[0]}, {ROOT}, load average {os.getloadavg()[0]:.2f}, "
        f"{args.runs} runs each, PYTHONDONTWRITEBYTECODE unset"
    )
    show("python -c pass", wall([python, "-c", "pass"], args.runs, env))
    show("python -c 'import series.cli'", wall([python, "-c", "import series.cli"], args.runs, env))
    show("series --help", wall(series + ["--help"], args.runs, env), 60)
    argv = ["rebase", "--onto", "v0.31.0", "--dry-run"]
    whole, inside = until_workspace(argv, args.runs, env, Path.cwd())
    show("rebase --dry-run until first git", whole, 100)
    print(
        f"{'  of which after interpreter start':<34} best {min(inside):6.1f} ms   median "
        f"{statistics.median(inside):6.1f} ms"
    )
    whole, inside = until_workspace(argv, args.runs, env, Path.cwd(), with_repository=True)
    show("  ... with the repository's modules", whole)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
