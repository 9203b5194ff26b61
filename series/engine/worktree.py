"""Where a human meets the rebase: the conflict worktree.

A conflict is materialized by git itself: a worktree detached at the head the commit was
being applied to, and `git cherry-pick --no-commit` of the commit there, which leaves
exactly what `git rebase` leaves (index stages, markers, the clean paths staged), so
`git add` marks a path resolved and `git status`, `git diff` and `git mergetool` work.
rerere is enabled for the repository (unless the user turned it off), so a resolution this
clone has recorded before is reused, and the one made now is recorded.

The user's own checkouts of the branches a command moves (refused when dirty, updated when
clean) are series.git.checkouts'.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pygit2

from series.engine.replay import ReplayStop
from series.ops.faults import fault
from series.ops.halted import Halt
from series.errors import SeriesError
from series.git.command import git
from series.git.repo import workdir


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


def materialize(repo: pygit2.Repository, path: Path, stop: ReplayStop, abort: str) -> list[str]:
    """Lay out `stop` in a worktree at `path`; return notes (e.g. rerere reuse). `abort`: the
    verb's command that puts everything back (hints quote it).

    git lays it out itself: `git cherry-pick --no-commit` of the commit onto the head it
    was being applied to is the same merge-ort merge the replay asked `git merge-tree`
    for, and leaves what `git rebase` would: the markers labelled HEAD and "<abbrev>
    (<subject>)", the index stages, rerere's preimage. Paths the conflict memory resolved
    are then written with its answer and staged."""
    root = _main_root(repo)
    _marker(path).unlink(missing_ok=True)
    remove(repo, path)  # also prunes a registration whose directory is gone
    path.parent.mkdir(parents=True, exist_ok=True)
    git(root, "worktree", "add", "--detach", str(path), str(stop.head))
    fault("rebase-mid-worktree")
    _rerere_enabled(repo)  # switched on (when unset) before git records the preimage
    picked = git(path, "cherry-pick", "--no-commit", str(stop.commit), check=False)
    if picked.returncode == 0:
        raise SeriesError(
            f"the conflict in {str(stop.commit)[:12]} did not reproduce in {path}", f"run '{abort}' and start again"
        )
    for rel, data in stop.resolved.items():
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        git(path, "add", "--", rel)
    _marker(path).write_text(f"{stop.commit}\n")
    notes = []
    for line in (picked.stdout + picked.stderr).splitlines():
        if line.startswith("Resolved '") and "using previous resolution" in line:
            rel = line.split("'")[1]
            notes.append(f"rerere reused a recorded resolution for {rel}: check it, then git add it")
    return notes


def _marker(path: Path) -> Path:
    return path.parent / "laid-out"


def laid_out(path: Path, stop: ReplayStop) -> bool:
    """Was this conflict completely laid out in the worktree (so the user may have worked
    there)? A layout interrupted half-way is not, and is simply redone."""
    marker = _marker(path)
    return path.exists() and marker.exists() and marker.read_text().strip() == str(stop.commit)


@dataclass(frozen=True)
class WorktreeResolution:
    tree: pygit2.Oid
    files: dict[str, bytes]  # conflicted path -> resolved content
    commit: pygit2.Oid | None = None  # the user committed in the worktree themselves


def read_resolution(repo: pygit2.Repository, path: Path, head: str, paths: list[str], halt: Halt) -> WorktreeResolution:
    """The resolved tree from the worktree's index; refuse while conflicts remain (the
    hints quote the verb's commands, from `halt`)."""
    if not path.exists():
        raise SeriesError(f"the conflict worktree {path} is missing", f"run '{halt.stop}' and start again")
    wt = pygit2.Repository(str(path))
    index = wt.index
    index.read()
    if index.conflicts is not None:
        left = sorted({(e.path) for triple in index.conflicts for e in triple if e is not None})
        if left:
            raise SeriesError(
                f"unresolved conflicts in {', '.join(left)} (in {path})",
                f"edit them, 'git add' each, then '{halt.go_on}'",
            )
    if _rerere_enabled(repo):
        git(path, "rerere", check=False)  # records the postimage for this clone's rerere
    user_commit = None
    if str(wt.head.target) != head:
        moved = wt.head.peel(pygit2.Commit)
        if moved.parents and str(moved.parents[0].id) == head and len(moved.parents) == 1:
            user_commit = moved.id
        else:
            raise SeriesError(
                f"HEAD of {path} moved away from {head[:12]}",
                f"reset it there (git -C {path} reset --soft {head[:12]}) and '{halt.go_on}'",
            )
    tree = index.write_tree()
    files = {}
    for rel in paths:
        entry = index[rel] if rel in index else None
        files[rel] = wt[entry.id].data if entry is not None else b""  # type: ignore[attr-defined]
    return WorktreeResolution(tree, files, user_commit)
