"""Hostile input to `series ci` (issue 22): a rebase report that is not one, and `ci init`
onto what is not a plain file inside the fork. Each is one line, exit 1, nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_series
from tests.test_trust_cli import one_line_error


# -- ci report --rebase / ci owners --report ------------------------------------------------


def test_a_real_rebase_report_is_read(fork: Path, tmp_path: Path) -> None:
    proc = run_series("rebase", "--onto", "v0.31.0", "--dry-run", "--json", cwd=fork, expect=3)
    report = tmp_path / "rebase.json"
    report.write_text(proc.stdout)
    out = run_series("ci", "report", "--rebase", str(report), cwd=fork).stdout
    assert "| rebase | **conflict** |" in out and "| offload-evict-fix | active |" in out, out
    assert "**conflict** at" in out, out
    owners = run_series("ci", "owners", "--report", str(report), cwd=fork).stdout.strip()
    assert owners == "Fork Maintainer", owners


TOPIC = {"name": "offload-evict-fix", "outcome": "conflict"}


@pytest.mark.parametrize(
    "content, said",
    [
        (json.dumps({"schema": 1, "status": "done", "topics": 5}), "'topics' is not a list"),
        (json.dumps([{"schema": 1}]), "'the document' is not an object"),
        (json.dumps({"status": "done", "topics": []}), "'schema' is None, not 1"),
        (json.dumps({"schema": 2, "status": "done", "topics": []}), "'schema' is 2, not 1"),
        (json.dumps({"schema": 1, "topics": []}), "'status' is not a string"),
        (json.dumps({"schema": 1, "status": "done", "topics": [5]}), "'topics[0]' is not an object"),
        (
            json.dumps({"schema": 1, "status": "done", "topics": [{"name": 5, "outcome": "clean"}]}),
            "topics[0]: 'name' is not a string",
        ),
        (
            json.dumps({"schema": 1, "status": "conflict", "topics": [dict(TOPIC, conflict=[])]}),
            "topics[0]: 'conflict' is not an object",
        ),
        (
            json.dumps(
                {
                    "schema": 1,
                    "status": "conflict",
                    "topics": [dict(TOPIC, conflict={"commit": "ab", "subject": "s", "files": "x"})],
                }
            ),
            "topics[0]: 'files' is not a list of strings",
        ),
        (
            json.dumps({"schema": 1, "status": "clean", "topics": []}),
            "'status' is 'clean', not one of dry-run, done, conflict, aborted, blocked",
        ),
        (
            json.dumps({"schema": 1, "status": "done", "topics": [dict(TOPIC, outcome="fine")]}),
            "topics[0]: 'outcome' is 'fine', not one of",
        ),
        ("{not json", "not JSON"),
        (b"\xff\xfe{}", "not UTF-8 at byte 0"),
    ],
)
@pytest.mark.parametrize("verb", [("ci", "report", "--rebase"), ("ci", "owners", "--report")])
def test_a_rebase_report_that_is_not_one_is_named(
    fork: Path, tmp_path: Path, content: str | bytes, said: str, verb: tuple[str, ...]
) -> None:
    report = tmp_path / "rebase.json"
    report.write_bytes(content if isinstance(content, bytes) else content.encode())
    proc = run_series(*verb, str(report), cwd=fork, expect=None)
    one_line_error(proc, str(report), "not a 'series rebase --json' report", said)


# -- ci init: only plain files inside the fork ----------------------------------------------

WORKFLOW = ".github/workflows/series-nightly.yml"


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under root and its bytes (None for a directory): to show nothing changed."""
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes()) for p in sorted(root.rglob("*"))}


def ci_init(fork: Path, *args: str, expect: int | None = None) -> object:
    return run_series("-C", str(fork), "ci", "init", *args, cwd=fork.parent, expect=expect)


def test_an_existing_workflow_that_is_not_utf8_is_kept_unless_forced(fork: Path) -> None:
    target = fork / WORKFLOW
    target.parent.mkdir(parents=True)
    target.write_bytes(b"name: \xff\xfe ours\n")
    for flags in ((), ("--dry-run",)):
        one_line_error(ci_init(fork, "github", *flags), WORKFLOW, "is not UTF-8", "--force")
        assert target.read_bytes() == b"name: \xff\xfe ours\n"
    assert "would update" in ci_init(fork, "github", "--force", "--dry-run", expect=0).stdout  # type: ignore[attr-defined]
    assert target.read_bytes() == b"name: \xff\xfe ours\n"
    assert "updated" in ci_init(fork, "github", "--force", expect=0).stdout  # type: ignore[attr-defined]
    assert "series ci path nightly.sh" in target.read_text()


@pytest.mark.parametrize("force", [(), ("--force",)])
def test_a_target_that_is_a_directory_or_under_a_file_is_refused(fork: Path, force: tuple[str, ...]) -> None:
    (fork / WORKFLOW).mkdir(parents=True)
    before = snapshot(fork / ".github")
    one_line_error(ci_init(fork, "github", *force), WORKFLOW, "is a directory")
    assert snapshot(fork / ".github") == before
    shutil.rmtree(fork / ".github")
    (fork / ".github").write_text("not a directory\n")
    one_line_error(ci_init(fork, "github", *force), WORKFLOW, "is a file, not a directory")
    assert (fork / ".github").read_text() == "not a directory\n"


@pytest.mark.parametrize(
    "link, dest, ci",
    [
        (".github", ".github", "github"),
        (".github/workflows", ".github/workflows", "github"),
        (".buildkite", ".buildkite", "buildkite"),
        (WORKFLOW, WORKFLOW, "github"),
    ],
)
@pytest.mark.parametrize("flags", [(), ("--force",), ("--force", "--dry-run")])
def test_a_symlink_out_of_the_repository_is_never_followed(
    fork: Path, tmp_path: Path, link: str, dest: str, ci: str, flags: tuple[str, ...]
) -> None:
    outside = tmp_path / "outside"
    (outside / "workflows").mkdir(parents=True)
    (outside / "series-nightly.yml").write_text("theirs\n")
    (outside / "workflows" / "series-nightly.yml").write_text("theirs\n")
    before = snapshot(outside)
    shutil.rmtree(fork / ".buildkite")  # the fork has upstream's (test_areas/)
    (fork / link).parent.mkdir(parents=True, exist_ok=True)
    pointed = outside / "series-nightly.yml" if link == WORKFLOW else outside
    (fork / link).symlink_to(pointed)
    one_line_error(ci_init(fork, ci, *flags), dest, "is a symlink to", "outside the repository")
    assert snapshot(outside) == before
    assert (fork / link).is_symlink()


def test_a_dangling_symlink_out_of_the_repository_is_refused(fork: Path, tmp_path: Path) -> None:
    (fork / ".github").symlink_to(tmp_path / "nowhere")
    one_line_error(ci_init(fork, "github", "--force"), ".github is a symlink to", "outside the repository")
    assert not (tmp_path / "nowhere").exists()


def test_a_symlink_within_the_repository_is_written_through(fork: Path) -> None:
    (fork / "ci-config" / "workflows").mkdir(parents=True)
    (fork / ".github").symlink_to("ci-config")
    assert "created" in ci_init(fork, "github", expect=0).stdout  # type: ignore[attr-defined]
    assert (fork / "ci-config" / "workflows" / "series-nightly.yml").is_file()
    shutil.rmtree(fork / ".buildkite")
    (fork / ".buildkite").symlink_to(".git")
    one_line_error(ci_init(fork, "buildkite"), ".buildkite is a symlink to .git", "outside the repository")
