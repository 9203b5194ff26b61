"""`series measure --emit github|buildkite`: the measurement as jobs for the GPU seat.

The emitted workflow is linted as the shipped ones are (tests/test_workflows.py: actionlint,
zizmor, actions pinned by commit, no expression in a `run:` script), and the jobs are run
by a local simulated runner (tests/simrunner.py): every script as written, in a clone of
the fork. With a recording `series` the argv each job hands to `series measure` is checked
byte for byte for hostile values; with the real one (`python -m series` of this checkout)
`series measure --collect` over the uploaded artifacts must give the report a local run
gives.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from series.measure import jobs as mj
from series.measure.jobs import MeasureJobs, Seat
from tests import simrunner
from tests.harness import series_command
from tests.test_workflows import tool

ROOT = Path(__file__).resolve().parent.parent
PREDICTIONS = (
    b"predictions:\n  - id: peek\n    tree: ours\n    metric: has_peek\n    equals: true\n    why: it adds peek\n"
)
# what GitHub would evaluate, what Buildkite's upload would expand, what a shell would run
HOSTILE = (
    "it's \"quoted\" $HOME ${HOME} $(touch pwned) `touch pwned` ${{ secrets.GITHUB_TOKEN }} "
    "${{ github.token }} $$ ; rm -rf / #\n\tnext line \\ \u00e9"
)


def jobs(**over: object) -> MeasureJobs:
    values: dict[str, object] = dict(
        predictions="predictions.yaml",
        predictions_bytes=PREDICTIONS,
        sha256=hashlib.sha256(PREDICTIONS).hexdigest(),
        trees=(("ours", "only:lru-peek"), ("base", "base")),
        command=("python", "/fork/workload.py", HOSTILE, "", "--x=/fork/data"),
        repeat=2,
        overlay=True,
        cwd=".",
        fork="/fork",
        base="v0.30.0",
        remote="upstream",
        release="0.30.0",
        pip_spec="git+https://x@v1",
    )
    values.update(over)
    return MeasureJobs(**values)  # type: ignore[arg-type]


def write_workflow(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "lint" / ".github" / "workflows" / "series-measure.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


HOSTILE_TREES = (("ours", "only:lru-peek"), ("we${{ github.token }}ird $(x) '", "without:a${{ x }}b"))


def test_the_workflow_lints_clean_under_actionlint_and_zizmor(tmp_path: Path) -> None:
    path = write_workflow(tmp_path, mj.render(Seat.GITHUB, jobs(trees=HOSTILE_TREES, cwd="sub dir/${{ x }}")))
    actionlint, zizmor = tool("actionlint"), tool("zizmor")
    if actionlint is None or zizmor is None:
        pytest.skip("actionlint and zizmor come with the test extras (pip install -e '.[test]')")
    proc = subprocess.run([actionlint, "-no-color", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = subprocess.run([zizmor, "--offline", "--no-progress", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_value_in_a_script_is_what_the_lint_catches(tmp_path: Path) -> None:
    """The lint is not vacuous for this file: a value put into `run:` is a finding."""
    zizmor = tool("zizmor")
    if zizmor is None:
        pytest.skip("zizmor comes with the test extras")
    text = mj.render(Seat.GITHUB, jobs()).replace(
        'run: python -m pip install "$SERIES_PIP_SPEC"', "run: python -m pip install ${{ vars.SERIES_PIP_SPEC }}"
    )
    proc = subprocess.run(
        [zizmor, "--offline", "--no-progress", str(write_workflow(tmp_path, text))], capture_output=True, text=True
    )
    assert proc.returncode != 0 and "template-injection" in proc.stdout, proc.stdout


def test_actions_are_the_nightly_templates_pins_and_scripts_hold_no_value() -> None:
    nightly = (ROOT / "ci" / "github" / "nightly.yml").read_text()
    pins = set(re.findall(r"uses: (\S+@[0-9a-f]{40} # v[\d.]+)", nightly))
    workflow = YAML(typ="safe").load(mj.render(Seat.GITHUB, jobs(trees=HOSTILE_TREES)))
    text = mj.render(Seat.GITHUB, jobs(trees=HOSTILE_TREES))
    used = set(re.findall(r"uses: (.+)", text))
    assert used and used <= pins, used - pins
    assert workflow["permissions"] == {} and set(workflow["on"]) == {"workflow_dispatch"}
    for job in workflow["jobs"].values():
        assert job["permissions"] == {"contents": "read", "actions": "read"}
        for step in job["steps"]:
            assert "${{" not in step.get("run", ""), step
            assert "ours" not in step.get("run", "") and "lru-peek" not in step.get("run", "")
    # the user's values are in env: only, as GitHub will read them back
    runner = simrunner.Runner(Path("/nonexistent"), Path("/nonexistent"), [])
    envs = [{k: simrunner.github_value(v, runner) for k, v in job["env"].items()} for job in workflow["jobs"].values()]
    assert [e["MEASURE_ONLY"] for e in envs] == [n for n, _ in HOSTILE_TREES]
    assert all(shlex.split(e["MEASURE_TREES"]) == [f"{n}={s}" for n, s in HOSTILE_TREES] for e in envs)
    assert all(shlex.split(e["MEASURE_COMMAND"]) == list(jobs().command) for e in envs)
    assert [simrunner.github_value(j["name"], runner) for j in workflow["jobs"].values()] == [
        f"measure {n} ({s})" for n, s in HOSTILE_TREES
    ]


def test_buildkite_values_survive_the_upload_interpolation() -> None:
    pipeline = YAML(typ="safe").load(mj.render(Seat.BUILDKITE, jobs(trees=HOSTILE_TREES)))
    runner = simrunner.Runner(Path("/nonexistent"), Path("/nonexistent"), [])
    assert pipeline["env"]["SERIES_PIP_SPEC"] == "git+https://x@v1"
    for step, (name, spec) in zip(pipeline["steps"], HOSTILE_TREES):
        env = {k: simrunner.buildkite_value(v, runner) for k, v in step["env"].items()}
        assert env["MEASURE_ONLY"] == name
        assert shlex.split(env["MEASURE_TREES"]) == [f"{n}={s}" for n, s in HOSTILE_TREES]
        assert shlex.split(env["MEASURE_COMMAND"]) == list(jobs().command)
        assert simrunner.buildkite_value(step["label"], runner) == f":stopwatch: measure {name} ({spec})"
        assert simrunner.buildkite_value(step["agents"]["queue"], runner) == "gpu"
        assert step["artifact_paths"] == ["out/**"]


def test_a_trunk_tree_pins_the_trunk_in_both_seats() -> None:
    sha = "a" * 40
    github = YAML(typ="safe").load(mj.render(Seat.GITHUB, jobs(trunk=("main", sha))))
    runner = simrunner.Runner(Path("/nonexistent"), Path("/nonexistent"), [])
    for job in github["jobs"].values():
        env = {k: simrunner.github_value(v, runner) for k, v in job["env"].items()}
        assert (env["SERIES_TRUNK_BRANCH"], env["SERIES_TRUNK_SHA"]) == ("main", sha)
    pipeline = YAML(typ="safe").load(mj.render(Seat.BUILDKITE, jobs(trunk=("main", sha))))
    for step in pipeline["steps"]:
        env = {k: simrunner.buildkite_value(v, runner) for k, v in step["env"].items()}
        assert (env["SERIES_TRUNK_BRANCH"], env["SERIES_TRUNK_SHA"]) == ("main", sha)
        script = "\n".join(simrunner.buildkite_value(c, runner) for c in step["commands"])
        assert 'if [ -n "${SERIES_TRUNK_SHA:-}" ]; then' in script, script  # the step's shell expands it
    assert "SERIES_TRUNK_SHA" not in str(
        YAML(typ="safe").load(mj.render(Seat.GITHUB, jobs()))["jobs"]["measure-1"]["env"]
    )


def test_the_jobs_refuse_what_they_cannot_carry() -> None:
    from series.errors import SeriesError

    with pytest.raises(SeriesError, match="changed while"):
        jobs(sha256="0" * 64)
    with pytest.raises(SeriesError, match="at most"):
        big = b"#" * (mj.PREDICTIONS_LIMIT + 1)
        jobs(predictions_bytes=big, sha256=hashlib.sha256(big).hexdigest())


# -- the scripts run, with a `series` that records what it is asked ---------------------------------

RECORDER = r'''#!{python}
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
with open(os.environ["SIM_LOG"], "a") as log:
    log.write(json.dumps({{"tool": Path(sys.argv[0]).name, "argv": args, "cwd": os.getcwd()}}) + "\n")
name = Path(sys.argv[0]).name
if name == "python":
    if args[:2] != ["-m", "pip"]:
        os.execv({python!r}, [{python!r}, *args])
elif name == "series" and args[0] == "measure":
    tree = args[args.index("--only") + 1]
    out = Path(args[args.index("--artifact") + 1]) / tree
    out.mkdir(parents=True)
    (out / "tree.json").write_text(json.dumps({{"command": args[args.index("--") + 1:], "order": [tree]}}))
elif name == "series" and args[0] == "build":
    out = Path(args[args.index("--out") + 1])
    out.mkdir(parents=True)
    (out / "vllm-0.30.0+series.gbuilt-cp38-abi3-linux_x86_64.whl").write_text("built")
elif name == "gh" and args[:2] == ["run", "list"]:
    print(os.environ.get("SIM_NIGHTLY_RUN", ""))
elif name in ("gh", "buildkite-agent") and "download" in args:
    into = Path(args[args.index("--dir") + 1] if name == "gh" else args[3]) / ("" if name == "gh" else "nightly")
    into.mkdir(parents=True, exist_ok=True)
    (into / "vllm-0.30.0+series.gnightly-cp38-abi3-linux_x86_64.whl").write_text("nightly")
'''


def recording_runner(tmp_path: Path, nightly: bool) -> tuple[simrunner.Runner, Path]:
    fork = tmp_path / "fork"
    subprocess.run(["git", "init", "-q", "-b", "main", str(fork)], check=True)
    (fork / "workload.py").write_text("print('hi')\n")
    subprocess.run(["git", "-C", str(fork), "add", "."], check=True)
    subprocess.run(["git", "-C", str(fork), "commit", "-qm", "fork"], check=True)
    subprocess.run(["git", "-C", str(fork), "tag", "v0.30.0"], check=True)
    shims = tmp_path / "shims"
    shims.mkdir()
    for name in ("series", "python", "gh", "buildkite-agent"):
        (shims / name).write_text(RECORDER.format(python=sys.executable))
        (shims / name).chmod(0o755)
    log = tmp_path / "log.jsonl"
    extra = {"SIM_LOG": str(log), "SIM_NIGHTLY_RUN": "4242" if nightly else ""}
    if nightly:
        extra["SERIES_NIGHTLY_BUILD"] = "0190-nightly"
    return simrunner.Runner(fork, tmp_path / "work", [shims], extra=extra), log


def calls(log: Path, tool_name: str) -> list[list[str]]:
    return [c["argv"] for c in map(json.loads, log.read_text().splitlines()) if c["tool"] == tool_name]


@pytest.mark.parametrize(
    ("seat", "nightly"),
    [(Seat.GITHUB, True), (Seat.BUILDKITE, False), (Seat.BUILDKITE, True)],
    ids=["github-nightly-wheel", "buildkite-built-wheel", "buildkite-nightly-wheel"],
)
def test_each_job_hands_series_measure_the_values_byte_for_byte(tmp_path: Path, seat: Seat, nightly: bool) -> None:
    runner, log = recording_runner(tmp_path, nightly)
    fork = str(runner.fork)
    emitted = jobs(fork=fork, command=("python", f"{fork}/workload.py", HOSTILE, "", f"--x={fork}/data"))
    artifacts = tmp_path / "artifacts"
    run = simrunner.run_github if seat == Seat.GITHUB else simrunner.run_buildkite
    run(mj.render(seat, emitted), runner, artifacts)

    measured = calls(log, "series")
    assert [c[0] for c in measured] == (["predict", "measure"] if nightly else ["build", "predict", "measure"]) * 2
    for n, (name, spec) in enumerate(emitted.trees):
        checkout = runner.work / (f"measure-{n + 1}" if seat == Seat.GITHUB else f"series-measure-{n + 1}")
        assert (checkout / "predictions.yaml").read_bytes() == PREDICTIONS
        argv = [c for c in measured if c[0] == "measure"][n]
        assert argv == [
            "measure",
            "--predictions",
            "predictions.yaml",
            "--only",
            name,
            "--repeat",
            "2",
            "--artifact",
            "out",
            "--tree",
            "ours=only:lru-peek",
            "--tree",
            "base=base",
            "--python",
            str(runner.path[0] / "python"),
            "--",
            "python",
            f"{checkout}/workload.py",
            HOSTILE,
            "",
            f"--x={checkout}/data",
        ]
        uploaded = next(
            (artifacts / a)
            for a in (f"series-measure-{n + 1}", f"series-measure-{n + 1}/out")
            if (artifacts / a / name / "tree.json").is_file()
        )
        tree = json.loads((uploaded / name / "tree.json").read_text())
        assert tree["command"] == list(emitted.command) and tree["ran_as"] == argv[argv.index("--") + 1 :]
    pip = [p for p in calls(log, "python") if p[:2] == ["-m", "pip"]]
    wheel = "nightly" if nightly else "built"
    assert [p[:3] for p in pip] == [["-m", "pip", "install"], ["-m", "pip", "freeze"]] * 2
    assert all(f"+series.g{wheel}-" in p[3] for p in pip[::2]), pip
    assert not (tmp_path / "pwned").exists() and not any(runner.work.rglob("pwned"))


def test_a_job_whose_predictions_were_edited_stops_before_measuring(tmp_path: Path) -> None:
    runner, log = recording_runner(tmp_path, nightly=True)
    text = mj.render(Seat.GITHUB, jobs(fork=str(runner.fork), trees=(("ours", "series"),)))
    tampered = text.replace(base64_of(PREDICTIONS), base64_of(PREDICTIONS.replace(b"true", b"false")))
    assert tampered != text
    with pytest.raises(AssertionError, match="not the frozen ones"):
        simrunner.run_github(tampered, runner, tmp_path / "artifacts")
    assert [c[0] for c in calls(log, "series")] == []


def base64_of(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


# -- the whole loop: emit here, run there, collect here --------------------------------------------

# Over the build (--python): the tree's peek is what the overlay lays over the patched
# wheel; `arg` (its hash: a metric is one line) comes back through every quoting layer;
# `built` only the wheel has.
WORKLOAD = '''\
import hashlib, json, os, sys
import vllm._compiled
import vllm.v1.kv_offload.cpu.policies.lru as lru
json.dump({"has_peek": hasattr(lru.LRUPolicy, "peek"), "built": vllm._compiled.BUILT,
           "arg": hashlib.sha256(sys.argv[1].encode()).hexdigest(),
           "tree": os.environ["SERIES_TREE"]}, open(os.environ["SERIES_METRICS"], "w"))
'''
LOOP_PREDICTIONS = """\
predictions:
  - id: ours-peeks
    tree: ours
    metric: has_peek
    equals: true
    why: our topic adds peek
  - id: base-peeks-too
    tree: base
    metric: has_peek
    same_as: ours
    why: a claim that fails, kept
"""
SHIM = '#!/bin/sh\n{variables}exec {command} "$@"\n'  # `python -m series`, forked by the fork server


def _repos(root: Path) -> Path:
    from tests import evidence_repos as er

    return er.build(root / "repos")


@pytest.fixture
def pushed(tmp_path: Path) -> Path:
    """The fork as the GPU seat's checkout sees it: series.yaml and the workload committed,
    the predictions frozen here (and not committed), the nightly's integration branch."""
    from tests import evidence_repos as er
    from tests.conftest import from_template, run_series, sh

    fork = from_template("evidence", _repos, tmp_path)
    er.series_yaml(fork, "lru-peek", "api-note")
    (fork / "workload.py").write_text(WORKLOAD)
    sh("git checkout -q -B main && git add series.yaml workload.py && git commit -qm 'the fork, pushed'", fork)
    (fork / "predictions.yaml").write_text(LOOP_PREDICTIONS)
    run_series("predict", "predictions.yaml", cwd=fork)
    release = er.release_wheel(fork.parent / "upstream", tmp_path / "release")
    run_series("build", "--wheel", str(release), "--out", str(tmp_path / "nightly"), cwd=fork)
    return fork


def loop_runner(tmp_path: Path, fork: Path) -> simrunner.Runner:
    from tests.fakeenv import make_env

    # no vllm yet: the job installs the wheel, with pip, as a runner's setup-python has it
    python = make_env(tmp_path / "runner-python", None, everything=True)
    shims = tmp_path / "loop-shims"
    shims.mkdir()
    command, extra = series_command()
    variables = "".join(f"{key}={shlex.quote(value)} " for key, value in extra.items())
    (shims / "series").write_text(SHIM.format(variables=variables, command=command))
    (shims / "gh").write_text(
        "#!/bin/sh\n# run list: the nightly's run; run download RUN --name N --dir D\n"
        f'case "$1 $2" in "run list") echo 4242 ;; "run download") '
        f'mkdir -p "$7" && cp {shlex.quote(str(tmp_path / "nightly"))}/*.whl "$7" ;; esac\n'
    )
    for shim in shims.iterdir():
        shim.chmod(0o755)
    return simrunner.Runner(
        fork, tmp_path / "work", [python.parent, shims], extra={"SERIES_UPSTREAM_URL": str(fork.parent / "upstream")}
    )


@pytest.mark.parametrize("seat", list(Seat))
def test_the_jobs_run_elsewhere_and_collect_gives_the_local_report(pushed: Path, tmp_path: Path, seat: Seat) -> None:
    from tests.conftest import run_series

    runner = loop_runner(tmp_path, pushed)
    python = str(runner.path[0] / "python")
    trees = ("--tree", "ours=only:lru-peek", "--tree", "base")
    cmd = ("--", "python", str(pushed / "workload.py"), HOSTILE)
    marker_before = sorted(p.name for p in pushed.iterdir())
    emitted = run_series(
        "measure",
        "--predictions",
        "predictions.yaml",
        *trees,
        "--python",
        python,
        "--emit",
        seat.value,
        "--out",
        "-",
        *cmd,
        cwd=pushed,
    )
    assert sorted(p.name for p in pushed.iterdir()) == marker_before, "--out - writes nothing"
    assert "series measure --collect DIR --predictions predictions.yaml" in emitted.stderr
    if seat == Seat.BUILDKITE:
        runner.extra["SERIES_NIGHTLY_BUILD"] = "0190-nightly"
        (runner.path[1] / "buildkite-agent").write_text(
            '#!/bin/sh\nmkdir -p "$4/nightly" && cp ' + shlex.quote(str(tmp_path / "nightly")) + '/*.whl "$4/nightly"\n'
        )
        (runner.path[1] / "buildkite-agent").chmod(0o755)
    artifacts = tmp_path / "downloaded"
    (simrunner.run_github if seat == Seat.GITHUB else simrunner.run_buildkite)(emitted.stdout, runner, artifacts)
    assert len(list(artifacts.rglob("tree.json"))) == 2

    collected = json.loads(
        run_series(
            "measure", "--collect", str(artifacts), "--predictions", "predictions.yaml", "--json", cwd=pushed
        ).stdout
    )
    local = json.loads(
        run_series(
            "measure", "--predictions", "predictions.yaml", *trees, "--python", python, "--json", *cmd, cwd=pushed
        ).stdout
    )
    assert collected == local
    arg = hashlib.sha256(HOSTILE.encode()).hexdigest()
    assert local["metrics"]["ours"] == {"has_peek": True, "built": True, "arg": arg, "tree": "ours"}
    assert local["metrics"]["base"]["has_peek"] is False
    assert [(p["id"], p["held"]) for p in local["predictions"]] == [("ours-peeks", True), ("base-peeks-too", False)]


def test_emit_refuses_unfrozen_predictions_and_never_runs_the_workload(pushed: Path, tmp_path: Path) -> None:
    from tests.conftest import run_series

    marker = tmp_path / "ran"
    cmd = ("--", "python", "-c", f"open({str(marker)!r}, 'w')")
    (pushed / "edited.yaml").write_text(LOOP_PREDICTIONS)
    err = run_series(
        "measure",
        "--predictions",
        "edited.yaml",
        "--tree",
        "ours=only:lru-peek",
        "--tree",
        "base",
        "--emit",
        "github",
        *cmd,
        cwd=pushed,
        expect=1,
    ).stderr
    assert "was never frozen" in err, err
    assert not (pushed / ".github").exists()
    out = run_series(
        "measure",
        "--predictions",
        "predictions.yaml",
        "--tree",
        "ours=only:lru-peek",
        "--tree",
        "base",
        "--emit",
        "github",
        *cmd,
        cwd=pushed,
    ).stdout
    written = pushed / ".github" / "workflows" / "series-measure.yml"
    assert "wrote .github/workflows/series-measure.yml: 2 job(s)" in out and written.is_file(), out
    assert YAML(typ="safe").load(written.read_text())["jobs"].keys() == {"measure-1", "measure-2"}
    assert not marker.exists(), "--emit runs nothing here"
    err = run_series(
        "measure",
        "--predictions",
        "predictions.yaml",
        "--tree",
        "ours=only:no-such-topic",
        "--tree",
        "base",
        "--emit",
        "buildkite",
        *cmd,
        cwd=pushed,
        expect=1,
    ).stderr
    assert "no-such-topic" in err and not (pushed / ".buildkite" / "series-measure.yml").exists(), err
    run_series(
        "measure",
        "--predictions",
        "predictions.yaml",
        "--tree",
        "ours=only:lru-peek",
        "--tree",
        "base",
        "--emit",
        "github",
        "--artifact",
        "x",
        *cmd,
        cwd=pushed,
        expect=2,
    )


def test_emit_says_when_the_workload_is_not_in_the_checkout(pushed: Path) -> None:
    from tests.conftest import run_series

    (pushed / "local-only.py").write_text("pass\n")
    proc = run_series(
        "measure",
        "--predictions",
        "predictions.yaml",
        "--tree",
        "ours=only:lru-peek",
        "--tree",
        "base",
        "--emit",
        "buildkite",
        "--out",
        "jobs.yml",
        "--json",
        "--",
        "python",
        str(pushed / "local-only.py"),
        cwd=pushed,
    )
    data = json.loads(proc.stdout)
    assert data["path"] == "jobs.yml" and (pushed / "jobs.yml").is_file()
    assert [n for n in data["notes"] if n.startswith("local-only.py: ")], data["notes"]
    assert data["next"][-1] == "series measure --collect DIR --predictions predictions.yaml"


def test_a_job_on_the_prs_tree_measures_the_trunk_the_emit_saw(tmp_path: Path) -> None:
    """`pr:TOPIC` and `main` stand on upstream's trunk: the runner's checkout of the fork has
    no upstream/main, and upstream's main moves on after the jobs are written. The job pins
    the trunk commit the emit resolved, so the runner replays the same PR tree."""
    from tests import evidence_repos as er
    from tests import test_pr_tree as pt
    from tests.conftest import from_template, run_series, sh
    from tests.repos import git

    fork = from_template("evidence", _repos, tmp_path)
    upstream = fork.parent / "upstream"
    er.series_yaml(fork, "lru-peek")
    (fork / "workload.py").write_text(pt.WORKLOAD)
    sh("git checkout -q -B main && git add series.yaml workload.py && git commit -qm 'the fork, pushed'", fork)
    main = pt.move_main(fork, pt.MAIN)
    git(fork, "checkout", "-q", "main")
    git(fork, "push", "-q", str(upstream), f"{main}:refs/moved/main")
    git(upstream, "update-ref", "refs/heads/main", main)  # upstream's main, as fetched here
    (fork / "predictions.yaml").write_text(pt.PREDICTIONS)
    run_series("predict", "predictions.yaml", cwd=fork)
    trees = ("--tree", "main", "--tree", "pr=pr:lru-peek")
    cmd = ("--", "python", str(fork / "workload.py"))
    emitted = run_series(
        "measure", "--predictions", "predictions.yaml", *trees, "--emit", "github", "--out", "-", *cmd, cwd=fork
    )
    # upstream's main moves on after the emit: the jobs still measure the trunk seen here
    later = pt.commit_on(
        upstream, main, {"vllm/v1/kv_offload/later.py": "LATER = True\n"}, "main again", "2026-03-01T00:00:00Z"
    )
    git(upstream, "update-ref", "refs/heads/main", later)
    # the job installs the nightly's patched wheel into the runner's own python
    release = er.release_wheel(upstream, tmp_path / "release")
    run_series("build", "--wheel", str(release), "--out", str(tmp_path / "nightly"), cwd=fork)
    runner = loop_runner(tmp_path, fork)
    runner.vars["SERIES_UPSTREAM_URL"] = str(upstream)
    artifacts = tmp_path / "downloaded"
    simrunner.run_github(emitted.stdout, runner, artifacts)
    collected = run_series(
        "measure", "--collect", str(artifacts), "--predictions", "predictions.yaml", "--json", cwd=fork
    )
    local = run_series("measure", "--predictions", "predictions.yaml", *trees, "--json", *cmd, cwd=fork)
    assert json.loads(collected.stdout) == json.loads(local.stdout)
    assert "note:" not in collected.stderr, collected.stderr
    commits = {t["name"]: t["commit"] for t in json.loads(local.stdout)["trees"]}
    assert commits["main"] == main and git(fork, "rev-parse", f"{commits['pr']}^").strip() == main
