"""Test selection parity: series.evidence.testmap against upstream's own pipeline generator.

For every path of every tree (v0.30.0..v0.33.0 of /tmp/bench/upstream4), plus boundary
paths made from each dependency (`dep`, `dep/x.py`, `dep_extra/foo.py`, `depx`), this asks
both sides which `.buildkite/test_areas` steps the change selects and which of them would
run by themselves (not behind a block step), and prints every disagreement.

Upstream's side is their real code, not a copy: vllm-project/ci-infra's
buildkite/pipeline_generator, taken from a snapshot (a git directory or a checkout given
with --ci-infra) into a temporary directory and imported by a second interpreter that has
its dependencies (pydantic>=2, PyYAML, requests; --python, or a throwaway venv made with
--make-venv). The harness sets their global config to a pull-request build (not nightly,
no step-key filter) and, per path, run_all from their own `_should_run_all`.

    python tools/testmap_parity.py --make-venv                 # compare, print the summary
    python tools/testmap_parity.py --make-venv --write-fixture # also refresh the suite's sample

--write-fixture writes tests/fixtures/testmap_parity.json.gz: each tree's test_areas
files and ci_config.yaml, its steps as (label, key) sorted, and upstream's answers for a
sample of paths (every boundary path, every run-all trigger, every 10th tree path) as hex
bitmasks over that list [selected, runs], which tests/test_testmap_parity.py checks
series against without needing upstream's code.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pygit2  # noqa: E402

from series.evidence import testmap  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "testmap_parity.json.gz"
TAGS = ("v0.30.0", "v0.31.0", "v0.32.0", "v0.33.0")

# Runs under the second interpreter, in the exported tree, with the generator on sys.path.
# Reads {"paths": [...]} on stdin; writes, per path, the selected and the running steps.
UPSTREAM_SIDE = r'''
import json, os, sys
import yaml
import global_config
from global_config import _should_run_all
import buildkite_step as bs
import step as st

cfg_doc = yaml.safe_load(open(".buildkite/ci_config.yaml")) if os.path.exists(".buildkite/ci_config.yaml") else {}
patterns = cfg_doc.get("run_all_patterns") or []
excludes = cfg_doc.get("run_all_exclude_patterns") or []
global_config.config = {
    "name": "vllm_ci", "github_repo_name": "vllm-project/vllm", "job_dirs": [".buildkite/test_areas"],
    "registries": "r", "repositories": {"main": "m", "premerge": "p"}, "branch": "feature",
    "commit": "0" * 40, "pull_request": "1", "run_all_patterns": patterns,
    "run_all_exclude_patterns": excludes, "nightly": "0", "torch_nightly": "0", "run_all": False,
    "docs_only_disable": "0", "merge_base_commit": None, "list_file_diff": [], "fail_fast": True,
    "only_step_keys": None,
}
steps = st.read_steps_from_job_dir(".buildkite/test_areas")
paths = json.load(sys.stdin)["paths"]
out = {"steps": [[s.label, s.key, bool(s.optional)] for s in steps], "selected": [], "runs": []}
for path in paths:
    run_all = _should_run_all([], [path], patterns, excludes)
    global_config.config["run_all"] = run_all
    selected, runs = [], []
    for i, s in enumerate(steps):
        native = (bs.is_amd_gpu_device(s.device) and not s.dind
                  and bs._source_file_dependencies_match(bs.AMD_NATIVE_RUNTIME_SOURCE_DEPENDENCIES, [path]))
        if run_all or native or bs._source_file_dependencies_match(s.source_file_dependencies, [path]):
            selected.append(i)
        if bs._step_should_run(s, [path]):
            runs.append(i)
    out["selected"].append(selected)
    out["runs"].append(runs)
json.dump(out, sys.stdout)
'''


def generator_dir(ci_infra: Path, scratch: Path) -> Path:
    """buildkite/pipeline_generator from a checkout or a bare snapshot, as files in scratch."""
    sub = "buildkite/pipeline_generator"
    if (ci_infra / sub).is_dir():
        return ci_infra / sub
    target = scratch / "generator"
    target.mkdir()
    archive = subprocess.run(
        ["git", f"--git-dir={ci_infra}", "archive", "HEAD", sub], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target / sub


def make_venv(scratch: Path) -> str:
    where = scratch / "venv"
    venv.create(where, with_pip=True)
    py = str(where / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", "pydantic>=2", "PyYAML", "requests"], check=True)
    return py


def export_tree(repo: pygit2.Repository, tree: pygit2.Tree, target: Path, prefixes: tuple[str, ...]) -> dict[str, str]:
    """The test_areas files and ci_config.yaml of `tree`, written under target; returns their text."""
    files: dict[str, str] = {}

    def walk(t: pygit2.Tree, base: str) -> None:
        for entry in t:
            path = f"{base}{entry.name}"
            if entry.type_str == "tree":
                if any(p.startswith(path + "/") or path.startswith(p) for p in prefixes):
                    walk(repo[entry.id].peel(pygit2.Tree), path + "/")
            elif any(path.startswith(p) or path == p for p in prefixes):
                text = repo[entry.id].peel(pygit2.Blob).data.decode("utf-8")
                files[path] = text
                (target / path).parent.mkdir(parents=True, exist_ok=True)
                (target / path).write_text(text)

    walk(tree, "")
    return files


def tree_paths(repo: pygit2.Repository, tree: pygit2.Tree) -> list[str]:
    out: list[str] = []

    def walk(t: pygit2.Tree, base: str) -> None:
        for entry in t:
            if entry.type_str == "tree":
                walk(repo[entry.id].peel(pygit2.Tree), f"{base}{entry.name}/")
            else:
                out.append(f"{base}{entry.name}")

    walk(tree, "")
    return out


def boundary_paths(tmap: testmap.TestMap) -> list[str]:
    out: set[str] = set()
    for step in tmap.steps:
        for dep in step.all_dependencies + testmap.AMD_NATIVE_RUNTIME:
            d = dep.lstrip("!").rstrip("/")
            if d:
                out.update({d, f"{d}/x.py", f"{d}_extra/foo.py", f"{d}x", f"{d}/"})
    return sorted(out)


def series_side(tmap: testmap.TestMap, paths: list[str]) -> tuple[list[list[int]], list[list[int]]]:
    selected, runs = [], []
    for path in paths:
        chosen = {id(s.step) for s in tmap.select({path: ("t",)}, include_always=True)}
        sel = [i for i, s in enumerate(tmap.steps) if id(s) in chosen]
        selected.append(sel)
        runs.append([i for i in sel if not tmap.steps[i].optional])
    return selected, runs


def compare(
    tag: str, repo: pygit2.Repository, generator: Path, python: str, scratch: Path, sample_every: int
) -> tuple[int, int, dict]:
    tree = repo.revparse_single(tag).peel(pygit2.Commit).tree
    where = scratch / tag
    where.mkdir()
    files = export_tree(repo, tree, where, (testmap.TEST_AREAS + "/", testmap.CI_CONFIG))
    tmap = testmap.load(repo, tree)
    everything = tree_paths(repo, tree)
    boundary = boundary_paths(tmap)
    paths = sorted(set(everything) | set(boundary))
    started = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(generator), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [python, "-c", UPSTREAM_SIDE],
        cwd=where,
        env=env,
        check=True,
        input=json.dumps({"paths": paths}),
        capture_output=True,
        text=True,
    )
    theirs = json.loads(proc.stdout)
    upstream_s = time.perf_counter() - started
    started = time.perf_counter()
    ours_sel, ours_runs = series_side(tmap, paths)
    series_s = time.perf_counter() - started

    # Steps matched by (label, key, optional): the two sides read files in different orders.
    ident = lambda label, key: (label, key)  # noqa: E731
    their_steps = [ident(label, key) for label, key, _ in theirs["steps"]]
    our_steps = [ident(s.label, s.key) for s in tmap.steps]
    problems = 0
    if sorted(their_steps) != sorted(our_steps):
        print(
            f"{tag}: step lists differ: only upstream {sorted(set(their_steps) - set(our_steps))[:5]}, "
            f"only series {sorted(set(our_steps) - set(their_steps))[:5]}"
        )
        problems += 1
    index = {step: n for n, step in enumerate(sorted(set(their_steps)))}
    their_opt = {ident(label, key): opt for label, key, opt in theirs["steps"]}
    for s in tmap.steps:
        if their_opt.get(ident(s.label, s.key), s.optional) != s.optional:
            print(f"{tag}: optional differs for {s.label}")
            problems += 1
    sample = {}
    for n, path in enumerate(paths):
        a = sorted(their_steps[i] for i in theirs["selected"][n])
        b = sorted(our_steps[i] for i in ours_sel[n])
        ra = sorted(their_steps[i] for i in theirs["runs"][n])
        rb = sorted(our_steps[i] for i in ours_runs[n])
        if a != b or ra != rb:
            problems += 1
            if problems <= 20:
                print(
                    f"{tag}: {path}: only upstream {sorted(set(a) - set(b))[:3]} "
                    f"only series {sorted(set(b) - set(a))[:3]}; runs differ: {ra != rb}"
                )
        if path in boundary or tmap.runs_all(path) or n % sample_every == 0:
            sample[path] = [bits(index, a), bits(index, ra)]
    print(
        f"{tag}: {len(paths)} paths ({len(everything)} in the tree, {len(boundary)} boundary) x "
        f"{len(tmap.steps)} steps: {problems} disagreements; upstream {upstream_s:.1f} s, "
        f"series {series_s:.1f} s"
    )
    return len(paths), problems, {"files": files, "steps": [list(s) for s in sorted(index)], "cases": sample}


def bits(index: dict, steps: list) -> str:
    """A set of steps as a hex bitmask over the sorted step list (keeps the fixture small)."""
    return format(sum(1 << index[s] for s in steps), "x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", type=Path, default=Path("/tmp/bench/upstream4"))
    ap.add_argument(
        "--ci-infra",
        type=Path,
        default=Path("/work/.mirror/vllm-project+ci-infra/repo"),
        help="vllm-project/ci-infra: a checkout or a git directory",
    )
    ap.add_argument("--python", default=sys.executable, help="an interpreter with pydantic>=2, PyYAML and requests")
    ap.add_argument("--make-venv", action="store_true", help="make a throwaway venv with them")
    ap.add_argument("--tags", nargs="+", default=list(TAGS))
    ap.add_argument("--sample-every", type=int, default=10)
    ap.add_argument("--write-fixture", action="store_true")
    args = ap.parse_args()
    repo = pygit2.Repository(str(args.upstream))
    scratch = Path(tempfile.mkdtemp(prefix="series-parity-"))
    try:
        python = make_venv(scratch) if args.make_venv else args.python
        generator = generator_dir(args.ci_infra, scratch)
        total = bad = 0
        fixture = {}
        for tag in args.tags:
            n, problems, data = compare(tag, repo, generator, python, scratch, args.sample_every)
            total += n
            bad += problems
            fixture[tag] = data
        print(f"all: {total} paths over {len(args.tags)} trees, {bad} disagreements")
        if args.write_fixture:
            FIXTURE.write_bytes(gzip.compress(json.dumps(fixture, sort_keys=True).encode(), mtime=0))
            print(f"wrote {FIXTURE.relative_to(ROOT)} ({FIXTURE.stat().st_size} bytes)")
        return 1 if bad else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
