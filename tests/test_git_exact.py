"""The replay gives git's answer: each class where a rebase tool can part from merge-ort.

Every test builds a small real repository in the shape of one case (upstream v1 -> v2
and a topic over v1), then rebases the topic twice: `series rebase --onto v2` and
`git rebase --onto v2 v1` on a copy (the reference: merge-ort, git's defaults, the same
committer identity and date). Asserted: the same outcome, the same commit git stops at
with the same conflicted paths, and for clean topics byte-identical commits.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_series, sh

FIXED = {"GIT_COMMITTER_DATE": "1767225600 +0000", "GIT_AUTHOR_DATE": "1767225600 +0000"}

# a file with enough body that git's rename detection pairs its moves
BODY = "".join(f"def function_{i}(value):\n    return value * {i} + {i * 7}\n\n" for i in range(30))


def write(root: Path, files: dict[str, str | None]) -> None:
    for path, content in files.items():
        target = root / path
        if content is None:
            if target.is_symlink() or target.exists():
                target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.exists():
            target.unlink()
        if content.startswith("link:"):
            os.symlink(content[5:], target)
        else:
            target.write_text(content)
            if content.startswith("#!"):
                target.chmod(0o755)


def build(
    tmp_path: Path, base: dict[str, str | None], upstream: dict[str, str | None], topic: list[dict[str, str | None]]
) -> Path:
    repo = tmp_path / "fork"
    repo.mkdir()
    env = dict(os.environ, **FIXED)

    def commit(message: str) -> None:
        subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", message], cwd=repo, check=True, env=env)

    sh("git init -q -b main", repo)
    write(repo, base)
    commit("v1")
    sh("git tag v1", repo)
    write(repo, upstream)
    commit("upstream changes")
    sh("git tag v2 && git checkout -q -b topic/t v1", repo)
    for i, files in enumerate(topic):
        write(repo, files)
        commit(f"topic commit {i + 1}")
    sh("git checkout -q --detach v1 && git branch gitcopy topic/t && git remote add upstream .", repo)
    (repo / ".git" / "info" / "exclude").write_text("series.yaml\n")
    (repo / "series.yaml").write_text(
        "upstream:\n  remote: upstream\n  base: v1\ntopics:\n  - name: t\n    branch: topic/t\n"
    )
    return repo


def git_answer(repo: Path) -> dict[str, object]:
    wt = repo.parent / "git-wt"
    sh(f"git worktree add -q --detach {wt} v1", repo)
    env = dict(os.environ, **FIXED)
    proc = subprocess.run(
        ["git", "rebase", "--onto", "v2", "v1", "gitcopy"], cwd=wt, env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        stopped = sh("git rev-parse REBASE_HEAD", wt).strip()
        paths = sorted(sh("git diff --name-only --diff-filter=U", wt).splitlines())
        sh("git rebase --abort", wt)
        return {"outcome": "conflict", "commit": stopped, "paths": paths}
    head = sh("git rev-parse gitcopy", repo).strip()
    return {"outcome": "empty" if head == sh("git rev-parse v2", repo).strip() else "clean", "head": head}


def series_answer(repo: Path) -> dict[str, object]:
    env = dict(FIXED)
    dry = json.loads(run_series("rebase", "--onto", "v2", "--dry-run", "--json", cwd=repo, expect=None, env=env).stdout)
    topic = dry["topics"][0]
    if topic["outcome"] == "conflict":
        return {
            "outcome": "conflict",
            "commit": topic["conflict"]["commit"],
            "paths": sorted(topic["conflict"]["files"]),
        }
    report = json.loads(run_series("rebase", "--onto", "v2", "--json", cwd=repo, env=env).stdout)
    topic = report["topics"][0]
    if topic["outcome"] == "merged":
        return {"outcome": "empty"}
    return {"outcome": "clean", "head": topic["new_head"]}


def same_as_git(
    tmp_path: Path, base: dict[str, str | None], upstream: dict[str, str | None], topic: list[dict[str, str | None]]
) -> dict[str, object]:
    repo = build(tmp_path, base, upstream, topic)
    theirs = git_answer(repo)
    ours = series_answer(repo)
    if theirs["outcome"] == "empty":
        theirs.pop("head")
    assert ours == theirs, f"series: {ours}\ngit:    {theirs}"
    return theirs


# -- 1. upstream renames, paired the way git pairs them ------------------------------------


def test_edit_follows_an_upstream_move_next_to_a_near_copy(tmp_path: Path) -> None:
    near = BODY.replace("function_3(", "function_3b(").replace("* 11 +", "* 12 +").replace("* 12 +", "* 13 +")
    answer = same_as_git(
        tmp_path,
        {"pkg/a.py": BODY},
        {"pkg/a.py": None, "pkg/moved/a.py": BODY, "pkg/copy.py": near},
        [{"pkg/a.py": BODY.replace("return value * 5 + 35", "return value * 5 + 36")}],
    )
    assert answer["outcome"] == "clean"


def test_edit_to_a_file_upstream_deleted_is_modify_delete(tmp_path: Path) -> None:
    answer = same_as_git(tmp_path, {"a.py": BODY, "keep.py": "x = 1\n"}, {"a.py": None}, [{"a.py": BODY + "# fork\n"}])
    assert answer["outcome"] == "conflict" and answer["paths"] == ["a.py"]


# -- 2. rename/delete and rename/rename ---------------------------------------------------


def test_topic_deletes_a_file_upstream_renamed(tmp_path: Path) -> None:
    answer = same_as_git(tmp_path, {"a.py": BODY, "keep.py": "x = 1\n"}, {"a.py": None, "b.py": BODY}, [{"a.py": None}])
    assert answer["outcome"] == "conflict", answer


def test_topic_renames_a_file_upstream_renamed_elsewhere(tmp_path: Path) -> None:
    answer = same_as_git(tmp_path, {"a.py": BODY}, {"a.py": None, "up.py": BODY}, [{"a.py": None, "fork.py": BODY}])
    assert answer["outcome"] == "conflict" and set(answer["paths"]) >= {"fork.py", "up.py"}, answer


def test_topic_renames_a_file_upstream_deleted(tmp_path: Path) -> None:
    answer = same_as_git(
        tmp_path, {"a.py": BODY, "keep.py": "x = 1\n"}, {"a.py": None}, [{"a.py": None, "fork.py": BODY}]
    )
    assert answer["outcome"] == "conflict", answer


def test_topic_renames_a_file_upstream_edited(tmp_path: Path) -> None:
    answer = same_as_git(
        tmp_path, {"a.py": BODY}, {"a.py": BODY.replace("* 2 + 14", "* 2 + 15")}, [{"a.py": None, "fork.py": BODY}]
    )
    assert answer["outcome"] == "clean"


# -- 3. directory renames ----------------------------------------------------------------


def test_addition_in_a_directory_upstream_moved_wholesale(tmp_path: Path) -> None:
    base = {"csrc/stable/a.cu": BODY, "csrc/stable/b.cu": BODY + "// b\n", "setup.py": "x\n"}
    moved = {"csrc/stable/a.cu": None, "csrc/stable/b.cu": None, "csrc/a.cu": BODY, "csrc/b.cu": BODY + "// b\n"}
    answer = same_as_git(tmp_path, base, moved, [{"csrc/stable/fork.cu": "// fork\n"}])
    assert answer["outcome"] == "conflict" and answer["paths"] == ["csrc/fork.cu"], answer


# -- 4. the content merge: git's histogram diff, not Myers --------------------------------

LOOP = ["    for i in range(n):", "        total += i", "    return total"]
HIST_BASE = ["", "", "def f():", ""] + LOOP + [""] + LOOP
HIST_OURS = ["", "", "def f():", ""] + LOOP + ["", "    for i in range(n):", "def f():", "        total -= 1"]
HIST_THEIRS = ["", "", "    if x:", "        return y", "    else:", "        pass", "def f():", "", ""] + LOOP + LOOP


def lines(rows: list[str]) -> str:
    return "\n".join(rows) + "\n"


def test_repetitive_code_merges_as_git_merges_it(tmp_path: Path) -> None:
    # Myers (git merge-file, libgit2) merges these cleanly; merge-ort's histogram conflicts
    answer = same_as_git(
        tmp_path, {"loop.py": lines(HIST_BASE)}, {"loop.py": lines(HIST_OURS)}, [{"loop.py": lines(HIST_THEIRS)}]
    )
    assert answer["outcome"] == "conflict" and answer["paths"] == ["loop.py"]


def test_edits_next_to_upstream_hunks(tmp_path: Path) -> None:
    upstream = BODY.replace("* 10 + 70", "* 10 + 71")
    answer = same_as_git(
        tmp_path,
        {"a.py": BODY},
        {"a.py": upstream},
        [{"a.py": BODY.replace("def function_11(", "def function_11_fork(")}],
    )
    assert answer["outcome"] == "clean"


# -- 5. file/directory ---------------------------------------------------------------------


def test_file_where_upstream_added_a_directory(tmp_path: Path) -> None:
    answer = same_as_git(tmp_path, {"a.py": "x\n"}, {"tools/run.py": "run\n"}, [{"tools": "fork\n"}])
    assert answer["outcome"] == "conflict", answer


def test_directory_where_upstream_added_a_file(tmp_path: Path) -> None:
    answer = same_as_git(tmp_path, {"a.py": "x\n"}, {"tools": "upstream\n"}, [{"tools/run.py": "fork\n"}])
    assert answer["outcome"] == "conflict", answer


# -- 6. history: empty commits, authorship, what is dropped --------------------------------


def test_a_commit_empty_in_the_topic_is_kept(tmp_path: Path) -> None:
    answer = same_as_git(tmp_path, {"a.py": BODY}, {"a.py": BODY + "# up\n"}, [{}, {"b.py": "b\n"}, {}])
    assert answer["outcome"] == "clean"


def test_a_commit_that_becomes_empty_is_dropped(tmp_path: Path) -> None:
    answer = same_as_git(
        tmp_path, {"a.py": BODY}, {"a.py": BODY + "# up\n"}, [{"a.py": BODY + "# up\n"}, {"b.py": "b\n"}]
    )
    assert answer["outcome"] == "clean"


def test_modes_symlinks_and_type_changes(tmp_path: Path) -> None:
    base = {"run.sh": "#!/bin/sh\necho 1\n", "link": "link:a.py", "a.py": BODY, "b.py": BODY + "#b\n"}
    upstream = {"a.py": BODY + "# up\n", "run.sh": "#!/bin/sh\necho 2\n"}
    answer = same_as_git(
        tmp_path, base, upstream, [{"link": "link:b.py"}, {"b.py": "link:a.py"}, {"new.sh": "#!/bin/sh\nexit 0\n"}]
    )
    assert answer["outcome"] == "clean"


@pytest.mark.parametrize("how", ["same", "different"])
def test_add_add(tmp_path: Path, how: str) -> None:
    theirs = "print('fork')\n" if how == "different" else "print('up')\n"
    answer = same_as_git(tmp_path, {"a.py": "x\n"}, {"new.py": "print('up')\n"}, [{"new.py": theirs}])
    assert answer["outcome"] == ("conflict" if how == "different" else "empty")


# -- the conflict as the user meets it ---------------------------------------------------


def test_the_conflict_worktree_is_what_git_rebase_leaves(tmp_path: Path) -> None:
    base = {"loop.py": lines(HIST_BASE), "a.py": BODY}
    upstream = {"loop.py": lines(HIST_OURS), "a.py": None, "moved/a.py": BODY}
    repo = build(tmp_path, base, upstream, [{"a.py": BODY + "# fork\n", "loop.py": lines(HIST_THEIRS)}])
    wt = repo.parent / "git-wt"
    sh(f"git worktree add -q --detach {wt} v1", repo)
    env = dict(os.environ, **FIXED)
    assert (
        subprocess.run(
            ["git", "rebase", "--onto", "v2", "v1", "gitcopy"], cwd=wt, env=env, capture_output=True
        ).returncode
        != 0
    )
    proc = run_series("rebase", "--onto", "v2", "--json", cwd=repo, expect=3, env=dict(FIXED))
    ours = Path(json.loads(proc.stdout)["worktree"])
    for where in (wt, ours):
        assert sh("git ls-files -u", where) != ""
    assert sh("git ls-files -s", ours) == sh("git ls-files -s", wt)  # stages, modes, ids, paths
    assert sh("git diff --name-status HEAD", ours) == sh("git diff --name-status HEAD", wt)
    for path in ("loop.py", "moved/a.py"):
        assert (ours / path).read_bytes() == (wt / path).read_bytes(), path  # markers and labels
    assert b"<<<<<<< HEAD\n" in (ours / "loop.py").read_bytes()


def test_a_git_too_old_for_merge_tree_is_refused_in_one_line(tmp_path: Path) -> None:
    repo = build(tmp_path, {"a.py": BODY}, {"a.py": BODY + "# up\n"}, [{"b.py": "b\n"}])
    shim = tmp_path / "bin"
    shim.mkdir()
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True).stdout.strip()
    (shim / "git").write_text(
        f'#!/bin/sh\n[ "$1" = version ] && {{ echo "git version 2.34.1"; exit 0; }}\nexec {real} "$@"\n'
    )
    (shim / "git").chmod(0o755)
    proc = run_series("rebase", "--onto", "v2", cwd=repo, expect=1, env={"PATH": f"{shim}:{os.environ['PATH']}"})
    error, hint = proc.stderr.strip().split("\n")  # one error line, and the way on as git's 'hint:'
    assert "git 2.34.1 is too old" in error and hint == "hint: install a newer git", proc.stderr
    assert "2.39" in proc.stderr and "Traceback" not in proc.stderr
