"""Stacks (issue 33): a base topic with topics branched from it, as on a real fork (an HPU
backend topic with four topics built on it). `series add` infers depends_on as `init`
does, `check` names a stacked topic without it, `build` names only the pairs git's own
merge says conflict (with the file and a hint), and `diff` shows a fixup on the base topic
once, under the base topic. Every test here starts from the stack (the module's `fork`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import from_template, run_series, sh
from tests.repos import build_fork, build_upstream

BACKEND = "".join(f"backend line {i}\n" for i in range(1, 13))
DEPENDENTS = {"a": 2, "b": 5, "c": 8}  # each dependent changes one line of the base's file


def _change_line(fork: Path, branch: str, line: int, text: str, message: str) -> None:
    sh(f"git checkout -q {branch}", fork)
    path = fork / "hpu" / "backend.py"
    lines = path.read_text().splitlines(keepends=True)
    lines[line - 1] = text + "\n"
    path.write_text("".join(lines))
    sh(f"git commit -qam '{message}' && git checkout -q --detach v0.30.0", fork)


def _stack(fork: Path) -> None:
    """topic/hpu adds hpu/backend.py over v0.30.0; topic/hpu-{a,b,c} each change one line of it."""
    sh("git checkout -q -B topic/hpu v0.30.0 && mkdir -p hpu", fork)
    (fork / "hpu" / "backend.py").write_text(BACKEND)
    sh("git add hpu && git commit -qm 'hpu: backend' && git checkout -q --detach v0.30.0", fork)
    for name, line in DEPENDENTS.items():
        sh(f"git branch topic/hpu-{name} topic/hpu", fork)
        _change_line(fork, f"topic/hpu-{name}", line, f"hpu-{name} was here", f"hpu-{name}: tune")


@pytest.fixture
def fork(tmp_path: Path) -> Path:
    """The conftest's upstream and fork with the stack on the fork (`_stack`): built once per
    session and copied (a dozen git commands)."""
    return from_template("stacked-fork", _stacked, tmp_path)


def _stacked(root: Path) -> Path:
    fork = build_fork(build_upstream(root / "upstream"), root / "fork")
    _stack(fork)
    return fork


def _fixup(fork: Path, line: int) -> None:
    """A fixup committed on the base topic after the others branched from it."""
    _change_line(fork, "topic/hpu", line, "fixed in the base", "fixup! hpu: backend")


def _list(fork: Path, *names: str, depends: bool) -> None:
    """The stack appended to series.yaml by hand, with or without depends_on."""
    text = (fork / "series.yaml").read_text()
    for name in names:
        text += f"  - name: {name}\n    branch: topic/{name}\n"
        if depends and name != "hpu":
            text += "    depends_on: [hpu]\n"
    (fork / "series.yaml").write_text(text)


# -- add and check --------------------------------------------------------------------------


def test_add_infers_depends_on_for_a_branch_built_on_a_topic(fork: Path) -> None:
    assert "depends_on" not in run_series("add", "topic/hpu", cwd=fork).stdout
    out = run_series("add", "topic/hpu-a", cwd=fork).stdout
    assert "depends_on: [hpu] (its branch is built on hpu's commits" in out, out
    _fixup(fork, 12)  # the base moved on: hpu-b now shares a commit with it, not its head
    run_series("add", "topic/hpu-b", cwd=fork)
    run_series("add", "topic/hpu-c", "--depends-on", "api-hello", cwd=fork)  # said: not inferred
    text = (fork / "series.yaml").read_text()
    assert text.endswith(
        "  - name: hpu\n    branch: topic/hpu\n"
        "  - name: hpu-a\n    branch: topic/hpu-a\n    depends_on: [hpu]\n"
        "  - name: hpu-b\n    branch: topic/hpu-b\n    depends_on: [hpu]\n"
        "  - name: hpu-c\n    branch: topic/hpu-c\n    depends_on: [api-hello]\n"
    ), text


def test_check_names_a_stacked_topic_without_depends_on(fork: Path) -> None:
    _list(fork, "hpu", "hpu-a", "hpu-b", depends=False)
    _fixup(fork, 12)
    out = run_series("check", cwd=fork, expect=1).stdout
    for name in ("hpu-a", "hpu-b"):
        assert (
            f"topics ({name}).depends_on: branch 'topic/{name}' is built on topic hpu (it holds "
            f"topic/hpu's commits) but has no depends_on: add 'depends_on: [hpu]' to topic {name}"
        ) in out, out
    assert (
        "topics (hpu)." not in out
        and "topics (hpu-b).depends_on: branch 'topic/hpu-b' is built on topic hpu-a" not in out
    ), out
    # the third: offload-evict-fix's scope, as the fork has it
    assert out.endswith("check failed: 3 problems in 3 of 7 active topics\n"), out


# -- build ----------------------------------------------------------------------------------


def test_build_names_only_the_pair_git_says_conflicts_with_its_file_and_a_hint(fork: Path) -> None:
    """The base topic's fixup changes the line hpu-c changes: that pair conflicts, and git
    merges hpu-a and hpu-b with it cleanly though they changed the same file."""
    _list(fork, "hpu", "hpu-a", "hpu-b", "hpu-c", depends=True)
    _fixup(fork, DEPENDENTS["c"])
    proc = run_series("build", cwd=fork, expect=3)
    assert proc.stderr.startswith(
        "series: error: the topics do not combine: topic hpu vs topic hpu-c, file hpu/backend.py\n"
    ), proc.stderr
    hint = (
        "hint: see it: git merge-tree --write-tree --name-only topic/hpu topic/hpu-c; resolve it "
        "by building hpu-c on hpu: git rebase topic/hpu topic/hpu-c\n"
    )
    assert proc.stderr.endswith(hint), proc.stderr
    seen = sh(hint.split("see it: ")[1].split(";")[0] + " || test $? = 1", fork)  # as written
    assert seen.splitlines()[1] == "hpu/backend.py", seen  # git: conflicted files after the tree


def test_build_of_a_stack_without_depends_on_names_no_false_pair(fork: Path) -> None:
    """As on the fork: the dependents were listed without depends_on and the base topic got
    a fixup elsewhere in the file. Each dependent's own diff then carries the base's first
    version of the file, which no longer merges onto the chain; git merges each pair
    cleanly, so no pair is named: the hint is the missing depends_on."""
    _list(fork, "hpu", "hpu-a", "hpu-b", depends=False)
    _fixup(fork, 12)
    proc = run_series("build", cwd=fork, expect=3)
    assert " vs topic" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(
        "series: error: the topics do not combine: topic hpu-a does not merge onto hpu, file hpu/backend.py, "
        "though git merges it with each alone; topic hpu-b does not merge onto hpu, file "
        "hpu/backend.py, though git merges it with each alone\n"
    ), proc.stderr
    assert proc.stderr.endswith(
        "hint: topic/hpu-a holds the commits of topic hpu but has no depends_on, so "
        "they would be applied twice: add 'depends_on: [hpu]' to topic hpu-a in series.yaml\n"
    ), proc.stderr
    # the hint, followed: the stack builds
    text = (fork / "series.yaml").read_text()
    for name in ("hpu-a", "hpu-b"):
        text = text.replace(f"branch: topic/{name}\n", f"branch: topic/{name}\n    depends_on: [hpu]\n")
    (fork / "series.yaml").write_text(text)
    run_series("check", cwd=fork, expect=1)  # only offload-evict-fix's scope, as the fork has it
    out = run_series("build", "--json", cwd=fork).stdout
    assert json.loads(out)["topics"][-3:] == ["hpu", "hpu-a", "hpu-b"], out


def test_a_topic_on_one_left_out_is_left_out_with_it(fork: Path) -> None:
    """hpu conflicts with a topic before it: its dependents are left out with it, named as
    such, not as conflicts of their own with whatever touched their files."""
    sh("git checkout -q -B topic/hpu-rival v0.30.0 && mkdir -p hpu", fork)
    (fork / "hpu" / "backend.py").write_text("a rival backend\n")
    sh("git add hpu && git commit -qm rival && git checkout -q --detach v0.30.0", fork)
    _list(fork, "hpu-rival", depends=False)
    _list(fork, "hpu", "hpu-a", depends=True)
    proc = run_series("build", cwd=fork, expect=3)
    assert proc.stderr.startswith(
        "series: error: the topics do not combine: topic hpu-rival vs topic hpu, file "
        "hpu/backend.py; topic hpu-a left out with topic hpu, which it "
        "depends on\n"
    ), proc.stderr


# -- diff -----------------------------------------------------------------------------------


def test_diff_shows_a_fixup_on_the_base_topic_once_under_the_base_topic(fork: Path, tmp_path: Path) -> None:
    """The stack as `series add` listed it before it inferred depends_on; the fixup is
    squashed into nothing: it is a commit on hpu, and the dependents are rebuilt on it."""
    _list(fork, "hpu", "hpu-a", "hpu-b", depends=False)
    run_series("export", str(tmp_path / "before"), cwd=fork)
    _fixup(fork, 12)
    for name in ("a", "b"):
        sh(f"git rebase -q topic/hpu topic/hpu-{name} && git checkout -q --detach v0.30.0", fork)
    run_series("export", str(tmp_path / "after"), cwd=fork)
    out = run_series("diff", str(tmp_path / "before"), str(tmp_path / "after"), "--json", cwd=fork).stdout
    commits = {c["topic"]: c["counts"] for c in json.loads(out)["changes"] if c["change"] == "commits"}
    assert commits["hpu"] == {"equal": 1, "changed": 0, "dropped": 0, "added": 1}, commits
    for name in ("hpu-a", "hpu-b"):
        assert commits[name] == {"equal": 1, "changed": 0, "dropped": 0, "added": 0}, commits


def test_diff_of_the_restacking_rebase_shows_a_fixup_made_outside_it_under_the_base_only(fork: Path) -> None:
    """As on the real fork: a fixup committed on the base topic by hand (no operation moves
    it), then `series rebase --onto <the same base>` re-stacks the dependents on it. The
    journal's last word on topic/hpu predates the fixup; the rebase saw the fixup."""
    _list(fork, "hpu", "hpu-a", "hpu-b", depends=True)
    run_series("rebase", "--onto", "v0.30.0", cwd=fork)
    _fixup(fork, 12)
    run_series("rebase", "--onto", "v0.30.0", cwd=fork)
    last = run_series("log", cwd=fork).stdout.split()[0]
    out = run_series("diff", "--json", f"{last}^", last, cwd=fork).stdout
    commits = {c["topic"]: c["counts"] for c in json.loads(out)["changes"] if c["change"] == "commits"}
    # when the fixup was made between two operations the journal cannot tell: it is in the
    # series before this rebase (2 equal) or comes with it (1 added), never under another topic
    assert commits["hpu"]["equal"] + commits["hpu"]["added"] == 2, commits
    for name in ("hpu-a", "hpu-b"):
        assert commits[name] == {"equal": 1, "changed": 0, "dropped": 0, "added": 0}, commits


def test_diff_of_a_topic_that_came_out_empty_says_its_commit_was_dropped(fork: Path, tmp_path: Path) -> None:
    """git range-diff refuses an empty range ('need two commit ranges'); the real fork's
    topic resolved to upstream's side had none left."""
    _list(fork, "hpu", depends=False)
    run_series("export", str(tmp_path / "before"), cwd=fork)
    sh("git branch -f topic/hpu v0.30.0", fork)
    run_series("export", str(tmp_path / "after"), cwd=fork)
    proc = run_series("diff", str(tmp_path / "before"), str(tmp_path / "after"), cwd=fork)
    assert "hpu: 1 dropped\n" in proc.stdout, proc.stdout
    assert "< -:  ------- hpu: backend" in proc.stdout, proc.stdout
