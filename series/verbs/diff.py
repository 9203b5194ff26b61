"""`series diff OLD NEW`: what changed between two versions of the series.

OLD and NEW are each one of
  - an export directory (holds an `order` file; see `series export`),
  - a series.yaml file, or a git revision of one (`HEAD~1:series.yaml`),
  - an operation id from `series log` (`00003`, or the full id): the series as that
    operation left it; `00003^` is the series just before it.
The report lists topics added, removed and changing status (superseded, merged, ...), a
base change, and for every topic with commits on both sides a `git range-diff` summary.
Operations carry commits (the journal keeps every ref's old and new value); an export
is rebuilt in memory on its base to get commits; a series.yaml alone has none.
"""

from __future__ import annotations

import enum
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import click
import pygit2

from series.seriesfile import config
from series.cli_support import Context, emit, emit_json, pass_ctx
from series.errors import SeriesError
from series.git.command import git
from series.ops.journal import Operation, OpState, operations
from series.git.repo import workdir
from series.model import Series, Status, Topic
from series.topics import OwnWork, OwnWorks, built_on
from series.workspace import Workspace

_DIFF_SIGNATURE = pygit2.Signature("series diff", "series@localhost", 0, 0)


@dataclass
class SeriesState:
    label: str
    series: Series
    heads: dict[str, str] = field(default_factory=dict)  # topic -> head commit, when known


class ChangeKind(str, enum.Enum):
    """What changed about a topic between two versions of the series."""

    ADDED = "added"
    REMOVED = "removed"
    STATUS = "status"
    COMMITS = "commits"


@dataclass(frozen=True)
class TopicChange:
    topic: str
    change: ChangeKind
    old_status: Status | None = None
    new_status: Status | None = None
    detail: str | None = None
    range_diff: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)


@dataclass
class SeriesDiff:
    old: str
    new: str
    old_base: str
    new_base: str
    changes: list[TopicChange] = field(default_factory=list)


# ---------------------------------------------------------------- reading one side


def _parse_yaml(text: str, label: str, where: Path) -> Series:
    return config.read(text, where)


def _state_of_export(ws: Workspace, directory: Path, label: str) -> SeriesState:
    from series.patches import format as patch_format
    from series.patches.export import patch_files, read_order
    from series.patches.importer import make_commit, read_patch_file

    yaml_path = directory / config.FILENAME
    if not yaml_path.is_file():
        raise SeriesError(f"{directory}: export without {config.FILENAME}")
    series = _parse_yaml(config.read_text(yaml_path), label, yaml_path)
    state = SeriesState(label, series)
    try:
        base = ws.repo.revparse_single(series.upstream.base).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return state  # base not in this clone: compare topics and statuses only
    for name in read_order(directory):
        parent = base
        topic = next((t for t in series.topics if t.name == name), None)
        if topic is not None:
            for dep in topic.depends_on:
                if dep in state.heads:
                    parent = ws.repo[state.heads[dep]].peel(pygit2.Commit)
        try:
            for path in patch_files(directory, name):
                patch = patch_format.parse(read_patch_file(path), f"{name}/{path.name}")
                parent = make_commit(ws.repo, parent, patch, _DIFF_SIGNATURE, f"{name}/{path.name}")
        except SeriesError:
            continue  # does not apply here: no commits for this topic
        state.heads[name] = str(parent.id)
    return state


def _find_operation(ops: list[Operation], spec: str) -> int | None:
    key = spec.rstrip("^")
    for index, op in enumerate(ops):
        if op.id == key:
            return index
    if re.fullmatch(r"\d{1,5}", key):
        for index, op in enumerate(ops):
            if int(op.id.split("-", 1)[0]) == int(key):
                return index
    return None


def _state_of_operation(ws: Workspace, ops: list[Operation], index: int, before: bool, label: str) -> SeriesState:
    """Refs and series.yaml as operation `index` left them (or found them, with `before`).

    A ref's value then is the new value of its last move up to that point; a ref no
    operation moved up to then has the old value of its first later move, or its value now.
    """
    done = [op for op in ops if op.state == OpState.DONE]
    cut = ops[index]
    upto = [op for op in done if op.id < cut.id or (op.id == cut.id and not before)]
    after = [op for op in done if op not in upto]
    refs: dict[str, str | None] = {}
    for op in upto:
        for move in op.moves:
            refs[move.ref] = move.new
    for op in after:
        for move in op.moves:
            refs.setdefault(move.ref, move.old)
    text = None
    for op in reversed(upto):
        if op.config_after is not None:
            text = op.config_after
            break
    if text is None:
        text = next((op.config_before for op in after if op.config_before is not None), None)
    if text is None:
        text = config.read_text(ws.config_path)
    series = _parse_yaml(text, label, ws.config_path)
    state = SeriesState(label, series)
    later: dict[str, str | None] = {}
    for op in after:
        for move in op.moves:
            later.setdefault(move.ref, move.old)
    for topic in series.topics:
        ref = f"refs/heads/{topic.branch}"
        value = refs[ref] if ref in refs else _current(ws.repo, ref)
        if value is not None:
            state.heads[topic.name] = value
    _outside_moves(ws.repo, state, refs, later)
    return state


def _outside_moves(
    repo: pygit2.Repository, state: SeriesState, refs: dict[str, str | None], later: dict[str, str | None]
) -> None:
    """A commit made on a topic branch by hand (a fixup) moves it outside the journal, so
    the last value the journal gave it can be older than what the operation saw. When the
    value it had afterwards is a descendant of the journal's and another topic's head in
    this state already builds on it (a rebase re-stacked the dependents on it), the
    operation saw that later value: take it, or the fixup shows under every dependent."""
    for topic in state.series.topics:
        ref = f"refs/heads/{topic.branch}"
        recorded = refs.get(ref)
        after = later[ref] if ref in later else _current(repo, ref)
        if recorded is None or after is None or after == recorded:
            continue
        try:
            newer = repo.descendant_of(after, recorded)
            built_on = any(
                head != after and repo.descendant_of(head, after)
                for name, head in state.heads.items()
                if name != topic.name
            )
        except (KeyError, ValueError, pygit2.GitError):
            continue  # a commit no longer in this clone: keep the journal's word
        if newer and built_on:
            state.heads[topic.name] = after


def _current(repo: pygit2.Repository, ref: str) -> str | None:
    found = repo.references.get(ref)
    return str(found.resolve().target) if found is not None else None


def read_side(ws: Workspace, spec: str) -> SeriesState:
    path = Path(spec)
    if path.is_dir():
        return _state_of_export(ws, path.resolve(), spec)
    if path.is_file():
        return SeriesState(spec, _parse_yaml(config.read_text(path), spec, path.resolve()))
    ops = operations(ws.repo)
    index = _find_operation(ops, spec)
    if index is not None:
        return _state_of_operation(ws, ops, index, spec.endswith("^"), spec)
    if ":" in spec:
        try:
            blob = ws.repo.revparse_single(spec)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            blob = None
        if isinstance(blob, pygit2.Blob):
            return SeriesState(spec, _parse_yaml(config.decode_text(blob.data, spec), spec, ws.config_path))
    raise SeriesError(
        f"'{spec}' is not an export directory, a series.yaml file, a revision like "
        "HEAD~1:series.yaml, or an operation id from 'series log'"
    )


# ---------------------------------------------------------------- comparing


def _base_of(ws: Workspace, state: SeriesState) -> pygit2.Commit | None:
    try:
        return ws.repo.revparse_single(state.series.upstream.base).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        return None


def _own_works(ws: Workspace, state: SeriesState) -> OwnWorks | None:
    """Own work on that side (series.topics), with that side's series, base and heads: a
    stacked topic's range holds none of its dependency's commits, which its dependency's
    own range compares. None when that side's base is not in this clone."""
    base = _base_of(ws, state)
    if base is None:
        return None

    def head_of(t: Topic) -> pygit2.Commit | None:
        sha = state.heads.get(t.name)
        return ws.repo[sha].peel(pygit2.Commit) if sha is not None else None

    works = OwnWorks(ws.repo, state.series, base, head_of)
    # A commit is shown under the topic that owns it: a branch built on an earlier topic
    # without depends_on (as `series add` wrote them before it inferred it) would
    # otherwise show the base topic's commits, a fixup there included, under each
    # topic built on it (series.topics.built_on, the answer `series check` holds to).
    topics, earlier = list(state.series.topics), list[Topic]()
    for index, topic in enumerate(state.series.topics):
        under = built_on(works, topic, earlier) if topic.active and not topic.depends_on else None
        if under is not None:
            topics[index] = replace(topic, depends_on=(under.name,))
        if topic.active:
            earlier.append(topic)
    if topics == list(state.series.topics):
        return works
    return OwnWorks(ws.repo, replace(state.series, topics=tuple(topics)), base, head_of)


def _own(works: OwnWorks | None, topic: str) -> OwnWork | None:
    return works.of(works.series.topic(topic)) if works is not None else None


def range_diff(ws: Workspace, old: OwnWork, new: OwnWork) -> tuple[tuple[str, ...], dict[str, int]]:
    if old.commits and new.commits:
        out = git(
            workdir(ws.repo),
            "range-diff",
            "--no-color",
            "-s",
            f"{old.start.id}..{old.head.id}",
            f"{new.start.id}..{new.head.id}",
        ).stdout
        lines = tuple(line for line in out.splitlines() if line.strip())
    else:
        # git range-diff refuses an empty range ("need two commit ranges"): with no commits
        # on one side, each commit of the other is dropped or added, in range-diff's words
        lines = tuple(
            f"{i}:  {str(c.id)[:7]} < -:  ------- {_subject(c)}" for i, c in enumerate(old.commits, 1)
        ) + tuple(f"-:  ------- > {i}:  {str(c.id)[:7]} {_subject(c)}" for i, c in enumerate(new.commits, 1))
    counts = {"equal": 0, "changed": 0, "dropped": 0, "added": 0}
    for line in lines:
        m = re.match(r"^\s*[-\d]+:\s+\S+ ([=!<>]) ", line)
        if m:
            counts[{"=": "equal", "!": "changed", "<": "dropped", ">": "added"}[m.group(1)]] += 1
    return lines, counts


def run(ws: Workspace, old_spec: str, new_spec: str) -> SeriesDiff:
    old, new = read_side(ws, old_spec), read_side(ws, new_spec)
    result = SeriesDiff(old_spec, new_spec, old.series.upstream.base, new.series.upstream.base)
    old_topics = {t.name: t for t in old.series.topics}
    new_topics = {t.name: t for t in new.series.topics}
    old_works, new_works = _own_works(ws, old), _own_works(ws, new)
    for name, topic in new_topics.items():
        if name not in old_topics:
            result.changes.append(TopicChange(name, ChangeKind.ADDED, new_status=topic.status))
    for name, topic in old_topics.items():
        if name not in new_topics:
            result.changes.append(TopicChange(name, ChangeKind.REMOVED, old_status=topic.status))
    for name, topic in new_topics.items():
        before = old_topics.get(name)
        if before is None:
            continue
        if before.status != topic.status:
            detail = None
            if topic.superseded_by:
                detail = f"by {topic.superseded_by}"
            elif topic.merged_in:
                detail = f"in {topic.merged_in}"
            result.changes.append(TopicChange(name, ChangeKind.STATUS, before.status, topic.status, detail))
        if not (before.active and topic.active):
            continue  # a merged or superseded topic's kept branch says nothing new
        old_own, new_own = _own(old_works, name), _own(new_works, name)
        if old_own is not None and new_own is not None and (old_own.commits or new_own.commits):
            lines, counts = range_diff(ws, old_own, new_own)
            result.changes.append(
                TopicChange(name, ChangeKind.COMMITS, before.status, topic.status, range_diff=lines, counts=counts)
            )
    return result


def _subject(commit: pygit2.Commit) -> str:
    return commit.message.split("\n", 1)[0]


def _word(status: Status | None) -> str:
    return str(None) if status is None else status.value


def render(diff: SeriesDiff) -> str:
    out = [f"series diff {diff.old} -> {diff.new}"]
    if diff.old_base != diff.new_base:
        out.append(f"  base: {diff.old_base} -> {diff.new_base}")
    structural = [c for c in diff.changes if c.change != ChangeKind.COMMITS]
    for c in structural:
        if c.change == ChangeKind.ADDED:
            out.append(f"  + {c.topic} (added, {_word(c.new_status)})")
        elif c.change == ChangeKind.REMOVED:
            out.append(f"  - {c.topic} (removed, was {_word(c.old_status)})")
        else:
            out.append(
                f"  ~ {c.topic}: {_word(c.old_status)} -> {_word(c.new_status)}"
                + (f" ({c.detail})" if c.detail else "")
            )
    commits = [c for c in diff.changes if c.change == ChangeKind.COMMITS]
    if commits:
        out.append("  commits (git range-diff):")
        for c in commits:
            parts = [f"{n} {k}" for k, n in c.counts.items() if n]
            out.append(f"    {c.topic}: {', '.join(parts) or 'no commits'}")
            out += [f"      {line.strip()}" for line in c.range_diff if not re.search(r" = ", line)]
    if len(out) == 1:
        out.append("  no differences")
    return "\n".join(out)


def to_json(diff: SeriesDiff) -> dict[str, object]:
    data = asdict(diff)
    for change in data["changes"]:
        change["range_diff"] = list(change["range_diff"])
    return data


@click.command("diff")
@click.argument("old")
@click.argument("new")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def command(ctx: Context, old: str, new: str, as_json: bool) -> None:
    """Compare two versions of the series: topics added, removed, changing status, and a
    per-topic 'git range-diff' summary where both sides have commits.

    
    OLD and NEW are each one of:
      patches/  old-export/       export directories ('series export')
      HEAD~1:series.yaml          a series.yaml revision (or a series.yaml file)
      00003   00003^              an operation from 'series log' (^: just before it)
    Example, what the last rebase changed:  series diff 00004^ 00004
    """

    ws = ctx.workspace(check_branches=False)
    result = run(ws, old, new)
    if as_json:
        emit_json(to_json(result))
    else:
        emit(render(result))
