from __future__ import annotations

import fcntl
import os

from pathlib import Path

import pytest

from series.model import topic_name
from tests.conftest import run_series, sh
from tests.repos import SERIES_YAML


@pytest.mark.parametrize(
    "branch, name",
    [
        ("topic/offload-evict-fix", "offload-evict-fix"),
        ("fix/Sched.Tweak_2", "sched.tweak_2"),
        ("team/alice/KV Cache++", "kv-cache"),
        ("topic/--", "topic"),
    ],
)
def test_topic_name_from_branch(branch: str, name: str) -> None:
    assert topic_name(branch) == name


def test_init_lists_branches_by_first_commit_date_then_name(fork: Path) -> None:
    (fork / "series.yaml").unlink()
    # an older topic, and one stacked on it (same first date would tie; it must follow its base)
    sh(
        "git checkout -q -B topic/early v0.30.0 && echo e >> README.md && "
        "GIT_AUTHOR_DATE=2025-12-01T00:00:00Z git commit -qam early && "
        "git checkout -q -B topic/a-stacked && echo s >> README.md && "
        "GIT_AUTHOR_DATE=2025-12-02T00:00:00Z git commit -qam stacked && "
        "git checkout -q --detach v0.30.0",
        fork,
    )
    out = run_series("init", "--base", "v0.30", cwd=fork / "vllm").stdout  # from a subdirectory
    assert out.startswith(f"wrote {fork / 'series.yaml'}: 6 topics over v0.30.0 ("), out
    assert "  a-stacked          topic/a-stacked          1 commit  (on early)\n" in out, out
    text = (fork / "series.yaml").read_text()
    assert text == (
        "# series.yaml: the fork's topics over an upstream vLLM release, in order.\n"
        "# status: active | superseded | merged | dropped. See 'series --help'.\n"
        "upstream:\n"
        "  remote: upstream\n"
        "  base: v0.30.0\n"
        "integration: series/integration\n"
        "topics:\n"
        "  - name: early\n"
        "    branch: topic/early\n"
        "  - name: a-stacked\n"
        "    branch: topic/a-stacked\n"
        "    depends_on: [early]\n"
        "  - name: api-hello\n"
        "    branch: topic/api-hello\n"
        "  - name: ipc-backport\n"
        "    branch: topic/ipc-backport\n"
        "  - name: offload-evict-fix\n"
        "    branch: topic/offload-evict-fix\n"
        "  - name: sched-note\n"
        "    branch: topic/sched-note\n"
    ), text
    run_series("check", cwd=fork)  # what init writes is a valid series


def test_init_refuses_to_overwrite_without_force(fork: Path) -> None:
    before = (fork / "series.yaml").read_text()
    proc = run_series("init", "--base", "v0.30.0", cwd=fork, expect=1)
    assert "series.yaml already exists" in proc.stderr and "--force" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert (fork / "series.yaml").read_text() == before
    run_series("init", "--base", "v0.31.0", "--force", cwd=fork)
    assert "  base: v0.31.0\n" in (fork / "series.yaml").read_text()


def test_init_checks_the_base(fork: Path) -> None:
    (fork / "series.yaml").unlink()
    proc = run_series("init", "--base", "v0.29", cwd=fork, expect=1)
    assert "no release tag matches 'v0.29'" in proc.stderr and "v0.30.0" in proc.stderr, proc.stderr
    assert not (fork / "series.yaml").exists()


def test_init_without_base_takes_the_newest_release_every_topic_forks_from(fork: Path) -> None:
    (fork / "series.yaml").unlink()
    # one topic moved onto v0.31.0 by hand: v0.30.0 is still the newest release in all of them;
    # a post release on v0.30.0's commit is that commit's newest release; an rc never counts
    sh(
        "git tag v0.30.0.post1 v0.30.0 && git tag v0.31.0rc1 v0.30.0 && "
        "git checkout -q -B topic/late v0.31.0 && git commit -q --allow-empty -m late && "
        "git checkout -q --detach v0.30.0",
        fork,
    )
    out = run_series("init", cwd=fork).stdout  # the README's setup line, as written
    assert out.startswith("base: v0.30.0.post1 (the newest release every topic branch forks from)\nwrote "), out
    assert "  base: v0.30.0.post1\n" in (fork / "series.yaml").read_text()
    out = run_series("init", "--force", "--topics", "topic/late", cwd=fork).stdout
    assert out.startswith("base: v0.31.0 (the newest release"), out
    out = run_series("init", "--force", "--base", "v0.30.0", cwd=fork).stdout
    assert out.startswith("wrote "), "an explicit --base is not announced as inferred"


def test_init_without_base_names_the_candidates_when_it_cannot_choose(fork: Path) -> None:
    (fork / "series.yaml").unlink()
    # a patch release off v0.30.0 (on upstream's release branch: a tag only the fork's
    # branches reach is the fork's own) merged into a topic that also merged v0.31.0: two
    # releases, neither containing the other
    sh(
        "git checkout -q -B side v0.30.0 && git commit -q --allow-empty -m side && git tag v0.30.1 && "
        "git update-ref refs/remotes/upstream/releases/v0.30.1 side && "
        "git checkout -q topic/api-hello && git merge -q --no-edit v0.31.0 && git merge -q --no-edit side && "
        "git checkout -q --orphan alone && git rm -rqf . && git commit -q --allow-empty -m alone && "
        "git branch -q topic/alone && git checkout -q --detach v0.30.0",
        fork,
    )
    proc = run_series("init", "--topics", "topic/api-hello", cwd=fork, expect=1)
    assert proc.stderr == (
        "series: error: the branches matching topic/api-hello fork from more than one "
        "release (v0.31.0, v0.30.1)\nhint: pass --base with the one they sit on\n"
    ), proc.stderr
    proc = run_series("init", cwd=fork, expect=1)
    assert (
        "no release tag is in every branch matching topic/* (newest here: v0.31.0, v0.30.1, v0.30.0)" in proc.stderr
        and "pass --base" in proc.stderr
    ), proc.stderr
    proc = run_series("init", "--topics", "nope/*", cwd=fork, expect=1)
    assert "no local branch matches nope/*" in proc.stderr and "--base" in proc.stderr, proc.stderr
    assert not (fork / "series.yaml").exists()


def test_init_options_github_integration_patterns(fork: Path) -> None:
    (fork / "series.yaml").unlink()
    sh(
        "git remote set-url upstream https://github.com/vllm-project/vllm.git && "
        "git branch fix/ipc-two topic/ipc-backport && git branch series/integration topic/api-hello",
        fork,
    )
    out = run_series(
        "init",
        "--base",
        "v0.30.0",
        "--topics",
        "fix/*",
        "--topics",
        "series/*",
        "--integration",
        "series/integration",
        cwd=fork,
    ).stdout
    text = (fork / "series.yaml").read_text()
    assert "  github: vllm-project/vllm\nintegration: series/integration\n" in text, text
    assert text.endswith("topics:\n  - name: ipc-two\n    branch: fix/ipc-two\n"), text
    assert "1 topic over v0.30.0" in out, out


def test_init_without_matching_branches_writes_an_empty_series(fork: Path) -> None:
    (fork / "series.yaml").unlink()
    out = run_series("init", "--base", "v0.30.0", "--topics", "nothing/*", cwd=fork).stdout
    assert "warning: no local branch matches nothing/*: add topics with 'series add BRANCH'" in out, out
    assert (fork / "series.yaml").read_text().endswith("topics: []\n")
    run_series("add", "topic/api-hello", cwd=fork)
    assert (fork / "series.yaml").read_text().endswith("topics:\n  - name: api-hello\n    branch: topic/api-hello\n"), (
        fork / "series.yaml"
    ).read_text()


COMMENTED = (
    SERIES_YAML.replace(
        "  - name: ipc-backport\n", "  # backports: drop each once upstream has it\n  - name: ipc-backport\n"
    )
    + "  # api-hello stays last\n"
)


def test_add_keeps_comments_and_order_byte_for_byte(fork: Path) -> None:
    path = fork / "series.yaml"
    path.write_text(COMMENTED)
    sh("git branch fix/Sched.Two topic/sched-note", fork)
    out = run_series(
        "add",
        "fix/Sched.Two",
        "--summary",
        "a second note: tidy",
        "--scope",
        "vllm/v1/core/",
        "--scope",
        "tests/",
        cwd=fork,
    ).stdout
    assert out == (
        "added topic sched.two (fix/Sched.Two, 1 commit over v0.30.0) to series.yaml at the end: 5 of 5\n"
    ), out
    # every old line kept, byte for byte; the new entry goes before the file's closing comment
    trailing = "  # api-hello stays last\n"
    assert (
        path.read_text()
        == COMMENTED[: -len(trailing)]
        + (
            "  - name: sched.two\n"
            "    branch: fix/Sched.Two\n"
            "    summary: 'a second note: tidy'\n"
            "    scope: [vllm/v1/core/, tests/]\n"
        )
        + trailing
    ), path.read_text()


def test_add_after_inserts_only_its_lines(fork: Path) -> None:
    path = fork / "series.yaml"
    path.write_text(COMMENTED)
    sh("git branch topic/sched-more topic/sched-note", fork)
    run_series(
        "add",
        "topic/sched-more",
        "--name",
        "sched-more",
        "--after",
        "sched-note",
        "--depends-on",
        "sched-note",
        cwd=fork,
    )
    old, new = COMMENTED.splitlines(keepends=True), path.read_text().splitlines(keepends=True)
    inserted = ["  - name: sched-more\n", "    branch: topic/sched-more\n", "    depends_on: [sched-note]\n"]
    assert new == old[:11] + inserted + old[11:], "".join(new)
    run_series("touches", "vllm/v1/core", cwd=fork)


def test_add_errors_leave_the_file_alone(fork: Path) -> None:
    path = fork / "series.yaml"
    before = path.read_text()
    sh("git branch topic/sched-copy topic/sched-note && git update-ref refs/remotes/upstream/remote-only HEAD", fork)
    cases = [
        (("add", "topic/nope"), "no local branch 'topic/nope'\nhint: create it first"),
        (("add", "remote-only"), "git branch remote-only upstream/remote-only"),
        (("add", "topic/sched-note"), "series.yaml:8: branch 'topic/sched-note' is already topic 'sched-note'"),
        (("add", "topic/sched-copy", "--name", "api-hello"), "series.yaml:18: a topic named 'api-hello' exists"),
        (("add", "topic/sched-copy", "--name", "Bad Name"), "--name Bad Name: not a topic name\nhint: use lowercase"),
        (("add", "topic/sched-copy", "--after", "nope"), "no topic named 'nope'"),
        (("add", "topic/sched-copy", "--depends-on", "nope"), "no topic named 'nope'"),
    ]
    for args, message in cases:
        proc = run_series(*args, cwd=fork, expect=1)
        assert message in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") == 1 + proc.stderr.count("\nhint: "), proc.stderr
    assert path.read_text() == before


def test_add_warns_about_a_branch_on_another_base_and_waits_for_a_running_command(fork: Path) -> None:
    sh(
        "git checkout -q -B topic/late v0.31.0 && echo l >> README.md && git commit -qam late && "
        "git checkout -q --detach v0.30.0 && mkdir -p .git/series",
        fork,
    )
    # another process holds the kernel lock (this test's own process, for the test's length)
    fd = os.open(fork / ".git/series/lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, b"series rebase, pid 4242 on ci-7, since 2026-02-01T12:00:00+00:00\n")
    try:
        proc = run_series("add", "topic/late", cwd=fork, expect=1)
    finally:
        os.close(fd)
    assert "another series command is running in this repository (series rebase, pid 4242" in proc.stderr, proc.stderr
    assert "topic/late" not in (fork / "series.yaml").read_text()
    out = run_series("add", "topic/late", cwd=fork).stdout
    assert out.splitlines()[1] == (
        "warning: topic/late does not sit on v0.30.0; 'series check' will flag it until it is rebased"
    ), out


def test_init_names_the_integration_branch_by_default(fork: Path) -> None:
    """build and the nightly need an integration branch: init writes the usual one."""
    (fork / "series.yaml").unlink()
    run_series("init", "--base", "v0.30.0", cwd=fork)
    assert "\nintegration: series/integration\n" in (fork / "series.yaml").read_text()
