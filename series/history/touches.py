"""Which upstream paths each topic touches: path specs, per-topic diffs, matrix, forecast.

Every answer starts from a topic's own diff (series.topics: the tree before its first own
commit against its head; `changed_paths` descends only into subtrees whose ids differ), so the cost
follows the size of the topics' changes, never the size of the vLLM tree. The forecast
looks up only the paths our topics touch in upstream's two trees: it never diffs
upstream's whole release against the next one.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import pygit2

from series.errors import SeriesError
from series.git import partial
from series.git.repo import FileStat, PathChange, file_stat
from series.model import Topic
from series.topics import OwnWork
from series.workspace import Workspace

_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class PathSpec:
    """A PATH argument or a scope: entry.

    A plain path matches itself and, at a '/' boundary, everything below it
    ('vllm/v1' matches 'vllm/v1/x.py', not 'vllm/v10/x.py'). A glob ('*' and '?' stay
    inside one path component, '**' crosses them) matches a file or any directory
    above it, so 'vllm/*/kv_offload' matches the files under vllm/v1/kv_offload/.
    """

    text: str
    pattern: str
    regex: re.Pattern[str] | None

    def matches(self, path: str) -> bool:
        if self.regex is None:
            return not self.pattern or path == self.pattern or path.startswith(self.pattern + "/")
        if self.regex.fullmatch(path):
            return True
        index = path.find("/")
        while index != -1:
            if self.regex.fullmatch(path[:index]):
                return True
            index = path.find("/", index + 1)
        return False

    @property
    def is_glob(self) -> bool:
        return self.regex is not None


def parse_spec(text: str) -> PathSpec:
    pattern = re.sub(r"/+", "/", text.strip())
    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.strip("/")
    if pattern == ".":
        pattern = ""
    if not _GLOB_CHARS.search(pattern):
        return PathSpec(text, pattern, None)
    return PathSpec(text, pattern, re.compile(_glob_to_regex(pattern)))


def _glob_to_regex(glob: str) -> str:
    out, i = [], 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = glob.find("]", i + 2)
            if end == -1:
                out.append(re.escape(c))
                i += 1
                continue
            body = glob[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def matches_any(specs: Sequence[PathSpec], path: str) -> bool:
    return any(spec.matches(path) for spec in specs)


# A topic's own change (series.topics: its first own commit's parent against its head, its
# dependencies' and upstream's commits hidden) and the line counts of its files: the answer
# status, check and the integration build use, not a second derivation of it.
TopicDiff = OwnWork
TouchedFile = FileStat


def select_topics(ws: Workspace, include_all: bool) -> tuple[list[Topic], list[Topic]]:
    """(topics with a branch to diff, topics skipped because their branch is gone)."""
    chosen = ws.series.topics if include_all else ws.series.active()
    present: list[Topic] = []
    missing: list[Topic] = []
    for topic in chosen:
        (present if ws.own(topic) is not None else missing).append(topic)
    return present, missing


def topic_diffs(ws: Workspace, topics: Iterable[Topic]) -> list[TopicDiff]:
    """The topics' own work (`select_topics` picked those with a branch)."""
    return [ws.require_own(topic) for topic in topics]


def touching(diffs: Sequence[TopicDiff], specs: Sequence[PathSpec]) -> list[tuple[TopicDiff, list[TouchedFile]]]:
    """The topics whose changes match a spec, with line counts for the matching files only."""
    found = []
    for diff in diffs:
        files = [diff.stat(c) for c in diff.changes if matches_any(specs, c.path)]
        if files:
            found.append((diff, files))
    return found


def blobs_read(
    diffs: Sequence[TopicDiff], specs: Sequence[PathSpec] = (), trees: Sequence[pygit2.Tree] = ()
) -> set[pygit2.Oid]:
    """The blobs the line counts read: both sides of each diff's files that match `specs`
    (every file without specs), and those files in `trees` (upstream's two ends of a
    forecast). Which files a topic changes needs trees only; how many lines, the blobs."""
    oids: set[pygit2.Oid] = set()
    for diff in diffs:
        for change in diff.changes:
            if specs and not matches_any(specs, change.path):
                continue
            oids.update(o for o in (change.old_id, change.new_id) if o is not None)
            oids.update(o for t in trees if (o := _entry(t, change.path)[0]) is not None)
    return oids


def exists_in(tree: pygit2.Tree, spec: PathSpec) -> bool:
    if spec.is_glob or not spec.pattern:
        return True
    try:
        tree[spec.pattern]
    except KeyError:
        return False
    return True


def directory_of(path: str, depth: int) -> str:
    """'vllm/v1/kv_offload/cpu/x.py' at depth 3 -> 'vllm/v1/kv_offload'; root files -> '.'."""
    parts = path.split("/")[:-1]
    return "/".join(parts[:depth]) or "."


@dataclass(frozen=True)
class TouchMatrix:
    depth: int
    topics: tuple[str, ...]
    # directory -> topic name -> number of files that topic changes below it
    cells: dict[str, dict[str, int]]


def matrix(diffs: Sequence[TopicDiff], depth: int) -> TouchMatrix:
    cells: dict[str, dict[str, int]] = defaultdict(dict)
    for diff in diffs:
        for change in diff.changes:
            row = cells[directory_of(change.path, depth)]
            row[diff.topic.name] = row.get(diff.topic.name, 0) + 1
    return TouchMatrix(depth, tuple(d.topic.name for d in diffs), {k: cells[k] for k in sorted(cells)})


@dataclass(frozen=True)
class Collision:
    path: str
    files: tuple[tuple[str, TouchedFile], ...]  # (topic name, its change), series order


def collisions(diffs: Sequence[TopicDiff]) -> list[Collision]:
    """Files changed by more than one topic: where the topics will meet in a rebase."""
    by_path: dict[str, list[tuple[str, TouchedFile]]] = defaultdict(list)
    for diff in diffs:
        for change in diff.changes:
            by_path[change.path].append((diff.topic.name, diff.stat(change)))
    return [Collision(path, tuple(users)) for path, users in sorted(by_path.items()) if len(users) > 1]


@dataclass(frozen=True)
class Hotspot:
    """A file our topic changes that upstream also changed between two refs."""

    path: str
    upstream: TouchedFile  # upstream's change old..new (status D: upstream deleted/moved it)
    ours: TouchedFile
    same_as_upstream: bool  # our version is upstream's new one: likely merged upstream


def _entry(tree: pygit2.Tree, path: str) -> tuple[pygit2.Oid | None, int | None]:
    try:
        obj = tree[path]
    except KeyError:
        return None, None
    if obj.filemode == pygit2.enums.FileMode.TREE:
        return None, None
    return obj.id, obj.filemode


def forecast(
    repo: pygit2.Repository,
    diffs: Sequence[TopicDiff],
    old: pygit2.Commit,
    new: pygit2.Commit,
    specs: Sequence[PathSpec] = (),
) -> list[tuple[TopicDiff, list[Hotspot]]]:
    """Per topic, the files it changes that upstream changed between old and new."""
    found = []
    upstream_cache: dict[str, TouchedFile | None] = {}
    for diff in diffs:
        spots = []
        for change in diff.changes:
            if specs and not matches_any(specs, change.path):
                continue
            if change.path not in upstream_cache:
                old_id, old_mode = _entry(old.tree, change.path)
                new_id, new_mode = _entry(new.tree, change.path)
                if old_id == new_id and old_mode == new_mode:
                    upstream_cache[change.path] = None
                else:
                    upstream_cache[change.path] = file_stat(
                        repo, PathChange(change.path, old_id, new_id, old_mode, new_mode)
                    )
            upstream = upstream_cache[change.path]
            if upstream is not None:
                same = change.new_id == _entry(new.tree, change.path)[0]
                spots.append(Hotspot(change.path, upstream, diff.stat(change), same))
        if spots:
            found.append((diff, spots))
    return found


# -- over a workspace: the topics a run looks at, their blobs, the matrix (touches, ci report) -------


@dataclass(frozen=True)
class Scope:
    """What a run looked at: which topics, over which base."""

    base: str
    base_sha: str
    include_all: bool
    checked: tuple[str, ...]
    missing: tuple[Topic, ...]  # selected topics whose branch is gone (skipped)
    inactive: int  # topics --all would add


def scope_of(ws: Workspace, include_all: bool) -> tuple[Scope, list[TopicDiff]]:
    present, missing = select_topics(ws, include_all)
    base = ws.base_commit()
    diffs = topic_diffs(ws, present)
    inactive = 0 if include_all else len(ws.series.topics) - len(ws.series.active())
    return Scope(
        ws.series.upstream.base, str(base.id), include_all, tuple(t.name for t in present), tuple(missing), inactive
    ), diffs


def fetch_blobs(
    ws: Workspace, diffs: Sequence[TopicDiff], specs: Sequence[PathSpec] = (), trees: Sequence[pygit2.Tree] = ()
) -> None:
    """A blobless clone has every tree but not every blob: opening the workspace fetched
    the active topics' (series.git.partial); --all's other topics and --between's upstream
    ends are fetched here, in one batch, or the run fails saying why (exit 2), never a
    libgit2 crash that would exit 1, 'not touched'."""
    partial.ensure_objects(ws.repo, blobs_read(diffs, specs, trees))


def file_json(f: TouchedFile) -> dict[str, Any]:
    return {"path": f.path, "added": f.added, "deleted": f.deleted, "status": f.status}


@dataclass(frozen=True)
class MatrixResult:
    scope: Scope
    matrix: TouchMatrix
    collisions: list[Collision]
    files: dict[str, int]  # topic -> files changed

    @property
    def touched(self) -> bool:
        return bool(self.matrix.cells)


def matrix_of(ws: Workspace, depth: int, include_all: bool) -> MatrixResult:
    if depth < 1:
        raise SeriesError(f"--depth {depth}: expected 1 or more directory levels")
    scope, diffs = scope_of(ws, include_all)
    fetch_blobs(ws, diffs)
    return MatrixResult(scope, matrix(diffs, depth), collisions(diffs), {d.topic.name: len(d.changes) for d in diffs})


def matrix_json(result: MatrixResult) -> dict[str, Any]:
    return {
        "base": result.scope.base,
        "depth": result.matrix.depth,
        "topics": [{"name": n, "files": result.files[n]} for n in result.matrix.topics],
        "directories": [{"path": d, "topics": row} for d, row in result.matrix.cells.items()],
        "collisions": [
            {"path": c.path, "topics": [{"name": n, **file_json(f)} for n, f in c.files]} for c in result.collisions
        ],
        "skipped_missing_branch": [t.name for t in result.scope.missing],
    }
