#!/usr/bin/env python3
"""Follow-ups and reverts of adopted PRs, found in the realistic history (issue 36).

    .venv/bin/python tools/bench_followups.py [--releases /tmp/bench/upstream4] [--work /tmp/series-followups]
                                              [--follow-ups 3] [--repeat 5]

Setup (in --work): ../shared/bench/vllm_history.py RELEASES history.git --follow-ups N plants,
after the last release on main, "[Bugfix] Fix for #A ... (#B)" commits and true reverts
'Revert "... (#C)" (#D)' of PRs merged in the last window (its last line names them). The
fork clones it (remote upstream), fetches the PR heads as a GitHub user would, and adopts
every planted PR as a topic over the release before the last (its PR commits
cherry-picked there, upstream_pr and upstream_head recorded), as a fork carrying them
before they merged would.

Checks (exit 1 when one fails): series.upstream.followups finds every planted fix (kind
fix, its own PR #B) and revert (kind revert, #D), none carried, one revert warning per
reverted PR; `series status` (the whole process) prints the warnings and `--json` lists
them. Prints the commits walked and the walk's time, find()'s time, the whole `series
status` and, for scale, a walk of trunk's whole history.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pygit2

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent.parent / "shared" / "bench"
if not SHARED.is_dir():
    SHARED = Path("/work/shared/bench")
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
sys.path.insert(0, str(ROOT))


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def build(releases: Path, work: Path, n: int) -> tuple[Path, list[tuple[str, int, int]]]:
    history = work / "history.git"
    if history.exists():
        subprocess.run(["rm", "-rf", str(history)], check=True)
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    out = subprocess.run(
        [
            sys.executable,
            str(SHARED / "vllm_history.py"),
            str(releases),
            str(history),
            "--follow-ups",
            str(n),
            "--now",
            "2026-05-01T00:00:00Z",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    print(f"history built in {time.perf_counter() - t0:.1f} s: {out.strip().splitlines()[-1]}")
    planted = [
        (kind, int(pr), int(by))
        for kind, pr, by in re.findall(r"(fix|revert) of #(\d+) as #(\d+)", out.strip().splitlines()[-1])
    ]
    return history, planted


def make_fork(history: Path, work: Path, planted: list[tuple[str, int, int]]) -> Path:
    fork = work / "fork"
    subprocess.run(["rm", "-rf", str(fork)], check=True)
    subprocess.run(["git", "clone", "-q", "-o", "upstream", str(history), str(fork)], check=True)
    git(fork, "fetch", "-q", "upstream", "+refs/pull/*/head:refs/remotes/upstream/pr/*")
    tags = git(fork, "tag", "--list", "v*", "--sort=v:refname").split()
    base = tags[-2]
    topics = [f"upstream:\n  remote: upstream\n  base: {base}\n  github: vllm-project/vllm\ntopics:\n"]
    for _kind, pr, _by in planted:
        head = git(fork, "rev-parse", f"upstream/pr/{pr}").strip()
        fork_point = git(fork, "merge-base", "upstream/main", head).strip()
        git(fork, "checkout", "-q", "-B", f"topic/pr-{pr}", base)
        git(fork, "cherry-pick", f"{fork_point}..{head}")
        topics.append(
            f"  - name: pr-{pr}\n    branch: topic/pr-{pr}\n    upstream_pr: {pr}\n    upstream_head: {head}\n"
        )
    git(fork, "checkout", "-q", "--detach", base)
    (fork / "series.yaml").write_text("".join(topics))
    return fork


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--releases",
        type=Path,
        default=Path("/tmp/bench/upstream4"),
        help="a one-commit-per-release repo (../shared/bench/vllm_upstream.py)",
    )
    ap.add_argument("--work", type=Path, default=Path("/tmp/series-followups"))
    ap.add_argument("--follow-ups", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    history, planted = build(a.releases, a.work, a.follow_ups)
    fork = make_fork(history, a.work, planted)

    from series.seriesfile import config
    from series.upstream.followups import FollowUpKind, find
    from series.workspace import Workspace

    failures: list[str] = []
    times, walks, owns = [], [], []
    result = None
    for _ in range(a.repeat):
        ws = Workspace(
            config.read((fork / "series.yaml").read_text(), fork / "series.yaml"), pygit2.Repository(str(fork))
        )
        t0 = time.perf_counter()
        for topic in ws.series.topics:  # status has them already, for its rows
            ws.own(topic)
        owns.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        result = find(ws.repo, ws.series, ws.base_commit(), ws.own)
        times.append(time.perf_counter() - t0)
        walks.append(result.seconds)
    assert result is not None
    by_pr = {int(p.pr): p for p in result.prs}
    for kind, pr, by in planted:
        want = FollowUpKind.FIX if kind == "fix" else FollowUpKind.REVERT
        got = [(f.kind, f.commit.pr, f.carried) for f in by_pr[pr].followups]
        if got != [(want, by, None)]:
            failures.append(f"#{pr}: expected [{want.value} #{by}, not carried], found {got}")
        warned = by_pr[pr].warnings()
        if (kind == "revert") != bool(warned) or (warned and f"reverted upstream by #{by}" not in warned[0]):
            failures.append(f"#{pr}: revert warning {warned}")

    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "series", "status"], cwd=fork, env=ENV, capture_output=True, text=True)
    whole = time.perf_counter() - t0
    data = json.loads(
        subprocess.run(
            [sys.executable, "-m", "series", "status", "--json"],
            cwd=fork,
            env=ENV,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    reverts = [by for kind, _pr, by in planted if kind == "revert"]
    for by in reverts:
        if f"reverted upstream by #{by}" not in proc.stdout:
            failures.append(f"series status does not warn of #{by}:\n{proc.stdout}")
    listed = {f["commit"]["pr"] for p in data["upstream_followups"]["prs"] for f in p["followups"]}
    if listed != {by for _k, _p, by in planted}:
        failures.append(f"series status --json lists {sorted(listed)}")

    # for scale: the same bytes regex over every message trunk has
    repo = pygit2.Repository(str(fork))
    tip = repo.references["refs/remotes/upstream/main"].peel(pygit2.Commit)
    cheap = re.compile(rb"(?:#|/pull/)(?:" + b"|".join(str(pr).encode() for _k, pr, _b in planted) + rb")\b")
    t0 = time.perf_counter()
    total = matched = 0
    for commit in repo.walk(tip.id, pygit2.enums.SortMode.NONE):
        total += 1
        matched += bool(cheap.search(commit.raw_message))
    full = time.perf_counter() - t0

    print(f"planted: {', '.join(f'{k} of #{p} as #{b}' for k, p, b in planted)}")
    print(
        f"find(): {result.walked} trunk commits walked ({result.trunk}, base..main), walk "
        f"{statistics.median(walks) * 1000:.1f} ms, find {statistics.median(times) * 1000:.0f} ms "
        f"(median of {a.repeat}: classify, ancestry, patch-ids of the carriers); the topics' own "
        f"work first (status computes it for its rows anyway) {statistics.median(owns) * 1000:.0f} ms"
    )
    print(f"series status, whole process: {whole:.2f} s (exit {proc.returncode})")
    print(
        f"whole trunk: {total} commits read in {full * 1000:.1f} ms ({full / total * 1e6:.1f} us/commit), "
        f"{matched} matched"
    )
    for line in failures:
        print(f"FAIL {line}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
