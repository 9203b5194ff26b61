"""Trees named the way a maintainer says them, and the installed build they are laid over.

`base` (the release alone), `series` (every active topic), `without:TOPIC` (the series
less one topic) and `only:TOPIC` (one topic, with the topics it depends on, alone on the
base; `topic:TOPIC` says the same). An adopted PR is a topic, so `only:pr-61050` is their
change on our base; and the topic it superseded keeps its branch, so `only:offload-evict-fix`
is ours on the same base ("their PR and ours", measured side by side). `series test --run` and `series measure` both name trees this way,
and both lay a tree's package changes over the installed release build
(`package_changes`, then series.evidence.testrun.shadow).

Two names stand on upstream's trunk instead of the base (the upstream remote's main, else
master; fetched, never moved here): `main` (the trunk alone) and `pr:TOPIC` (the topic's
own commits replayed onto it in memory, as `series propose` builds the PR branch: what the
PR holds). Laid over the release build they are main's Python over the release's
compiled parts: every file of the package that main has and the build has not, or has
otherwise, shadows the installed one; the compiled extensions stay the release's
(`laid_over` says so, and warns when main changed the C/CUDA sources). When the replay
conflicts, `pr:TOPIC@REV` names the PR branch as it is (the local pr/TOPIC `series
propose` made, or the fetched PR head refs/remotes/<remote>/pr/N): the error says which.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import pygit2

from series.wheel import integration_tree
from series.evidence.interpreter import Environment
from series.engine.replay import ReplayStop, replay_commits
from series.errors import ConflictError, SeriesError
from series.git import releases
from series.git.repo import branch_commit, resolve_commit
from series.model import Status
from series.workspace import Workspace

TREE_FORMS = "base, series, without:TOPIC, only:TOPIC (or topic:TOPIC), main, pr:TOPIC (or pr:TOPIC@REV)"
TRUNK_FORMS = ("main", "pr")  # trees on upstream's trunk, not on the base


@dataclass(frozen=True)
class ResolvedTree:
    spec: str  # canonical: topic:T is only:T
    commit: pygit2.Commit
    describe: str  # "v0.31.0 + 3 topics", for the reader
    trunk: str | None = None  # "upstream/main" when the tree stands on the trunk, not the base

    @property
    def on_trunk(self) -> bool:
        return self.trunk is not None


def canonical(spec: str) -> str:
    kind, sep, topic = spec.partition(":")
    return f"only:{topic}" if sep and kind == "topic" else spec


def check_spec(spec: str) -> str:
    """The spec, canonical, when it has one of the forms (its topic is checked by resolve)."""
    spec = canonical(spec)
    kind, _, topic = spec.partition(":")
    if spec not in ("base", "series", "main") and not (kind in ("without", "only", "pr") and topic):
        raise SeriesError(f"tree '{spec}': not a tree name (use {TREE_FORMS})")
    return spec


def resolve(ws: Workspace, spec: str) -> ResolvedTree:
    """The commit a tree spec names (built in memory: the integration chain, less topics)."""
    spec = check_spec(spec)
    base = ws.base_commit()
    active = ws.series.active()
    kind, _, topic = spec.partition(":")
    if spec == "main" or kind == "pr":
        return trunk_tree(ws, spec)
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
        describe = (
            f"{ws.series.upstream.base} + {topic}"
            + (f" (and {', '.join(sorted(keep - {topic}))} it depends on)" if len(keep) > 1 else "")
            + kept
        )
    return ResolvedTree(spec, commit, describe)


def on_trunk(spec: str) -> bool:
    """Whether a (checked) spec names a tree on upstream's trunk rather than on the base."""
    return spec.partition(":")[0] in TRUNK_FORMS


def trunk(ws: Workspace) -> tuple[pygit2.Commit, str]:
    """Upstream's trunk as fetched: <remote>/main, else <remote>/master (releases.trunk_commit, the one rule)."""
    remote = ws.series.upstream.remote
    found = releases.trunk_commit(ws.repo, remote)
    if found is not None:
        return found
    raise SeriesError(
        f"no {remote}/main (nor {remote}/master) in this repository: the trees main and "
        "pr:TOPIC stand on upstream's trunk",
        f"run 'git fetch {remote}' so the tree is upstream's trunk as it is now",
    )


def trunk_tree(ws: Workspace, spec: str) -> ResolvedTree:
    """`main`, `pr:TOPIC` (replayed onto the trunk in memory) or `pr:TOPIC@REV` (REV as it is)."""
    main, main_name = trunk(ws)
    if spec == "main":
        return ResolvedTree(spec, main, f"{main_name} {str(main.id)[:12]} (upstream's trunk alone)", main_name)
    name, at, rev = spec.partition(":")[2].partition("@")
    topic = ws.series.topic(name)  # an unknown topic: the one error every verb gives
    if at:
        if not rev:
            raise SeriesError(
                f"tree '{spec}': no revision after '@' (pr:TOPIC@REV: the PR branch, e.g. pr:{name}@pr/{name})"
            )
        commit = resolve_commit(ws.repo, rev, f"revision of tree '{spec}'")
        return ResolvedTree(spec, commit, f"{rev} {str(commit.id)[:12]} as it is (the PR branch of {name})", main_name)
    ws, kept = _kept_branch_active(ws, name)
    own = ws.require_own(ws.series.topic(name))
    if not own.commits:
        raise SeriesError(f"tree '{spec}': topic {name} has no commits of its own over {ws.series.upstream.base}")
    # Signed as the topic head's committer (the integration chain's rule): the same trunk and
    # topic give the same commit id, run after run, so the cache and the reader see one tree.
    result = replay_commits(ws.repo, own.commits, main, committer=own.head.committer, topic=name)
    if result.conflict is not None:
        raise trunk_conflict(ws, name, result.conflict, main, main_name, main_name, tree=spec)
    commit = ws.repo[result.head].peel(pygit2.Commit)
    extra = f"; without {', '.join(topic.depends_on)} it depends on (not in the PR)" if topic.depends_on else ""
    return ResolvedTree(
        spec,
        commit,
        f"{main_name} {str(main.id)[:12]} + {name} replayed: {str(commit.id)[:12]}{extra}{kept}",
        main_name,
    )


def trunk_conflict(
    ws: Workspace,
    name: str,
    conflict: ReplayStop,
    onto: pygit2.Commit,
    onto_name: str,
    trunk_name: str,
    *,
    tree: str | None = None,
) -> ConflictError:
    """The one answer when a topic's own commits do not replay onto upstream's trunk (`series
    propose`, `propose --update`, the pr:TOPIC tree of `series test` and `series measure`):
    which topic, which commit, which paths, and the commands that resolve it. `onto_name`
    says where the replay went (the trunk, the PR's base or head on it); `tree`, the tree
    spec being built, adds the PR branch that can be named instead."""
    paths = ", ".join(c.path for c in conflict.conflicts)
    hint = (
        f"'series rebase --onto {trunk_name} --dry-run --bisect' names the upstream PR it meets; "
        f"'series rebase --onto {trunk_name}' resolves it in a worktree ('series undo' takes that back)"
    )
    if tree is not None:
        hint += f"; or {_pr_branch_hint(ws, name, ws.series.topic(name).upstream_pr)}"
    return ConflictError(
        (f"tree '{tree}': " if tree is not None else "")
        + f"topic '{name}' does not apply to {onto_name} ({str(onto.id)[:12]}): commit "
        f"{str(conflict.commit)[:12]} conflicts in {paths}",
        hint,
    )


def _pr_branch_hint(ws: Workspace, name: str, number: int | None) -> str:
    """Where the resolved PR branch is, for pr:TOPIC@REV: the fetched PR head, the local
    branch `series propose` made, or how to make one."""
    remote = ws.series.upstream.remote
    fetched = f"refs/remotes/{remote}/pr/{number}" if number is not None else None
    if fetched is not None and fetched in ws.repo.references:
        return f"resolve it on the PR branch; its fetched head is there: name the tree pr:{name}@{fetched}"
    if f"refs/heads/pr/{name}" in ws.repo.references:
        return f"resolve it on the PR branch pr/{name}, then name the tree pr:{name}@pr/{name}"
    return f"resolve it on a PR branch by hand, then name that branch as pr:{name}@BRANCH" + (
        f" (or fetch PR #{number}: 'git fetch {remote} refs/pull/{number}/head:{fetched}')"
        if number is not None
        else ""
    )


def laid_over(trunk: str | None, package: str, version: str) -> str:
    """What the reader is told a tree runs as over the installed build (`trunk`: the
    ResolvedTree's, None for a tree on the base)."""
    if trunk is None:
        return "over the build"
    return f"over the build: {trunk}'s Python over {package} {version}'s compiled parts"


def compiled_drift(repo: pygit2.Repository, built: pygit2.Commit, tree: pygit2.Commit) -> list[str]:
    """Sources of the compiled parts (csrc/: the custom ops) the tree has otherwise than the
    build: code of the tree that calls a changed op runs against the release's."""
    return sorted(path for path in changes(repo, built.tree, tree.tree) if path.startswith("csrc/"))


def _kept_branch_active(ws: Workspace, name: str) -> tuple[Workspace, str]:
    """A superseded or dropped topic whose branch is kept, made active for this one tree,
    with what to tell the reader; any other topic as it is (require_topics judges it)."""
    topic = ws.series.topic(name)
    if topic.status not in (Status.SUPERSEDED, Status.DROPPED) or branch_commit(ws.repo, topic.branch) is None:
        return ws, ""
    topics = tuple(dataclasses.replace(t, status=Status.ACTIVE) if t.name == name else t for t in ws.series.topics)
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
    raise SeriesError(
        f"upstream.base {ws.series.upstream.base} is not a release (no vX.Y.Z tag points "
        "at it): --python needs the release the installed build is"
    )


def installed_commit(ws: Workspace, env: Environment) -> pygit2.Commit:
    """The commit the installed build is: the base release, or the integration commit a
    patched wheel names (0.31.0+series.g1a2b3c4)."""
    release = base_release(ws)
    if env.public_version != release:
        raise SeriesError(
            f"--python {env.python} has {env.package_dir.name} {env.version} installed, but the series "
            f"is based on {ws.series.upstream.base}",
            f"install {env.package_dir.name}=={release} there, or name an environment that has it",
        )
    m = re.search(r"series\.g([0-9a-f]{7,40})", env.version.partition("+")[2])
    if m is None:
        return ws.base_commit()
    try:
        return ws.repo.revparse_single(m.group(1)).peel(pygit2.Commit)
    except (KeyError, ValueError):
        raise SeriesError(
            f"{env.package_dir.name} {env.version} is a patched wheel of commit {m.group(1)}, "
            "which this repository does not have",
            "install the release wheel, or fetch that integration branch",
        ) from None


def changes(repo: pygit2.Repository, old: pygit2.Tree, new: pygit2.Tree) -> dict[str, pygit2.Oid | None]:
    """{path: new blob, None when deleted} from `old` to `new`."""
    from series.git.repo import changed_paths

    return {c.path: c.new_id for c in changed_paths(repo, old, new)}


def package_changes(
    repo: pygit2.Repository, built: pygit2.Commit, tree: pygit2.Commit, package: str
) -> dict[str, bytes | None]:
    """The tree's changes to the installed package over the build, relative to the package
    directory (what testrun.shadow lays in): new bytes, None when deleted."""
    return {
        path[len(package) + 1 :]: (repo[oid].peel(pygit2.Blob).data if oid is not None else None)
        for path, oid in changes(repo, built.tree, tree.tree).items()
        if path.startswith(package + "/")
    }
