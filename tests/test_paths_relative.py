"""A PATH a verb takes is read the way git reads a pathspec: relative to the current
directory (or -C DIR's), '..' normalised, absolute paths inside the work tree; a path
outside the repository is an error, never "not touched" (issue 22, item 1)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2
import pytest

from series.history.touches import parse_spec
from series.errors import SeriesError
from series.git.repo import repo_path
from tests.conftest import run_series, sh


def test_a_path_from_a_subdirectory_is_relative_to_it(fork: Path) -> None:
    sub = fork / "vllm" / "v1"
    expected = run_series("touches", "vllm/v1/kv_offload", cwd=fork).stdout
    assert "offload-evict-fix" in expected, expected
    # the case: this said "No active topic touches kv_offload", exit 1
    assert run_series("touches", "kv_offload", cwd=sub).stdout == expected
    assert run_series("touches", "kv_offload/", cwd=sub).stdout == expected.replace(
        "vllm/v1/kv_offload:", "vllm/v1/kv_offload/:", 1
    )
    assert run_series("touches", ".", cwd=sub / "kv_offload").stdout == expected
    assert run_series("touches", "../v1/./kv_offload/cpu/..", cwd=sub).stdout == expected
    multimodal = run_series("touches", "../multimodal", cwd=sub).stdout
    assert multimodal.startswith("vllm/multimodal: touched by 1 of 4"), multimodal
    # a path that is only right from the root is not found from a subdirectory, as in git
    proc = run_series("touches", "vllm/multimodal", cwd=sub, expect=1)
    assert proc.stdout.startswith("No active topic touches vllm/v1/vllm/multimodal"), proc.stdout


def test_a_glob_from_a_subdirectory_is_below_it(fork: Path) -> None:
    out = run_series("touches", "**/lru.py", cwd=fork / "vllm" / "v1").stdout
    assert out.startswith("vllm/v1/**/lru.py: touched by 1 of 4"), out
    run_series("touches", "**/lru.py", cwd=fork / "vllm" / "multimodal", expect=1)


def test_a_path_outside_the_repository_is_an_error_not_untouched(fork: Path, tmp_path: Path) -> None:
    sub = fork / "vllm" / "v1"
    for args, cwd in (
        (("../../..",), sub),
        (("..",), fork),
        (("vllm", "../x"), fork),
        ((str(tmp_path),), sub),
        ((str(fork) + "-other/vllm",), fork),
    ):
        proc = run_series("touches", *args, cwd=cwd, expect=2)  # touches: 2 is an error, 1 'not touched'
        assert proc.stdout == "", proc.stdout
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "is outside the repository at" in lines[0], proc.stderr
        assert str(fork) in lines[0], proc.stderr
    proc = run_series("touches", "--between", "v0.30.0..v0.31.0", "../../../vllm", cwd=sub, expect=2)
    assert "is outside the repository" in proc.stderr, proc.stderr


def test_an_absolute_path_inside_the_work_tree(fork: Path, tmp_path: Path) -> None:
    expected = run_series("touches", "vllm/v1/kv_offload", cwd=fork).stdout
    assert run_series("touches", str(fork / "vllm/v1/kv_offload"), cwd=fork / "vllm").stdout == expected
    link = tmp_path / "link"
    link.symlink_to(fork)  # the repository reached through a symlink: still inside
    assert run_series("touches", str(link / "vllm/v1/kv_offload"), cwd=fork).stdout == expected


def test_dash_C_changes_the_directory_first_as_git_does(fork: Path, tmp_path: Path) -> None:
    expected = run_series("touches", "vllm/v1/kv_offload", cwd=fork).stdout
    assert run_series("-C", "vllm/v1", "touches", "kv_offload", cwd=fork).stdout == expected
    assert run_series("-C", str(fork / "vllm" / "v1"), "touches", "kv_offload", cwd=tmp_path).stdout == expected
    run_series("-C", "vllm/v1", "touches", "../../..", cwd=fork, expect=2)


def test_dash_C_reads_every_relative_path_from_DIR(fork: Path, tmp_path: Path) -> None:
    """Not only discovery and PATHs: export's DIRECTORY and --config too (git -C's chdir)."""
    run_series("-C", str(fork), "export", "out", cwd=tmp_path)
    assert (fork / "out").is_dir() and not (tmp_path / "out").exists()
    run_series("-C", str(fork), "--config", "series.yaml", "status", cwd=tmp_path)
    proc = run_series("-C", str(tmp_path / "nowhere"), "status", cwd=fork, expect=1)
    assert proc.stderr.splitlines()[1:] == ["hint: give an existing directory"], proc.stderr
    assert "cannot change to that directory" in proc.stderr.splitlines()[0], proc.stderr


def test_outside_the_work_tree_paths_are_from_the_root_as_in_git(fork: Path, tmp_path: Path) -> None:
    """--config from elsewhere, or the .git directory: git has no prefix there either."""
    expected = run_series("touches", "vllm/v1/kv_offload", cwd=fork).stdout
    config = str(fork / "series.yaml")
    assert run_series("--config", config, "touches", "vllm/v1/kv_offload", cwd=tmp_path).stdout == expected
    assert run_series("touches", "vllm/v1/kv_offload", cwd=fork / ".git" / "refs").stdout == expected
    # (not from .git itself: `python -m series` there would import .git/series, the state dir)
    run_series("touches", "../../vllm", cwd=fork / ".git" / "refs", expect=2)
    proc = run_series("touches", str(fork / "vllm"), cwd=fork / ".git" / "refs", expect=2)
    assert "in the git directory paths are from the root" in proc.stderr, proc.stderr


def test_add_scope_is_a_path_from_the_current_directory(fork: Path) -> None:
    sh("git branch -q topic/extra topic/offload-evict-fix~0", fork)
    sub = fork / "vllm" / "v1"
    run_series("add", "topic/extra", "--name", "extra", "--scope", "kv_offload/", "--scope", "../../tests", cwd=sub)
    text = (fork / "series.yaml").read_text()
    assert "scope: [vllm/v1/kv_offload/, tests]\n" in text, text
    before = text
    proc = run_series("add", "topic/extra", "--name", "extra2", "--scope", "../../..", cwd=sub, expect=1)
    assert "is outside the repository" in proc.stderr, proc.stderr
    assert (fork / "series.yaml").read_text() == before  # nothing written


def test_an_empty_path_is_an_error(fork: Path) -> None:
    proc = run_series("touches", "", cwd=fork, expect=2)
    assert "empty PATH" in proc.stderr, proc.stderr


# -- differential: the files git's pathspec selects are the files our path selects ------------

_CASES = [
    "kv_offload",
    "kv_offload/",
    ".",
    "./",
    "..",
    "../..",
    "../../..",
    "../multimodal/ipc.py",
    "./kv_offload/../core",
    "core/sched/scheduler.py",
    "nothere",
    "../v1//kv_offload///",
]


def _git_files(cwd: Path, path: str) -> list[str] | None:
    proc = subprocess.run(["git", "ls-files", "--full-name", "--", path], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        assert "outside repository" in proc.stderr, proc.stderr
        return None
    return sorted(proc.stdout.splitlines())


def _our_files(repo: pygit2.Repository, root: Path, cwd: Path, path: str) -> list[str] | None:
    try:
        spec = parse_spec(repo_path(repo, path, cwd))
    except SeriesError:
        return None
    return sorted(p for p in sh("git ls-files", root).splitlines() if spec.matches(p))


@pytest.mark.parametrize("where", ["", "vllm", "vllm/v1", ".git", ".git/refs"])
def test_paths_select_what_git_pathspecs_select(fork: Path, where: str) -> None:
    sh("git checkout -q topic/offload-evict-fix", fork)
    repo = pygit2.Repository(str(fork))
    cwd = fork / where
    cases = _CASES + [str(fork / "vllm" / "v1"), str(fork / "vllm" / "v1") + "/", str(fork.parent)]
    for path in cases:
        assert _our_files(repo, fork, cwd, path) == _git_files(cwd, path), (where, path)


def test_a_bare_repository_reads_paths_from_its_root_as_git_does(fork: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    sh(f"git clone -q --bare {fork} {bare}", tmp_path)
    repo = pygit2.Repository(str(bare))
    assert repo_path(repo, "vllm/v1/", bare / "refs") == "vllm/v1/"
    for path in ("../vllm", str(bare / "vllm")):  # git: "outside repository" for both
        with pytest.raises(SeriesError, match="outside the repository"):
            repo_path(repo, path, bare)
