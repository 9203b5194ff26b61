"""CONTRIBUTING.md rule 3: one answer per question, read from the source so a second copy fails here.

who is the committer        series.git.repo.committer (git var GIT_COMMITTER_IDENT)
where is a branch checked   series.git.checkouts (the only reader of commondir and
out                         .git/worktrees/)
where is the state dir      series.ops.fs.state_dir (series.cache for user caches)
which is upstream's trunk   series.git.releases.trunk_ref / trunk_commit (main, else master)
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Callable

from tests.parsed import parsed

PACKAGE = Path(__file__).resolve().parent.parent / "series"


def _strings(path: Path) -> list[tuple[int, str]]:
    return [
        (n.lineno, n.value) for n in ast.walk(parsed(path)) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def _where(predicate: Callable[[str], bool]) -> set[str]:
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for _, text in _strings(path):
            if predicate(text):
                found.add(path.relative_to(PACKAGE).as_posix())
    return found


def test_one_committer_resolver() -> None:
    # the git wrapper passes the variables through; only repo.py asks who the committer is
    assert _where(lambda s: "GIT_COMMITTER_" in s) <= {"git/command.py", "git/repo.py"}
    assert _where(lambda s: s == "GIT_COMMITTER_IDENT") == {"git/repo.py"}


def test_one_trunk_resolver() -> None:
    # "<remote>/main, else master": only releases.py names master; the rest ask trunk_ref
    assert _where(lambda s: s == "master" or s.endswith("/master")) == {"git/releases.py"}


def test_one_checkout_finder() -> None:
    assert _where(lambda s: s in ("commondir", "worktrees")) == {"git/checkouts.py"}


def test_one_state_dir_resolver() -> None:
    """`<something> / "series"` builds a directory of ours: the state dir (fs.state_dir)
    or the user cache (cache.user_cache), nowhere else."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(parsed(path)):
            if (
                isinstance(node, ast.BinOp)
                and isinstance(node.op, ast.Div)
                and isinstance(node.right, ast.Constant)
                and node.right.value == "series"
            ):
                found.add(path.relative_to(PACKAGE).as_posix())
    assert found == {"ops/fs.py", "cache.py"}, found


def test_one_answer_to_where_the_command_runs() -> None:
    # -C DIR or the process's directory: Context.here; a verb asking Path.cwd() itself would
    # read PATHs from elsewhere than discovery does (touches from vllm/v1 said "not touched")
    verbs = {
        p.relative_to(PACKAGE).as_posix() for p in (PACKAGE / "verbs").rglob("*.py") if "Path.cwd()" in p.read_text()
    }
    assert verbs == set(), verbs
