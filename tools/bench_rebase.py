#!/usr/bin/env python3
"""Benchmark `series rebase` against the plain `git rebase` loop, in the same run.

    .venv/bin/python tools/bench_rebase.py [--fork /tmp/bench/fork] [--repeat 3] [--no-synthetic]

On a fresh copy (cp -a, written back with sync before the clock starts) of the shared vLLM fork for every timed run (v0.30.0 -> v0.31.0,
23 topics, 63 commits; one topic conflicts, one is already upstream), with series.yaml
listing the fixture's branches in order:
  git loop     /work/shared/bench/anchor_rebase.py cli: `git rebase --onto` per topic
  naive        anchor_rebase.py pygit2: libgit2 merge_trees of whole trees per commit
  series dry   `series rebase --onto v0.31.0 --dry-run`, the whole process (exit 3: conflict)
  series real  `series rebase --onto v0.31.0 --skip-topic offload-evict-fix`, whole process:
               replays, writes the pack, moves 21 branches + integration + series.yaml
  series halt  `series rebase --onto v0.31.0`: stops on the conflict and lays it out in a
               worktree (a full checkout of vLLM: the price of a conflict, not of a rebase)
  replay       series.engine.replay.replay_commits alone, in this process, per commit
Whole processes run with a warm bytecode cache (PYTHONPYCACHEPREFIX, warmed once), as an
installed package would. Medians of --repeat runs; ratios are git loop / x. CPU counts the
process and every child it waits for: series reaps its `git merge-tree` at exit, so git's
merges are in it. Start-up: the CPU of a bare interpreter and of one that only imports what
`series rebase` imports (the share of the dry run that is start-up, not work).

Realistic history (--history, default /tmp/bench/history.git from ../shared/bench/vllm_history.py:
~700 squash-merged PRs per release, PR heads as refs/pull/N/head): the 23-topic fork over
it plus two topics that edit files upstream renamed and deleted, rebased onto v0.31.0 and
onto upstream/main (v0.33.0 and after) by the git loop and by `series rebase --dry-run`
(the renamed-file topic follows the move; the deleted-file one is a modify/delete
conflict), and `series rebase` for real without the conflicting topics. Series' cost must
stay flat (within 1.5x) from v0.31.0 to upstream/main.

Synthetic scaling: pygit2 builds a repository with a ~8,400-file tree and 10 upstream
commits between base and onto, and one 10x larger on both counts (~84,000 files, 100
upstream commits), each with 20 topics of 3 commits; the replay (and the whole dry-run
process) must cost about the same on both.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fixture import require  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# ../shared/bench beside the checkout (a linked worktree elsewhere falls back to /work/shared)
SHARED = next(
    (p for p in (ROOT.parent / "shared" / "bench", Path("/work/shared/bench")) if p.is_dir()),
    ROOT.parent / "shared" / "bench",
)
ANCHOR = SHARED / "anchor_rebase.py"
PY = sys.executable
ENV = dict(os.environ)
ENV.pop("PYTHONDONTWRITEBYTECODE", None)
ENV["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="series-bench-pyc-")
atexit.register(shutil.rmtree, ENV["PYTHONPYCACHEPREFIX"], True)


def series_yaml(branches: list[str], base: str) -> str:
    lines = ["upstream:", "  remote: upstream", f"  base: {base}", "integration: series/integration", "topics:"]
    for b in branches:
        lines += [f"  - name: {b.split('/', 1)[1]}", f"    branch: {b}"]
    return "\n".join(lines) + "\n"


def fresh(src: Path, work: Path) -> Path:
    dest = work / "fork"
    if dest.exists():
        shutil.rmtree(dest)
    subprocess.run(["cp", "-a", str(src), str(dest)], check=True)
    branches = (dest / ".git/series-fixture.txt").read_text().split()
    (dest / "series.yaml").write_text(series_yaml(branches, "v0.30.0"))
    settle()
    return dest


def settle() -> None:
    """Write back the copy just made (and what the run before wrote: the git loop checks
    out thousands of files), so that the disk is not busy with it while the next command
    is timed; every timed command, the anchor's included, starts from the same quiet disk."""
    os.sync()


CPU: list[float] = []  # CPU seconds (user + sys, the process and its children) of each timed run


def timed(cmd: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> float:
    """Wall seconds of one command; its CPU seconds are appended to CPU (on a shared,
    loaded machine the CPU ratio is the steadier one)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return elapsed


def series(*args: str) -> list[str]:
    return [PY, "-m", "series", *args]


# what `python -m series rebase` imports before it does anything (the verb table loads the
# verb's module on demand)
IMPORTS = "import series.cli, series.verbs.rebase"


def replay_alone(repo_path: Path, base: str, onto: str, branches: list[str]) -> tuple[float, int, float, float]:
    """(seconds, commits, persist seconds, fraction of merges answered in memory) for
    replaying every branch in one MemOdb."""
    import pygit2

    from series.engine.odb import MemOdb
    from series.engine.replay import replay_commits
    from series.git.repo import commits_between

    repo = pygit2.Repository(str(repo_path))
    base_c = repo.revparse_single(base).peel(pygit2.Commit)
    onto_c = repo.revparse_single(onto).peel(pygit2.Commit)
    lists = [commits_between(repo, base_c.id, repo.branches[b].peel(pygit2.Commit).id) for b in branches]
    sig = pygit2.Signature("bench", "bench@example.com", 1767225600, 0)
    t0 = time.perf_counter()
    odb = MemOdb(repo)
    fast = slow = 0
    for b, commits in zip(branches, lists):
        result = replay_commits(repo, commits, onto_c, committer=sig, odb=odb, topic=b)
        fast, slow = fast + result.in_memory, slow + result.by_git
    t1 = time.perf_counter()
    odb.persist()
    return t1 - t0, sum(len(c) for c in lists), time.perf_counter() - t1, fast / max(fast + slow, 1)


def median(values: list[float]) -> float:
    return statistics.median(values)


def bench_fork(src: Path, repeat: int) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="series-bench-"))
    try:
        keys = ("git loop", "naive", "series dry", "series real", "series halt", "interpreter", "imports")
        results: dict[str, list[float]] = {k: [] for k in keys}
        cpu: dict[str, list[float]] = {k: [] for k in keys}
        timed(series("rebase", "--onto", "v0.31.0", "--dry-run"), fresh(src, work), ok=(3,))  # warm pyc
        startup = {"interpreter": [PY, "-c", "pass"], "imports": [PY, "-c", IMPORTS]}
        replay: list[float] = []
        persist: list[float] = []
        commits = 0
        for _ in range(repeat):
            results["git loop"].append(timed([PY, str(ANCHOR), str(fresh(src, work)), "cli"], work))
            cpu["git loop"].append(CPU[-1])
            results["naive"].append(timed([PY, str(ANCHOR), str(fresh(src, work)), "pygit2"], work))
            cpu["naive"].append(CPU[-1])
            results["series dry"].append(
                timed(series("rebase", "--onto", "v0.31.0", "--dry-run"), fresh(src, work), ok=(3,))
            )
            cpu["series dry"].append(CPU[-1])
            results["series real"].append(
                timed(series("rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix"), fresh(src, work))
            )
            cpu["series real"].append(CPU[-1])
            results["series halt"].append(timed(series("rebase", "--onto", "v0.31.0"), fresh(src, work), ok=(3,)))
            cpu["series halt"].append(CPU[-1])
            for key, cmd in startup.items():
                results[key].append(timed(cmd, work))
                cpu[key].append(CPU[-1])
            fork = fresh(src, work)
            branches = (fork / ".git/series-fixture.txt").read_text().split()
            seconds, commits, persisted, fast = replay_alone(fork, "v0.30.0", "v0.31.0", branches)
            replay.append(seconds)
            persist.append(persisted)
        out = {k: median(v) for k, v in results.items()}
        out.update({f"cpu {k}": median(v) for k, v in cpu.items()})
        out["fast"] = fast
        out["replay"] = median(replay)
        out["persist"] = median(persist)
        out["commits"] = commits
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- realistic history --------------------------------------------------------------------------


def build_history_fork(history: Path, work: Path) -> tuple[Path, list[str]]:
    """The shared fork over the realistic history, plus topics editing files upstream
    renamed (v0.30.0 -> v0.31.0) and deleted (v0.30.0 -> main)."""
    fork = work / "history-fork"
    subprocess.run([PY, str(SHARED / "fork_fixture.py"), str(history), str(fork)], check=True, capture_output=True)
    branches = (fork / ".git/series-fixture.txt").read_text().split()

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(fork), *args], check=True, capture_output=True, text=True).stdout

    renamed = [
        line.split("\t")[1]
        for line in git("diff", "-M", "--name-status", "v0.30.0", "v0.31.0").splitlines()
        if line.startswith("R") and line.split("\t")[1].endswith(".py")
    ]
    deleted = [
        line.split("\t")[1]
        for line in git("diff", "--name-status", "v0.30.0", "upstream/main").splitlines()
        if line.startswith("D") and line.split("\t")[1].endswith(".py")
    ]
    for name, path in (("edit-renamed", renamed[0]), ("edit-deleted", deleted[0])):
        git("checkout", "-q", "-B", f"topic/{name}", "v0.30.0")
        target = fork / path
        target.write_text(target.read_text() + "\n# fork: kept downstream\n")
        git("commit", "-qam", f"[fork] {name}: {path}")
        branches.append(f"topic/{name}")
    git("checkout", "-q", "--detach", "v0.30.0")
    return fork, branches


def git_loop(fork: Path, branches: list[str], onto: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    for b in branches:
        r = subprocess.run(
            ["git", "-C", str(fork), "rebase", "--onto", onto, "v0.30.0", b], capture_output=True, env=ENV
        )
        if r.returncode:
            subprocess.run(["git", "-C", str(fork), "rebase", "--abort"], capture_output=True)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return elapsed


def bench_history(history: Path, repeat: int) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="series-bench-hist-"))
    try:
        src, branches = build_history_fork(history, work)
        (src / "series.yaml").write_text(series_yaml(branches, "v0.30.0"))
        out: dict[str, list[float]] = {}
        for onto in ("v0.31.0", "upstream/main"):
            # the real run leaves out every topic that conflicts there (else it is a halt,
            # which lays out a worktree: the price of a conflict, measured above)
            dry = subprocess.run(
                series("rebase", "--onto", onto, "--dry-run", "--json"),
                cwd=fresh_copy(src, work),
                env=ENV,
                capture_output=True,
                text=True,
            )
            skip = [
                arg
                for t in json.loads(dry.stdout)["topics"]
                if t["outcome"] == "conflict"
                for arg in ("--skip-topic", t["name"])
            ]
            out.setdefault(f"conflicts {onto}", []).append(len(skip) / 2)
            for _ in range(repeat):
                out.setdefault(f"git {onto}", []).append(git_loop(fresh_copy(src, work), branches, onto))
                out.setdefault(f"cpu git {onto}", []).append(CPU[-1])
                out.setdefault(f"dry {onto}", []).append(
                    timed(series("rebase", "--onto", onto, "--dry-run"), fresh_copy(src, work), ok=(3,))
                )
                out.setdefault(f"cpu dry {onto}", []).append(CPU[-1])
                out.setdefault(f"real {onto}", []).append(
                    timed(series("rebase", "--onto", onto, *skip), fresh_copy(src, work))
                )
                out.setdefault(f"cpu real {onto}", []).append(CPU[-1])
        result = {k: median(v) for k, v in out.items()}
        fork = fresh_copy(src, work)
        for onto in ("v0.31.0", "upstream/main"):
            _, _, _, fast = replay_alone(
                fork, "v0.30.0", onto, [b for b in branches if "deleted" not in b and "evict" not in b]
            )
            result[f"fast {onto}"] = fast
        result["commits"] = float(
            len(
                subprocess.run(
                    ["git", "-C", str(src), "rev-list", "v0.30.0..upstream/main"],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.split()
            )
        )
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def fresh_copy(src: Path, work: Path) -> Path:
    dest = work / "copy"
    if dest.exists():
        shutil.rmtree(dest)
    subprocess.run(["cp", "-a", str(src), str(dest)], check=True)
    settle()
    return dest


# -- synthetic scaling --------------------------------------------------------------------------


def build_synthetic(path: Path, widths: tuple[int, ...], files: int, upstream_commits: int, seed: int = 7) -> list[str]:
    """A repo whose src/ has nested directories of the given widths, `files` files in each
    leaf, tags v1.0.0 and v1.1.0 (`upstream_commits` apart), and 20 topic branches of 3
    commits over v1.0.0."""
    import pygit2

    rng = random.Random(seed)
    repo = pygit2.init_repository(str(path), initial_head="main")
    body = "".join(f"line {i}\n" for i in range(60)).encode()
    shared = repo.create_blob(body)
    blob = pygit2.enums.FileMode.BLOB
    tree_mode = pygit2.enums.FileMode.TREE

    def level(depth: int) -> pygit2.Oid:
        tb = repo.TreeBuilder()
        if depth == len(widths):
            for k in range(files):
                tb.insert(f"f{k:04d}.py", shared, blob)
        else:
            sub = level(depth + 1)  # identical subtrees: built once, shared by id
            for i in range(widths[depth]):
                tb.insert(f"d{depth}_{i:03d}", sub, tree_mode)
        return tb.write()

    root = repo.TreeBuilder()
    root.insert("src", level(0), tree_mode)
    sig = pygit2.Signature("Upstream", "up@example.com", 1767225600, 0)
    base = repo.create_commit("refs/heads/main", sig, sig, "v1.0.0", root.write(), [])
    repo.references.create("refs/tags/v1.0.0", base)

    def path_of() -> str:
        dirs = [f"d{d}_{rng.randrange(w):03d}" for d, w in enumerate(widths)]
        return "/".join(["src", *dirs, f"f{rng.randrange(files):04d}.py"])

    def edit(tree: pygit2.Tree, rel: str, mutate) -> pygit2.Oid:  # type: ignore[no-untyped-def]
        parts = rel.split("/")

        def go(t: pygit2.Tree | None, names: list[str]) -> pygit2.Oid:
            tb = repo.TreeBuilder(t) if t is not None else repo.TreeBuilder()
            if len(names) == 1:
                old = repo[t[names[0]].id].peel(pygit2.Blob).data if t is not None and names[0] in t else body
                tb.insert(names[0], repo.create_blob(mutate(old)), blob)
            else:
                sub = repo[t[names[0]].id].peel(pygit2.Tree) if t is not None and names[0] in t else None
                tb.insert(names[0], go(sub, names[1:]), tree_mode)
            return tb.write()

        return go(tree, parts)

    def insert_at(line_no: int, text: str):  # type: ignore[no-untyped-def]
        def mutate(old: bytes) -> bytes:
            lines = old.split(b"\n")
            lines.insert(line_no, text.encode())
            return b"\n".join(lines)

        return mutate

    topic_paths: list[str] = []
    while len(topic_paths) < 60:  # distinct files: the topics combine cleanly
        candidate = path_of()
        if candidate not in topic_paths:
            topic_paths.append(candidate)
    head = base
    for n in range(upstream_commits):
        tree = repo[head].tree
        for i in range(3):
            # upstream edits the top of files; the same 12 of them (whatever the distance)
            # are files our topics edit lower down, so both runs do the same 3-way merges
            target = topic_paths[(n * 3 + i) * 5] if n * 3 + i < 12 else path_of()
            while n * 3 + i >= 12 and target in topic_paths:
                target = path_of()
            tree = repo[edit(tree, target, insert_at(1, f"# upstream change {n}"))].peel(pygit2.Tree)
        head = repo.create_commit("refs/heads/main", sig, sig, f"upstream {n}", tree.id, [head])
    repo.references.create("refs/tags/v1.1.0", head)
    branches = []
    me = pygit2.Signature("Fork", "fork@example.com", 1767225600, 0)
    for t in range(20):
        tip = base
        for c in range(3):
            tree = repo[tip].tree
            tree_id = edit(tree, topic_paths[t * 3 + c], insert_at(45, f"# fork t{t}.{c}"))
            tip = repo.create_commit(None, me, me, f"topic {t} change {c}", tree_id, [tip])
        name = f"topic/s{t:02d}"
        repo.references.create(f"refs/heads/{name}", tip)
        branches.append(name)
    repo.remotes.create("upstream", "https://example.invalid/upstream.git")
    (path / "series.yaml").write_text(series_yaml(branches, "v1.0.0"))
    return branches


def bench_synthetic(repeat: int) -> dict[str, dict[str, float]]:
    work = Path(tempfile.mkdtemp(prefix="series-bench-syn-"))
    out: dict[str, dict[str, float]] = {}
    shapes: dict[str, str] = {}
    try:
        for label, widths, files, distance in (
            ("1x", (20, 20), 21, 10),
            ("10x wide", (63, 63), 21, 100),
            ("10x deep", (20, 20, 10), 21, 100),
        ):
            path = work / label.replace(" ", "-")
            t0 = time.perf_counter()
            branches = build_synthetic(path, widths, files, distance)
            built = time.perf_counter() - t0
            replay, process = [], []
            timed(series("rebase", "--onto", "v1.1.0", "--dry-run"), path)
            for _ in range(repeat):
                seconds, commits, _, _ = replay_alone(path, "v1.0.0", "v1.1.0", branches)
                replay.append(seconds / commits)
                process.append(timed(series("rebase", "--onto", "v1.1.0", "--dry-run"), path))
            count = files
            for w in widths:
                count *= w
            out[label] = {
                "files": count,
                "distance": distance,
                "build": built,
                "replay_per_commit": median(replay),
                "process": median(process),
            }
            shapes[label] = "x".join(map(str, widths))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for label, shape in shapes.items():
        out[label]["shape"] = shape  # type: ignore[assignment]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fork", type=Path, default=Path("/tmp/bench/fork"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-synthetic", action="store_true")
    ap.add_argument("--history", type=Path, default=Path("/tmp/bench/history.git"))
    ap.add_argument("--no-history", action="store_true")
    a = ap.parse_args()
    require(a.fork)
    r = bench_fork(a.fork, a.repeat)
    git_loop = r["git loop"]
    print(f"vLLM v0.30.0 -> v0.31.0, 23 topics, {int(r['commits'])} commits (median of {a.repeat}, fresh copy each)")
    print(
        f"  (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; CPU = user + sys of the "
        "process and its children)"
    )
    for key in ("git loop", "naive", "series dry", "series real", "series halt"):
        print(
            f"  {key:<12} {r[key] * 1000:8.1f} ms   git loop / x = {git_loop / r[key]:6.1f}   "
            f"CPU {r['cpu ' + key] * 1000:7.1f} ms, ratio {r['cpu git loop'] / r['cpu ' + key]:6.1f}"
        )
    per = r["replay"] / r["commits"] * 1000
    print(
        f"  {'replay':<12} {r['replay'] * 1000:8.1f} ms   git loop / x = {git_loop / r['replay']:6.1f}"
        f"   ({per:.3f} ms per commit; writing the pack after: {r['persist'] * 1000:.1f} ms)"
    )
    imports = r["cpu imports"] - r["cpu interpreter"]
    print(
        f"  start-up CPU: interpreter {r['cpu interpreter'] * 1000:.0f} ms + what `series rebase` imports "
        f"{imports * 1000:.0f} ms = {r['cpu imports'] * 1000:.0f} ms: {r['cpu imports'] / r['cpu series dry']:.0%} "
        f"of the dry run, {r['cpu imports'] / r['cpu series real']:.0%} of the real run"
    )
    print(
        f"  merges answered in memory (provably merge-ort's answer): {r['fast']:.0%}; the rest by "
        "git merge-tree (correctness: tools/differential.py)"
    )
    print(
        f"  targets: whole process <= 1/20 of the git loop ({git_loop / 20 * 1000:.0f} ms), "
        f"replay <= 1/100 ({git_loop / 100 * 1000:.0f} ms)"
    )
    if not a.no_history:
        if not a.history.exists():
            sys.exit(
                f"{a.history}: build it with 'python ../shared/bench/vllm_history.py UPSTREAM4 {a.history}' "
                "(UPSTREAM4 from vllm_upstream.py with 0.30.0..0.33.0), or pass --no-history"
            )
        h = bench_history(a.history, a.repeat)
        print(
            f"realistic history: 25 topics (23 + edits to a file upstream renamed and one it deleted), "
            f"{int(h['commits'])} upstream commits v0.30.0..upstream/main"
        )
        for onto in ("v0.31.0", "upstream/main"):
            g = h[f"git {onto}"]
            c = h[f"cpu git {onto}"]
            print(
                f"  onto {onto:<14} git loop {g * 1000:8.0f} ms   series dry {h[f'dry {onto}'] * 1000:6.0f} ms "
                f"(1/{g / h[f'dry {onto}']:.1f}; CPU 1/{c / h[f'cpu dry {onto}']:.1f})   series real "
                f"{h[f'real {onto}'] * 1000:6.0f} ms (1/{g / h[f'real {onto}']:.1f}; CPU "
                f"1/{c / h[f'cpu real {onto}']:.1f})   in memory {h[f'fast {onto}']:.0%}, "
                f"{int(h[f'conflicts {onto}'])} topics conflict (left out of the real run)"
            )
        print(
            f"  growth v0.31.0 -> upstream/main: series dry {h['dry upstream/main'] / h['dry v0.31.0']:.2f}x, "
            f"real {h['real upstream/main'] / h['real v0.31.0']:.2f}x; CPU: dry "
            f"{h['cpu dry upstream/main'] / h['cpu dry v0.31.0']:.2f}x, real "
            f"{h['cpu real upstream/main'] / h['cpu real v0.31.0']:.2f}x (flat: within 1.5x); "
            f"git loop {h['git upstream/main'] / h['git v0.31.0']:.2f}x"
        )
    if a.no_synthetic:
        return
    s = bench_synthetic(a.repeat)
    print("synthetic scaling (20 topics x 3 commits; 12 of their files also edited upstream):")
    for label, v in s.items():
        print(
            f"  {label:<8} {int(v['files']):>6} files (dirs {v['shape']}, 21 files each), "
            f"{int(v['distance']):>3} upstream commits: "
            f"replay {v['replay_per_commit'] * 1000:.3f} ms/commit, dry-run process {v['process'] * 1000:.0f} ms"
            f"  (built in {v['build']:.1f} s)"
        )
    small = s["1x"]
    for label in ("10x wide", "10x deep"):
        large = s[label]
        print(
            f"  {label} / 1x: replay {large['replay_per_commit'] / small['replay_per_commit']:.2f}, "
            f"process {large['process'] / small['process']:.2f}  (flat = about 1)"
        )
    print(
        "  (a replayed commit rewrites the tree objects on its paths: its cost follows their width"
        " and depth, not the file count)"
    )


if __name__ == "__main__":
    main()
