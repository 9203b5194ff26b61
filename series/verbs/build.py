"""`series build`: the integration branch, and with --wheel the patched vLLM wheel.

Order: compute the integration commit in memory; refuse early what the overlay cannot
carry; move the integration branch (journaled, under the lock); then write the wheel and
its manifest. The wheel is written to a temporary name and renamed, so a killed build
never leaves a half wheel under the final name.
"""

from __future__ import annotations

import datetime
import hashlib
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import click
import pygit2

from series.wheel import fetch, integration_tree, manifest, overlay
from series.wheel.integration_tree import Integration
from series.cli_support import Context, emit, emit_json, pass_ctx
from series.errors import SeriesError
from series.git import releases
from series.git.refs import current
from series.git.repo import changed_paths, workdir
from series.workspace import Workspace


@dataclass(frozen=True)
class BuildResult:
    base: str
    base_sha: str
    integration_branch: str | None
    integration_sha: str
    branch_moved: bool
    topics: tuple[str, ...]
    wheel: Path | None = None
    manifest: Path | None = None
    version: str | None = None
    method: str | None = None  # overlay | from-source (precompiled|full)
    source_wheel: Path | None = None
    changes: dict[str, list[str]] = field(default_factory=dict)
    plan: str | None = None  # the --from-source command (with --dry-run)
    dry_run: bool = False
    notes: tuple[str, ...] = ()


def changes_between(ws: Workspace, integ: Integration) -> dict[str, overlay.OverlayChange]:
    repo = ws.repo
    out = {}
    for change in changed_paths(repo, integ.base.tree, integ.commit.tree):
        data = repo[change.new_id].peel(pygit2.Blob).data if change.new_id is not None else None
        out[change.path] = overlay.OverlayChange(change.path, data, executable=change.new_mode == 0o100755)
    return out


def refuse_compiled(ws: Workspace, paths: list[str]) -> None:
    hits = overlay.compiled_inputs(paths)
    if not hits:
        return
    touched = integration_tree.topic_paths(ws)
    by_topic: dict[str, list[str]] = {}
    for path in hits:
        for name in touched.get(path, ("(the integration merge)",)):
            by_topic.setdefault(name, []).append(path)
    detail = "; ".join(f"{name}: {', '.join(files)}" for name, files in by_topic.items())
    raise SeriesError(
        f"the series changes compiled or packaging inputs ({detail}); an overlay of the "
        "release wheel cannot carry them: build with --from-source (vLLM's own build in a "
        "temporary worktree)"
    )


def check_release(ws: Workspace, name: overlay.WheelName) -> None:
    """A release base (v0.31.0) must get that release's wheel: the overlay lays
    base..integration over it, and a precompiled build takes its kernels. Versions
    compare as PEP 440 does (series.git.releases), four-part and post releases too."""
    base = ws.series.upstream.base
    version = releases.tag_version(base)
    wheel_public = name.version.split("+")[0]
    if version is not None and releases.parse_version(wheel_public) != version:
        raise SeriesError(
            f"the wheel is {name.name} {name.version} but the series is based on {base}",
            f"pass --wheel {name.name}=={version} (or rebase the series onto v{wheel_public} first)",
        )


def stale_files(
    ws: Workspace, integ: Integration, record: dict[str, tuple[str, int]], changes: dict[str, overlay.OverlayChange]
) -> tuple[str, ...]:
    """Files the series changes must be, in the wheel, the base's version (`record`, the
    wheel's RECORD hash, against the base blob); a difference is reported: the overlay would
    silently replace upstream code the series never saw."""
    stale = []
    for path in sorted(changes):
        if path not in record:
            continue
        try:
            blob = integ.base.tree[path]
        except KeyError:
            continue  # added by the series, yet in the wheel: generated upstream at build time
        if overlay.record_hash(ws.repo[blob.id].peel(pygit2.Blob).data) != record[path][0]:
            stale.append(path)
    if not stale:
        return ()
    base = ws.series.upstream.base
    shown = ", ".join(stale[:5]) + (f" and {len(stale) - 5} more" if len(stale) > 5 else "")
    return (
        f"warning: {len(stale)} file(s) the series changes differ between {base} and the wheel "
        f"({shown}): the wheel was not built from {base}'s tree",
    )


def timestamp(integ: Integration) -> tuple[int, int, int, int, int, int]:
    """SOURCE_DATE_EPOCH if set (reproducible-builds convention), else the commit's time."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    seconds = int(epoch) if epoch and epoch.isdigit() else integ.commit.committer.time
    when = datetime.datetime.fromtimestamp(max(seconds, 315532800), datetime.timezone.utc)  # >= 1980
    return (when.year, when.month, when.day, when.hour, when.minute, when.second)


def write_branch(ws: Workspace, integ: Integration) -> tuple[str | None, bool]:
    name = ws.series.integration
    if name is None:
        return None, False
    ref = f"refs/heads/{name}"
    if current(ws.repo, ref) == integ.sha:
        return name, False
    # the transaction refuses while a rebase is halted (its --continue/--abort expects the branch
    # unmoved), and refuses or updates a checkout of the integration branch
    with ws.transaction("build", f"integration {name} -> {integ.sha[:12]}") as tx:
        tx.move(ref, integ.sha)
        tx.commit()
    return name, True


def run(
    ws: Workspace,
    *,
    wheel: str | None = None,
    out: Path | None = None,
    from_source: bool = False,
    dry_run: bool = False,
    fetcher: Callable[[str], tuple[Path, bool]] | None = None,
    runner: Any = None,
    progress: Callable[[str], None] = lambda _: None,
    target: fetch.Target | None = None,
) -> BuildResult:
    """Everything that can refuse (compiled inputs, the wrong wheel, a download failing)
    happens before the integration branch moves."""
    integ = integration_tree.build(ws)
    changes = changes_between(ws, integ)
    paths = sorted(changes)
    result = BuildResult(
        base=ws.series.upstream.base,
        base_sha=str(integ.base.id),
        integration_branch=ws.series.integration,
        integration_sha=integ.sha,
        branch_moved=False,
        topics=tuple(t.name for t in integ.topics),
        dry_run=dry_run,
    )
    if wheel is None:
        return result if dry_run else _move_branch(ws, integ, result)
    if not from_source:
        refuse_compiled(ws, paths)
    if dry_run:
        release, present = fetch.planned(wheel, target=target)  # a dry run never downloads 320 MB
        if not present:
            progress(f"would fetch {wheel} with pip into {release.parent}")
    else:
        release, fetched = (fetcher or (lambda w: fetch.resolve_wheel(w, target=target)))(wheel)
        if fetched:
            progress(f"fetched {release.name} into {release.parent}")
    name = overlay.WheelName.parse(release.name)
    check_release(ws, name)
    version = overlay.local_version(name.version, integ.sha)
    out_dir = out or (ws.series.root / "dist")
    result = replace(result, version=version, source_wheel=release)
    if from_source:
        return _from_source(ws, integ, result, out_dir, paths, runner)
    result = replace(result, method="overlay")
    if dry_run:
        return replace(result, wheel=out_dir / name.filename(version))
    read = overlay.read_wheel(release)  # once: the stale-file check and the overlay both need it
    notes = stale_files(ws, integ, read.record, changes)
    for note in notes:
        progress(note)
    result = _move_branch(ws, integ, result)
    progress(f"overlaying {len(paths)} changed paths onto {release.name}")
    built = overlay.overlay(release, out_dir, changes, integ.sha, timestamp(integ), read=read)
    summary = {
        "added": list(built.added),
        "modified": list(built.modified),
        "deleted": list(built.deleted),
        "ignored": list(built.ignored),
    }
    data = manifest.manifest(
        ws,
        integration_branch=result.integration_branch,
        integration_sha=integ.sha,
        wheel=built.path,
        wheel_sha256=built.sha256(),
        version=version,
        method="overlay",
        source_wheel=release,
        changes=summary,
    )
    return replace(result, wheel=built.path, manifest=manifest.write(built.path, data), changes=summary, notes=notes)


def _move_branch(ws: Workspace, integ: Integration, result: BuildResult) -> BuildResult:
    branch, moved = write_branch(ws, integ)
    return replace(result, integration_branch=branch, branch_moved=moved)


def _from_source(
    ws: Workspace, integ: Integration, result: BuildResult, out_dir: Path, paths: list[str], runner: Any
) -> BuildResult:
    from series.wheel import source  # vLLM's own build: only --from-source needs it

    release, version = result.source_wheel, result.version
    assert release is not None and version is not None
    if result.dry_run:
        plan = source.plan(release, version, out_dir, paths)
        missing = source.missing_requirements()
        note = f"; missing here: {', '.join(missing)}" if missing else ""
        return replace(result, method=f"from-source ({plan.recipe})", plan=f"{plan.describe()}  # {plan.why}{note}")
    result = _move_branch(ws, integ, result)
    kwargs = {"runner": runner, "check_requirements": False} if runner is not None else {}
    plan, built = source.build(workdir(ws.repo), integ.sha, release, version, out_dir, paths, **kwargs)
    digest = hashlib.sha256(built.read_bytes()).hexdigest()
    method = f"from-source ({plan.recipe})"
    data = manifest.manifest(
        ws,
        integration_branch=result.integration_branch,
        integration_sha=integ.sha,
        wheel=built,
        wheel_sha256=digest,
        version=version,
        method=method,
        source_wheel=release,
        changes={"paths": paths},
    )
    return replace(result, wheel=built, manifest=manifest.write(built, data), method=method, plan=plan.describe())


def to_json(result: BuildResult) -> dict[str, Any]:
    return {
        "base": result.base,
        "base_sha": result.base_sha,
        "integration": {
            "branch": result.integration_branch,
            "sha": result.integration_sha,
            "moved": result.branch_moved,
        },
        "topics": list(result.topics),
        "wheel": str(result.wheel) if result.wheel else None,
        "manifest": str(result.manifest) if result.manifest else None,
        "version": result.version,
        "method": result.method,
        "source_wheel": str(result.source_wheel) if result.source_wheel else None,
        "changes": result.changes,
        "plan": result.plan,
        "dry_run": result.dry_run,
        "notes": list(result.notes),
    }


def render(result: BuildResult) -> str:
    lines = [
        f"integration: {result.base} ({result.base_sha[:12]}) + {len(result.topics)} topics"
        f" -> {result.integration_sha[:12]}"
    ]
    if result.integration_branch:
        state = "updated" if result.branch_moved else ("would update" if result.dry_run else "unchanged")
        lines.append(f"branch {result.integration_branch}: {state}")
    else:
        lines.append("no 'integration:' branch in series.yaml: the integration commit is not kept on a branch")
    if result.plan:
        lines.append(f"build: {result.plan}")
    if result.changes:
        c = result.changes
        if "added" in c:
            lines.append(
                f"wheel: {len(c['modified'])} modified, {len(c['added'])} added, "
                f"{len(c['deleted'])} deleted; {len(c['ignored'])} changed paths outside the package"
            )
    if result.version:
        lines.append(f"version {result.version} ({result.method})")
    lines.extend(result.notes)
    if result.manifest:
        lines.append(f"manifest {result.manifest}")
    if result.wheel:
        lines.append(f"{'would write ' if result.dry_run else ''}{result.wheel}")
    return "\n".join(lines)


@click.command("build")
@click.option(
    "--wheel",
    metavar="vllm==X | PATH.whl",
    help="Also build the patched wheel from this release wheel (fetched once into "
    "~/.cache/series/wheels: with pip, or from the index when there is no pip) or a local file.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where the wheel and its manifest go (default: dist/ beside series.yaml).",
)
@click.option(
    "--from-source",
    is_flag=True,
    help="Build with vLLM's own setup in a temporary worktree (needed when the series "
    "changes csrc/, cmake/, setup.py, pyproject.toml or requirements/).",
)
@click.option(
    "--platform",
    metavar="TAG",
    help="With --wheel vllm==X: the platform the wheel is for, e.g. manylinux_2_28_x86_64 (default: this machine's).",
)
@click.option(
    "--python-version",
    metavar="3.X",
    help="With --wheel vllm==X: the Python the wheel is for (default: this interpreter's).",
)
@click.option("--dry-run", is_flag=True, help="Compute and report; move no branch, write no wheel.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def command(
    ctx: Context,
    wheel: str | None,
    out: Path | None,
    from_source: bool,
    platform: str | None,
    python_version: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Build the integration branch (base + every active topic) and, with --wheel, the patched wheel.

    \b
    The integration commit is computed in memory and written to the 'integration:' branch
    of series.yaml (journaled: 'series undo' reverts it). With --wheel, a Python-only
    series is laid over the release wheel: unchanged members are copied as they are,
    RECORD is regenerated and one local version is stamped everywhere, e.g.
    0.31.0+series.g1a2b3c4. A manifest JSON goes beside the wheel. The wheel's path is
    the last line printed.
    \b
    Examples:
      series build                                 integration branch only
      series build --wheel vllm==0.31.0            patched wheel into dist/
      series build --wheel ~/wheels/vllm-0.31.0-cp38-abi3-manylinux_2_28_x86_64.whl --out /tmp/w
      series build --wheel vllm==0.31.0 --from-source --dry-run   show the build command
    """
    from series.wheel.fetch import Target

    ws = ctx.workspace()
    result = run(
        ws,
        wheel=wheel,
        out=out,
        from_source=from_source,
        dry_run=dry_run,
        progress=lambda msg: click.echo(msg, err=True),
        target=Target(platform, python_version),
    )
    if as_json:
        emit_json(to_json(result))
    else:
        emit(render(result))
