"""Evidence on the PR's own tree (issue 36): `main` and `pr:TOPIC` over the release build.

The evidence repositories (tests/evidence_repos.py) with upstream's main moved on past the
release: main adds a module and a test of it the release has not (vllm/v1/kv_offload/trunk.py,
tests/v1/kv_offload/test_trunk.py), rewords lru.py's docstring, and changes a C source
(csrc/). `pr:lru-peek` is lru-peek replayed onto that main: a run in it sees main's module
and docstring and the topic's peek, over the wheel's compiled part (vllm/_compiled.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from series.evidence import testmap, testrun
from tests import evidence_repos as er
from tests.conftest import from_template, run_series
from tests.fakeenv import make_env
from tests.harness import ALL_FRESH, refs_of, template_tree
from tests.repos import ENV, git, write

TRUNK = "tests/v1/kv_offload/test_trunk.py::test_main_and_its_docstring"
PEEK = "tests/v1/kv_offload/test_peek.py::test_peek_keeps_the_block"
BUILD = "tests/v1/kv_offload/test_build.py::test_runs_on_the_build"

TEST_TRUNK = '''\
import vllm.v1.kv_offload.cpu.policies.lru as lru
from vllm.v1.kv_offload.trunk import ON_MAIN


def test_main_and_its_docstring():
    assert ON_MAIN and "(as on main)" in lru.__doc__
'''

WORKLOAD = '''\
import json, os
import vllm.v1.kv_offload.cpu.policies.lru as lru
try:
    from vllm._compiled import BUILT   # only the wheel has it: the build's compiled part ran
except ImportError:
    BUILT = False
try:
    from vllm.v1.kv_offload.trunk import ON_MAIN
except ImportError:
    ON_MAIN = False
json.dump({"on_main": ON_MAIN, "has_peek": hasattr(lru.LRUPolicy, "peek"), "built": BUILT},
          open(os.environ["SERIES_METRICS"], "w"))
'''

PREDICTIONS = """\
predictions:
  - id: the-pr-peeks-on-main
    tree: pr
    metric: has_peek
    equals: true
    why: the PR adds peek to main
  - id: main-has-no-peek
    tree: main
    metric: has_peek
    equals: false
    why: main has no peek yet
"""


def _repos(root: Path) -> Path:
    return er.build(root / "repos")


def _with_env(root: Path) -> Path:
    fork = _repos(root)
    wheel = er.release_wheel(fork.parent / "upstream", root / "wheels")
    return make_env(root / "env", wheel)


def commit_on(fork: Path, start: str, files: dict[str, str], message: str, date: str) -> str:
    """A commit of `files` over `start`, made in the fork's checkout (its untracked
    series.yaml left out of it), which is left detached at the release again."""
    git(fork, "checkout", "-q", "--detach", start)
    write(fork, files)
    git(fork, "add", "--", *files)
    git(fork, "commit", "-qm", message, env=dict(ENV, GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date))
    sha = git(fork, "rev-parse", "HEAD").strip()
    git(fork, "checkout", "-q", "--detach", "v0.30.0")
    return sha


def move_main(fork: Path, files: dict[str, str]) -> str:
    """upstream/main (the fork's remote-tracking ref) one commit past the release."""
    sha = commit_on(fork, "v0.30.0", files, "main moves on", "2026-02-01T00:00:00Z")
    git(fork, "update-ref", "refs/remotes/upstream/main", sha)
    return sha


MAIN = {
    "vllm/v1/kv_offload/trunk.py": "ON_MAIN = True\n",
    "vllm/v1/kv_offload/cpu/policies/lru.py": er.LRU.replace(
        '"""LRU eviction for offloaded KV blocks."""', '"""LRU eviction for offloaded KV blocks (as on main)."""'
    ),
    "tests/v1/kv_offload/test_trunk.py": TEST_TRUNK,
    "csrc/cache_kernels.cu": "// main changed a custom op\n",
}


@pytest.fixture
def fork(tmp_path: Path) -> Path:
    fork = from_template("evidence", _repos, tmp_path)
    er.series_yaml(fork, "lru-peek")
    return fork


@pytest.fixture
def env(tmp_path: Path, fork: Path) -> Path:
    assert refs_of(fork.parent / "upstream") == refs_of(template_tree("evidence", _repos) / "repos/upstream")
    return from_template("evidence-env", _with_env, tmp_path, only=("wheels", "env"))


def test_a_test_run_on_the_prs_tree_runs_mains_code_with_the_topic_over_the_build(fork: Path, env: Path) -> None:
    main = move_main(fork, MAIN)
    proc = run_series("test", "lru-peek", "--run", "--python", str(env), "--tree", "pr:lru-peek", "--json", cwd=fork)
    data = json.loads(proc.stdout)
    trees = {t["name"]: t for t in data["trees"]}
    assert list(trees) == ["base", "series", "main", "pr:lru-peek"], "main comes beside a pr: tree"
    assert trees["main"]["commit"] == main
    pr = trees["pr:lru-peek"]["commit"]
    assert git(fork, "rev-parse", f"{pr}^").strip() == main, "the topic replayed onto upstream's main"
    assert (trees["pr:lru-peek"]["against"], trees["main"]["against"], trees["series"]["against"]) == (
        "main",
        None,
        "base",
    )
    assert "upstream/main's Python over vllm 0.30.0's compiled parts" in trees["pr:lru-peek"]["describe"]
    tests = data["tests"]
    # main's own test, of a module only main has, runs on main's code in main's layout
    assert tests[TRUNK] == {"base": None, "series": None, "main": "passed", "pr:lru-peek": "passed"}, tests[TRUNK]
    # the topic's change is in the PR's tree, not in main's
    assert tests[PEEK] == {"base": "failed", "series": "passed", "main": "failed", "pr:lru-peek": "passed"}, tests[PEEK]
    assert data["worse"] == {} and data["verdicts"]["pr:lru-peek"][PEEK] == "better", data["verdicts"]
    assert "main" not in data["verdicts"], "main is a yardstick, as base is"
    assert (
        "warning: pr:lru-peek: csrc/cache_kernels.cu (and the rest of csrc/ the release built) differs" in proc.stderr
    ), proc.stderr
    assert "package files over the build: upstream/main's Python over vllm 0.30.0's compiled parts" in proc.stderr

    # the step whole: the compiled part is the build's (the wheel's vllm/_compiled.py), no source tree's
    steps = run_series(
        "test",
        "lru-peek",
        "--run",
        "--python",
        str(env),
        "--tree",
        "pr:lru-peek",
        "--step",
        "kv-offload",
        "--json",
        cwd=fork,
        expect=None,
    )
    tests = json.loads(steps.stdout)["tests"]
    assert tests[BUILD] == {"base": "passed", "series": "passed", "main": "passed", "pr:lru-peek": "passed"}
    assert tests[TRUNK] == {"base": None, "series": None, "main": "passed", "pr:lru-peek": "passed"}, tests[TRUNK]

    text = run_series("test", "lru-peek", "--run", "--python", str(env), "--tree", "pr:lru-peek", cwd=fork).stdout
    assert f"pr:lru-peek: 1 tests pass that do not on main:\n  {PEEK}" in text, text
    assert f"upstream/main {main[:12]} + lru-peek replayed: {pr[:12]}" in text, "the text names the commit"
    assert "no test is worse than on base or main" in text, text


ON_MAIN_ONLY = "tests/v1/offload/test_on_main.py::test_on_mains_step"


def test_the_trees_on_the_trunk_take_their_tests_from_mains_ci_map(fork: Path, env: Path) -> None:
    """On vLLM, v0.33.0's CI map has other steps covering a kv_offload change than
    v0.31.0's, and other commands: the PR's tree runs what main's CI would run for it."""
    steps = er.TEST_AREAS[".buildkite/test_areas/kv_offload.yaml"]
    move_main(
        fork,
        {
            **MAIN,
            ".buildkite/test_areas/kv_offload.yaml": steps.replace(
                "    - pytest -v -s v1/kv_offload\n", "    - pytest -v -s v1/kv_offload v1/offload\n", 1
            ),
            "tests/v1/offload/test_on_main.py": (
                "import vllm.v1.kv_offload.cpu.policies.lru as lru\n\n\n"
                "def test_on_mains_step():\n    assert lru.LRUPolicy\n"
            ),
        },
    )
    args = ("test", "lru-peek", "--run", "--python", str(env), "--tree", "pr:lru-peek", "--json")
    tests = json.loads(run_series(*args, cwd=fork).stdout)["tests"]
    assert tests[ON_MAIN_ONLY] == {"base": None, "series": None, "main": "passed", "pr:lru-peek": "passed"}, tests
    whole = json.loads(run_series(*args, "--step", "kv-offload", cwd=fork).stdout)["tests"]
    assert whole[ON_MAIN_ONLY] == tests[ON_MAIN_ONLY], "--step runs main's commands of the step"


def test_the_selection_counts_the_steps_and_files_of_both_maps(fork: Path, env: Path) -> None:
    """The release's trees and the trunk's each take their tests from their own CI map:
    the selection the report states is of both (it said the first map's steps, and the
    larger map's file count, as though one map had chosen)."""
    steps = er.TEST_AREAS[".buildkite/test_areas/kv_offload.yaml"]
    renamed = steps.replace("  key: kv-offload\n", "  key: kv-offload-main\n", 1)
    move_main(fork, {**MAIN, ".buildkite/test_areas/kv_offload.yaml": renamed})
    args = ("test", "lru-peek", "--run", "--python", str(env), "--tree", "pr:lru-peek", "--json")
    selection = json.loads(run_series(*args, cwd=fork).stdout)["selection"]
    assert {"kv-offload", "kv-offload-main"} <= set(selection["steps"]), selection


@pytest.mark.skipif(ALL_FRESH, reason="patches the run in this process")
def test_a_run_the_cache_answers_writes_no_layout_and_no_shadow(
    fork: Path, env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the real install a warm run of pr:TOPIC spent most of its time on what no test
    used: main's tests/ written out (~2,400 files), a shadow per tree (main's ~1,800 package
    files) and a second parse of the CI map (tools/bench_pr_tree.sh, docs/performance.md)."""
    move_main(fork, MAIN)
    args = ("test", "lru-peek", "--run", "--python", str(env), "--tree", "pr:lru-peek", "--json")
    cold = json.loads(run_series(*args, cwd=fork).stdout)

    def unused(*_: object, **__: object) -> None:
        raise AssertionError("every test file's result is in the cache: nothing is to be written")

    monkeypatch.setattr(testrun, "shadow", unused)
    monkeypatch.setattr(testrun.Scratch, "write_tests", unused)
    parsed = []
    load = testmap.load
    monkeypatch.setattr(testmap, "load", lambda *a, **k: parsed.append(a[1].id) or load(*a, **k))
    warm = json.loads(run_series(*args, cwd=fork).stdout)
    assert warm["tests"] == cold["tests"]
    assert all(s["files_from_cache"] > 0 for s in warm["summary"].values()), warm["summary"]
    assert sorted(parsed) == sorted(set(parsed)) and len(parsed) == 2, "each CI map (base, main) is read once"


def test_a_measurement_on_the_prs_tree_and_main(fork: Path, env: Path, tmp_path: Path) -> None:
    main = move_main(fork, MAIN)
    (fork / "predictions.yaml").write_text(PREDICTIONS)
    run_series("predict", "predictions.yaml", cwd=fork)
    workload = tmp_path / "workload.py"
    workload.write_text(WORKLOAD)
    for python in ((), ("--python", str(env))):
        proc = run_series(
            "measure",
            "--predictions",
            "predictions.yaml",
            "--json",
            "--tree",
            "main",
            "--tree",
            "pr=pr:lru-peek",
            *python,
            "--",
            "python",
            str(workload),
            cwd=fork,
        )
        data = json.loads(proc.stdout)
        trees = {t["name"]: t for t in data["trees"]}
        assert trees["main"]["commit"] == main
        assert git(fork, "rev-parse", f"{trees['pr']['commit']}^").strip() == main
        metrics = data["metrics"]
        if python:
            assert {n: (m["on_main"], m["has_peek"], m["built"]) for n, m in metrics.items()} == {
                "main": (True, False, True),
                "pr": (True, True, True),
            }, metrics
            assert "upstream/main's Python over vllm 0.30.0's compiled parts" in trees["pr"]["describe"]
            assert "pr: upstream/main" in proc.stderr and "warning: pr: csrc/cache_kernels.cu" in proc.stderr
        else:  # a checkout of each tree: no compiled part
            assert {n: (m["on_main"], m["has_peek"], m["built"]) for n, m in metrics.items()} == {
                "main": (True, False, False),
                "pr": (True, True, False),
            }, metrics
        assert all(p["held"] is True for p in data["predictions"]), data["predictions"]


def test_a_replay_that_conflicts_names_the_file_and_the_pr_branch_to_use(fork: Path, tmp_path: Path) -> None:
    # main adds its own peek where the topic adds one: the replay conflicts in lru.py
    resolved_peek = er.PEEK.replace("return next(iter(self.blocks))", "return next(iter(self.blocks))  # ours")
    main = move_main(fork, {"vllm/v1/kv_offload/cpu/policies/lru.py": er.PEEK_PR})
    (fork / "predictions.yaml").write_text(PREDICTIONS.replace("tree: main", "tree: pr"))
    run_series("predict", "predictions.yaml", cwd=fork)
    workload = tmp_path / "workload.py"
    workload.write_text(WORKLOAD)
    args = ("measure", "--predictions", "predictions.yaml", "--tree", "pr=pr:lru-peek", "--", "python", str(workload))
    proc = run_series(*args, cwd=fork, expect=3)
    assert "tree 'pr:lru-peek': topic 'lru-peek' does not apply to upstream/main" in proc.stderr, proc.stderr
    assert "conflicts in vllm/v1/kv_offload/cpu/policies/lru.py" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "name that branch as pr:lru-peek@BRANCH" in proc.stderr, proc.stderr
    # `series propose` meets the same conflict building the PR branch: one answer, the same
    # words and commands, less the tree's own way out (a PR branch named as the tree)
    proposed = run_series("propose", "lru-peek", "--dry-run", "--offline", cwd=fork, expect=3).stderr
    error, hint = proc.stderr.splitlines()
    assert proposed.splitlines() == [error.replace("tree 'pr:lru-peek': ", ""), hint.split("; or ")[0]], proposed
    assert hint.split("; or ")[0] == (
        "hint: 'series rebase --onto upstream/main --dry-run --bisect' names the upstream PR it meets; "
        "'series rebase --onto upstream/main' resolves it in a worktree ('series undo' takes that back)"
    ), hint

    # the topic records its PR and its head is fetched: the hint names it
    (fork / "series.yaml").write_text((fork / "series.yaml").read_text() + "    upstream_pr: 61100\n")
    head = commit_on(
        fork,
        main,
        {"vllm/v1/kv_offload/cpu/policies/lru.py": resolved_peek},
        "add LRUPolicy.peek, on main",
        "2026-02-02T00:00:00Z",
    )
    git(fork, "update-ref", "refs/remotes/upstream/pr/61100", head)
    proc = run_series(*args, cwd=fork, expect=3)
    assert "name the tree pr:lru-peek@refs/remotes/upstream/pr/61100" in proc.stderr, proc.stderr

    # named as it is, the PR head is the tree
    at = (
        "measure",
        "--predictions",
        "predictions.yaml",
        "--json",
        "--tree",
        "pr=pr:lru-peek@refs/remotes/upstream/pr/61100",
        "--",
        "python",
        str(workload),
    )
    data = json.loads(run_series(*at, cwd=fork).stdout)
    assert data["trees"][0]["commit"] == head and "as it is" in data["trees"][0]["describe"], data["trees"]
    assert data["metrics"]["pr"]["has_peek"] is True


def test_the_trees_need_upstreams_main(fork: Path) -> None:
    git(fork, "update-ref", "-d", "refs/remotes/upstream/main")
    (fork / "predictions.yaml").write_text(PREDICTIONS)
    run_series("predict", "predictions.yaml", cwd=fork)
    proc = run_series(
        "measure",
        "--predictions",
        "predictions.yaml",
        "--tree",
        "main",
        "--tree",
        "pr=pr:lru-peek",
        "--",
        "true",
        cwd=fork,
        expect=1,
    )
    assert "no upstream/main (nor upstream/master) in this repository" in proc.stderr, proc.stderr
    assert "git fetch upstream" in proc.stderr


def test_the_pr_body_says_a_trunk_tree_is_worse_than_main_not_the_release() -> None:
    from series.propose import prbody

    evidence = {
        "summary": {
            "base": {"passed": 1},
            "main": {"passed": 2},
            "pr:t": {"passed": 1, "failed": 1},
            "series": {"passed": 1},
        },
        "tests": {},
        "trees": [
            {"name": "base", "against": None},
            {"name": "main", "against": None},
            {"name": "pr:t", "against": "main"},
            {"name": "series", "against": "base"},
        ],
        "worse": {"pr:t": ["tests/test_a.py::test_a"], "series": ["tests/test_b.py::test_b"]},
    }
    text = prbody.results(prbody.check_evidence(evidence))
    assert "Worse than upstream's `main` in `pr:t`: `tests/test_a.py::test_a`" in text, text
    assert "Worse than the base release in `series`: `tests/test_b.py::test_b`" in text, text
