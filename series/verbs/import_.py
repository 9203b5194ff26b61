"""`series import [DIR]`: recreate the topic branches from an export, on upstream.base.

Every commit is rebuilt in memory first (nothing moves if any patch fails to apply);
then all branches move in one ref transaction, journaled, so `series undo` reverts it.
A branch that exists with other commits is left alone unless --force; one that already
holds the same commits (same trees, authors, dates, messages) counts as up to date, even
though its commit ids differ by committer date.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import click
import pygit2

from series.seriesfile import config
from series.cli_support import Context, emit, emit_json, pass_ctx
from series.errors import SeriesError
from series.git import checkouts
from series.git.repo import branch_commit, committer, open_repo, workdir
from series.patches import format as patch_format
from series.patches.export import patch_files, read_order, resolutions_subdir
from series.patches.importer import make_commit, read_patch_file
from series.workspace import Workspace, repair


@dataclass(frozen=True)
class TopicImport:
    topic: str
    branch: str
    commits: int
    head: str
    action: str  # created, updated, unchanged, refused, skipped
    old_head: str | None = None
    note: str | None = None


@dataclass
class ImportResult:
    directory: Path
    base: str
    topics: list[TopicImport] = field(default_factory=list)
    operation: str | None = None
    config_copied: Path | None = None


@dataclass(frozen=True)
class ConfigCopy:
    """A clone without series.yaml takes the export's, and the conflict resolutions that
    travel with it: written by the import's one operation (so one 'series undo' removes
    them with the branches)."""

    target: Path  # where series.yaml goes
    text: str
    files: dict[Path, bytes]  # the resolutions directory's files, at their place here


def ensure_config(start: Path, directory: Path) -> ConfigCopy | None:
    """No series.yaml here yet: the export's copy (a fresh clone of upstream), checked; None
    when there is one here."""
    try:
        config.find(start)
        return None
    except SeriesError:
        pass
    source = directory / config.FILENAME
    if not source.is_file():
        raise SeriesError(
            f"no {config.FILENAME} here and none in {directory}", "run 'series init' first, or import a complete export"
        )
    if source.is_symlink():
        raise SeriesError(f"{source}: is a symbolic link; an export's {config.FILENAME} must be a file")
    # the export came from elsewhere (a pull request, a CI artifact): it must load, with
    # every value checked, before it becomes this clone's series.yaml
    series = config.load(source)
    root = workdir(open_repo(start))
    rel = resolutions_subdir(series.resolutions)
    files: dict[Path, bytes] = {}
    if rel is not None and (directory / rel).is_dir() and not (root / rel).exists():
        for path in sorted((directory / rel).rglob("*")):
            if path.is_symlink():
                raise SeriesError(f"{path}: is a symbolic link; an export's resolutions must be files")
            if path.is_file():
                files[root / rel / path.relative_to(directory / rel)] = path.read_bytes()
    return ConfigCopy(root / config.FILENAME, config.read_text(source), files)


def _same_commits(
    repo: pygit2.Repository, existing: pygit2.Commit, new: list[pygit2.Commit], parent: pygit2.Oid
) -> bool:
    """Does `existing` hold the same patches as `new` on the same parent?"""
    here = existing
    for commit in reversed(new):
        if (
            here.tree_id != commit.tree_id
            or here.raw_message != commit.raw_message
            or (here.author.raw_name, here.author.raw_email, here.author.time, here.author.offset)
            != (commit.author.raw_name, commit.author.raw_email, commit.author.time, commit.author.offset)
            or len(here.parents) != 1
        ):
            return False
        here = here.parents[0]
    return here.id == parent


def run(
    ws: Workspace,
    directory: Path,
    *,
    force: bool = False,
    dry_run: bool = False,
    signer: pygit2.Signature | None = None,
    copy: ConfigCopy | None = None,
) -> ImportResult:
    """Rebuild every topic of the export, then move the branches (and, with `copy`, write
    the export's series.yaml and resolutions) in one journaled operation."""
    repo = ws.repo
    base = ws.base_commit()
    names = read_order(directory)
    result = ImportResult(directory, ws.series.upstream.base)
    who = signer or committer(repo)
    new_heads: dict[str, pygit2.Commit] = {}
    refused = []
    for name in names:
        try:
            topic = ws.series.topic(name)
        except SeriesError:
            raise SeriesError(
                f"{directory / 'order'} lists '{name}', which {ws.config_path.name} does not have",
                f"add the topic to {ws.config_path.name} first",
            ) from None
        if not topic.active:
            result.topics.append(
                TopicImport(
                    name, topic.branch, 0, "", "skipped", note=f"status {topic.status.value} in {ws.config_path.name}"
                )
            )
            continue
        parent = base
        for dep in topic.depends_on:
            dep_head = new_heads.get(dep) or branch_commit(repo, ws.series.topic(dep).branch)
            if dep_head is None:
                raise SeriesError(
                    f"topic {name} depends on {dep}, which is neither in the export nor an existing branch"
                )
            parent = dep_head
        start = parent
        commits = []
        for path in patch_files(directory, name):
            patch = patch_format.parse(read_patch_file(path), f"{name}/{path.name}")
            parent = make_commit(repo, parent, patch, who, f"{name}/{path.name}")
            commits.append(parent)
        new_heads[name] = parent
        existing = branch_commit(repo, topic.branch)
        old = str(existing.id) if existing is not None else None
        if existing is None:
            action = "created"
        elif existing.id == parent.id or _same_commits(repo, existing, commits, start.id):
            new_heads[name] = existing
            action = "unchanged"
        elif force:
            action = "updated"
        else:
            action = "refused"
            refused.append(topic.branch)
        if action == "updated" and (where := checkouts.checked_out_at(repo, topic.branch)):
            raise SeriesError(f"branch {topic.branch} is checked out in {where}; check out something else there first")
        result.topics.append(
            TopicImport(name, topic.branch, len(commits), str(new_heads[name].id), action, old_head=old)
        )
    if refused and not dry_run:
        raise SeriesError(
            f"{len(refused)} branch{'es' if len(refused) != 1 else ''} already exist with other "
            f"commits ({', '.join(refused)}); nothing was changed. Re-run with --force to move them "
            "(their old heads are kept in backup refs; 'series undo' reverts)"
        )
    moves = [t for t in result.topics if t.action in ("created", "updated")]
    result.config_copied = copy.target if copy is not None else None
    if dry_run or not (moves or copy):
        return result
    summary = f"{len(moves)} topics from {directory.name}/"
    if copy is not None:
        summary += f", with its {config.FILENAME}" + (
            f" and {len(copy.files)} resolution file(s)" if copy.files else ""
        )
    with ws.transaction("import", summary) as tx:
        if copy is not None:
            tx.write_file(copy.text)  # journaled: 'series undo' removes it again
            for path, data in copy.files.items():
                tx.write(path, data)
        for t in moves:
            tx.move(f"refs/heads/{t.branch}", t.head, expect=t.old_head)
        tx.extra["directory"] = str(directory)
        result.operation = tx.commit().id
    return result


def render(result: ImportResult, dry_run: bool = False) -> str:
    out = []
    if result.config_copied and dry_run:
        out.append("no series.yaml here: would copy the export's")
    elif result.config_copied:
        out.append(f"no series.yaml here: copied {result.config_copied.name} from the export")
    verb = "would import" if dry_run else "imported"
    out.append(f"{verb} {result.directory} onto {result.base}")
    width = max([len(t.topic) for t in result.topics] + [5])
    branch_width = max([len(t.branch) for t in result.topics] + [6])
    for t in result.topics:
        action = (
            t.action
            if not dry_run or t.action in ("unchanged", "skipped", "refused")
            else {"created": "would create", "updated": "would update"}[t.action]
        )
        if t.action == "refused":
            action = "exists with other commits (use --force)"
        line = (
            f"  {t.topic:<{width}}  {t.commits:>3} commit{'s' if t.commits != 1 else ' '}  "
            f"{t.branch:<{branch_width}}  {action}"
        )
        if t.note:
            line += f" ({t.note})"
        out.append(line)
    if result.operation:
        out.append(f"operation {result.operation} ('series undo' reverts it)")
    return "\n".join(out)


def to_json(result: ImportResult) -> dict[str, object]:
    return {
        "directory": str(result.directory),
        "base": result.base,
        "operation": result.operation,
        "topics": [asdict(t) for t in result.topics],
    }


@click.command("import")
@click.argument("directory", required=False, type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--force", is_flag=True, help="Move topic branches that exist with other commits (old heads are backed up)."
)
@click.option("--dry-run", is_flag=True, help="Apply every patch in memory and report; move nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def command(ctx: Context, directory: Path | None, force: bool, dry_run: bool, as_json: bool) -> None:
    """Recreate the topic branches from an export (default DIR: patches/ beside series.yaml).

    Each topic's patches are applied in memory on upstream.base (or on the topic it
    depends_on), keeping authors, author dates and messages exactly; the committer is you.
    All branches move together in one journaled operation ('series undo' reverts it).
    In a fresh clone without series.yaml, the export's copy is used. Patches that touch
    paths outside the repository or binary files are refused.
    """
    from series.patches.export import default_directory

    copy = None
    start = ctx.here
    if directory is not None and ctx.config_file is None:
        copy = ensure_config(start, directory.resolve())
    if copy is not None:
        repo = open_repo(start)
        repair(repo)  # an operation a kill interrupted is finished or rolled back first
        ws = Workspace(config.read(copy.text, copy.target), repo)
    else:
        ws = ctx.workspace(check_branches=False)
    target = (directory or default_directory(ws)).resolve()
    result = run(ws, target, force=force, dry_run=dry_run, copy=copy)
    if as_json:
        emit_json(to_json(result))
    else:
        emit(render(result, dry_run))
