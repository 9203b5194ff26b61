"""`series resolutions [--prune]`: the conflict resolutions the series carries."""
from __future__ import annotations

from dataclasses import dataclass

from series.git import refs
from series.resolutions import ResolutionStore, describe, reachable
from series.workspace import Workspace


@dataclass(frozen=True)
class Listing:
    directory: str
    rows: list[dict[str, object]]
    pruned: list[dict[str, object]]


def run(ws: Workspace, prune: bool = False, dry_run: bool = False) -> Listing:
    store = ResolutionStore.for_series(ws.series)
    root = ws.series.root
    pruned = []
    if prune and dry_run:
        pruned = describe(store.prune(reachable(ws.series, ws.repo), dry_run=True), root)
    elif prune:
        # through the write door: under the lock, never during a halted rebase (which may
        # be about to use them), journaled with each file's text so nothing is lost
        keep = reachable(ws.series, ws.repo)
        with ws.operation("resolutions", "prune") as op:
            doomed = [r for r in store.all() if not keep(r)]
            op.summary = f"prune {len(doomed)} resolution(s)"
            op.extra["removed"] = {refs.relative_config(ws.repo, r.file)[0]: r.file.read_text(errors="replace")
                                   for r in doomed}
            op.extra["worktree"] = refs.relative_config(ws.repo, root)[1]  # 'series undo' puts them back
            if doomed:
                op.commit()
            pruned = describe(store.prune(keep), root)
    kept = describe(store.all(), root)
    if dry_run:
        gone = {row["file"] for row in pruned}
        kept = [row for row in kept if row["file"] not in gone]
    return Listing(str(store.directory), kept, pruned)


def render(listing: Listing, dry_run: bool = False) -> str:
    out = []
    verb = "would drop" if dry_run else "dropped"
    for row in listing.pruned:
        out.append(f"{verb} {row['file']} (topic {row['topic']} no longer meets {row['path']})")
    if not listing.rows:
        out.append(f"no resolutions in {listing.directory}")
        return "\n".join(out)
    width = max(len(str(r["topic"])) for r in listing.rows)
    out.append(f"{len(listing.rows)} resolution{'s' if len(listing.rows) != 1 else ''} in {listing.directory}")
    for row in listing.rows:
        hunks = f"{row['hunks']} hunk{'s' if row['hunks'] != 1 else ''}"
        out.append(f"  {row['topic']:<{width}}  {row['path']}  {str(row['conflict'])[:12]}  {hunks}")
    return "\n".join(out)


def as_json(listing: Listing) -> dict[str, object]:
    return {"directory": listing.directory, "resolutions": listing.rows, "pruned": listing.pruned}
