"""series.yaml and resolutions/ live on the fork's default branch, never in a topic:
`series init` says so with the day-to-day loop (commands that run as written), and
`series check` warns about a topic whose own commits carry them (issue 33)."""

from __future__ import annotations

import shlex
from pathlib import Path

from tests.conftest import run_series, sh


def test_init_says_where_series_yaml_lives_and_its_loop_runs_as_written(fork: Path) -> None:
    (fork / "series.yaml").unlink()
    out = run_series("init", "--base", "v0.30.0", cwd=fork).stdout
    assert "on the fork's default branch" in out and "never on a topic branch" in out, out
    assert "resolutions/" in out and "integration branch, which series rebuilds" in out, out
    loop = [line.split("#")[0].strip() for line in out.splitlines()[out.splitlines().index("day to day:") + 1 :]]
    assert [c.split()[:2] for c in loop] == [["git", "switch"], ["series", "rebase"], ["series", "check"]], loop
    sh(loop[0], fork)
    sh("echo more >> vllm/v1/core/sched/scheduler.py && git commit -qam 'edit the topic'", fork)
    for command in loop[1:]:
        proc = run_series(*shlex.split(command)[1:], cwd=fork, expect=None)
        assert proc.returncode == 0, (command, proc.stdout, proc.stderr)


def test_check_warns_about_series_files_committed_in_a_topic(fork: Path) -> None:
    assert "warning" not in run_series("check", cwd=fork, expect=None).stdout
    sh(
        "git checkout -q topic/api-hello && mkdir -p resolutions/api-hello && echo x > resolutions/api-hello/a.txt "
        "&& cp series.yaml kept.yaml && git add -f series.yaml resolutions && git commit -qm 'oops: the series in a topic' "
        "&& git checkout -q --detach v0.30.0 && mv kept.yaml series.yaml",
        fork,
    )
    out = run_series("check", cwd=fork, expect=None).stdout
    warned = [line for line in out.splitlines() if "warning" in line and "topic/api-hello" in line]
    assert len(warned) == 1 and "series.yaml" in warned[0] and "resolutions/api-hello/a.txt" in warned[0], out
    assert "default branch" in warned[0], out
