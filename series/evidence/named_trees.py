"""Trees named the way a maintainer says them, and the installed build they are laid over.

`base` (the release alone), `series` (every active topic), `without:TOPIC` (the series
less one topic) and `only:TOPIC` (one topic, with the topics it depends on, alone on the
base; `topic:TOPIC` says the same). An adopted PR is a topic, so `only:pr-61050` is their
change on our base; and the topic it superseded keeps its branch, so `only:offload-evict-fix`
is ours on the same base ("their PR and ours", measured side by side). `series test --run` and `series measure` both name trees this way,
and both lay a tree's package changes over the installed release build
(`package_changes`, then series.evidence.testrun.shadow).
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import pygit2

from series.wheel import integration_tree
from series.evidence.interpreter import Environment
from series.errors import SeriesError
from series.git import releases
from series.git.repo import branch_commit
from series.model import Status
from series.workspace import Workspace

TREE_FORMS = "base, series, without:TOPIC, only:TOPIC (or topic:TOPIC)"


@dataclass(frozen=True)
class ResolvedTree:
    spec: str                 # canonical: topic:T is only:T
    commit: pygit2.Commit
    describe: str             # "v0.31.0 + 3 topics", for the reader


def canonical(spec: str) -> str:
    kind, sep, topic = spec.partition(":")
    return f"only:{topic}" if sep and kind == "topic" else spec


def check_spec(spec: str) -> str:
    """The spec, canonical, when it has one of the forms (its topic is checked by resolve)."""
    spec = canonical(spec)
    kind, _, topic = spec.partition(":")
    if spec not in ("base", "series") and not (kind in ("without", "only") and topic):
        raise SeriesError(f"tree '{spec}': not a tree name (use {TREE_FORMS})")
    return spec


def resolve(ws: Workspace, spec: str) -> ResolvedTree:
    """The commit a tree spec names (built in memory: the integration chain, less topics)."""
    spec = check_spec(spec)
    base = ws.base_commit()
    active = ws.series.active()
    kind, _, topic = spec.partition(":")
    if spec == "base":
        commit, describe = base, f"{ws.series.upstream.base} (the release alone)"
    elif spec == "series":
        commit, describe = integration_tree.build(ws).commit, f"{ws.series.upstream.base} + {_topics(len(active))}"
    elif kind == "without" and topic:
        integration_tree.require_topics(ws, (topic,))
        commit = integration_tree.build(integration_tree.without(ws, (topic,))).commit
        describe = f"the series less {topic} ({_topics(len(active) - 1)})"
    else:
        ws, kept = _kept_branch_active(ws, topic)
        integration_tree.require_topics(ws, (topic,))
        keep = _with_dependencies(ws, topic)
        drop = tuple(t.name for t in ws.series.active() if t.name not in keep)
        commit = integration_tree.build(integration_tree.without(ws, drop)).commit
        describe = f"{ws.series.upstream.base} + {topic}" + (
            f" (and {', '.join(sorted(keep - {topic}))} it depends on)" if len(keep) > 1 else "") + kept
    return ResolvedTree(spec, commit, describe)


def _kept_branch_active(ws: Workspace, name: str) -> tuple[Workspace, str]:
    """A superseded or dropped topic whose branch is kept, made active for this one tree,
    with what to tell the reader; any other topic as it is (require_topics judges it)."""
    topic = ws.series.topic(name)
    if topic.status not in (Status.SUPERSEDED, Status.DROPPED) or \
            branch_commit(ws.repo, topic.branch) is None:
        return ws, ""
    topics = tuple(dataclasses.replace(t, status=Status.ACTIVE) if t.name == name else t
                   for t in ws.series.topics)
    note = f" ({topic.status.value}: its kept branch {topic.branch})"
    return Workspace(dataclasses.replace(ws.series, topics=topics), ws.repo), note


def _topics(n: int) -> str:
    return f"{n} topic" if n == 1 else f"{n} topics"


def _with_dependencies(ws: Workspace, name: str) -> set[str]:
    keep, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current not in keep:
            keep.add(current)
            todo.extend(ws.series.topic(current).depends_on)
    return keep


def base_release(ws: Workspace) -> str:
    """The base's release version (v0.31.0 -> 0.31.0), from its name or a version tag on
    it (series.git.releases: PEP 440, four-part and post releases too)."""
    version = releases.tag_version(ws.series.upstream.base)
    if version is not None:
        return str(version)
    base = ws.base_commit().id
    for found in releases.version_tags(ws.repo, ws.series.upstream.remote):
        if ws.repo.references[f"refs/tags/{found.tag}"].peel(pygit2.Commit).id == base:
            return str(found.version)
    raise SeriesError(f"upstream.base {ws.series.upstream.base} is not a release (no vX.Y.Z tag points "
                      "at it): --python needs the release the installed build is")


def installed_commit(ws: Workspace, env: Environment) -> pygit2.Commit:
    """The commit the installed build is: the base release, or the integration commit a
    patched wheel names (0.31.0+series.g1a2b3c4)."""
    release = base_release(ws)
    if env.public_version != release:
        raise SeriesError(
            f"--python {env.python} has {env.package_dir.name} {env.version} installed, but the series "
            f"is based on {ws.series.upstream.base}",
            f"install {env.package_dir.name}=={release} there, or name an environment that has it")
    m = re.search(r"series\.g([0-9a-f]{7,40})", env.version.partition("+")[2])
    if m is None:
        return ws.base_commit()
    try:
        return ws.repo.revparse_single(m.group(1)).peel(pygit2.Commit)
    except (KeyError, ValueError):
        raise SeriesError(f"{env.package_dir.name} {env.version} is a patched wheel of commit {m.group(1)}, "
                          "which this repository does not have",
                          "install the release wheel, or fetch that integration branch") from None


def changes(repo: pygit2.Repository, old: pygit2.Tree, new: pygit2.Tree) -> dict[str, pygit2.Oid | None]:
    """{path: new blob, None when deleted} from `old` to `new`."""
    from series.git.repo import changed_paths

    return {c.path: c.new_id for c in changed_paths(repo, old, new)}


def package_changes(repo: pygit2.Repository, built: pygit2.Commit, tree: pygit2.Commit,
                    package: str) -> dict[str, bytes | None]:
    """The tree's changes to the installed package over the build, relative to the package
    directory (what testrun.shadow lays in): new bytes, None when deleted."""
    return {path[len(package) + 1:]: (repo[oid].peel(pygit2.Blob).data if oid is not None else None)
            for path, oid in changes(repo, built.tree, tree.tree).items()
            if path.startswith(package + "/")}
