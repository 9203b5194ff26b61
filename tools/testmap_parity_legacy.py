"""Test selection parity on a test-pipeline.yaml tree: series against upstream's rule of that era.

Before `.buildkite/test_areas/`, vLLM's CI rendered `.buildkite/test-pipeline.yaml` through
vllm-project/ci-infra's Jinja template (scripts/test-template-aws.j2, later
buildkite/test-template-ci.j2), after its bootstrap script decided run-all from the
changed files. This runs THEIR files, as they were at the era's ci-infra commit
(series.evidence.testmap_legacy.era_at of the vLLM commit's time), against
series.evidence.testmap for every path of the tree plus boundary paths made from each
dependency (`dep`, `dep/x.py`, `dep_extra/foo.py`, `x/dep/y.py`, `depx`):
- run-all: the bootstrap's own `patterns=(...)` / `ignore_patterns=(...)` loop, run by bash;
- the template rendered by jinja2 (minijinja's `split` filter added), one changed path at a
  time; a step runs when it is not behind a `block` step.
Upstream's output says only which steps run by themselves, so that is what is compared
(series: selected and not optional).

    python tools/testmap_parity_legacy.py --python /tmp/venv/bin/python       # jinja2, PyYAML
    python tools/testmap_parity_legacy.py --python ... --write-fixture

--write-fixture writes tests/fixtures/testmap_parity_legacy.json.gz: the tag's
test-pipeline.yaml trimmed to what selection reads (commands cut to their first), its
commit time, the era's ci-infra commit, and upstream's answers for every boundary path,
every run-all trigger and every 10th tree path, checked by tests/test_testmap_parity.py.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pygit2  # noqa: E402
from ruamel.yaml import YAML  # noqa: E402

from series.evidence import testmap, testmap_legacy  # noqa: E402
from tools.testmap_parity import tree_paths  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "testmap_parity_legacy.json.gz"
TEMPLATES = ("scripts/test-template-aws.j2", "scripts/test-template-ci.j2", "buildkite/test-template-ci.j2")
BOOTSTRAPS = ("scripts/ci_aws_bootstrap.sh", "scripts/bootstrap.sh", "buildkite/bootstrap.sh")

# Runs under the second interpreter: renders the template once per path.
UPSTREAM_SIDE = r'''
import json, sys
import jinja2, yaml
args = json.load(sys.stdin)
class Undefined(jinja2.Undefined):
    """minijinja orders undefined before every number (`step.num_nodes < 2` is true);
    jinja2's default raises."""
    def __lt__(self, other): return True
    def __le__(self, other): return True
    def __gt__(self, other): return False
    def __ge__(self, other): return False
env = jinja2.Environment(undefined=Undefined)
env.filters["split"] = lambda s, sep=None: s.split(sep)       # minijinja's, which jinja2 lacks
template = env.from_string(args["template"])
steps = yaml.safe_load(args["pipeline"])["steps"]
ours = {s.get("label") for s in steps}     # not the template's own build and hardware steps
out = []
for path, run_all in zip(args["paths"], args["run_all"]):
    text = template.render(steps=steps, list_file_diff=path, run_all="1" if run_all else "0",
                           nightly="0", branch="feature")
    runs = []
    for step in yaml.safe_load(text)["steps"]:
        if isinstance(step, dict) and step.get("label") in ours and "block" not in step \
                and not str(step.get("depends_on") or "").startswith("block-"):
            runs.append(step["label"])
    out.append(runs)
json.dump(out, sys.stdout)
'''

BASH_RUN_ALL = r'''
{arrays}
while IFS= read -r file; do
    hit=0
    for pattern in "${{patterns[@]}}"; do
        if [[ $file == $pattern* ]] || [[ $file == $pattern ]]; then hit=1; break; fi
    done
    if [[ $hit -eq 1 ]]; then
        for ignore in "${{ignore_patterns[@]}}"; do
            if [[ $file == $ignore* ]] || [[ $file == $ignore ]]; then hit=0; break; fi
        done
    fi
    echo $hit
done
'''


def show(ci_infra: Path, commit: str, candidates: tuple[str, ...]) -> str:
    for path in candidates:
        proc = subprocess.run(
            ["git", f"--git-dir={ci_infra}", "show", f"{commit}:{path}"], capture_output=True, text=True
        )
        if proc.returncode == 0:
            return proc.stdout
    raise SystemExit(f"none of {candidates} at ci-infra {commit}")


def bootstrap_run_all(bootstrap: str, paths: list[str]) -> list[bool]:
    """The bootstrap's own pattern arrays and its own test, run by bash over each path."""
    arrays = "\n".join(m.group(0) for m in re.finditer(r"^(?:ignore_)?patterns=\([^)]*\)", bootstrap, re.M))
    if "ignore_patterns=" not in arrays:
        arrays += "\nignore_patterns=()"
    proc = subprocess.run(
        ["bash", "-c", BASH_RUN_ALL.format(arrays=arrays)],
        input="\n".join(paths) + "\n",
        capture_output=True,
        text=True,
        check=True,
    )
    return [line == "1" for line in proc.stdout.split()]


def boundary_paths(tmap: testmap.TestMap) -> list[str]:
    out: set[str] = set()
    for step in tmap.steps:
        for dep in step.dependencies:
            d = dep.rstrip("/")
            if d:
                out.update({d, f"{d}/x.py", f"{d}_extra/foo.py", f"x/{d}/y.py", f"{d}x", dep})
    for pattern in testmap_legacy.ERAS[-1].run_all + testmap_legacy.ERAS[0].run_all:
        p = pattern.rstrip("*")
        out.update({p, f"{p}-rocm.txt", f"x/{p}", f"{p}/a", f"{p}.rocm"})
    return sorted(out)


def trimmed(text: str) -> str:
    """The pipeline as selection reads it: each step's commands cut to the first."""
    yaml = YAML(typ="safe", pure=True)
    doc = yaml.load(text)
    for step in doc["steps"]:
        for key in ("commands", "command"):
            if isinstance(step.get(key), list):
                step[key] = step[key][:1]
    out = tempfile.SpooledTemporaryFile(mode="w+")
    YAML().dump(doc, out)
    out.seek(0)
    return str(out.read())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vllm", type=Path, default=Path("/work/.mirror/HabanaAI+vllm-fork/repo"))
    ap.add_argument("--ci-infra", type=Path, default=Path("/work/.mirror/vllm-project+ci-infra/repo"))
    ap.add_argument("--python", default=sys.executable, help="an interpreter with jinja2 and PyYAML")
    ap.add_argument("--tag", default="v0.6.2")
    ap.add_argument(
        "--era",
        metavar="COMMIT",
        help="check the tag's file under this era of ERAS instead "
        "of its own (the mirror lacks later tags; the later templates read the same file)",
    )
    ap.add_argument("--sample-every", type=int, default=10)
    ap.add_argument("--write-fixture", action="store_true")
    args = ap.parse_args()
    repo = pygit2.Repository(str(args.vllm))
    commit = repo.revparse_single(args.tag).peel(pygit2.Commit)
    when = commit.commit_time
    if args.era:
        when = next(e.since for e in testmap_legacy.ERAS if e.commit == args.era)
    era = testmap_legacy.era_at(when)
    text = testmap_legacy.read(repo, commit.tree)
    if text is None:
        raise SystemExit(f"{args.tag} has no {testmap_legacy.TEST_PIPELINE}")
    tmap = testmap.load(repo, commit.tree, when=when)
    boundary = boundary_paths(tmap)
    paths = sorted(set(tree_paths(repo, commit.tree)) | set(boundary))
    run_all = bootstrap_run_all(show(args.ci_infra, era.commit, BOOTSTRAPS), paths)
    proc = subprocess.run(
        [args.python, "-c", UPSTREAM_SIDE],
        check=True,
        capture_output=True,
        text=True,
        input=json.dumps(
            {
                "template": show(args.ci_infra, era.commit, TEMPLATES),
                "pipeline": text,
                "paths": paths,
                "run_all": run_all,
            }
        ),
    )
    theirs = json.loads(proc.stdout)
    problems = 0
    cases = {}
    for n, path in enumerate(paths):
        ours = sorted(s.step.label for s in tmap.select({path: ("t",)}, include_always=True) if not s.step.optional)
        if tmap.runs_all(path) != run_all[n] or ours != sorted(theirs[n]):
            problems += 1
            if problems <= 20:
                print(
                    f"{path}: run-all {run_all[n]} (series {tmap.runs_all(path)}); only upstream "
                    f"{sorted(set(theirs[n]) - set(ours))[:3]}, only series {sorted(set(ours) - set(theirs[n]))[:3]}"
                )
        if path in boundary or run_all[n] or n % args.sample_every == 0:
            cases[path] = [run_all[n], sorted(theirs[n])]
    print(
        f"{args.tag} (ci-infra {era.commit}): {len(paths)} paths ({len(boundary)} boundary) x "
        f"{len(tmap.steps)} steps: {problems} disagreements"
    )
    if args.write_fixture:
        data = {"tag": args.tag, "commit_time": when, "era": era.commit, "pipeline": trimmed(text), "cases": cases}
        FIXTURE.write_bytes(gzip.compress(json.dumps(data, sort_keys=True).encode(), mtime=0))
        print(f"wrote {FIXTURE.relative_to(ROOT)} ({FIXTURE.stat().st_size} bytes, {len(cases)} cases)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
