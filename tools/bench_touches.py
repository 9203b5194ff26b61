#!/usr/bin/env python3
"""Benchmark `series touches` and `series status` against a loop of `git diff` per topic,
on the shared 23-topic fork over real vLLM and on a synthetic fork whose upstream tree is
10x larger with the same topics.

    .venv/bin/python tools/bench_touches.py [--fork /tmp/bench/fork] [--repeat 7] [--keep DIR]

Each command runs as a whole process (what a user waits for), interleaved, and the
median of --repeat runs is reported. The anchor runs in the same loop:
`for b in <topics>; do git diff --numstat BASE $b; done` in one bash process.

The 10x fork: the real v0.30.0 tree plus copy1/ .. copy9/, each a full copy of it whose
every directory holds a marker file, so all its tree objects are distinct (blobs are
shared to keep the repository small). The topics' commits are replayed onto it unchanged.
The claim under test: cost grows with the topics' diffs, not with the tree, so
series(10x)/series(real) should stay near 1 while a full-tree walk (`git ls-tree -r`,
printed for reference) grows about 10x.
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
from collections import defaultdict
from pathlib import Path
from typing import cast

import pygit2

from series.git.repo import changed_paths, commits_between

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fixture import require  # noqa: E402

TREE = pygit2.enums.FileMode.TREE
BLOB = pygit2.enums.FileMode.BLOB
BASE = "v0.30.0"
COPIES = 9
# what every one of the timed commands imports before doing any work
IMPORTS = (
    "import series.cli, series.verbs.touches, series.verbs.status, "
    "series.seriesfile.config, series.workspace, pygit2, ruamel.yaml"
)


def run(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)} in {cwd}: exit {proc.returncode}\n{proc.stderr}")
    return proc.stdout


def series(cwd: Path, *args: str) -> str:
    return run(cwd, sys.executable, "-m", "series", *args)


# --- the synthetic 10x fork ------------------------------------------------------------------


def distinct_copy(
    repo: pygit2.Repository, tree: pygit2.Tree, n: int, memo: dict[pygit2.Oid, pygit2.Oid], marker: pygit2.Oid
) -> pygit2.Oid:
    """`tree` with a marker blob in every directory: same files, all-new tree objects."""
    if tree.id in memo:
        return memo[tree.id]
    builder = repo.TreeBuilder()
    for entry in tree:
        name = cast(str, entry.name)
        if entry.filemode == TREE:
            builder.insert(name, distinct_copy(repo, cast(pygit2.Tree, repo[entry.id]), n, memo, marker), TREE)
        else:
            builder.insert(name, entry.id, entry.filemode)
    builder.insert(f".copy{n}", marker, BLOB)
    memo[tree.id] = builder.write()
    return memo[tree.id]


def tree_with(
    repo: pygit2.Repository, tree_id: pygit2.Oid | None, changes: dict[str, tuple[pygit2.Oid | None, int | None]]
) -> pygit2.Oid:
    """tree_id with blobs set (or removed, oid None) at the given paths."""
    builder = repo.TreeBuilder(tree_id) if tree_id is not None else repo.TreeBuilder()
    below: dict[str, dict[str, tuple[pygit2.Oid | None, int | None]]] = defaultdict(dict)
    for path, (oid, mode) in changes.items():
        head, sep, rest = path.partition("/")
        if sep:
            below[head][rest] = (oid, mode)
        elif oid is None:
            if builder.get(head) is not None:
                builder.remove(head)
        else:
            builder.insert(head, oid, cast(int, mode))
    for name, sub in below.items():
        entry = builder.get(name)
        new = tree_with(repo, entry.id if entry is not None and entry.filemode == TREE else None, sub)
        if len(cast(pygit2.Tree, repo[new])) == 0:
            if entry is not None:
                builder.remove(name)
        else:
            builder.insert(name, new, TREE)
    return builder.write()


def build_big(real: Path, big: Path, branches: list[str]) -> None:
    subprocess.run(["git", "init", "-q", str(big)], check=True)
    (big / ".git/objects/info/alternates").write_text(str(real / ".git/objects") + "\n")
    src = pygit2.Repository(str(real))
    repo = pygit2.Repository(str(big))
    base = src.revparse_single(BASE).peel(pygit2.Commit)
    base_tree = cast(pygit2.Tree, repo[base.tree_id])  # through the alternates: this repository's objects
    root = repo.TreeBuilder(base_tree)
    for n in range(1, COPIES + 1):
        marker = repo.create_blob(f"synthetic copy {n} of {BASE}\n".encode())
        root.insert(f"copy{n}", distinct_copy(repo, base_tree, n, {}, marker), TREE)
    big_base = repo.create_commit(None, base.author, base.committer, f"{BASE} x10 (synthetic)", root.write(), [])
    repo.references.create(f"refs/tags/{BASE}", big_base)
    repo.references.create("refs/remotes/upstream/main", big_base)
    repo.remotes.create("upstream", str(real))
    for branch in branches:
        head = src.references[f"refs/heads/{branch}"].peel(pygit2.Commit)
        parent_id, tree_id = big_base, repo[big_base].peel(pygit2.Commit).tree.id
        for commit in commits_between(src, base.id, head.id):
            changes = {c.path: (c.new_id, c.new_mode) for c in changed_paths(src, commit.parents[0].tree, commit.tree)}
            tree_id = tree_with(repo, tree_id, changes)
            parent_id = repo.create_commit(None, commit.author, commit.committer, commit.message, tree_id, [parent_id])
        repo.references.create(f"refs/heads/{branch}", parent_id)
    # pack the new objects, as a real clone's are (-l: leave the alternates' objects alone)
    subprocess.run(["git", "-C", str(big), "repack", "-adlq"], check=True)
    shutil.copy(real / ".git/series-fixture.txt", big / ".git/series-fixture.txt")
    shutil.copy(real / "series.yaml", big / "series.yaml")


# --- timing ----------------------------------------------------------------------------------


def commands(repo: Path, branches: list[str]) -> dict[str, list[str]]:
    loop = " ".join(f"'{b}'" for b in branches)
    py = [sys.executable, "-m", "series"]
    return {
        "series touches vllm/v1/kv_offload": py + ["touches", "vllm/v1/kv_offload"],
        "series touches (matrix)": py + ["touches"],
        "series status": py + ["status"],
        "series --version (startup floor)": py + ["--version"],
        "imports floor (python -c import ...)": [sys.executable, "-c", IMPORTS],
        "anchor: git diff --numstat loop": [
            "bash",
            "-c",
            f"for b in {loop}; do git diff --numstat {BASE} \"$b\"; done",
        ],
        "git diff --name-only loop": ["bash", "-c", f"for b in {loop}; do git diff --name-only {BASE} \"$b\"; done"],
        "reference: git ls-tree -r (whole tree)": ["git", "ls-tree", "-r", BASE],
    }


def timed(cwd: Path, argv: list[str]) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv}: exit {proc.returncode}: {proc.stderr.decode()}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fork", type=Path, default=Path("/tmp/bench/fork"))
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--keep", type=Path, help="Build in DIR and keep it (default: a temp dir, removed).")
    args = ap.parse_args()
    require(args.fork)
    work = args.keep or Path(tempfile.mkdtemp(prefix="series-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        real, big = work / "real", work / "big"
        for path in (real, big):
            if path.exists():
                shutil.rmtree(path)
        t0 = time.perf_counter()
        subprocess.run(["cp", "-a", str(args.fork), str(real)], check=True)
        branches = (real / ".git/series-fixture.txt").read_text().split()
        series(real, "init", "--base", BASE, "--topics", "topic/*")
        t1 = time.perf_counter()
        build_big(real, big, branches)
        t2 = time.perf_counter()
        files = {
            name: len(run(path, "git", "ls-tree", "-r", "--name-only", BASE).splitlines())
            for name, path in (("real", real), ("10x", big))
        }
        trees = {
            name: len(run(path, "git", "ls-tree", "-r", "-d", "--name-only", BASE).splitlines())
            for name, path in (("real", real), ("10x", big))
        }
        print(f"setup: copy + series init {t1 - t0:.1f} s, synthetic 10x fork {t2 - t1:.1f} s")
        print(
            f"trees at {BASE}: real {files['real']:,} files / {trees['real']:,} dirs, "
            f"10x {files['10x']:,} files / {trees['10x']:,} dirs; {len(branches)} topics"
        )
        # same topics, same answers: the synthetic fork must not change what touches says
        for argv in (["touches", "vllm/v1/kv_offload"], ["touches"]):
            a, b = series(real, *argv), series(big, *argv)
            if a != b:
                raise SystemExit(f"series {' '.join(argv)} differs between real and 10x:\n{a}\n---\n{b}")
        cmds = {name: commands(path, branches) for name, path in (("real", real), ("10x", big))}
        samples: dict[tuple[str, str], list[float]] = defaultdict(list)
        for _ in range(args.repeat):
            for label in cmds["real"]:
                for name, path in (("real", real), ("10x", big)):
                    samples[(name, label)].append(timed(path, cmds[name][label]))
        med = {key: statistics.median(v) for key, v in samples.items()}
        anchor = "anchor: git diff --numstat loop"
        width = max(len(label) for label in cmds["real"])
        print(
            f"\nmedian of {args.repeat} runs, whole processes, seconds "
            f"(python {sys.version.split()[0]}, pygit2 {pygit2.__version__}, {os.cpu_count()} cpus)"
        )
        print(
            f"  {'command':<{width}}  {'real':>7}  {'10x':>7}  {'10x/real':>8}  "
            f"{'/anchor real':>12}  {'/anchor 10x':>11}"
        )
        for label in cmds["real"]:
            r, x = med[("real", label)], med[("10x", label)]
            print(
                f"  {label:<{width}}  {r:7.3f}  {x:7.3f}  {x / r:8.2f}  "
                f"{r / med[('real', anchor)]:12.2f}  {x / med[('10x', anchor)]:11.2f}"
            )
        floor = "imports floor (python -c import ...)"
        floor_r, floor_x = med[("real", floor)], med[("10x", floor)]
        print("\nwork beyond startup and imports (command - imports floor):")
        for label in list(cmds["real"])[:3]:
            r, x = med[("real", label)] - floor_r, med[("10x", label)] - floor_x
            print(f"  {label:<{width}}  real {r:6.3f}  10x {x:6.3f}  10x/real {x / r:5.2f}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
