"""Write the active topics as patch files; read an export directory back.

Layout of an export directory:
  order              the topic directories in series order, one a line
  series.yaml        a copy of the series file the export was made from
  <topic>/NNNN-<subject-slug>.patch   one file per commit, oldest first
  resolutions/...    a copy of the recorded conflict resolutions (series.yaml's
                     `resolutions:` directory), so the export alone rebuilds and rebases

A file is rewritten only when its text changed, and files a previous export wrote that
this one did not (a retired topic, a squashed commit) are removed, so the directory can
live in a repository of its own and `git diff` there shows exactly what changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from series.seriesfile.config import FILENAME, NAME_RE
from series.errors import SeriesError
from series.ops.fs import write_atomically
from series.model import Topic
from series.patches import format as patch_format
from series.topics import meant_start
from series.workspace import Workspace

ORDER = "order"
ORDER_HEADER = "# series export: topic directories in series order (see series.yaml)\n"


@dataclass(frozen=True)
class TopicPatches:
    topic: str
    files: tuple[tuple[str, str], ...]  # (file name, text)
    on_base: bool = True


@dataclass
class ExportResult:
    directory: Path
    topics: list[TopicPatches] = field(default_factory=list)
    written: list[str] = field(default_factory=list)  # relative paths created or changed
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    notes: list[str] = field(default_factory=list)


def topic_patches(ws: Workspace, topic: Topic) -> TopicPatches:
    # its own commits (series.topics): a stacked topic's file holds none of its dependencies'
    own = ws.require_own(topic)
    commits, on_base = own.commits, own.on_base
    files = []
    total = len(commits)
    for number, commit in enumerate(commits, 1):
        where = f"topic {topic.name}, commit {str(commit.id)[:12]}"
        if len(commit.parents) != 1:
            raise SeriesError(
                f"{where} is a merge; patch files carry a linear series only (linearize the topic branch first)"
            )
        diff, stats = patch_format.tree_diff(ws.repo, commit.parents[0].tree, commit.tree, where)
        author = commit.author
        patch = patch_format.Patch(
            author_name=patch_format.decode(author.raw_name),
            author_email=patch_format.decode(author.raw_email),
            author_time=author.time,
            author_offset=author.offset,
            message=patch_format.decode(commit.raw_message),
            diff=diff,
            number=number,
            total=total,
        )
        files.append((patch_format.file_name(number, patch.subject), patch_format.render(patch, stats)))
    return TopicPatches(topic.name, tuple(files), on_base)


def default_directory(ws: Workspace) -> Path:
    return ws.series.root / "patches"


def read_order(directory: Path) -> list[str]:
    path = directory / ORDER
    if not path.is_file():
        raise SeriesError(f"{directory}: not a series export (no '{ORDER}' file); make one with 'series export DIR'")
    names = []
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SeriesError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    for number, line in enumerate(text.splitlines(), 1):
        name = line.strip()
        if not name or name.startswith("#"):
            continue
        if not NAME_RE.match(name):
            # a name is a directory: nothing like '../x' may be read or written through it
            raise SeriesError(f"{path}:{number}: '{name}' is not a topic name (lowercase [a-z0-9._-])")
        names.append(name)
    return names


def patch_files(directory: Path, topic: str) -> list[Path]:
    """The topic's patches in order; a topic without commits may have no directory (git
    does not keep empty directories)."""
    folder = directory / topic
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix == ".patch" and p.is_file())


def _write_if_changed(path: Path, text: str, result: ExportResult, rel: str) -> None:
    data = patch_format.encode(text)
    if path.is_file() and path.read_bytes() == data:
        result.unchanged += 1
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, data)
    result.written.append(rel)


def resolutions_subdir(name: str) -> Path | None:
    """series.yaml's `resolutions:` as a path inside an export, or None if it leaves it."""
    rel = Path(name)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        return None
    return rel


def _copy_resolutions(ws: Workspace, directory: Path, result: ExportResult) -> None:
    rel = resolutions_subdir(ws.series.resolutions)
    source = ws.series.root / ws.series.resolutions
    if rel is None:
        result.notes.append(
            f"resolutions directory {ws.series.resolutions} is outside the series root; not copied into the export"
        )
        return
    target = directory / rel
    wanted = set()
    if source.is_dir() and source.resolve() != target.resolve():
        for file in sorted(source.glob("*/*.txt")):
            name = file.relative_to(source)
            wanted.add(name)
            data = file.read_bytes()
            _write_if_changed(target / name, patch_format.decode(data), result, str(rel / name))
    if target.is_dir() and source.resolve() != target.resolve():
        for stale in sorted(target.glob("*/*.txt")):
            if stale.relative_to(target) not in wanted:
                stale.unlink()
                result.removed.append(str(rel / stale.relative_to(target)))
                if not any(stale.parent.iterdir()):
                    stale.parent.rmdir()


def export(ws: Workspace, directory: Path, dry_run: bool = False) -> ExportResult:
    result = ExportResult(directory)
    previous: list[str] = []
    if directory.exists():
        if not directory.is_dir():
            raise SeriesError(f"{directory} is a file", "give a directory to export into")
        if (directory / ORDER).is_file():
            previous = read_order(directory)
        elif any(directory.iterdir()):
            raise SeriesError(
                f"{directory} is not empty and holds no previous export (no '{ORDER}' "
                "file); pick a new or empty directory"
            )
    reserved = {ORDER, FILENAME}
    rel = resolutions_subdir(ws.series.resolutions)
    if rel is not None:
        reserved.add(rel.parts[0])
    for topic in ws.series.active():
        if topic.name in reserved:
            raise SeriesError(
                f"topic '{topic.name}' cannot be exported: its directory would clash "
                f"with the export's own '{topic.name}' (rename the topic)"
            )
        patches = topic_patches(ws, topic)
        if patches.files and not patches.on_base:
            on = meant_start(topic, ws.series.upstream.base)
            result.notes.append(
                f"{topic.name}: branch does not sit on {on}; its own commits are exported, import puts them there"
            )
        result.topics.append(patches)
    if dry_run:
        return result
    names = [t.topic for t in result.topics]
    _write_if_changed(directory / ORDER, ORDER_HEADER + "".join(f"{n}\n" for n in names), result, ORDER)
    _write_if_changed(directory / FILENAME, ws.config_path.read_text(), result, FILENAME)
    _copy_resolutions(ws, directory, result)
    for patches in result.topics:
        (directory / patches.topic).mkdir(parents=True, exist_ok=True)
        wanted = {name for name, _ in patches.files}
        for name, text in patches.files:
            _write_if_changed(directory / patches.topic / name, text, result, f"{patches.topic}/{name}")
        for stale in sorted((directory / patches.topic).glob("*.patch")):
            if stale.name not in wanted:
                stale.unlink()
                result.removed.append(f"{patches.topic}/{stale.name}")
    for gone in previous:
        if gone in names:
            continue
        folder = directory / gone
        if folder.is_dir():
            for stale in sorted(folder.glob("*.patch")):
                stale.unlink()
                result.removed.append(f"{gone}/{stale.name}")
            if not any(folder.iterdir()):
                folder.rmdir()
    return result
