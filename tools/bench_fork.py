#!/usr/bin/env python3
"""`series rebase --dry-run` against the `git rebase` loop on a real fork's windows, with the
semantic check's cache empty (cold: a CI runner's first night, a new clone, a new upstream
release) and warm, all in the same run (issue 34).

    .venv/bin/python tools/bench_fork.py [--mirror /work/.mirror/HabanaAI+vllm-fork/repo]
                                         [--topics 30] [--stacks 4] [--depth 5] [--repeat 3]
                                         [--work DIR] [--compare REV]

The fork is HabanaAI/vllm-fork (a mirror, read only: it is cloned), shaped as a real fork is:
stacked topics. Two windows, each an upstream release tag and a later upstream commit on
`main` (v0.5.4 -> 300 commits ahead, v0.6.2 -> 480 ahead). Per window:
  hpu-backend   Habana's work at habana_main's first parent at the tag date, over the tag
                (its changes since its merge-base with the tag, a path kept only where the
                merge onto the tag and then onto the window's commit is clean)
  sK-H-<pr>     --stacks stacks of up to --depth of Habana's later PRs (first parents of
                habana_main, within 90 days), each PR merged onto the topic before it in
                its stack (depends_on), the first onto hpu-backend
  pr-NN-<pr>    single PRs (from a month before the tag, Python, at most 40 files, none
                already in a stack) straight onto the tag, up to --topics in all
A PR is kept where its three-way merge (PR^1, the stack's tip, PR) is clean, changes
something, and the stack it tops still rebases cleanly onto the window's commit, so that
the git loop and series do the same work on every topic. The git loop replays each
branch's whole stack (`git rebase --onto ONTO TAG branch`), as a fork rebasing its
branches one by one does. Built once per --work (its series.yaml says it is there).

Each timed run starts from a fresh copy of the fork (cp -a, synced). Timed, in turn:
  git loop    `git rebase --onto ONTO TAG topic/x` for every topic (what a fork did by hand)
  dry cold    `series rebase --onto ONTO --dry-run`, SERIES_BREAKS_CACHE an empty folder
  dry warm    the same, with the cache the cold run left
  no check    the same with the check stubbed out (its cost = cold - this)
--compare REV: the dry runs (cold and warm) of REV's code too, in the same runs (before/after).
Whole processes; medians of --repeat; ratios are git loop / series, wall and CPU (CPU counts
every child process: the steadier figure on a shared machine). The load (uptime) is printed.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIRROR = Path("/work/.mirror/HabanaAI+vllm-fork/repo")
WINDOWS = (("v0.5.4", 300), ("v0.6.2", 480))  # (tag, upstream commits ahead on main's first parents)
PY = sys.executable
ENV = dict(
    os.environ,
    PYTHONPATH=str(ROOT),
    GIT_AUTHOR_NAME="Fork Maintainer",
    GIT_AUTHOR_EMAIL="fm@example.com",
    GIT_COMMITTER_NAME="Fork Maintainer",
    GIT_COMMITTER_EMAIL="fm@example.com",
)
ENV.pop("PYTHONDONTWRITEBYTECODE", None)
ENV["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="bench-fork-pyc-")
STUB = "import series.semantic.breaks as b; b.TopicBreaks.topic = lambda self, t: []; "


def git(repo: Path, *args: str, ok: tuple[int, ...] = (0,)) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=ENV)
    if proc.returncode not in ok:
        raise SystemExit(f"git {' '.join(args)}: {proc.stderr}")
    return proc.stdout


def onto_of(repo: Path, tag: str, ahead: int) -> str:
    """The commit of main's first-parent line `ahead` upstream commits after `tag`."""
    line = git(repo, "rev-list", "--first-parent", "--reverse", "upstream/main", f"^{tag}").split()
    low, high = 0, len(line) - 1  # the count grows along the line: the first one reaching `ahead`
    while low < high:
        mid = (low + high) // 2
        if int(git(repo, "rev-list", "--count", f"{tag}..{line[mid]}")) >= ahead:
            high = mid
        else:
            low = mid + 1
    return line[low]


def _clean_tree(repo: Path, base: str, ours: str, theirs: str) -> str | None:
    """The tree of a clean three-way merge (libgit2: the git loop decides on the real run)."""
    import pygit2

    r = pygit2.Repository(str(repo))
    index = r.merge_trees(*(r.revparse_single(x).peel(pygit2.Tree) for x in (base, ours, theirs)))
    return None if index.conflicts is not None else str(index.write_tree(r))


class Cutter:
    """Builds the topics' commits in the fork's object store (pygit2: thousands of tries)."""

    def __init__(self, repo: Path, tag: str, onto: str) -> None:
        import pygit2

        self.pygit2 = pygit2
        self.repo = pygit2.Repository(str(repo))
        self.tag = self.repo.revparse_single(tag).peel(pygit2.Commit)
        self.onto = self.repo.revparse_single(onto).peel(pygit2.Commit)
        self.sig = pygit2.Signature("Fork Maintainer", "fm@example.com", int(self.tag.commit_time) + 86400, 0)
        self.trees: set[str] = {str(self.tag.tree_id)}  # no two topics (or a topic and the tag) alike

    def tree(self, rev: str) -> object:
        return self.repo.revparse_single(rev).peel(self.pygit2.Tree)

    def pick(self, pr: str, tip: object) -> object | None:
        """PR's change (PR^1 -> PR) merged onto `tip`, a commit; None unless the merge is clean, changes
        something new, and the stack it tops rebases cleanly onto the window's upstream commit."""
        index = self.repo.merge_trees(self.tree(f"{pr}^1"), tip.tree, self.tree(pr))  # type: ignore[attr-defined]
        if index.conflicts is not None:
            return None
        tree = index.write_tree(self.repo)
        if str(tree) in self.trees or tree == tip.tree_id:  # type: ignore[attr-defined]
            return None
        if self.repo.merge_trees(self.tag.tree, self.onto.tree, self.repo[tree]).conflicts is not None:
            return None  # conflicts in the window: a halt, not a rebase
        subject = self.repo.revparse_single(pr).message.splitlines()[0]
        oid = self.repo.create_commit(None, self.sig, self.sig, f"{subject}\n\n(habana_main {pr})\n", tree, [tip.id])  # type: ignore[attr-defined]
        self.trees.add(str(tree))
        return self.repo[oid]

    def backend(self, head: str) -> object:
        """Habana's work at `head` (habana_main's first parent at the tag) over the tag: its changes since
        the merge-base with the tag, each path kept only where the merge onto the tag and then onto the
        window's upstream commit is clean (what make_fork.sh did by hand: the HPU backend topic)."""
        base = self.repo.merge_base(self.repo.revparse_single(head).id, self.tag.id)
        theirs = self.tree(head)
        dropped: set[str] = set()
        while True:
            index = self.repo.merge_trees(self.repo[base].tree, self.tag.tree, theirs)
            conflicted = {e.path for c in index.conflicts or () for e in c if e is not None}
            dropped |= conflicted
            for path in conflicted:
                del index.conflicts[path]
            for path in dropped:  # the tag's version (or none) where the merge conflicts
                if path in index:
                    index.remove(path)
                if path in self.tag.tree:
                    entry = self.tag.tree[path]
                    index.add(self.pygit2.IndexEntry(path, entry.id, entry.filemode))
            tree = index.write_tree(self.repo)
            later = self.repo.merge_trees(self.tag.tree, self.onto.tree, self.repo[tree])
            if later.conflicts is None:
                break
            dropped.update(e.path for c in later.conflicts for e in c if e is not None)
            theirs = self.repo[tree]
        oid = self.repo.create_commit(
            None, self.sig, self.sig, f"HPU backend (habana_main {head[:9]})\n", tree, [self.tag.id]
        )
        self.trees.add(str(tree))
        return self.repo[oid]


def topics(repo: Path, tag: str, onto: str, wanted: int, stacks: int, depth: int) -> list[tuple[str, str, str]]:
    """(branch name, commit, the topic it depends on or "") for the stacked fork: Habana's backend over
    the tag, `stacks` stacks of up to `depth` of Habana's later PRs over it (each PR on the one before),
    then single PRs straight on the tag up to `wanted` (the module docstring)."""
    cut = Cutter(repo, tag, onto)
    when = int(git(repo, "log", "-1", "--format=%ct", tag))
    head = git(repo, "rev-list", "-1", "--first-parent", f"--before=@{when}", "upstream/habana_main").strip()
    backend = cut.backend(head)
    out = [("topic/hpu-backend", str(backend.id), "")]  # type: ignore[attr-defined]
    later = git(
        repo,
        "rev-list",
        "--first-parent",
        "--reverse",
        f"--until=@{when + 90 * 86400}",
        f"{head}..upstream/habana_main",
    ).split()
    tips: list[tuple[object, str, int]] = [(backend, "hpu-backend", 0)] * stacks
    for pr in later:
        if len(out) - 1 >= stacks * depth:
            break
        for k in sorted(range(stacks), key=lambda k: tips[k][2]):  # the shortest stack first
            tip, under, height = tips[k]
            if height >= depth or (commit := cut.pick(pr, tip)) is None:
                continue
            name = f"s{k}-{height}-{pr[:9]}"
            out.append((f"topic/{name}", str(commit.id), under))  # type: ignore[attr-defined]
            tips[k] = (commit, name, height + 1)
            break
    # single PRs, from a month before the tag: PRs Habana merged while upstream prepared it apply too
    for pr in git(
        repo, "rev-list", "--first-parent", "--reverse", f"--since=@{when - 30 * 86400}", "upstream/habana_main"
    ).split():
        if len(out) >= wanted:
            break
        if any(name.endswith(pr[:9]) for name, _, _ in out):
            continue  # in a stack already: the same change twice would not combine
        changed = git(repo, "diff", "--name-only", f"{pr}^1", pr).split()
        if not changed or len(changed) > 40 or not any(p.endswith(".py") for p in changed):
            continue
        if (commit := cut.pick(pr, cut.tag)) is not None:
            out.append((f"topic/pr-{len(out):02d}-{pr[:9]}", str(commit.id), ""))  # type: ignore[attr-defined]
    return out


def build(
    mirror: Path, work: Path, tag: str, ahead: int, wanted: int, stacks: int, depth: int
) -> tuple[Path, str, list[str]]:
    src = work / f"fork-{tag}-{wanted}-{stacks}x{depth}"
    if not src.exists():
        subprocess.run(
            ["git", "clone", "-q", "-o", "upstream", "--no-checkout", str(mirror), str(src)], check=True, env=ENV
        )
    onto = onto_of(src, tag, ahead)
    if not (src / "series.yaml").exists():  # built once per --work
        picked = topics(src, tag, onto, wanted, stacks, depth)
        for name, commit, _ in picked:
            git(src, "branch", "-f", name, commit)
        git(src, "checkout", "-q", "--detach", tag)
        lines = ["upstream:", "  remote: upstream", f"  base: {tag}", "integration: series/integration", "topics:"]
        for name, _, under in picked:
            lines += [f"  - name: {name.split('/', 1)[1]}", f"    branch: {name}"]
            lines += [f"    depends_on: [{under}]"] if under else []
        (src / "series.yaml").write_text("\n".join(lines) + "\n")
    branches = [
        line.split(": ", 1)[1]
        for line in (src / "series.yaml").read_text().splitlines()
        if line.startswith("    branch: ")
    ]
    return src, onto, branches


def fresh(src: Path, work: Path) -> Path:
    dest = work / "run"
    if dest.exists():
        shutil.rmtree(dest)
    subprocess.run(["cp", "-a", str(src), str(dest)], check=True)
    os.sync()
    return dest


def timed(cmd: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """(wall, CPU) seconds of one command and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def git_loop(fork: Path, tag: str, onto: str, branches: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    for branch in branches:
        if subprocess.run(
            ["git", "-C", str(fork), "rebase", "-q", "--onto", onto, tag, branch], capture_output=True, env=ENV
        ).returncode:
            subprocess.run(["git", "-C", str(fork), "rebase", "--abort"], capture_output=True, env=ENV)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def dry(fork: Path, onto: str, cache: Path, stub: bool = False, code_dir: Path = ROOT) -> tuple[float, float]:
    code = (STUB if stub else "") + "from series.cli import main; main()"
    return timed(
        [PY, "-c", code, "rebase", "--onto", onto, "--dry-run"],
        fork,
        {**ENV, "SERIES_BREAKS_CACHE": str(cache), "PYTHONPATH": str(code_dir)},
        ok=(0, 3, 6),
    )


def bench(
    src: Path, work: Path, tag: str, onto: str, branches: list[str], repeat: int, old: Path | None
) -> dict[str, tuple[float, float]]:
    cache = work / "breaks-cache"
    runs: dict[str, list[tuple[float, float]]] = {}
    for label, code_dir in (("", ROOT),) + ((("old ", old),) if old is not None else ()):
        dry(fresh(src, work), onto, work / "warm-bytecode", code_dir=code_dir)  # bytecode warm, as installed
    for _ in range(repeat):
        runs.setdefault("git loop", []).append(git_loop(fresh(src, work), tag, onto, branches))
        for label, code_dir in (("", ROOT),) + ((("old ", old),) if old is not None else ()):
            shutil.rmtree(cache, ignore_errors=True)
            runs.setdefault(f"{label}dry cold", []).append(dry(fresh(src, work), onto, cache, code_dir=code_dir))
            runs.setdefault(f"{label}dry warm", []).append(dry(fresh(src, work), onto, cache, code_dir=code_dir))
        runs.setdefault("no check", []).append(dry(fresh(src, work), onto, cache, stub=True))
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mirror", type=Path, default=MIRROR)
    parser.add_argument("--topics", type=int, default=30)
    parser.add_argument("--stacks", type=int, default=4, help="stacks of dependent topics over the backend")
    parser.add_argument("--depth", type=int, default=5, help="topics per stack at most")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None, help="keep the forks here (built once)")
    parser.add_argument("--compare", default=None, help="a revision whose dry runs are timed too")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-fork-"))
    work.mkdir(parents=True, exist_ok=True)
    old = None
    if args.compare:
        old = Path(tempfile.mkdtemp(prefix="bench-fork-old-"))
        archive = subprocess.run(["git", "archive", args.compare, "series"], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
    for tag, ahead in WINDOWS:
        src, onto, branches = build(args.mirror, work, tag, ahead, args.topics, args.stacks, args.depth)
        commits = int(git(src, "rev-list", "--count", f"{tag}..{onto}"))
        load = os.getloadavg()
        res = bench(src, work, tag, onto, branches, args.repeat, old)
        git_wall, git_cpu = res["git loop"]
        print(
            f"{tag} -> {onto[:12]} ({commits} upstream commits), {len(branches)} topics; median of "
            f"{args.repeat}; load {load[0]:.1f} {load[1]:.1f} at start, {os.getloadavg()[0]:.1f} at end"
        )
        for key in ("git loop", "old dry cold", "old dry warm", "dry cold", "dry warm", "no check"):
            if key not in res:
                continue
            wall, cpu = res[key]
            ratio = (
                ""
                if key == "git loop"
                else f"   git loop / this: {git_wall / wall:5.1f}x wall, {git_cpu / cpu:5.1f}x CPU"
            )
            print(f"  {key:<9} wall {wall:6.3f} s  CPU {cpu:6.3f} s{ratio}")
        none = res["no check"]
        for label in ("old ", ""):
            if f"{label}dry cold" in res:
                cold = res[f"{label}dry cold"]
                print(
                    f"  {label}check cold: {cold[0] - none[0]:+.3f} s wall ({(cold[0] - none[0]) / cold[0]:.0%} of "
                    f"the cold dry run), {cold[1] - none[1]:+.3f} s CPU ({(cold[1] - none[1]) / cold[1]:.0%})"
                )
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


if __name__ == "__main__":
    main()
