"""Conflict resolutions that travel with the series: recorded once, replayed in any clone.

git's rerere keeps resolutions in one clone's .git; a nightly CI job starts from a fresh
clone and meets the same conflicts again. Here a resolution is a plain text file under
the series' `resolutions:` directory (default resolutions/ beside series.yaml), keyed by
topic, path and the conflict itself, and reviewed and versioned like the series.

The conflict is normalized the way rerere does it: marker labels and diff3 base
sections are dropped and the two sides of each conflicting hunk are put in byte order,
so the same clash yields the same text whichever side was "ours" and whatever the
commits were called. Its id is the SHA-1 over the sorted sides of every hunk. What is
stored is the resolution as @@ hunks over that normalized file: each conflict hunk (its
markers and both sides) with 3 lines of context, and what the human made of it. A stored
resolution is replayed when its hunks apply to the new conflict exactly (context
included; the rest of the file may differ), leave no marker, and the result passes
series.resolution_check; otherwise it is named in the rebase's output (`Refusal`) and the
conflict is left for a human, whose resolution is then recorded in its place.

A file, resolutions/<topic>/<path with / as __>.<id12>.txt:
    # comment lines
    topic: offload-evict-fix
    path: vllm/v1/kv_offload/cpu/policies/lru.py
    conflict: <40 hex>          (the normalized conflict's id)
    hunks-sha1: <40 hex>        (SHA-1 of the hunks below: a checksum)
    === resolution ...          then the @@ hunks

Files of the first format (a fork has them committed) are read and replayed too: instead
of `hunks-sha1` they hold `resolved-blob` (git blob id of the resolved file),
`preimage-bytes: <n>` and `=== preimage ...` with the whole normalized file before the
hunks; that whole file is what made one rebase store 11,953 lines.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import pygit2

from series.engine.resolve import ReplayConflict
from series.engine.resolve import Hooks
from series import resolution_check
from series.errors import SeriesError
from series.ops.fs import write_atomically
from series.model import Series

MARKER_SIZE = 7
_OURS, _BASE, _SEP, _THEIRS = b"<" * 7, b"|" * 7, b"=" * 7, b">" * 7
RESOLUTION_HEADER = (
    "=== resolution (@@ hunks over the file with its conflict markers normalized: labels "
    "and base dropped, sides sorted)"
)


def _marker(line: bytes, marker: bytes) -> bool:
    if not line.startswith(marker):
        return False
    rest = line[MARKER_SIZE:]
    return rest in (b"", b"\n", b"\r\n") or rest[:1] == b" "


@dataclass(frozen=True)
class NormalizedConflict:
    preimage: bytes  # normalized file text
    conflict_id: str  # rerere-style id of the normalized hunks
    hunks: int


def _lines(data: bytes) -> list[bytes]:
    return re.findall(rb"[^\n]*\n|[^\n]+$", data)


def normalize(conflicted: bytes) -> NormalizedConflict | None:
    """The normalized conflict in a file with markers; None when there is none to key on.

    Nested or unterminated markers give None too: such a file is left for a human.
    """
    if b"\0" in conflicted[:8000]:
        return None
    out: list[bytes] = []
    digest = hashlib.sha1()
    hunks = 0
    state = None  # None, "ours", "base", "theirs"
    ours: list[bytes] = []
    theirs: list[bytes] = []
    for line in _lines(conflicted):
        if state is None:
            if _marker(line, _OURS):
                state, ours, theirs = "ours", [], []
            elif _marker(line, _BASE) or _marker(line, _SEP) or _marker(line, _THEIRS):
                return None
            else:
                out.append(line)
            continue
        if _marker(line, _OURS):
            return None  # nested conflict
        if state == "ours" and _marker(line, _BASE):
            state = "base"
        elif state in ("ours", "base") and _marker(line, _SEP):
            state = "theirs"
        elif state == "theirs" and _marker(line, _THEIRS):
            one, two = b"".join(ours), b"".join(theirs)
            if one > two:
                one, two = two, one
            digest.update(one + b"\0")
            digest.update(two + b"\0")
            out += [_OURS + b"\n", one, _SEP + b"\n", two, _THEIRS + b"\n"]
            hunks += 1
            state = None
        elif state == "ours":
            ours.append(line)
        elif state == "theirs":
            theirs.append(line)
        # base lines are dropped: they do not decide how the clash is resolved
    if state is not None or hunks == 0:
        return None
    return NormalizedConflict(b"".join(out), digest.hexdigest(), hunks)


def has_markers(data: bytes) -> bool:
    return resolution_check.marker_line(data) is not None


@dataclass(frozen=True)
class StoredResolution:
    topic: str
    path: str
    conflict_id: str
    hunks: str  # the resolution as @@ hunks over the normalized conflicted file
    commit: str | None
    file: Path
    checksum: str  # hunks-sha1; in the first format, the resolved file's blob id
    preimage: bytes | None = None  # the first format only: the whole normalized file

    def resolve(self, preimage: bytes) -> bytes:
        """The resolved file for the conflict whose normalized text is `preimage`; raises
        SeriesError when the stored text was edited out of shape or does not apply."""
        if self.preimage is None:
            if _sha1(_encode(self.hunks)) != self.checksum:
                raise self._edited()
        else:
            if str(pygit2.hash(self._apply(self.preimage))) != self.checksum:
                raise self._edited()
        data = self._apply(preimage)
        if has_markers(data):
            raise SeriesError(f"{self.file}: no longer applies: the conflict has hunks it does not resolve")
        return data

    def _apply(self, preimage: bytes) -> bytes:
        from series.patches.importer import apply_hunks, file_changes

        diff = f"diff --git a/f b/f\n--- a/f\n+++ b/f\n{self.hunks}"
        try:
            change = file_changes(diff, str(self.file))[0]
            return apply_hunks(preimage, change.hunks, str(self.file))
        except (SeriesError, IndexError):
            raise SeriesError(f"{self.file}: no longer applies: the lines around the conflict changed") from None

    def _edited(self) -> SeriesError:
        return SeriesError(
            f"{self.file}: the resolution does not match its checksum; "
            "the file was edited by hand: record the resolution again"
        )

    @property
    def conflicts(self) -> int:
        return sum(1 for line in self.hunks.splitlines() if line == "-<<<<<<<")


def _sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def _slug(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", path.replace("/", "__"))


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def render(resolution: StoredResolution) -> bytes:
    """The file's text, in the current format (hunks only)."""
    head = [
        f"# series resolution: how a conflict in {resolution.path} was resolved while replaying",
        f"# topic {resolution.topic}. 'series rebase' applies it when the same conflict reappears",
        "# with the same lines around it (below). Review it like code; delete this file to forget it.",
        f"topic: {resolution.topic}",
        f"path: {resolution.path}",
        f"conflict: {resolution.conflict_id}",
    ]
    if resolution.commit:
        head.append(f"commit: {resolution.commit}")
    head += [f"hunks-sha1: {_sha1(_encode(resolution.hunks))}", RESOLUTION_HEADER, ""]
    return _encode("\n".join(head) + resolution.hunks)


def parse(data: bytes, file: Path) -> StoredResolution:
    """A resolution file of either format (module docstring)."""
    fields: dict[str, str] = {}
    at = 0
    while True:
        end = data.find(b"\n", at)
        if end == -1:
            raise SeriesError(f"{file}: not a resolution file (no '{RESOLUTION_HEADER[:16]}' line)")
        line = _decode(data[at:end])
        at = end + 1
        if line.startswith(("=== preimage", "=== resolution")):
            break
        if line.startswith("#") or not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise SeriesError(f"{file}: malformed line {line!r} (expected 'key: value')")
        fields[key.strip()] = value.strip()
    first = line.startswith("=== preimage")
    for key in ("topic", "path", "conflict") + (("resolved-blob", "preimage-bytes") if first else ("hunks-sha1",)):
        if key not in fields:
            raise SeriesError(f"{file}: missing '{key}:' line")
    preimage = None
    if first:
        try:
            size = int(fields["preimage-bytes"])
        except ValueError:
            raise SeriesError(f"{file}: preimage-bytes is not a number") from None
        preimage = data[at : at + size]
        at += size
        if preimage and not preimage.endswith(b"\n"):
            at += 1
        rest = data[at:]
        if not rest.startswith(b"=== resolution"):
            raise SeriesError(f"{file}: the preimage is not {size} bytes long (edited by hand?)")
        at += rest.find(b"\n") + 1 if b"\n" in rest else len(rest)
    return StoredResolution(
        topic=fields["topic"],
        path=fields["path"],
        conflict_id=fields["conflict"],
        hunks=_decode(data[at:]),
        commit=fields.get("commit"),
        file=file,
        checksum=fields["resolved-blob" if first else "hunks-sha1"],
        preimage=preimage,
    )


class ResolutionStore:
    """The resolutions of one series, as files in a directory."""

    def __init__(self, directory: Path):
        self.directory = directory

    @classmethod
    def for_series(cls, series: Series) -> "ResolutionStore":
        return cls(series.root / series.resolutions)

    def file_for(self, topic: str, path: str, conflict_id: str) -> Path:
        return self.directory / topic / f"{_slug(path)}.{conflict_id[:12]}.txt"

    def all(self) -> list[StoredResolution]:
        if not self.directory.is_dir():
            return []
        return [parse(p.read_bytes(), p) for p in sorted(self.directory.glob("*/*.txt"))]

    def record(
        self,
        topic: str,
        path: str,
        conflicted: bytes,
        resolved: bytes,
        commit: str | None = None,
        write: Callable[[Path, bytes], None] | None = None,
    ) -> StoredResolution | None:
        """Keep how `conflicted` (the file with markers) was resolved; None if nothing to key on.
        `write`: how the file is written (a rebase hands in its transaction's, so the file
        is journaled with the operation and undone with it); else written here."""
        conflict = normalize(conflicted)
        if conflict is None or has_markers(resolved):
            return None
        from series.patches.format import unified_hunks

        file = self.file_for(topic, path, conflict.conflict_id)
        hunks = unified_hunks(conflict.preimage, resolved)
        resolution = StoredResolution(
            topic=topic,
            path=path,
            conflict_id=conflict.conflict_id,
            hunks=hunks,
            commit=commit,
            file=file,
            checksum=_sha1(_encode(hunks)),
        )
        if write is not None:
            write(file, render(resolution))
            return resolution
        file.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(file, render(resolution))
        return resolution

    def find(self, topic: str, path: str, conflicted: bytes) -> tuple[StoredResolution, NormalizedConflict] | None:
        """The stored resolution of this conflict (same topic, path and clash), if any, with
        the conflict normalized."""
        conflict = normalize(conflicted)
        if conflict is None:
            return None
        file = self.file_for(topic, path, conflict.conflict_id)
        if not file.is_file():
            return None
        resolution = parse(file.read_bytes(), file)
        if (resolution.topic, resolution.path, resolution.conflict_id) != (topic, path, conflict.conflict_id):
            return None
        return resolution, conflict

    def lookup(self, topic: str, path: str, conflicted: bytes) -> bytes | None:
        """The resolved file; None when nothing is recorded for this conflict; SeriesError
        when what is recorded cannot be used (edited by hand, or no longer applies)."""
        found = self.find(topic, path, conflicted)
        return found[0].resolve(found[1].preimage) if found is not None else None

    def unreachable(self, keep: Callable[[StoredResolution], bool]) -> list[StoredResolution]:
        """The resolutions `keep` refuses (what `series resolutions --prune` removes, through
        the transaction)."""
        return [r for r in self.all() if not keep(r)]


def reachable(series: Series, repo: pygit2.Repository) -> Callable[[StoredResolution], bool]:
    """Can a rebase still meet this resolution? Its topic is active and its own commits
    still change its path (series.topics: dependencies' commits are not its own)."""
    from series.git.repo import resolve_commit
    from series.topics import OwnWorks

    works = OwnWorks(repo, series, resolve_commit(repo, series.upstream.base, "upstream.base"))
    touched: dict[str, frozenset[str]] = {}
    for topic in series.active():
        own = works.of(topic)
        if own is not None:
            touched[topic.name] = own.commit_paths

    def keep(resolution: StoredResolution) -> bool:
        return resolution.path in touched.get(resolution.topic, frozenset())

    return keep


def describe(resolutions: Iterable[StoredResolution], root: Path) -> list[dict[str, object]]:
    rows = []
    for r in resolutions:
        try:
            file = str(r.file.relative_to(root))
        except ValueError:
            file = str(r.file)
        rows.append(
            {
                "topic": r.topic,
                "path": r.path,
                "conflict": r.conflict_id,
                "hunks": r.conflicts,
                "commit": r.commit,
                "file": file,
            }
        )
    return rows


@dataclass(frozen=True)
class Refusal:
    """A recorded resolution the rebase did not replay, and why: the conflict went to a human."""

    topic: str
    path: str
    file: Path
    reason: str

    def to_json(self, root: Path) -> dict[str, str]:
        """Its file named from `root`; the rebase reports it (series.report.rebase_result)."""
        where = self.file.relative_to(root) if self.file.is_relative_to(root) else self.file
        return {"topic": self.topic, "path": self.path, "file": str(where), "reason": self.reason}


def engine_hooks(
    series: Series, write: Callable[[Path, bytes], None] | None = None, refused: list[Refusal] | None = None
) -> Hooks:
    """The rebase engine's resolver, recorder and check (protocol: series.engine.resolve);
    the recorder writes through `write` (the transaction's tx.write, so `series undo` of the
    operation removes what it recorded). A recorded resolution that cannot be used (edited
    by hand, no longer applies, or its result fails series.resolution_check) is not
    replayed: it goes into `refused`, once, for the verb to name.

    Only textual conflicts ("content", "add/add") are keyed: a modify/delete or binary
    conflict has no markers to normalize and stays a human's call. An empty resolution
    is not recorded either: the engine reports a deleted file as empty bytes, and
    replaying "empty" where the human meant "deleted" would be wrong.
    """
    store = ResolutionStore.for_series(series)

    def refuse(topic: str, path: str, file: Path, reason: str) -> None:
        refusal = Refusal(topic, path, file, reason)
        if refused is not None and refusal not in refused:
            refused.append(refusal)  # the halted commit is replayed again to lay it out

    def resolver(topic: str, path: str, conflict: ReplayConflict) -> bytes | None:
        if not conflict.textual:
            return None
        normalized = normalize(conflict.merged)
        if normalized is None:
            return None
        file = store.file_for(topic, path, normalized.conflict_id)
        try:
            found = store.find(topic, path, conflict.merged)
            if found is None:
                return None
            data = found[0].resolve(normalized.preimage)
        except SeriesError as exc:
            refuse(topic, path, file, exc.message.removeprefix(f"{file}: "))
            return None
        problem = resolution_check.problem(path, data, conflict.theirs)
        if problem is not None:
            refuse(topic, path, file, f"its result is refused: {problem}")
            return None
        return data

    def recorder(topic: str, path: str, conflict: ReplayConflict, resolved: bytes) -> None:
        if not conflict.textual or not resolved:
            return
        store.record(topic, path, conflict.merged, resolved, commit=_replayed_subject(conflict.merged), write=write)

    return Hooks(resolver=resolver, recorder=recorder, check=resolution_check.problems)


def _replayed_subject(merged: bytes) -> str | None:
    """The subject of the commit being replayed, from its '>>>>>>> abc1234 (subject)' label."""
    for line in _lines(merged):
        if _marker(line, _THEIRS):
            label = line[MARKER_SIZE:].strip().decode("utf-8", "replace")
            m = re.match(r"^[0-9a-f]{4,40} \((.*)\)$", label)
            return m.group(1) if m else (label or None)
    return None
