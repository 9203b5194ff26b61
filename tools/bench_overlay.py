#!/usr/bin/env python3
"""Benchmark: overlay of the real vLLM release wheel next to a plain `cp`, in the same run.

    python tools/bench_overlay.py [--version 0.31.0] [--cache DIR] [--fork /tmp/bench/fork]
                                  [--rounds 3] [--no-naive]

The wheel (about 320 MB) is fetched once with `pip download --no-deps --only-binary=:all:`
into the series wheel cache. The series diff is the bench fork's topics (their changed
files under vllm/, at their heads); without the fork, a few synthetic edits. Each side is
timed with `sync` included (and a `sync` before, so no earlier writeback is paid for),
page cache warmed first, the sides interleaved; median and best of --rounds. The naive way
(zipfile, recompress every member) is timed once for scale.
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
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from series.wheel.fetch import resolve_wheel  # noqa: E402
from series.wheel.overlay import OverlayChange, overlay  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fixture import require  # noqa: E402


def series_diff(fork: Path) -> dict[str, OverlayChange]:
    import pygit2

    from series.git.repo import changed_paths

    if not (fork / ".git").exists():
        return {
            p: OverlayChange(p, b"# edited\n")
            for p in ("vllm/v1/kv_offload/cpu/policies/lru.py", "vllm/envs.py", "vllm/new_module.py")
        }
    repo = pygit2.Repository(str(fork))
    base = repo.revparse_single("v0.30.0").peel(pygit2.Commit)
    names = (fork / ".git/series-fixture.txt").read_text().split()
    changes: dict[str, OverlayChange] = {}
    for branch in names:
        head = repo.revparse_single(branch).peel(pygit2.Commit)
        for c in changed_paths(repo, base.tree, head.tree):
            if c.path.startswith("vllm/"):
                changes[c.path] = OverlayChange(c.path, repo[c.new_id].data if c.new_id else None)
    return changes


def timed(fn) -> float:
    subprocess.run(["sync"], check=True)  # no earlier writeback left to pay for
    start = time.perf_counter()
    fn()
    subprocess.run(["sync"], check=True)
    return time.perf_counter() - start


def naive(src: Path, dst: Path, changes: dict[str, OverlayChange]) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            change = changes.get(info.filename)
            if change is not None and change.data is None:
                continue
            zout.writestr(info, change.data if change else zin.read(info))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", default="0.31.0")
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--fork", type=Path, default=Path("/tmp/bench/fork"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-naive", action="store_true")
    args = ap.parse_args()
    require(args.fork)

    wheel, fetched = resolve_wheel(f"vllm=={args.version}", args.cache)
    size = wheel.stat().st_size
    print(f"wheel {wheel} ({size / 1e6:.0f} MB){' (downloaded now)' if fetched else ' (cached)'}")
    changes = series_diff(args.fork)
    print(f"series diff: {len(changes)} files under vllm/")
    with open(wheel, "rb") as f:  # warm the page cache so both sides read from memory
        while f.read(16 << 20):
            pass
    sha = "1a2b3c4d5e6f708192a3b4c5d6e7f80912345678"
    with tempfile.TemporaryDirectory(dir=wheel.parent) as tmp:
        work = Path(tmp)
        cp_times, ov_times, ov_hash_times = [], [], []
        for i in range(args.rounds):
            target = work / f"cp-{i}.whl"
            cp_times.append(timed(lambda: subprocess.run(["cp", str(wheel), str(target)], check=True)))
            os.unlink(target)
            out = work / f"ov-{i}"
            ov_times.append(timed(lambda: overlay(wheel, out, changes, sha, (2026, 1, 1, 0, 0, 0), hash_output=False)))
            shutil.rmtree(out)
            out = work / f"ovh-{i}"
            ov_hash_times.append(timed(lambda: overlay(wheel, out, changes, sha, (2026, 1, 1, 0, 0, 0)).sha256()))
            shutil.rmtree(out)
        for label, pick in (("median", statistics.median), ("best", min)):
            cp_t, ov_t, ovh_t = (pick(t) for t in (cp_times, ov_times, ov_hash_times))
            print(f"-- {label} of {args.rounds}, interleaved; load average {os.getloadavg()[0]:.2f}")
            print(f"cp + sync                 {cp_t:7.3f} s")
            print(
                f"overlay + sync            {ov_t:7.3f} s   ratio {ov_t / cp_t:.2f}x cp   "
                "(the wheel alone; target <= 1.5x)"
            )
            print(
                f"overlay + sha256 + sync   {ovh_t:7.3f} s   ratio {ovh_t / cp_t:.2f}x cp   "
                "(what 'series build' does: + the manifest's sha256, hashed beside the copy)"
            )
        if not args.no_naive:
            nv_t = timed(lambda: naive(wheel, work / "naive.whl", changes))
            print(f"naive recompress + sync   {nv_t:7.3f} s   ratio {nv_t / cp_t:.2f}x cp   (zipfile, once)")


if __name__ == "__main__":
    main()
