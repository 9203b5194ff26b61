"""Where a human meets the rebase: the conflict worktree, and the user's own checkouts.

A conflict is materialized as git itself would leave it: a worktree detached at the head
the commit was being applied to, the commit's clean paths staged, each conflicting path
with its three index stages (ancestor, ours, theirs) and the file with conflict markers,
so `git add` marks it resolved and `git status`, `git diff` and `git mergetool` work.
rerere is enabled for the repository (unless the user turned it off) and run once, so a
resolution this clone has recorded before is reused, and the one made now is recorded.

Checked-out topic branches: a branch checked out in a dirty worktree is refused before
anything happens; a clean one gets its files updated after the branch moved
(`git read-tree -u -m OLD NEW`, which refuses rather than overwrite anything).
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pygit2

from series.engine.odb import GITLINK, LINK, TREE
from series.engine.replay import ReplayStop
from series.engine.state import fault
from series.errors import SeriesError
from series.git.cli import git
from series.git.repo import workdir

ZERO = "0" * 40


def _main_root(repo: pygit2.Repository) -> Path:
    return workdir(repo)


def remove(repo: pygit2.Repository, path: Path) -> None:
    """Remove the rebase worktree (registered or half-made)."""
    root = _main_root(repo)
    if path.exists():
        git(root, "worktree", "remove", "--force", "--force", str(path), check=False)
        shutil.rmtree(path, ignore_errors=True)
    git(root, "worktree", "prune", check=False)


def _rerere_enabled(repo: pygit2.Repository) -> bool:
    try:
        return bool(repo.config.get_bool("rerere.enabled"))
    except (KeyError, pygit2.GitError):
        repo.config["rerere.enabled"] = True  # not set: enable it, as the issue asks
        return True


def materialize(repo: pygit2.Repository, path: Path, stop: ReplayStop) -> list[str]:
    """Lay out `stop` in a worktree at `path`; return notes (e.g. rerere reuse)."""
    root = _main_root(repo)
    _marker(path).unlink(missing_ok=True)
    remove(repo, path)  # also prunes a registration whose directory is gone
    path.parent.mkdir(parents=True, exist_ok=True)
    git(root, "worktree", "add", "--detach", str(path), str(stop.head))
    fault("rebase-mid-worktree")
    lines: list[str] = []
    files: dict[str, tuple[bytes | None, int]] = {}
    for rel, entry in stop.clean.items():
        if entry is None:
            lines.append(f"0 {ZERO}\t{rel}")
            files[rel] = (None, 0)
        else:
            lines.append(f"{entry[0]:o} {entry[1]} 0\t{rel}")
            if entry[0] not in (TREE, GITLINK):
                files[rel] = (repo[entry[1]].data, entry[0])  # type: ignore[attr-defined]
    for c in stop.conflicts:
        lines.append(f"0 {ZERO}\t{c.path}")
        for stage, side in ((1, c.ancestor_entry), (2, c.ours_entry), (3, c.theirs_entry)):
            if side is not None and side[0] not in (TREE,):
                lines.append(f"{side[0]:o} {side[1]} {stage}\t{c.path}")
        mode = (c.ours_entry or c.theirs_entry or (0o100644, ""))[0]
        files[c.path] = (c.merged if c.ours is not None or c.theirs is not None else b"", mode)
    git(path, "update-index", "--index-info", input="\n".join(lines) + "\n")
    for rel, (data, mode) in files.items():
        target = path / rel
        if data is None:
            if target.is_file() or target.is_symlink():
                target.unlink()
            continue
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.exists():
            target.unlink()
        if mode == LINK:
            os.symlink(data, target)
        else:
            target.write_bytes(data)
            os.chmod(target, 0o755 if mode == 0o100755 else 0o644)
    _marker(path).write_text(f"{stop.commit}\n")
    notes = []
    if _rerere_enabled(repo):
        git(path, "rerere", check=False)
        for c in stop.conflicts:
            target = path / c.path
            if target.is_file() and target.read_bytes() != c.merged and b"<<<<<<<" not in target.read_bytes():
                notes.append(f"rerere reused a recorded resolution for {c.path}: check it, then git add it")
    return notes


def _marker(path: Path) -> Path:
    return path.parent / "laid-out"


def laid_out(path: Path, stop: ReplayStop) -> bool:
    """Was this conflict completely laid out in the worktree (so the user may have worked
    there)? A layout interrupted half-way is not, and is simply redone."""
    marker = _marker(path)
    return path.exists() and marker.exists() and marker.read_text().strip() == str(stop.commit)


@dataclass(frozen=True)
class Resolution:
    tree: pygit2.Oid
    files: dict[str, bytes]           # conflicted path -> resolved content
    commit: pygit2.Oid | None = None  # the user committed in the worktree themselves


def read_resolution(repo: pygit2.Repository, path: Path, head: str, paths: list[str],
                    command: str = "series rebase") -> Resolution:
    """The resolved tree from the worktree's index; refuse while conflicts remain."""
    if not path.exists():
        raise SeriesError(f"the conflict worktree {path} is missing; run '{command} --abort' "
                          "and start again")
    wt = pygit2.Repository(str(path))
    index = wt.index
    index.read()
    if index.conflicts is not None:
        left = sorted({(e.path) for triple in index.conflicts for e in triple if e is not None})
        if left:
            raise SeriesError(f"unresolved conflicts in {', '.join(left)} (in {path}): edit them, "
                              f"'git add' each, then '{command} --continue'")
    if _rerere_enabled(repo):
        git(path, "rerere", check=False)  # records the postimage for this clone's rerere
    user_commit = None
    if str(wt.head.target) != head:
        moved = wt.head.peel(pygit2.Commit)
        if moved.parents and str(moved.parents[0].id) == head and len(moved.parents) == 1:
            user_commit = moved.id
        else:
            raise SeriesError(f"HEAD of {path} moved away from {head[:12]}; reset it there "
                              f"(git -C {path} reset --soft {head[:12]}) and '{command} --continue'")
    tree = index.write_tree()
    files = {}
    for rel in paths:
        entry = index[rel] if rel in index else None
        files[rel] = wt[entry.id].data if entry is not None else b""  # type: ignore[attr-defined]
    return Resolution(tree, files, user_commit)


# -- the user's checkouts ---------------------------------------------------------------------

@dataclass(frozen=True)
class Checkout:
    path: Path
    branch: str


def checkouts(repo: pygit2.Repository, branches: set[str]) -> list[Checkout]:
    """Worktrees (the main one included) that have one of `branches` checked out."""
    found = []
    candidates: list[Path] = []
    if repo.workdir:
        candidates.append(Path(repo.workdir))
    common = Path(repo.path)
    if (common / "commondir").exists():
        common = (common / (common / "commondir").read_text().strip()).resolve()
    main_head = common / "HEAD"
    heads = [(Path(repo.workdir) if repo.workdir else common, main_head)]
    wt_dir = common / "worktrees"
    if wt_dir.is_dir():
        for entry in sorted(wt_dir.iterdir()):
            gitdir = entry / "gitdir"
            if gitdir.exists():
                heads.append((Path(gitdir.read_text().strip()).parent, entry / "HEAD"))
    for wt_path, head_file in heads:
        try:
            text = head_file.read_text().strip()
        except OSError:
            continue
        if text.startswith("ref: refs/heads/"):
            branch = text[len("ref: refs/heads/"):]
            if branch in branches:
                found.append(Checkout(wt_path, branch))
    return found


def dirty(checkout: Checkout) -> bool:
    proc = git(checkout.path, "status", "--porcelain", "--untracked-files=no", check=False)
    return proc.returncode != 0 or bool(proc.stdout.strip())


def update(checkout: Checkout, old: str, new: str) -> None:
    git(checkout.path, "read-tree", "-u", "-m", old, new)
