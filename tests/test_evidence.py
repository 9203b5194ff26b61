"""`series test --run`: upstream's tests over an installed release build, tree by tree.

A tiny vLLM wheel (tests/evidence_repos.py) is installed in a throwaway venv; its
`vllm/_compiled.py` exists only in the wheel, as compiled extensions do.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import evidence_repos as er
from tests.conftest import from_template, run_series, sh
from tests.harness import refs_of, template_tree
from tests.fakeenv import make_env

LRU_TESTS = "tests/v1/kv_offload"
PEEK = "tests/v1/kv_offload/test_peek.py::test_peek_keeps_the_block"
PEEK_PR = "tests/v1/kv_offload/test_peek_pr.py::test_peek_on_empty"


def _repos(root: Path) -> Path:
    return er.build(root / "repos")


def _with_env(root: Path) -> Path:
    fork = _repos(root)
    wheel = er.release_wheel(fork.parent / "upstream", root / "wheels")
    return make_env(root / "env", wheel)


@pytest.fixture
def fork(tmp_path: Path) -> Path:
    return from_template("evidence", _repos, tmp_path)


@pytest.fixture
def env(tmp_path: Path, fork: Path) -> Path:
    if refs_of(fork.parent / "upstream") != refs_of(template_tree("evidence", _repos) / "repos/upstream"):
        wheel = er.release_wheel(fork.parent / "upstream", tmp_path / "wheels")
        return make_env(tmp_path / "env", wheel)
    return from_template("evidence-env", _with_env, tmp_path, only=("wheels", "env"))


def evidence(fork: Path, python: Path, *args: str, expect: int = 0) -> dict:
    proc = run_series("test", *args, "--run", "--python", str(python), "--json", cwd=fork, expect=expect)
    return json.loads(proc.stdout)


def test_the_run_imports_the_build_not_the_tree(fork: Path, env: Path) -> None:
    er.series_yaml(fork, "lru-peek")
    data = evidence(fork, env, "--step", "kv-offload")
    build = "tests/v1/kv_offload/test_build.py::test_runs_on_the_build"
    # vllm._compiled is only in the wheel: the test passes in every tree, and the source
    # tree's vllm/ (which pytest's rootdir insertion would put first) was not imported
    assert data["tests"][build] == {"base": "passed", "series": "passed"}, data["tests"][build]
    assert data["tests"][PEEK] == {"base": "failed", "series": "passed"}, "the series' change is laid over the build"
    assert data["build"].startswith("vllm 0.30.0 at ") and "site-packages" in data["build"]


def test_baseline_separates_machine_failures_from_regressions(fork: Path, env: Path) -> None:
    er.series_yaml(fork, "lru-peek", "manager-break")
    proc = run_series("test", "--run", "--python", str(env), cwd=fork, expect=5)
    out = proc.stdout
    assert "2 tests fail on base too (this machine" in out, out
    assert "tests/v1/kv_offload/test_machine.py::test_needs_a_gpu" in out
    assert "series: 2 tests WORSE than on base:" in out, out
    assert "tests/v1/kv_offload/test_manager.py::test_store  (passed -> failed)" in out, out
    assert "series: 1 tests pass that do not on base:\n  " + PEEK in out, out
    data = evidence(fork, env, expect=5)
    machine = data["tests"]["tests/v1/kv_offload/test_machine.py::test_needs_the_hub"]
    assert machine == {"base": "error", "series": "error"}, "errors are kept apart from failures"
    assert data["summary"]["base"]["error"] == 1 and data["summary"]["base"]["failed"] == 2, data["summary"]
    assert sorted(data["worse"]["series"]) == [
        "tests/v1/kv_offload/test_manager.py::test_store",
        "tests/v1/kv_offload_gpu/test_roundtrip.py::test_roundtrip",
    ]
    er.series_yaml(fork, "lru-peek")
    clean = run_series("test", "--run", "--python", str(env), cwd=fork)
    assert "no test is worse than on base" in clean.stdout, clean.stdout


def test_without_gives_the_evidence_and_markdown_renders_it(fork: Path, env: Path) -> None:
    er.series_yaml(fork, "lru-peek", "api-note")
    data = evidence(fork, env, "--without", "lru-peek")
    assert [t["name"] for t in data["trees"]] == ["base", "series", "without:lru-peek"]
    assert data["tests"][PEEK] == {"base": "failed", "series": "passed", "without:lru-peek": "failed"}
    assert data["needed"] == {"lru-peek": [PEEK]}, data["needed"]
    assert data["worse"] == {}, "a counterfactual tree never fails the run"
    md = run_series(
        "test", "--run", "--python", str(env), "--without", "lru-peek", "--format", "markdown", cwd=fork
    ).stdout
    assert "| passed | 5 | 6 | 5 |" in md, md
    assert f"**Without `lru-peek`**, 1 tests fail that pass with it:\n- `{PEEK}`\n" in md, md
    assert "<details><summary>2 tests fail on the base release too" in md


def test_trees_side_by_side_each_import_their_own_code_and_an_equal_tree_runs_once(fork: Path, env: Path) -> None:
    """Every tree's pytest at once (the default) or one at a time (--jobs 1): the same
    table, each tree's own changes imported. only:api-note is the base plus api-note, as
    without:lru-peek is: the same package files run once and both get the outcomes."""
    er.series_yaml(fork, "lru-peek", "api-note")
    args = ("--without", "lru-peek", "--tree", "only:api-note", "--no-cache")
    side = run_series("test", *args, "--run", "--python", str(env), "--json", cwd=fork)
    one = run_series("test", *args, "--jobs", "1", "--run", "--python", str(env), "--json", cwd=fork)
    for proc in (side, one):
        assert (
            "only:api-note: v0.30.0 + api-note; the same package files as without:lru-peek: its results"
        ) in proc.stderr, proc.stderr
        assert "only:api-note: done" not in proc.stderr, "the equal tree ran again"
    data = json.loads(side.stdout)
    assert data["tests"] == json.loads(one.stdout)["tests"]
    assert data["tests"][PEEK] == {
        "base": "failed",
        "series": "passed",
        "without:lru-peek": "failed",
        "only:api-note": "failed",
    }, data["tests"][PEEK]
    api = "tests/entrypoints/test_api.py::test_serve"
    assert data["tests"][api] == {
        "base": "passed",
        "series": "passed",
        "without:lru-peek": "passed",
        "only:api-note": "passed",
    }, data["tests"][api]
    assert [t["package_changes"] for t in data["trees"]] == [0, 2, 1, 1], data["trees"]


def test_compare_runs_each_topic_alone_on_the_base(fork: Path, env: Path) -> None:
    er.series_yaml(fork, "lru-peek", "peek-pr")  # they conflict: no series tree is built
    data = evidence(fork, env, "--compare", "lru-peek", "peek-pr")
    assert [t["name"] for t in data["trees"]] == ["base", "only:lru-peek", "only:peek-pr"]
    assert data["tests"][PEEK] == {"base": "failed", "only:lru-peek": "passed", "only:peek-pr": "passed"}
    # their test, on our cut: our peek raises on an empty policy
    assert data["tests"][PEEK_PR] == {"base": "failed", "only:lru-peek": "failed", "only:peek-pr": "passed"}
    assert data["worse"] == {}, "failing like the base is not worse"
    text = run_series("test", "--run", "--python", str(env), "--compare", "lru-peek", "peek-pr", cwd=fork).stdout
    assert f"only:lru-peek vs only:peek-pr: 1 tests differ:\n  {PEEK_PR}  (failed / passed)" in text, text


def test_selection_follows_the_import_graph(fork: Path, env: Path) -> None:
    er.series_yaml(fork, "lru-peek", "api-note")
    data = evidence(fork, env)
    sel = data["selection"]
    assert sel["steps"] == ["entrypoints", "kv-offload", "kv-offload-gpu"], sel
    assert sel["files"] == [
        "tests/entrypoints/test_api.py",  # imports the changed api.py
        "tests/v1/kv_offload/test_lru.py",  # imports lru.py
        "tests/v1/kv_offload/test_machine.py",  # `import a.b.c as x` form
        "tests/v1/kv_offload/test_manager.py",  # through manager.py
        "tests/v1/kv_offload/test_peek.py",  # the topic's own new test
        "tests/v1/kv_offload/test_zz_slow.py",
        "tests/v1/kv_offload_gpu/test_roundtrip.py",  # a GPU step's test that runs on a CPU
    ], sel
    assert sel["candidate_files"] == 9, "test_build and test_unrelated import nothing changed"
    assert data["tests"]["tests/v1/kv_offload_gpu/test_roundtrip.py::test_roundtrip"]["series"] == "passed"
    er.series_yaml(fork, "api-note")
    only_api = evidence(fork, env)["selection"]
    assert only_api["files"] == ["tests/entrypoints/test_api.py"], only_api


def test_base_results_are_cached(fork: Path, env: Path) -> None:
    er.series_yaml(fork, "lru-peek")
    first = run_series("test", "--run", "--python", str(env), "--json", cwd=fork)
    assert "from the cache" not in first.stderr
    second = run_series("test", "--run", "--python", str(env), "--json", cwd=fork)
    assert "base: 6 test files from the cache" in second.stderr, second.stderr
    one, two = json.loads(first.stdout), json.loads(second.stdout)
    assert one["tests"] == two["tests"]
    assert two["summary"]["base"]["files_from_cache"] == 6
    # a changed test file reruns; the others come from the cache
    sh(
        "git checkout -q topic/lru-peek && printf 'def test_more():\\n    pass\\n' >> tests/v1/kv_offload/test_lru.py"
        " && git commit -qam more && git checkout -q --detach v0.30.0",
        fork,
    )
    third = run_series("test", "--run", "--python", str(env), "--json", cwd=fork)
    assert "base: 5 test files from the cache" in third.stderr, third.stderr
    assert json.loads(third.stdout)["tests"]["tests/v1/kv_offload/test_lru.py::test_more"]["base"] == "passed"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["kill", "ctrl-c"])
def test_an_interrupted_run_prints_the_partial_table_and_cleans_up(
    fork: Path, env: Path, tmp_path: Path, signum: int
) -> None:
    er.series_yaml(fork, "lru-peek")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    marker = tmp_path / "slow-test-started"
    proc = subprocess.Popen(
        [sys.executable, "-m", "series", "test", "--run", "--python", str(env)],
        cwd=fork,
        env=dict(os.environ, TMPDIR=str(scratch), EVIDENCE_SLOW=str(marker)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for _ in range(600):  # wait (up to a minute) until pytest sits in the slow test
        if marker.exists() and marker.read_text() or proc.poll() is not None:
            break
        time.sleep(0.1)
    assert marker.exists(), proc.communicate()
    pytest_pid = int(marker.read_text())
    child_temp = Path(marker.with_name(marker.name + ".tmpdir").read_text())
    assert child_temp.is_relative_to(scratch) and child_temp.name == "t" and "series-evidence-" in str(child_temp), (
        f"the tests' temporary files belong in the run's scratch, not the user's TMPDIR: {child_temp}"
    )
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, (out, err)
    assert f"INTERRUPTED ({signal.Signals(signum).name}): partial results" in out, out
    assert "tests/v1/kv_offload/test_lru.py" not in out and " passed " in out, out
    assert "temporary files removed" in err
    assert list(scratch.iterdir()) == [], "no temporary directory is left"
    with pytest.raises(ProcessLookupError):
        os.kill(pytest_pid, 0)
    # pytest got the SIGINT (not a SIGKILL after the waits): it could end the run itself
    assert marker.with_name(marker.name + ".interrupted").exists()
    assert "series-" not in sh("git worktree list", fork)


LEFTOVER_PLUGIN = """\
import os, subprocess

def pytest_sessionstart(session):
    with open(os.environ["LEFTOVER_PIDS"], "a") as f:
        f.write(str(subprocess.Popen(["sleep", "300"]).pid) + " ")
"""


def test_what_the_tests_leave_running_ends_with_the_run(fork: Path, env: Path, tmp_path: Path) -> None:
    """A test's server that is never stopped would run on through the next tree's tests
    and after series: each pytest's session is ended with it."""
    from tests.harness import still_running

    er.series_yaml(fork, "lru-peek")
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "leftover_plugin.py").write_text(LEFTOVER_PLUGIN)
    pids = tmp_path / "leftovers"
    extra = {"PYTHONPATH": str(plugins), "PYTEST_PLUGINS": "leftover_plugin", "LEFTOVER_PIDS": str(pids)}
    run_series("test", "--run", "--python", str(env), cwd=fork, env=extra)
    left = [int(p) for p in pids.read_text().split()]
    assert len(left) >= 2 and not [p for p in left if still_running(p)], left


def test_a_tree_stopped_mid_run_is_not_worse_for_what_it_did_not_reach() -> None:
    """An interrupted run: a test the stopped tree never reached is not run, not worse;
    what it did run is judged, and a finished tree still answers for what it lacks."""
    from series.evidence.matrix import CaseVerdict, ResultMatrix, TreeInfo, render_text
    from series.evidence.testrun import CaseOutcome as O

    trees = [TreeInfo(n, "c0ffee", n, 1) for n in ("base", "series", "without:lru-peek")]
    m = ResultMatrix(trees, interrupted="SIGTERM", incomplete={"series"})
    m.results = {
        "base": {"t::a": O.PASSED, "t::b": O.PASSED, "t::c": O.PASSED},
        "series": {"t::a": O.FAILED},
        "without:lru-peek": {"t::a": O.PASSED},
    }
    assert m.verdicts("series") == {"t::a": CaseVerdict.WORSE}
    assert m.verdicts("without:lru-peek")["t::b"] is CaseVerdict.MISSING, "it finished: b is dropped"
    text = render_text(m)
    assert "stopped mid-run: series" in text and "t::b" not in text and "t::a  (passed -> failed)" in text, text
    m.incomplete = {"base"}  # the base stopped: what the series ran beyond it has no verdict
    m.results["series"] = {"t::a": O.PASSED, "t::z": O.FAILED}
    assert m.verdicts("series") == {"t::a": CaseVerdict.SAME, "t::b": CaseVerdict.MISSING, "t::c": CaseVerdict.MISSING}


def test_clear_errors(fork: Path, env: Path, tmp_path: Path) -> None:
    er.series_yaml(fork, "lru-peek")
    no_pytest = make_env(tmp_path / "bare", er.release_wheel(fork.parent / "upstream", tmp_path / "w1"), pytest=False)
    proc = run_series("test", "--run", "--python", str(no_pytest), cwd=fork, expect=1)
    assert "has no pytest\nhint: " in proc.stderr and "pip install pytest" in proc.stderr, proc.stderr
    other = make_env(tmp_path / "other", er.release_wheel(fork.parent / "upstream", tmp_path / "w2", "0.29.0"))
    proc = run_series("test", "--run", "--python", str(other), cwd=fork, expect=1)
    assert "has vllm 0.29.0 installed, but the series is based on v0.30.0\nhint: install vllm==0.30.0" in proc.stderr
    proc = run_series("test", "--run", "--python", sys.executable, cwd=fork, expect=1)
    assert "has no vllm installed" in proc.stderr, proc.stderr
    proc = run_series("test", "--run", "--python", str(env), "--step", "kv-ofload", cwd=fork, expect=1)
    assert proc.stderr.strip() == (
        "series: error: --step kv-ofload: no such step in .buildkite/test_areas\n"
        "hint: did you mean kv-offload, kv-offload-gpu?"
    ), proc.stderr
    proc = run_series("test", "--run", "--python", str(env), "--tree", "with:x", cwd=fork, expect=1)
    assert "tree 'with:x': not a tree name" in proc.stderr
    proc = run_series("test", "--without", "lru-peek", cwd=fork, expect=2)
    assert "go with --run" in proc.stderr


def test_the_patched_wheel_is_a_build_too(fork: Path, tmp_path: Path) -> None:
    """With `series build`'s wheel installed, the series tree is the build itself and base
    is the build with the series taken back out."""
    er.series_yaml(fork, "lru-peek")
    release = er.release_wheel(fork.parent / "upstream", tmp_path / "wheels")
    patched = Path(
        run_series("build", "--wheel", str(release), "--out", str(tmp_path / "dist"), cwd=fork)
        .stdout.strip()
        .splitlines()[-1]
    )
    python = make_env(tmp_path / "patched-env", patched)
    data = evidence(fork, python)
    assert "+series.g" in data["build"], data["build"]
    changes = {t["name"]: t["package_changes"] for t in data["trees"]}
    assert changes == {"base": 1, "series": 0}, changes
    assert data["tests"][PEEK] == {"base": "failed", "series": "passed"}


# -- what is not a Python interpreter; what a killed run leaves ------------------------------


def test_a_python_that_is_not_one_is_refused(fork: Path, tmp_path: Path) -> None:
    er.series_yaml(fork, "lru-peek")
    other_json = tmp_path / "other-json"
    other_json.write_text("#!/bin/sh\necho '{\"python\": \"3.12\", \"version\": \"0.30.0\"}'\n")
    wrong_types = tmp_path / "wrong-types"
    wrong_types.write_text(
        "#!/bin/sh\necho '{\"series_probe\": \"vllm-series probe 1\", \"version\": 5, "
        "\"location\": [], \"executable\": \"x\"}'\n"
    )
    for script in (other_json, wrong_types):
        script.chmod(0o755)
    for python, said in (
        ("/bin/true", "it printed nothing"),
        ("/bin/echo", "when asked to run a Python script"),
        (str(other_json), "not the probe's JSON"),
        (str(wrong_types), "'version' is not a string"),
        (str(tmp_path / "nosuch"), "cannot run it"),
        (str(tmp_path), "cannot run it"),
    ):
        proc = run_series("test", "--run", "--python", python, cwd=fork, expect=1)
        err = proc.stderr.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert err.startswith(f"series: error: --python {python} is not a Python interpreter: "), err
        assert said in err, (said, err)


def _scratch_in(temp: Path) -> tuple[subprocess.Popen[str], Path]:
    """A process that made its scratch directory in `temp` and sleeps in it."""
    code = (
        "import sys, time; from series.evidence.testrun import Scratch; s = Scratch(); "
        "print(s.root, flush=True); time.sleep(120)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env=dict(os.environ, TMPDIR=str(temp)), stdout=subprocess.PIPE, text=True
    )
    root = Path(proc.stdout.readline().strip())  # type: ignore[union-attr]
    assert root.is_dir() and root.parent == temp, root
    return proc, root


def test_the_next_run_removes_what_a_killed_run_left_and_keeps_a_live_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    from series.evidence import testrun

    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    killed, stale = _scratch_in(temp)
    live, running = _scratch_in(temp)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    unlocked = temp / f"series-evidence-{dead}-abcd"  # killed before it took its lock
    unlocked.mkdir()
    starting = temp / f"series-evidence-{os.getpid()}-efgh"  # alive, not locked yet
    starting.mkdir()
    other = temp / "series-evidence-notapid"
    other.mkdir()
    try:
        assert stale.is_dir() and (stale / "layout").is_dir()
        with testrun.Scratch() as mine:
            assert not stale.exists() and not unlocked.exists()
            assert running.is_dir() and starting.is_dir() and other.is_dir()
            assert mine.root.is_dir()
        assert not mine.root.exists()
    finally:
        live.kill()
        live.wait()
    assert running.is_dir()  # its owner's lock went with it: the next run takes it
    assert testrun.remove_stale(temp) == [running]
