#!/usr/bin/env python3
"""Benchmark: `series build --wheel` as a user runs it, next to `cp` of the same wheel (issue 34).

    python tools/bench_build.py [--fork /tmp/bench/fork] [--wheel PATH.whl | --version 0.30.0]
                                [--fake-mb 315] [--rounds 5] [--profile]

tools/bench_overlay.py times overlay() alone; this times the whole command, a fresh
process each time: the interpreter, the imports, the integration branch computed in
memory, the stale-file check, the overlay, the manifest (and its sha256 of the wheel).
The fork (tools/bench_fixture.py) is copied once to a scratch directory with a series.yaml
listing its topics over v0.30.0; one untimed build moves its integration branch first, so
every timed run is the repeated build (branch unchanged), as in CI.

The wheel: --wheel PATH, else the release wheel of --version if it is already in the series
wheel cache (never downloaded here), else a fake one (tests/fakewheel.py's layout) of about
--fake-mb MB: the base's vllm/ tree plus incompressible stand-ins for the compiled
extensions, written once beside the scratch fork. Each side is timed with `sync` before and
after (no earlier writeback paid for, its own writeback included), page cache warmed first,
the sides interleaved; best and median of --rounds, and the ratio. --profile runs the command
once more under cProfile and prints where the time beyond the overlay goes.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from bench_fixture import require  # noqa: E402


def series_yaml(branches: list[str], base: str) -> str:
    lines = ["upstream:", "  remote: upstream", f"  base: {base}", "integration: series/integration", "topics:"]
    for b in branches:
        lines += [f"  - name: {b.split('/', 1)[1]}", f"    branch: {b}"]
    return "\n".join(lines) + "\n"


def fake_wheel(fork: Path, out_dir: Path, version: str, megabytes: int) -> Path:
    """tests/fakewheel.py's wheel of the base's vllm/ tree, with compiled extensions
    standing in for the real ones' size (random bytes: they compress no better than .so)."""
    import pygit2

    from tests.fakewheel import TAG, build_wheel

    path = out_dir / f"vllm-{version}-{TAG}.whl"
    if path.is_file():
        return path
    repo = pygit2.Repository(str(fork))
    tree = repo.revparse_single(f"v{version}").peel(pygit2.Tree)
    files: dict[str, bytes] = {}

    def walk(t: pygit2.Tree, prefix: str) -> None:
        for entry in t:
            if entry.type_str == "tree":
                walk(repo[entry.id].peel(pygit2.Tree), f"{prefix}{entry.name}/")
            elif entry.type_str == "blob" and entry.filemode != 0o120000:
                files[f"{prefix}{entry.name}"] = repo[entry.id].peel(pygit2.Blob).data

    walk(tree["vllm"].peel(pygit2.Tree), "vllm/")
    chunk = megabytes * 1_000_000 // 6
    for name in (
        "_C",
        "_moe_C",
        "_flashmla_C",
        "cumem_allocator",
        "vllm_flash_attn/_vllm_fa2_C",
        "vllm_flash_attn/_vllm_fa3_C",
    ):
        files[f"vllm/{name}.abi3.so"] = os.urandom(chunk)
    print(f"writing a fake wheel ({len(files)} members, about {megabytes} MB) to {path}")
    return build_wheel(out_dir, files, version=version)


def release_wheel(args: argparse.Namespace, scratch: Path, fork: Path) -> tuple[Path, str]:
    if args.wheel is not None:
        return args.wheel, "given"
    from series.wheel.fetch import cached, cache_dir

    hit = cached(f"vllm=={args.version}", cache_dir(), None)
    if hit is not None:
        return hit, "the real release wheel, from the series wheel cache"
    return fake_wheel(fork, scratch, args.version, args.fake_mb), "a fake wheel (tests/fakewheel.py layout)"


def timed(argv: list[str], **kwargs: object) -> float:
    subprocess.run(["sync"], check=True)  # no earlier writeback left to pay for
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, **kwargs)  # type: ignore[call-overload]
    subprocess.run(["sync"], check=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fork", type=Path, default=Path("/tmp/bench/fork"))
    ap.add_argument(
        "--scratch",
        type=Path,
        default=None,
        help="where the fork copy and a fake wheel go (default: beside --fork, kept between runs)",
    )
    ap.add_argument("--wheel", type=Path, default=None)
    ap.add_argument("--version", default="0.30.0")
    ap.add_argument("--fake-mb", type=int, default=315)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    require(args.fork)
    scratch = args.scratch or args.fork.parent / "bench-build"
    scratch.mkdir(parents=True, exist_ok=True)
    fork = scratch / "fork"
    if not fork.exists():
        subprocess.run(["cp", "-a", str(args.fork), str(fork)], check=True)
        branches = (fork / ".git/series-fixture.txt").read_text().split()
        (fork / "series.yaml").write_text(series_yaml(branches, f"v{args.version}"))
    wheel, what = release_wheel(args, scratch, fork)
    print(f"wheel {wheel} ({wheel.stat().st_size / 1e6:.0f} MB): {what}")

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "series", "build", "--wheel", str(wheel)]
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        work = Path(tmp)
        # the first build moves the integration branch (and warms the bytecode cache)
        subprocess.run(
            command + ["--out", str(work / "first")], cwd=fork, env=env, check=True, stdout=subprocess.DEVNULL
        )
        shutil.rmtree(work / "first")
        with open(wheel, "rb") as f:  # warm the page cache so both sides read from memory
            while f.read(16 << 20):
                pass
        cp_times, build_times = [], []
        for i in range(args.rounds):
            target = work / f"cp-{i}.whl"
            cp_times.append(timed(["cp", str(wheel), str(target)]))
            os.unlink(target)
            out = work / f"build-{i}"
            build_times.append(timed(command + ["--out", str(out)], cwd=fork, env=env))
            shutil.rmtree(out)
        for label, pick in (("median", statistics.median), ("best", min)):
            cp_t, build_t = pick(cp_times), pick(build_times)
            print(f"-- {label} of {args.rounds}, interleaved; load average {os.getloadavg()[0]:.2f}")
            print(f"cp + sync                         {cp_t:7.3f} s")
            print(
                f"series build --wheel + sync       {build_t:7.3f} s   ratio {build_t / cp_t:.2f}x cp   "
                "(the whole command; target <= 1.6x)"
            )
        if args.profile:
            stats = work / "build.prof"
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "cProfile",
                    "-o",
                    str(stats),
                    "-m",
                    "series",
                    "build",
                    "--wheel",
                    str(wheel),
                    "--out",
                    str(work / "profiled"),
                ],
                cwd=fork,
                env=env,
                check=True,
                stdout=subprocess.DEVNULL,
            )
            import pstats

            pstats.Stats(str(stats)).sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
