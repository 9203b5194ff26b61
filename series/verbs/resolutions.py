"""`series resolutions [--prune]`: the conflict resolutions the series carries."""

from __future__ import annotations

from dataclasses import dataclass

import click

from series.cli_support import Context, emit, emit_json, pass_ctx
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
        pruned = describe(store.unreachable(reachable(ws.series, ws.repo)), root)
    elif prune:
        # through the transaction: under the lock, never during a halted rebase (which may
        # be about to use them), journaled with each file's bytes ('series undo' puts them back)
        keep = reachable(ws.series, ws.repo)
        with ws.transaction("resolutions", "prune") as tx:
            doomed = store.unreachable(keep)
            tx.summary = f"prune {len(doomed)} resolution(s)"
            for r in doomed:
                tx.remove(r.file)
            if doomed:
                tx.commit()
            pruned = describe(doomed, root)
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


def to_json(listing: Listing) -> dict[str, object]:
    return {"directory": listing.directory, "resolutions": listing.rows, "pruned": listing.pruned}


@click.command("resolutions")
@click.option(
    "--prune",
    is_flag=True,
    help="Drop resolutions no active topic can meet any more (its topic is gone, or no longer changes the path).",
)
@click.option("--dry-run", is_flag=True, help="With --prune: show what would be dropped.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def command(ctx: Context, prune: bool, dry_run: bool, as_json: bool) -> None:
    """List the conflict resolutions the series carries (the resolutions/ directory).

    A resolution is recorded when you resolve a conflict and run 'series rebase --continue';
    later rebases, in any clone, apply it when exactly the same conflict reappears. Each is a
    readable text file: review it, commit it with series.yaml, delete it to forget it.
    """

    ws = ctx.workspace(check_branches=False)
    listing = run(ws, prune=prune, dry_run=dry_run)
    if as_json:
        emit_json(to_json(listing))
    else:
        emit(render(listing, dry_run))
