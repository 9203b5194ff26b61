"""Every checkout of a branch: the main worktree and each linked one, from any of them.

A command that moves a branch must find where it is checked out whichever worktree it was
started from (the main one's HEAD lives in the common dir, each linked one's under
.git/worktrees/<id>/), refuse when such a checkout has local changes, and update the
clean ones after the move (`git read-tree -u -m OLD NEW`, which refuses rather than
overwrite anything).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pygit2

from series.git.command import git


@dataclass(frozen=True)
class Checkout:
    path: Path
    branch: str


def common_dir(repo: pygit2.Repository) -> Path:
    """The repository's common git dir (the same from every worktree)."""
    path = Path(repo.path)
    marker = path / "commondir"
    if marker.exists():
        path = (path / marker.read_text().strip()).resolve()
    return path


def main_worktree(repo: pygit2.Repository) -> Path | None:
    """The main worktree's top directory; None for a bare repository."""
    common = common_dir(repo)
    try:
        if pygit2.Repository(str(common)).is_bare:
            return None
    except pygit2.GitError:
        return None
    return common.parent if common.name == ".git" else Path(pygit2.Repository(str(common)).workdir or common)


def worktree_root(repo: pygit2.Repository, name: str | None) -> Path | None:
    """The top directory of worktree `name` (None: the main one)."""
    if name is None:
        return main_worktree(repo)
    gitdir = common_dir(repo) / "worktrees" / name / "gitdir"
    try:
        return Path(gitdir.read_text().strip()).parent
    except OSError:
        return None


def worktree_name(repo: pygit2.Repository) -> str | None:
    """Which worktree `repo` was opened in (None: the main one)."""
    path = Path(repo.path)
    return path.name if (path / "commondir").exists() else None


def all_heads(repo: pygit2.Repository) -> list[tuple[Path, Path]]:
    """(worktree top directory, its HEAD file) for the main worktree and every linked one."""
    common = common_dir(repo)
    heads = []
    main = main_worktree(repo)
    if main is not None:
        heads.append((main, common / "HEAD"))
    linked = common / "worktrees"
    if linked.is_dir():
        for entry in sorted(linked.iterdir()):
            try:
                top = Path((entry / "gitdir").read_text().strip()).parent
            except OSError:
                continue
            heads.append((top, entry / "HEAD"))
    return heads


def checkouts(repo: pygit2.Repository, branches: set[str]) -> list[Checkout]:
    """Worktrees (the main one included) that have one of `branches` checked out."""
    found = []
    for top, head_file in all_heads(repo):
        try:
            text = head_file.read_text().strip()
        except OSError:
            continue
        if text.startswith("ref: refs/heads/") and text[len("ref: refs/heads/") :] in branches:
            found.append(Checkout(top, text[len("ref: refs/heads/") :]))
    return found


def checked_out_at(repo: pygit2.Repository, branch: str) -> Path | None:
    """Where `branch` is checked out (the first worktree found), if anywhere: for the verbs
    that rewrite a branch wholesale and so refuse even a clean checkout."""
    found = checkouts(repo, {branch})
    return found[0].path if found else None


def dirty(checkout: Checkout) -> bool:
    proc = git(checkout.path, "status", "--porcelain", "--untracked-files=no", check=False)
    return proc.returncode != 0 or bool(proc.stdout.strip())


def index_tree(checkout: Checkout) -> str:
    return git(checkout.path, "write-tree", check=False).stdout.strip()


def update(checkout: Checkout, old: str, new: str) -> None:
    git(checkout.path, "read-tree", "-u", "-m", old, new)
