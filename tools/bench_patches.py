#!/usr/bin/env python3
"""Benchmark `series export` and `series import` against the plain git loops they replace,
on the shared 23-topic fork over real vLLM.

    .venv/bin/python tools/bench_patches.py [--fork /tmp/bench/fork] [--repeat 5]

export anchor: `for b in <topics>; do git format-patch -q --full-index -o DIR/$b BASE..$b; done`
import anchor: `for b in <topics>; do git checkout -q -B $b BASE && git am -q DIR/$b/*.patch; done`
(the way a team rebuilds a quilt-style series by hand: check out the base, apply with am).
Each measurement is a whole process (what a user waits for), interleaved, median of --repeat.
Working copies are `git clone --shared` of the fork, so the bench fork is only read.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fixture import require  # noqa: E402

BASE = "v0.30.0"


def sh(cwd: Path, script: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="Bench",
        GIT_AUTHOR_EMAIL="bench@example.com",
        GIT_COMMITTER_NAME="Bench",
        GIT_COMMITTER_EMAIL="bench@example.com",
    )
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"failed in {cwd}:\n{script}\n{proc.stderr}")
    return proc.stdout


def clone(fork: Path, target: Path, with_topics: bool, checkout: bool) -> None:
    sh(target.parent, f"git clone -q --shared {'--no-checkout' if not checkout else ''} {fork} {target.name}")
    if with_topics:
        sh(target, "git fetch -q origin 'refs/heads/topic/*:refs/heads/topic/*'")
    if checkout:
        sh(target, f"git checkout -q --detach {BASE}")


def timed(cwd: Path, script: str) -> float:
    start = time.perf_counter()
    sh(cwd, script)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fork", type=Path, default=Path("/tmp/bench/fork"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    require(args.fork)
    branches = (args.fork / ".git" / "series-fixture.txt").read_text().split()
    names = [b.split("/", 1)[1] for b in branches]
    yaml = ["upstream:", "  remote: upstream", f"  base: {BASE}", "topics:"]
    yaml += [f"  - name: {n}\n    branch: topic/{n}" for n in names]
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        src = tmp / "src"
        clone(args.fork, src, with_topics=True, checkout=False)
        (src / "series.yaml").write_text("\n".join(yaml) + "\n")
        dst = tmp / "dst"
        clone(args.fork, dst, with_topics=False, checkout=True)
        shutil.copy(src / "series.yaml", dst / "series.yaml")
        sh(src, f"{py} -m series export {tmp / 'patches'}")
        patches = sum(1 for _ in (tmp / "patches").glob("*/*.patch"))
        am_src = tmp / "am-src"
        clone(args.fork, am_src, with_topics=True, checkout=False)
        am_dst = tmp / "am-dst"
        clone(args.fork, am_dst, with_topics=False, checkout=True)

        anchor_export = " ".join(f"git format-patch -q --full-index -o {tmp}/fp/{n} {BASE}..topic/{n};" for n in names)
        anchor_import = " ".join(
            f"git checkout -q -B topic/{n} {BASE} && git am -q {tmp}/patches/{n}/*.patch;" for n in names
        )
        clear = (
            "git checkout -q --detach " + BASE + " && git for-each-ref --format='%(refname)' "
            "refs/heads/topic refs/series | xargs -r -n1 git update-ref -d && rm -rf .git/series"
        )
        times: dict[str, list[float]] = {k: [] for k in ("export", "format-patch", "import", "git am")}
        for _ in range(args.repeat):
            shutil.rmtree(tmp / "fresh-export", ignore_errors=True)
            times["export"].append(timed(src, f"{py} -m series export {tmp / 'fresh-export'}"))
            shutil.rmtree(tmp / "fp", ignore_errors=True)
            times["format-patch"].append(timed(am_src, anchor_export))
            sh(dst, clear)
            times["import"].append(timed(dst, f"{py} -m series import {tmp / 'patches'}"))
            sh(am_dst, clear)
            times["git am"].append(timed(am_dst, anchor_import))
        # correctness: the imported trees equal the fork's
        for n in names:
            a = sh(dst, f"git rev-parse topic/{n}^{{tree}}")
            b = sh(src, f"git rev-parse topic/{n}^{{tree}}")
            assert a == b, f"{n}: imported tree differs"
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{len(names)} topics, {patches} patches over real vLLM {BASE}; median of {args.repeat}")
        print(
            f"  series export  {med['export'] * 1000:8.0f} ms   git format-patch loop "
            f"{med['format-patch'] * 1000:8.0f} ms   ratio {med['export'] / med['format-patch']:.2f}"
        )
        print(
            f"  series import  {med['import'] * 1000:8.0f} ms   checkout + git am loop "
            f"{med['git am'] * 1000:8.0f} ms   ratio {med['import'] / med['git am']:.2f}"
        )


if __name__ == "__main__":
    main()
