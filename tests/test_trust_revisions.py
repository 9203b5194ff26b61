"""Revisions whose meaning moves by themselves (git's @{...} forms: the reflog, the
checkout history, a branch's upstream) are refused wherever a user gives series one, with
one rule (series.validate.stable_revision, applied where every revision is resolved):
series records what it was given and reads it again later (issue 33)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_series, sh
from tests.test_rebase import snapshot
from tests.test_trust_cli import one_line_error

SKIP = ("--skip-topic", "offload-evict-fix")


def moving(fork: Path) -> None:
    """Give every @{...} form a meaning here, so only the rule refuses them: a checkout
    history (@{-1} is v0.31.0), reflog entries, and an upstream for a branch."""
    sh("git checkout -q --detach v0.31.0 && git checkout -q --detach v0.30.0", fork)
    sh("git branch -q --set-upstream-to=upstream/main topic/sched-note", fork)
    for spec in ("@{-1}", "HEAD@{1}", "topic/sched-note@{upstream}", "HEAD@{2000-01-01}"):
        sh(f"git rev-parse --verify -q '{spec}^{{commit}}'", fork)


@pytest.mark.parametrize(
    "args",
    [
        ("rebase", "--onto", "@{-1}", *SKIP),
        ("rebase", "--onto", "HEAD@{1}", *SKIP),
        ("rebase", "--onto", "topic/sched-note@{upstream}", *SKIP),
        ("rebase", "--onto", "HEAD@{2000-01-01}", *SKIP),
    ],
)
def test_a_revision_that_moves_by_itself_is_refused(fork: Path, args: tuple[str, ...]) -> None:
    moving(fork)
    before = snapshot(fork)
    err = one_line_error(run_series(*args, cwd=fork, expect=None), "depends on the reflog", "hint: ")
    assert "git rev-parse" in err, err
    assert snapshot(fork) == before


def test_touches_between_a_moving_revision_is_an_error_not_an_answer(fork: Path) -> None:
    moving(fork)
    proc = run_series("touches", "vllm/", "--between", "@{-1}..v0.31.0", cwd=fork, expect=2)
    assert "depends on the reflog" in proc.stderr and proc.stdout == "", proc


def test_init_base_and_series_yaml_base_are_refused_the_same_way(fork: Path) -> None:
    moving(fork)
    text = (fork / "series.yaml").read_text()
    (fork / "series.yaml").write_text(text.replace("base: v0.30.0", "base: '@{-1}'"))
    err = one_line_error(run_series("check", cwd=fork, expect=None), "upstream.base", "depends on the reflog")
    assert "series.yaml:" in err, err
    (fork / "series.yaml").unlink()
    one_line_error(run_series("init", "--base", "@{-1}", cwd=fork, expect=None), "depends on the reflog")
    assert not (fork / "series.yaml").exists()
    run_series("init", "--base", "v0.30.0", cwd=fork)  # a name that stays put is taken
