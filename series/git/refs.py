"""Refs, and nothing but git: reading one, and moving many in one `git update-ref --stdin`
transaction with every old value checked (all or none).

What an operation records around that transaction (the journal, backups, series.yaml,
recovery after a kill) is the transaction's: series.ops.journal and series.ops.changeset. This
module knows nothing of series.yaml, the transaction or the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pygit2

from series import validate
from series.errors import SeriesError
from series.git import checkouts
from series.git.command import git

ZERO = "0" * 40


@dataclass(frozen=True)
class RefMove:
    ref: str  # full name, refs/heads/topic/x
    old: str | None  # None: the ref must not exist yet
    new: str | None  # None: delete the ref


def current(repo: pygit2.Repository, ref: str) -> str | None:
    found = repo.references.get(ref)
    if found is None:
        return None
    return str(found.resolve().target)


def update(
    repo: pygit2.Repository,
    moves: list[RefMove],
    message: str,
    lenient: int = 0,
    verify: list[tuple[str, str]] | None = None,
) -> None:
    """All moves in one git transaction; the first `lenient` ones are written whatever
    their current value (backup refs, which a retried operation may find already there)."""
    lines = ["start"]
    for m in moves:  # the --stdin protocol is space-separated: a bad name would garble it
        problem = validate.ref_component_problem(m.ref)
        if problem is not None:
            raise SeriesError(
                f"refusing to move '{validate.one_line(m.ref)}': the name {problem} "
                "(git check-ref-format rules); nothing was moved"
            )
    for ref, value in verify or []:
        lines.append(f"verify {ref} {value}")
    for i, m in enumerate(moves):
        if i < lenient:
            lines.append(f"update {m.ref} {m.new}")
            continue
        old = m.old or ZERO
        if m.new is None:
            lines.append(f"delete {m.ref} {old}")
        else:
            lines.append(f"update {m.ref} {m.new} {old}")
    lines += ["prepare", "commit", ""]
    root = Path(repo.path)
    git(root, "update-ref", "-m", message, "--stdin", input="\n".join(lines))


def own_lock_files(repo: pygit2.Repository, moves: list[RefMove], verify: list[tuple[str, str]]) -> list[Path]:
    """Ref lock files a killed `git update-ref` of `moves` (and `verify`) left. git writes
    the new value into <ref>.lock before renaming it over the ref, so a lock file holding
    exactly the value the transaction was writing to that ref is provably its own; a ref it only verifies or
    deletes gets a lock with nothing or the expected value in it. (We hold the series
    lock, so no other series process is writing.)"""
    common = checkouts.common_dir(repo)
    wanted: dict[str, set[str]] = {}
    for m in moves:
        wanted.setdefault(m.ref, set()).add(m.new if m.new is not None else (m.old or ""))
        if m.new is None:
            wanted[m.ref].add("")
    for ref, value in verify:
        wanted.setdefault(ref, set()).update({value, ""})
    found = []
    for ref, values in wanted.items():
        lock = common / f"{ref}.lock"
        try:
            text = lock.read_text().strip()
        except OSError:
            continue
        if text in values:
            found.append(lock)
    return found
