"""`series predict`: predictions frozen before a measurement, judged, explained (issue 23)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pygit2
import pytest

from series.measure import predictions
from series.errors import SeriesError
from tests.conftest import run_series

TEXT = """\
predictions:
  - id: same-sum
    tree: theirs
    metric: tokens_sum
    equals: 100064
    why: "their ranking keeps the same victims on our workload"
  - id: fewer-evictions
    tree: ours
    metric: evictions
    at_most: 10
    why: lazy eviction
"""


def _write(fork: Path, text: str = TEXT, name: str = "predictions.yaml") -> Path:
    path = fork / name
    path.write_text(text)
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_freeze_is_journaled_and_shown_by_log(fork: Path) -> None:
    path = _write(fork)
    out = run_series("predict", "predictions.yaml", cwd=fork).stdout
    assert f"froze predictions.yaml sha256:{_sha(path)[:12]}" in out and "(2 predictions)" in out, out
    log = run_series("log", cwd=fork).stdout
    assert f"predict  froze predictions.yaml sha256:{_sha(path)[:12]}… (2 predictions)" in log, log
    assert "a record" in log, log
    rows = json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"]
    assert rows[0]["command"] == "predict" and rows[0]["record"] is True, rows
    record = predictions.frozen(pygit2.Repository(str(fork)), "predictions.yaml")
    assert record is not None and record.sha256 == _sha(path)
    assert record.ids == ("same-sum", "fewer-evictions") and record.time and record.previous == ()
    # freezing the same bytes again records nothing
    out = run_series("predict", "predictions.yaml", cwd=fork).stdout
    assert "frozen already, unchanged" in out, out
    assert len(json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"]) == 1


def test_an_edited_file_is_refused_unless_refrozen_which_keeps_both(fork: Path) -> None:
    path = _write(fork)
    run_series("predict", "predictions.yaml", cwd=fork)
    first = _sha(path)
    path.write_text(TEXT.replace("100064", "100065"))
    second = _sha(path)
    err = run_series("predict", "predictions.yaml", cwd=fork, expect=1).stderr
    assert first in err and second in err and "--refreeze" in err, err
    repo = pygit2.Repository(str(fork))
    with pytest.raises(SeriesError) as refused:
        predictions.require_frozen(repo, path)
    assert first in str(refused.value) and second in str(refused.value)
    out = run_series("predict", "predictions.yaml", "--refreeze", cwd=fork).stdout
    assert "refroze" in out and "earlier freeze" in out and first in out, out
    record = predictions.require_frozen(repo, path).record
    assert record.sha256 == second and [f.sha256 for f in record.previous] == [first]
    run_series("predict", "predictions.yaml", "--explain", "same-sum", "a reason", cwd=fork)
    path.write_text(TEXT)
    run_series("predict", "predictions.yaml", "--refreeze", cwd=fork)
    out = run_series("predict", "predictions.yaml", "--show", cwd=fork).stdout
    assert f"of the earlier freeze sha256:{second[:12]}" in out, out
    data = json.loads(run_series("predict", "predictions.yaml", "--show", "--json", cwd=fork).stdout)
    assert data["schema"] == 1 and data["frozen"]["previous"][0]["sha256"] == first, data


def test_an_unfrozen_file_is_refused_by_require_frozen(fork: Path) -> None:
    path = _write(fork)
    with pytest.raises(SeriesError, match="never frozen") as refused:
        predictions.require_frozen(pygit2.Repository(str(fork)), path)
    assert _sha(path) in str(refused.value)
    out = run_series("predict", "predictions.yaml", "--show", cwd=fork).stdout
    assert "not frozen" in out and "same-sum: tokens_sum on theirs equals 100064" in out, out


def test_explanations_are_recorded_and_never_rewrite_the_claim(fork: Path) -> None:
    path = _write(fork)
    run_series("predict", "predictions.yaml", cwd=fork)
    before = path.read_bytes()
    run_series("predict", "predictions.yaml", "--explain", "same-sum", "their ranking breaks ties by age", cwd=fork)
    assert path.read_bytes() == before
    out = run_series("predict", "predictions.yaml", cwd=fork).stdout
    assert "tokens_sum on theirs equals 100064" in out and "their ranking breaks ties by age" in out, out
    data = json.loads(run_series("predict", "predictions.yaml", "--show", "--json", cwd=fork).stdout)
    assert data["explanations"][0]["id"] == "same-sum" and data["predictions"][0]["expected"] == 100064
    err = run_series("predict", "predictions.yaml", "--explain", "nope", "x", cwd=fork, expect=1).stderr
    assert "no prediction 'nope'" in err, err
    path.write_text(TEXT + "\n# edited\n")
    err = run_series("predict", "predictions.yaml", "--explain", "same-sum", "x", cwd=fork, expect=1).stderr
    assert "changed since it was frozen" in err, err
    other = _write(fork, name="other.yaml")
    err = run_series("predict", "other.yaml", "--explain", "same-sum", "x", cwd=fork, expect=1).stderr
    assert "never frozen" in err and _sha(other) in err, err


def test_undo_passes_over_a_freeze(fork: Path) -> None:
    _write(fork)
    run_series("predict", "predictions.yaml", cwd=fork)
    err = run_series("undo", cwd=fork, expect=1).stderr
    assert "nothing to undo" in err, err
    assert predictions.frozen(pygit2.Repository(str(fork)), "predictions.yaml") is not None


def test_a_path_is_relative_to_dash_c_and_journaled_repo_relative(fork: Path) -> None:
    (fork / "evidence").mkdir()
    _write(fork, name="evidence/p.yaml")
    out = run_series("-C", str(fork / "evidence"), "predict", "p.yaml", cwd=fork.parent).stdout
    assert "froze evidence/p.yaml" in out, out


def _pred(kind: str, expected: object, tree: str = "a") -> predictions.Prediction:
    return predictions.Prediction("x", tree, "m", predictions.ClaimKind(kind), expected, "why", 1)  # type: ignore[arg-type]


METRICS = {"a": {"m": 10, "flag": True, "name": "lru"}, "b": {"m": 10.0}, "c": {"m": 11}}


@pytest.mark.parametrize(
    "kind,expected,held",
    [
        ("equals", 10, True),
        ("equals", 10.0, True),
        ("equals", 11, False),
        ("equals", True, False),
        ("at_least", 10, True),
        ("at_least", 10.5, False),
        ("at_most", 10, True),
        ("at_most", 9, False),
        ("between", (9, 10), True),
        ("between", (10.5, 12), False),
        ("same_as", "b", True),
        ("same_as", "c", False),
    ],
)
def test_judge_every_claim_kind(kind: str, expected: object, held: bool) -> None:
    verdict = predictions.judge(_pred(kind, expected), METRICS)
    assert verdict.held is held and verdict.observed == 10


def test_judge_bools_strings_and_missing_metrics() -> None:
    flag = predictions.Prediction("x", "a", "flag", predictions.ClaimKind.EQUALS, True, "w", 1)
    assert predictions.judge(flag, METRICS).held is True
    assert (
        predictions.judge(
            predictions.Prediction("x", "a", "flag", predictions.ClaimKind.EQUALS, 1, "w", 1), METRICS
        ).held
        is False
    )
    assert (
        predictions.judge(
            predictions.Prediction("x", "a", "name", predictions.ClaimKind.EQUALS, "lru", "w", 1), METRICS
        ).held
        is True
    )
    assert (
        predictions.judge(
            predictions.Prediction("x", "a", "name", predictions.ClaimKind.AT_LEAST, 1, "w", 1), METRICS
        ).held
        is False
    )
    assert predictions.judge(_pred("equals", 10, tree="zz"), METRICS) == predictions.PredictionVerdict(None, None)
    assert predictions.judge(_pred("same_as", "zz"), METRICS).held is None


BAD = [
    (b"predictions: [\n  - id: x\n", "p.yaml:", "malformed YAML"),
    (b"- just a list\n", "p.yaml:1:", "expected a mapping"),
    (
        TEXT.replace("    at_most: 10\n", "    at_most: 10\n    at_least: 1\n").encode(),
        "p.yaml:11:",
        "exactly one claim",
    ),
    (TEXT.replace("fewer-evictions", "same-sum").encode(), "p.yaml:7:", "already the id"),
    (TEXT.replace("    why: lazy eviction\n", "").encode(), "p.yaml:7:", "why: required"),
    (TEXT.replace("at_most: 10", "between: [1, 2, 3]").encode(), "p.yaml:10:", "two numbers"),
    (TEXT.replace("at_most: 10", "between: [3, 1]").encode(), "p.yaml:10:", "low bound comes first"),
    (TEXT.replace("lazy eviction", "lazy \xe9viction").encode("latin-1"), "p.yaml:11:", "not UTF-8"),
    (TEXT.replace("fewer-evictions", "Fewer Evictions").encode(), "p.yaml:7:", "is not an id"),
    (TEXT.replace("tree: ours", "tree: ''").encode(), "p.yaml:8:", "tree: required"),
    (TEXT.replace("at_most: 10", "at_mots: 10").encode(), "p.yaml:10:", "did you mean 'at_most'"),
    (b"predictions: []\n", "p.yaml:1:", "non-empty list"),
]


@pytest.mark.parametrize("data,where,what", BAD)
def test_a_malformed_file_is_exit_1_naming_file_and_line(fork: Path, data: bytes, where: str, what: str) -> None:
    (fork / "p.yaml").write_bytes(data)
    err = run_series("predict", "p.yaml", cwd=fork, expect=1).stderr
    assert where in err and what in err, err
    assert "Traceback" not in err
    assert not any(
        op["command"] == "predict" for op in json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"]
    )


def test_the_options_go_one_at_a_time(fork: Path) -> None:
    _write(fork)
    run_series("predict", "predictions.yaml", "--show", "--refreeze", cwd=fork, expect=2)
    assert "no such file" in run_series("predict", "missing.yaml", cwd=fork, expect=1).stderr
