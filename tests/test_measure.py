"""`series measure`: a workload run in named trees, judged against frozen predictions (issue 23).

The evidence repositories (tests/evidence_repos.py): `lru-peek` and `peek-pr` each add
LRUPolicy.peek, differently; the release wheel in a throwaway venv holds
`vllm/_compiled.py`, which no source tree has, so a workload that imports it ran on the
build.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from series.errors import SeriesError
from tests import evidence_repos as er
from tests.conftest import from_template, run_series
from tests.fakeenv import make_env
from tests.harness import refs_of, template_tree

# Reads the tree two ways: the file in its working directory (a checkout) and the module
# as Python imports it (a checkout on PYTHONPATH, or the build with the overlay).
CHECKOUT_WORKLOAD = '''\
import json, os
from pathlib import Path
text = Path("vllm/v1/kv_offload/cpu/policies/lru.py").read_text()
import vllm.v1.kv_offload.cpu.policies.lru as lru
json.dump({"has_peek": "def peek" in text, "imports_peek": hasattr(lru.LRUPolicy, "peek"),
           "size": len(text), "tree": os.environ["SERIES_TREE"]}, open(os.environ["SERIES_METRICS"], "w"))
'''

BUILD_WORKLOAD = '''\
import json, os
import vllm, vllm._compiled   # only the wheel has _compiled: a source tree on sys.path fails here
import vllm.v1.kv_offload.cpu.policies.lru as lru
policy = lru.LRUPolicy()
peek = None
if hasattr(lru.LRUPolicy, "peek"):
    try:
        peek = policy.peek()
    except StopIteration:
        peek = "raises"
json.dump({"has_peek": hasattr(lru.LRUPolicy, "peek"), "empty_peek": str(peek),
           "built": vllm._compiled.BUILT, "cwd_empty": not os.listdir(".")},
          open(os.environ["SERIES_METRICS"], "w"))
'''

PREDICTIONS = """\
predictions:
  - id: ours-peeks
    tree: ours
    metric: has_peek
    equals: true
    why: our topic adds peek
  - id: base-has-none
    tree: base
    metric: has_peek
    equals: false
    why: the release has no peek
  - id: same-size
    tree: theirs
    metric: size
    same_as: ours
    why: the two peeks look alike
"""


def _repos(root: Path) -> Path:
    return er.build(root / "repos")


def _with_env(root: Path) -> Path:
    fork = _repos(root)
    wheel = er.release_wheel(fork.parent / "upstream", root / "wheels")
    return make_env(root / "env", wheel)


@pytest.fixture
def fork(tmp_path: Path) -> Path:
    fork = from_template("evidence", _repos, tmp_path)
    er.series_yaml(fork, "lru-peek", "peek-pr")
    return fork


@pytest.fixture
def env(tmp_path: Path, fork: Path) -> Path:
    assert refs_of(fork.parent / "upstream") == refs_of(template_tree("evidence", _repos) / "repos/upstream")
    return from_template("evidence-env", _with_env, tmp_path, only=("wheels", "env"))


def _freeze(fork: Path, text: str = PREDICTIONS) -> Path:
    path = fork / "predictions.yaml"
    path.write_text(text)
    run_series("predict", "predictions.yaml", cwd=fork)
    return path


def _script(tmp_path: Path, body: str, name: str = "workload.py") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


TREES = ("--tree", "base", "--tree", "ours=only:lru-peek", "--tree", "theirs=topic:peek-pr")


def measure(fork: Path, *args: str, expect: int = 0) -> dict:
    proc = run_series("measure", "--predictions", "predictions.yaml", "--json", *args, cwd=fork, expect=expect)
    return json.loads(proc.stdout)


def test_an_unfrozen_or_edited_file_is_refused_before_anything_runs(fork: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    workload = _script(tmp_path, f"open({str(marker)!r}, 'w').write('x')\n")
    path = fork / "predictions.yaml"
    path.write_text(PREDICTIONS)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    err = run_series(
        "measure", "--predictions", "predictions.yaml", *TREES, "--", "python", str(workload), cwd=fork, expect=1
    ).stderr
    assert f"sha256:{sha}) was never frozen" in err and "series predict predictions.yaml" in err, err
    run_series("predict", "predictions.yaml", cwd=fork)
    path.write_text(PREDICTIONS.replace("equals: true", "equals: false"))
    edited = hashlib.sha256(path.read_bytes()).hexdigest()
    err = run_series(
        "measure", "--predictions", "predictions.yaml", *TREES, "--", "python", str(workload), cwd=fork, expect=1
    ).stderr
    assert f"frozen sha256:{sha}, now sha256:{edited}" in err, err
    assert not marker.exists(), "a refused measurement runs nothing"
    path.write_text(PREDICTIONS)
    err = run_series(
        "measure",
        "--predictions",
        "predictions.yaml",
        "--tree",
        "ours=only:lru-peek",
        "--",
        "python",
        str(workload),
        cwd=fork,
        expect=1,
    ).stderr
    assert "prediction base-has-none is about tree 'base', which this run does not measure" in err, err
    assert not marker.exists()


def test_each_tree_runs_in_its_own_checkout_and_predictions_are_judged(fork: Path, tmp_path: Path) -> None:
    _freeze(fork)
    workload = _script(tmp_path, CHECKOUT_WORKLOAD)
    data = measure(fork, *TREES, "--", "python", str(workload))
    assert [t["name"] for t in data["trees"]] == ["base", "ours", "theirs"]
    assert [t["spec"] for t in data["trees"]] == ["base", "only:lru-peek", "topic:peek-pr"]
    commits = [t["commit"] for t in data["trees"]]
    assert all(len(c) == 40 for c in commits) and commits[0] != commits[1]
    metrics = data["metrics"]
    assert {n: (m["has_peek"], m["imports_peek"], m["tree"]) for n, m in metrics.items()} == {
        "base": (False, False, "base"),
        "ours": (True, True, "ours"),
        "theirs": (True, True, "theirs"),
    }
    assert metrics["ours"]["size"] == len(er.PEEK) and metrics["theirs"]["size"] == len(er.PEEK_PR)
    assert data["runs"] == {n: [m] for n, m in metrics.items()} and data["repeat"] == 1
    held = {p["id"]: (p["held"], p["observed"]) for p in data["predictions"]}
    assert held == {
        "ours-peeks": (True, True),
        "base-has-none": (True, False),
        "same-size": (False, len(er.PEEK_PR)),
    }, held
    same = data["predictions"][2]
    assert same["compared_to"] == len(er.PEEK) and same["explanation"] is None
    assert same["claim"] == "size on theirs same as on ours" and same["why"] == "the two peeks look alike"
    assert data["predictions_sha256"] == hashlib.sha256(PREDICTIONS.encode()).hexdigest()
    assert data["command"] == ["python", str(workload)] and data["predictions_file"] == "predictions.yaml"
    assert list(data) == [
        "schema",
        "trees",
        "metrics",
        "runs",
        "environment",
        "predictions_file",
        "predictions_sha256",
        "predictions",
        "held",
        "command",
        "repeat",
        "python",
        "reproduce",
    ]
    assert data["schema"] == 1 and data["held"] == 2
    env = data["environment"]["base"]
    assert set(env) == {"vllm", "torch", "device", "cpu", "python", "platform"} and env["python"].count(".") == 2
    assert data["environment"]["ours"] == env
    assert data["reproduce"] == [
        "series predict predictions.yaml",
        "series measure --predictions predictions.yaml --tree base=base --tree "
        "ours=only:lru-peek --tree theirs=topic:peek-pr -- python " + str(workload),
    ]
    # the failure explained afterwards: struck in the text with its reason, the claim unchanged
    run_series("predict", "predictions.yaml", "--explain", "same-size", "their docstring is longer", cwd=fork)
    out = run_series(
        "measure", "--predictions", "predictions.yaml", *TREES, "--", "python", str(workload), cwd=fork
    ).stdout
    assert "FAILED  same-size: ~~size on theirs same as on ours~~ (observed " in out, out
    assert "why it failed: their docstring is longer" in out and "2 of 3 held" in out, out
    assert "  held    ours-peeks: has_peek on ours equals True (observed true)" in out, out
    assert "environment: vllm " in out, out
    err = run_series(
        "measure",
        "--predictions",
        "predictions.yaml",
        *TREES,
        "--format",
        "markdown",
        "--",
        "python",
        str(workload),
        cwd=fork,
        expect=2,
    ).stderr
    assert "--format" in err, "the markdown is series comment's (one renderer): measure has no --format"


def test_with_python_the_tree_is_laid_over_the_installed_build(fork: Path, env: Path, tmp_path: Path) -> None:
    _freeze(fork)
    # in the fork's root, beside its vllm/ source: only a safe sys.path keeps the build first
    workload = _script(fork, BUILD_WORKLOAD)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = run_series(
        "measure",
        "--predictions",
        "predictions.yaml",
        "--json",
        *TREES,
        "--python",
        str(env),
        "--",
        "python",
        str(workload),
        cwd=fork,
        env={"TMPDIR": str(scratch)},
    )
    data = json.loads(proc.stdout)
    assert "ours: v0.30.0 + lru-peek; 1 package files over the build" in proc.stderr, proc.stderr
    assert list(scratch.iterdir()) == [], "the shadows and work directories are removed"
    metrics = data["metrics"]
    assert all(m["built"] is True and m["cwd_empty"] is True for m in metrics.values()), metrics
    assert {n: (m["has_peek"], m["empty_peek"]) for n, m in metrics.items()} == {
        "base": (False, "None"),
        "ours": (True, "raises"),
        "theirs": (True, "None"),
    }, metrics
    assert data["environment"]["ours"]["vllm"] == "0.30.0" and data["python"] == str(env)
    assert "--python " + str(env) in data["reproduce"][1]


def test_a_stopped_measurement_stops_the_workload_and_cleans_up(fork: Path, tmp_path: Path) -> None:
    _freeze(fork)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    marker = tmp_path / "started"
    workload = _script(
        tmp_path, f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)\n"
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "series",
            "measure",
            "--predictions",
            "predictions.yaml",
            *TREES,
            "--",
            "python",
            str(workload),
        ],
        cwd=fork,
        env=dict(os.environ, TMPDIR=str(scratch)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for _ in range(600):
        if marker.exists() and marker.read_text() or proc.poll() is not None:
            break
        time.sleep(0.05)
    assert marker.exists(), proc.communicate()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM and out == "", (out, err)
    assert "interrupted (SIGTERM); the workload was stopped, temporary files removed" in err, err
    assert list(scratch.iterdir()) == []
    with pytest.raises(ProcessLookupError):
        os.kill(int(marker.read_text()), 0)


def test_what_the_workload_leaves_running_ends_with_its_run(fork: Path, tmp_path: Path) -> None:
    """A server the workload started and did not stop would hold its GPU and CPU through
    the next tree's run, and outlive series: each run's session is ended with it."""
    from tests.harness import still_running

    _freeze(fork)
    pids = tmp_path / "leftovers"
    workload = _script(
        tmp_path,
        "import json, os, subprocess\n"
        f"open({str(pids)!r}, 'a').write(str(subprocess.Popen(['sleep', '300']).pid) + ' ')\n"
        "json.dump({'has_peek': True, 'size': 1}, open(os.environ['SERIES_METRICS'], 'w'))\n",
    )
    run_series(
        "measure", "--predictions", "predictions.yaml", *TREES, "--", "python", str(workload), cwd=fork, expect=None
    )
    left = [int(p) for p in pids.read_text().split()]
    assert len(left) == 3 and not [p for p in left if still_running(p)], left


@pytest.mark.parametrize(
    "body, said",
    [
        ("pass\n", "the command wrote no metrics"),
        ("open(M, 'w').write('{not json')\n", "the metrics file is not JSON"),
        ("open(M, 'w').write('[1, 2]')\n", "the metrics file holds list, not an object"),
        ("open(M, 'w').write('{\"a\": \"' + 'x' * (1 << 20) + '\"}')\n", "the metrics file is 1048585 bytes"),
        ("open(M, 'w').write('{\"victims\": [1, 2]}')\n", "the metrics file: victims is a list; a metric is a number"),
        ("open(M, 'w').write('{\"a\": NaN}')\n", "the metrics file is not JSON (NaN is not a number"),
        ("open(M, 'w').write('[' * 200000)\n", "the metrics file is not JSON (maximum recursion depth"),
        ("import sys; print('boom'); sys.exit(3)\n", "the command exited 3 (it runs in the tree's checkout"),
    ],
)
def test_bad_workload_output_is_a_clean_error_naming_the_tree(fork: Path, tmp_path: Path, body: str, said: str) -> None:
    _freeze(fork, PREDICTIONS.split("  - id: base-has-none")[0])
    workload = _script(tmp_path, "import os\nM = os.environ['SERIES_METRICS']\n" + body)
    proc = run_series(
        "measure",
        "--predictions",
        "predictions.yaml",
        "--tree",
        "ours=only:lru-peek",
        "--",
        "python",
        str(workload),
        cwd=fork,
        expect=1,
    )
    assert f"tree ours: {said}" in proc.stderr, proc.stderr
    if "boom" in body:
        assert "by absolute path):\n  | boom\n" in proc.stderr, "the output's tail is shown"
    assert "Traceback" not in proc.stderr and proc.stdout == ""


REPEATED = '''\
import json, os
from pathlib import Path
count = Path(os.environ["COUNTER"]) / os.environ["SERIES_TREE"]
n = int(count.read_text()) if count.exists() else 0
count.write_text(str(n + 1))
values = {"ours": [5, 1, 3, 4], "base": [2.5, 2.5, 9, 0]}[os.environ["SERIES_TREE"]]
json.dump({"latency": values[n], "label": os.environ.get("LABEL", "same")}, open(os.environ["SERIES_METRICS"], "w"))
'''


def test_repeat_takes_the_median_and_non_numbers_must_agree(
    fork: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _freeze(
        fork,
        PREDICTIONS.replace("same_as: ours", "at_least: 0")
        .replace("tree: theirs", "tree: ours")
        .replace("metric: size", "metric: latency"),
    )
    counter = tmp_path / "counter"
    counter.mkdir()
    monkeypatch.setenv("COUNTER", str(counter))
    workload = _script(tmp_path, REPEATED)
    data = measure(
        fork, "--tree", "base", "--tree", "ours=only:lru-peek", "--repeat", "3", "--", "python", str(workload)
    )
    assert data["runs"]["ours"] == [{"latency": v, "label": "same"} for v in (5, 1, 3)]
    assert data["metrics"] == {"ours": {"latency": 3, "label": "same"}, "base": {"latency": 2.5, "label": "same"}}
    assert data["repeat"] == 3 and "--repeat 3" in data["reproduce"][1]
    for path in counter.iterdir():
        path.unlink()
    four = measure(
        fork, "--tree", "base", "--tree", "ours=only:lru-peek", "--repeat", "4", "--", "python", str(workload)
    )
    assert four["metrics"]["ours"]["latency"] == 3.5 and four["metrics"]["base"]["latency"] == 2.5
    for path in counter.iterdir():
        path.unlink()
    flip = _script(tmp_path, REPEATED.replace('os.environ.get("LABEL", "same")', 'str(n)'), "flip.py")
    err = run_series(
        "measure",
        "--predictions",
        "predictions.yaml",
        "--tree",
        "base",
        "--tree",
        "ours=only:lru-peek",
        "--repeat",
        "2",
        "--",
        "python",
        str(flip),
        cwd=fork,
        expect=1,
    ).stderr
    assert "tree base: metric label differs between runs (0, 1)" in err, err


def test_artifacts_collected_give_the_local_report(fork: Path, tmp_path: Path) -> None:
    _freeze(fork)
    workload = _script(tmp_path, CHECKOUT_WORKLOAD)
    out = tmp_path / "artifacts"
    local = measure(fork, *TREES, "--artifact", str(out), "--", "python", str(workload))
    tree = json.loads((out / "ours" / "tree.json").read_text())
    assert {k: tree[k] for k in ("schema", "tree", "spec", "repeat", "command")} == {
        "schema": 1,
        "tree": "ours",
        "spec": "only:lru-peek",
        "repeat": 1,
        "command": ["python", str(workload)],
    }
    assert tree["commit"] == local["trees"][1]["commit"] and tree["predictions_sha256"] == local["predictions_sha256"]
    assert tree["runs"] == local["runs"]["ours"]
    assert json.loads((out / "ours" / "metrics.json").read_text()) == local["metrics"]["ours"]
    assert json.loads((out / "ours" / "environment.json").read_text()) == local["environment"]["ours"]
    # as CI downloads them: each artifact in a directory of its own
    downloaded = tmp_path / "downloaded"
    for name in ("theirs", "base", "ours"):
        shutil.copytree(out / name, downloaded / f"measure-{name}" / name)
    collected = json.loads(
        run_series(
            "measure", "--collect", str(downloaded), "--predictions", "predictions.yaml", "--json", cwd=fork
        ).stdout
    )
    assert collected == local
    # one job per tree (another seat each), joined by --collect into the same report
    jobs = tmp_path / "jobs"
    for name in ("theirs", "ours", "base"):
        alone = measure(
            fork, *TREES, "--only", name, "--artifact", str(jobs / f"job-{name}"), "--", "python", str(workload)
        )
        assert [t["name"] for t in alone["trees"]] == [name] and alone["reproduce"] == local["reproduce"]
    assert measure(fork, "--collect", str(jobs)) == local
    text = run_series(
        "measure", "--predictions", "predictions.yaml", *TREES, "--", "python", str(workload), cwd=fork
    ).stdout
    assert run_series("measure", "--collect", str(out), "--predictions", "predictions.yaml", cwd=fork).stdout == text
    # a tree measured against other claims is refused, naming both hashes
    other = json.loads((out / "base" / "tree.json").read_text())
    other["predictions_sha256"] = "ab" * 32
    (out / "base" / "tree.json").write_text(json.dumps(other))
    err = run_series("measure", "--collect", str(out), "--predictions", "predictions.yaml", cwd=fork, expect=1).stderr
    assert "ab" * 32 in err and local["predictions_sha256"] in err, err
    # metrics changed after the run do not pass
    (out / "base" / "tree.json").write_text(json.dumps({**other, "predictions_sha256": local["predictions_sha256"]}))
    (out / "base" / "metrics.json").write_text(json.dumps({**local["metrics"]["base"], "has_peek": True}))
    err = run_series("measure", "--collect", str(out), "--predictions", "predictions.yaml", cwd=fork, expect=1).stderr
    assert "tree base's metrics are not what its runs in tree.json give" in err, err
    (out / "base" / "metrics.json").write_text("[]")
    err = run_series("measure", "--collect", str(out), "--predictions", "predictions.yaml", cwd=fork, expect=1).stderr
    assert "metrics.json holds list, not an object" in err and "Traceback" not in err, err


def test_collect_says_when_a_tree_is_not_what_was_measured(fork: Path, tmp_path: Path) -> None:
    """The report is what the jobs measured; a note says when a tree is another here now
    (its topic amended after the jobs ran) or its commit is not in this repository."""
    _freeze(fork)
    workload = _script(tmp_path, CHECKOUT_WORKLOAD)
    out = tmp_path / "artifacts"
    local = measure(fork, *TREES, "--artifact", str(out), "--", "python", str(workload))
    fresh = run_series("measure", "--collect", str(out), "--predictions", "predictions.yaml", "--json", cwd=fork)
    assert "note:" not in fresh.stderr, fresh.stderr
    subprocess.run(
        "git checkout -q topic/lru-peek && echo '# later' >> vllm/v1/kv_offload/cpu/policies/lru.py"
        " && git commit -qam later && git checkout -q --detach v0.30.0",
        shell=True,
        cwd=fork,
        check=True,
    )
    amended = run_series("measure", "--collect", str(out), "--predictions", "predictions.yaml", "--json", cwd=fork)
    assert json.loads(amended.stdout) == local, "the report stays what was measured"
    ours = local["trees"][1]["commit"][:12]
    assert f"note: tree ours (only:lru-peek) was measured at {ours}, but here it is " in amended.stderr, amended.stderr
    assert "tree theirs" not in amended.stderr and "tree base" not in amended.stderr, amended.stderr
    tree = json.loads((out / "theirs" / "tree.json").read_text())
    (out / "theirs" / "tree.json").write_text(json.dumps({**tree, "commit": "0123456789" * 4}))
    elsewhere = run_series("measure", "--collect", str(out), "--predictions", "predictions.yaml", cwd=fork)
    assert (
        "note: tree theirs (topic:peek-pr) was measured at 012345678901, which this repository does not have"
    ) in elsewhere.stderr, elsewhere.stderr


def test_usage_mistakes_are_usage_errors(fork: Path) -> None:
    _freeze(fork)
    for args, said in [
        ((), "name the trees"),
        (("--tree", "base"), "no command"),
        (("--tree", "only:x", "--", "true"), "give it a name"),
        (("--tree", "a=base", "--tree", "a=series", "--", "true"), "given twice"),
        (("--collect", ".", "--tree", "base"), "--collect makes the report"),
        (("--tree", "base", "--only", "ours", "--", "true"), "--only ours: not one of the --tree names"),
    ]:
        err = run_series("measure", "--predictions", "predictions.yaml", *args, cwd=fork, expect=2).stderr
        assert said in err, err
    err = run_series(
        "measure", "--predictions", "predictions.yaml", "--tree", "x=with:y", "--", "true", cwd=fork, expect=1
    ).stderr
    assert "tree 'with:y': not a tree name" in err, err


def test_the_report_reads_back_through_the_one_reader_of_reports(tmp_path: Path) -> None:
    """What `measure --json` writes is what `series comment --measurement` reads (its one
    reader, series.measure.measurement_report), hostile strings and all."""
    from series.measure import measurement
    from series.measure.measurement_report import read_report

    machine = measurement.MachineInfo("0.31.0", None, None, "cpu <!-- x", "3.11.7", "Linux")
    report = measurement.Measurement(
        trees=(measurement.MeasuredTree("ours", "only:a", "ab" * 20, "v0.31.0 + a"),),
        metrics={"ours": {"a|b": 1, "<!--": "--> [x](http://e)"}},
        runs={"ours": [{"a|b": 1, "<!--": "--> [x](http://e)"}]},
        environment={"ours": machine},
        predictions_file="p.yaml",
        predictions_sha256="cd" * 32,
        predictions=(
            measurement.PredictionResult(
                "p1", "ours", "a|b", "a|b on ours equals 2", 1, False, "*why*", "it was <details>"
            ),
        ),
        command=("python", "w.py"),
        repeat=1,
    )
    path = tmp_path / "report.json"
    path.write_text(json.dumps(measurement.to_json(report)))
    back = read_report(path)
    assert [t.name for t in back.trees] == ["ours"] and back.metrics == report.metrics
    assert back.predictions_sha256 == "cd" * 32 and back.command == ("python", "w.py")
    assert (
        measurement.median([1, 3]) == 2
        and measurement.median([2, 2]) == 2
        and isinstance(measurement.median([2, 2]), int)
    )
    path.write_text(json.dumps({**measurement.to_json(report), "schema": 2}))
    with pytest.raises(SeriesError, match="schema"):
        read_report(path)


def test_topic_is_an_alias_of_only_for_series_test_too() -> None:
    from series.evidence import named_trees
    from series.verbs.test import evidence

    assert evidence.tree_names(None, None, ("topic:a", "only:a", "without:b")) == [
        "base",
        "series",
        "only:a",
        "without:b",
    ]
    assert named_trees.check_spec("topic:a") == "only:a"
    with pytest.raises(SeriesError, match="not a tree name"):
        named_trees.check_spec("topic:")


def test_a_superseded_topic_is_measured_from_its_kept_branch(fork: Path, tmp_path: Path) -> None:
    """Their PR and ours: after `supersede`, ours is no longer active but its branch is kept,
    so `topic:ours` is that branch's change alone on the base, beside theirs."""
    run_series("supersede", "lru-peek", "--by", "peek-pr", cwd=fork)
    _freeze(fork)
    workload = _script(tmp_path, CHECKOUT_WORKLOAD)
    data = measure(
        fork,
        "--tree",
        "base",
        "--tree",
        "ours=topic:lru-peek",
        "--tree",
        "theirs=topic:peek-pr",
        "--",
        "python",
        str(workload),
    )
    sizes = {n: (m["has_peek"], m["size"]) for n, m in data["metrics"].items()}
    assert sizes["ours"] == (True, len(er.PEEK)) and sizes["theirs"] == (True, len(er.PEEK_PR)), sizes
    assert "superseded: its kept branch" in data["trees"][1]["describe"], data["trees"]
    # the series itself is unchanged: the superseded topic stays out of `series`
    data = measure(
        fork, "--tree", "base", "--tree", "ours=series", "--tree", "theirs=topic:peek-pr", "--", "python", str(workload)
    )
    assert data["metrics"]["ours"]["size"] == len(er.PEEK_PR)
