#!/usr/bin/env python3
"""`series propose --dry-run` at vLLM's scale, next to a plain-git anchor for its last step.

    .venv/bin/python tools/bench_propose.py [--history /tmp/bench/history.git] [--fork /tmp/bench/fork]
                                            [--work /tmp/series-propose] [--repeat 3]

Setup (once, in --work): a copy of the 23-topic fork with its upstream remote pointed at
the realistic history (2,088 squash-merged PRs up to v0.33.0, 2,148 PR heads, 60 open),
every PR head fetched into refs/remotes/upstream/pr/*, series.yaml from `series init`,
and one extra topic, `dup`, that edits the file of an open PR (the first PR head whose
number no "(#N)" subject on main names and whose file is the same at v0.30.0 and on main).

Checks (exit 1 when one fails):
  clean      `series propose t01 --dry-run --offline`: exit 0, every step done.
  duplicate  `series propose dup --dry-run --offline`: exit 1, and the open PR is the candidate.
  anchor     the same duplicate question asked of plain git, one bash loop over the PR heads
             main has not merged: `git diff --name-only $(git merge-base main H) H` each.
Times are wall seconds of the whole process (median of --repeat), with CPU seconds beside
them (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=str(ROOT), SERIES_OFFLINE="1")


def run(cmd: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True)
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def timed(cmd: list[str], cwd: Path, repeat: int, ok: tuple[int, ...]) -> tuple[float, float, str]:
    walls, cpus, out = [], [], ""
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        out = run(cmd, cwd, ok).stdout
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus), out


def setup(history: Path, fork: Path, work: Path) -> tuple[Path, int]:
    repo = work / "fork"
    marker = work / "open-pr.txt"
    if marker.exists():
        return repo, int(marker.read_text())
    if not (history.is_dir() and fork.is_dir()):
        raise SystemExit(f"missing {history} or {fork}: build them with ../shared/bench (see its README)")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    run(["cp", "-a", str(fork), str(repo)], work)
    git = ["git", "-C", str(repo)]
    run(git + ["remote", "set-url", "upstream", str(history)], work)
    run(
        git
        + [
            "fetch",
            "-q",
            "--no-tags",
            "upstream",
            "+refs/heads/*:refs/remotes/upstream/*",
            "+refs/pull/*/head:refs/remotes/upstream/pr/*",
        ],
        work,
    )
    run([sys.executable, "-m", "series", "init", "--base", "v0.30.0", "--topics", "topic/*"], repo)
    merged = set(
        run(
            ["bash", "-c", "git log --format=%s upstream/main | grep -o '(#[0-9]*)$' | tr -d '(#)'"], repo
        ).stdout.split()
    )
    heads = run(git + ["for-each-ref", "--format=%(refname:lstrip=4)", "refs/remotes/upstream/pr"], work).stdout.split()
    for number in sorted(set(heads) - merged):
        files = run(git + ["diff", "--name-only", f"upstream/main...upstream/pr/{number}"], work).stdout.split()
        same = (
            files
            and run(
                git + ["rev-parse", f"v0.30.0:{files[0]}", f"upstream/main:{files[0]}"], work, ok=(0, 128)
            ).stdout.split()
        )
        if same and len(same) == 2 and same[0] == same[1]:
            run(
                [
                    "bash",
                    "-c",
                    f"git checkout -q -B topic/dup v0.30.0 && echo '# ours' >> {files[0]} && "
                    "git commit -qam '[Bugfix] ours' && git checkout -q --detach v0.30.0",
                ],
                repo,
            )
            run([sys.executable, "-m", "series", "add", "topic/dup"], repo)
            marker.write_text(number)
            return repo, int(number)
    raise SystemExit("no open PR head edits a file that is the same at v0.30.0 and on main")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=Path, default=Path("/tmp/bench/history.git"))
    parser.add_argument("--fork", type=Path, default=Path("/tmp/bench/fork"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/series-propose"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    repo, number = setup(args.history, args.fork, args.work)
    failed = False
    propose = [sys.executable, "-m", "series", "propose"]
    wall, cpu, out = timed(propose + ["t01", "--dry-run", "--offline", "--json"], repo, args.repeat, (0,))
    steps = json.loads(out)["steps"]
    ok = steps == ["replay", "grade", "reviewers", "description", "duplicates"]
    failed |= not ok
    print(
        f"clean      propose t01 --dry-run: {wall:.2f} s wall, {cpu:.2f} s CPU; steps {steps} "
        f"{'ok' if ok else 'FAILED'}"
    )
    wall, cpu, out = timed(propose + ["dup", "--dry-run", "--offline", "--json"], repo, args.repeat, (1,))
    found = [c["number"] for c in json.loads(out)["duplicates"]["candidates"]]
    ok = found == [number]
    failed |= not ok
    print(
        f"duplicate  propose dup --dry-run: {wall:.2f} s wall, {cpu:.2f} s CPU; stopped by {found} "
        f"(expected [{number}]) {'ok' if ok else 'FAILED'}"
    )
    loop = (
        "for h in $(comm -13 <(git log --format=%s upstream/main | grep -o '(#[0-9]*)$' | tr -d '(#)' | sort) "
        "<(git for-each-ref --format='%(refname:lstrip=4)' refs/remotes/upstream/pr | sort)); do "
        "git diff --name-only $(git merge-base upstream/main upstream/pr/$h) upstream/pr/$h; done | wc -l"
    )
    wall, cpu, _ = timed(["bash", "-c", loop], repo, args.repeat, (0,))
    print(f"anchor     a git diff per unmerged PR head (60 of 2,148): {wall:.2f} s wall, {cpu:.2f} s CPU")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
