from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_series, sh


def _edit(fork: Path, old: str, new: str) -> None:
    path = fork / "series.yaml"
    text = path.read_text()
    assert old in text, (old, text)
    path.write_text(text.replace(old, new))


def test_check_names_each_file_outside_its_scope(fork: Path) -> None:
    # the example fork's offload fix also adds a test outside its claimed scope
    proc = run_series("check", cwd=fork, expect=1)
    assert proc.stdout == (
        "series.yaml:15: topics (offload-evict-fix).scope: 1 file outside scope [vllm/v1/kv_offload/]:\n"
        "    tests/v1/kv_offload/test_lru.py\n"
        "check failed: 1 problem in 1 of 4 active topics\n"
    ), proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr


def test_check_ok_is_one_line(fork: Path) -> None:
    _edit(fork, "scope: [vllm/v1/kv_offload/]", "scope: [vllm/v1/kv_offload/, 'tests/**/test_lru.py']")
    out = run_series("check", cwd=fork).stdout
    assert out == ("ok: 4 topics (4 active) over v0.30.0: branches exist and sit on the base, 3 scope claims hold\n"), (
        out
    )


def test_check_reports_every_problem_not_just_the_first(fork: Path) -> None:
    sh("git branch -D -q topic/sched-note", fork)
    _edit(fork, "scope: [vllm/entrypoints/]", "scope: [vllm/v1/]")
    proc = run_series("check", cwd=fork, expect=1)
    lines = proc.stdout.splitlines()
    assert lines[0] == (
        "series.yaml:9: topics (sched-note).branch: branch 'topic/sched-note' does not exist "
        "(create it, fix the name, or set status: dropped)"
    ), proc.stdout
    assert "series.yaml:20: topics (api-hello).scope: 1 file outside scope [vllm/v1/]:" in lines, proc.stdout
    assert "    vllm/entrypoints/openai/api_server.py" in lines, proc.stdout
    assert lines[-1] == "check failed: 3 problems in 3 of 4 active topics", proc.stdout


def test_check_unknown_base_names_line_and_key(fork: Path) -> None:
    _edit(fork, "base: v0.30.0", "base: v0.29.9")
    proc = run_series("check", cwd=fork, expect=1)
    assert proc.stdout.startswith("series.yaml:4: upstream.base: unknown ref 'v0.29.9'"), proc.stdout
    assert "nearest tags: v0.30.0" in proc.stdout, proc.stdout


def test_check_flags_a_topic_on_another_base(fork: Path) -> None:
    sh(
        "git checkout -q -B topic/api-hello v0.31.0 && echo x >> vllm/entrypoints/openai/api_server.py && "
        "git commit -qam 'hello on v0.31' && git checkout -q --detach v0.30.0",
        fork,
    )
    _edit(fork, "scope: [vllm/v1/kv_offload/]", "scope: [vllm/v1/kv_offload/, tests/]")
    proc = run_series("check", cwd=fork, expect=1)
    assert "series.yaml:19: topics (api-hello).branch: 'topic/api-hello' sits on" in proc.stdout, proc.stdout
    assert "not on v0.30.0: rebase it onto the base" in proc.stdout, proc.stdout
    # upstream's own commits in the branch are not charged to the topic's scope
    assert "outside scope" not in proc.stdout, proc.stdout


def test_check_stacked_topics(fork: Path) -> None:
    _edit(fork, "scope: [vllm/v1/kv_offload/]", "scope: [vllm/v1/kv_offload/, tests/]")
    sh(
        "git checkout -q -B topic/offload-more topic/offload-evict-fix && "
        "echo '# more' >> vllm/v1/kv_offload/cpu/policies/lru.py && git commit -qam more && "
        "git checkout -q --detach v0.30.0",
        fork,
    )
    with (fork / "series.yaml").open("a") as f:
        f.write(
            "  - name: offload-more\n    branch: topic/offload-more\n"
            "    depends_on: [offload-evict-fix]\n    scope: [vllm/v1/kv_offload/]\n"
        )
    run_series("check", cwd=fork)
    # depends_on a topic the branch does not contain
    _edit(fork, "depends_on: [offload-evict-fix]", "depends_on: [sched-note]")
    proc = run_series("check", cwd=fork, expect=1)
    assert (
        "series.yaml:23: topics (offload-more).depends_on: branch 'topic/offload-more' does not contain "
        "'topic/sched-note'"
    ) in proc.stdout, proc.stdout


def test_check_ignores_missing_branches_of_inactive_topics_and_json(fork: Path) -> None:
    _edit(fork, "scope: [vllm/v1/kv_offload/]", "scope: [vllm/v1/kv_offload/, tests/]")
    _edit(
        fork,
        "    branch: topic/ipc-backport\n",
        "    branch: topic/ipc-backport\n    status: merged\n    merged_in: v0.31.0\n",
    )
    sh("git branch -D -q topic/ipc-backport", fork)
    data = json.loads(run_series("check", "--json", cwd=fork).stdout)
    assert data["ok"] is True and data["problems"] == [] and data["active"] == 3, data
    _edit(fork, "merged_in: v0.31.0", "merged_in: v0.99.0")
    data = json.loads(run_series("check", "--json", cwd=fork, expect=6).stdout)
    assert data["ok"] is False and data["exit"] == 6 and data["problems"] == [], data
    assert data["warnings"][0]["key"] == "topics (ipc-backport).merged_in", data
    # the pre-commit hook's form: warnings alone do not fail; a problem still does (exit 1)
    out = run_series("check", "--warnings-ok", cwd=fork).stdout
    assert "1 warning" in out and "no problem" in out, out
    sh("git branch -D -q topic/api-hello", fork)
    run_series("check", "--warnings-ok", cwd=fork, expect=1)


def _hinted_command(out: str) -> list[str]:
    """The command check's re-stack hint names, as a user would paste it."""
    import shlex

    quoted = out.split("'series ", 1)[1].split("'", 1)[0]
    return shlex.split(quoted)


def test_restack_hint_is_a_command_that_works(fork: Path) -> None:
    """A topic off the base, and a dependent that lost its dependency's new head: check names
    the command that re-stacks them; run as printed, it succeeds and check is ok again."""
    _edit(fork, "scope: [vllm/v1/kv_offload/]", "scope: [vllm/v1/kv_offload/, tests/]")
    sh(
        "git checkout -q -B topic/api-hello v0.31.0 && echo x >> vllm/entrypoints/openai/api_server.py && "
        "git commit -qam 'hello on v0.31' && "
        "git checkout -q -B topic/offload-more topic/offload-evict-fix && echo 'A = 1' > vllm/v1/kv_offload/more.py && "
        "git add -A vllm && git commit -qm more && git checkout -q topic/offload-evict-fix && "
        "echo 'B = 1' > vllm/v1/kv_offload/fix2.py && git add -A vllm && git commit -qm fix2 && "
        "git checkout -q --detach v0.30.0",
        fork,
    )
    with (fork / "series.yaml").open("a") as f:
        f.write(
            "  - name: offload-more\n    branch: topic/offload-more\n"
            "    depends_on: [offload-evict-fix]\n    scope: [vllm/v1/kv_offload/]\n"
        )
    out = run_series("check", cwd=fork, expect=1).stdout
    hints = [line for line in out.splitlines() if "series.yaml:" in line]
    assert len(hints) == 3 and all("'series rebase --onto v0.30.0'" in h for h in hints), out
    assert _hinted_command(out) == ["rebase", "--onto", "v0.30.0"], out
    run_series(*_hinted_command(out), cwd=fork)
    assert run_series("check", cwd=fork).stdout.startswith("ok: 5 topics"), out
