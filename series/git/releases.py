"""Upstream's release tags: which tags are versions, which of those are releases, their
order, and what a release name means. The one answer (CONTRIBUTING.md rule 3) for `rebase --onto`,
`init --base`, `touches --between`, `build`, `test --run`, `series release` and through it
ci/nightly.sh.

A *version tag* is `v` + a PEP 440 version in its normalized form (packaging.version),
without a local part: v0.31.0, v0.6.6.post1, v0.10.1.1, v0.11.0rc1. The normalized form
and no local part keep a fork's own tags out (v0.31.0+fork.2, v0.31.0-1, fork-2026-03):
a tag that contains a topic's commits would make them upstream history.

A *release* is a version tag that is not a pre-release (rc, a, b) or a dev release:
finals and post releases (v0.6.6.post1 is a re-release of v0.6.6 that pip installs).
vLLM tags its release candidates (v0.11.0rc1) on the way to a release; a shorthand or
"latest" must never land a fork on one. An rc is still reached by its exact name.

Release names: an existing tag is always itself. `latest` is the newest release. `v0.6`
(a prefix of release numbers) is the newest release whose numbers start 0.6, by PEP 440's
order, so v0.6.6.post1 beats v0.6.6 and v0.10.1.1 beats v0.10.1.

*Upstream's* tags only: a fork tags its own builds with names upstream could have made
(HabanaAI's v0.6.6.post2, on a branch of its own, newer by PEP 440 than upstream's
v0.6.6.post1), and git does not record which remote a tag came from. So the rule is by
history: *upstream's line* is the upstream remote's main (master where it has no main) and
release branches (refs/remotes/<remote>/main, releases/*: vLLM cuts its post releases on
releases/vX.Y.Z). A version tag is the fork's own when a branch (local, or any remote's but
a pull request head) reaches its commit and upstream's line does not; every other version
tag is upstream's: the ones on upstream's line, and the ones no branch reaches (fetched with
--tags, their release branch since deleted). When the remote has no such branch here (no
remote at all), nothing tells the tags apart and every version tag counts. The fork's own
are listed by `series release --all`, and are still reached by their exact name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import pygit2
from packaging.version import InvalidVersion, Version

from series.git.command import git

LATEST = "latest"
UPSTREAM = "upstream"  # the remote series.yaml names by default (series.model.Upstream)
_SHORTHAND = re.compile(r"^v?(\d+(?:\.\d+)+)$")


@dataclass(frozen=True, order=True)
class Release:
    """A version tag; ordered as PEP 440 orders versions (then by name, for v0.6 / v0.6.0)."""

    version: Version
    tag: str

    @property
    def is_release(self) -> bool:
        return not self.version.is_prerelease  # true for rc/a/b and for .devN alike


def parse_version(text: str) -> Version | None:
    """A version as PEP 440 reads it (a wheel's 0.31.0), else None."""
    try:
        return Version(text)
    except InvalidVersion:
        return None


def tag_version(tag: str) -> Version | None:
    """The version a tag names (see the module docstring), else None."""
    version = parse_version(tag[1:]) if tag.startswith("v") else None
    if version is None or version.local is not None or len(version.release) < 2 or str(version) != tag[1:]:
        return None
    return version


def _all_version_tags(repo: pygit2.Repository) -> list[Release]:
    found = []
    for ref in repo.references:
        if ref.startswith("refs/tags/") and (version := tag_version(ref[len("refs/tags/") :])):
            found.append(Release(version, ref[len("refs/tags/") :]))
    return sorted(found, reverse=True)


def trunk_ref(repo: pygit2.Repository, remote: str = UPSTREAM, names: Sequence[str] | None = None) -> str | None:
    """Upstream's trunk: refs/remotes/<remote>/main, or master where there is no main; None
    when neither is fetched. Never both (HabanaAI's master is a copy of its habana_main,
    beside a main that follows vLLM). `names`: the repository's ref names, when read already."""
    for name in (f"refs/remotes/{remote}/main", f"refs/remotes/{remote}/master"):
        if (name in names) if names is not None else (repo.references.get(name) is not None):
            return name
    return None


def trunk_commit(repo: pygit2.Repository, remote: str = UPSTREAM) -> tuple[pygit2.Commit, str] | None:
    """trunk_ref's commit and short name ("upstream/main"); None when neither is fetched. The
    one answer to "upstream's main, else master" (named trees, propose, behind, the forge's
    mainline_commit, follow-ups): callers differ only in what they do without it."""
    name = trunk_ref(repo, remote)
    if name is None:
        return None
    return repo.references[name].resolve().peel(pygit2.Commit), name[len("refs/remotes/") :]


def upstream_line(repo: pygit2.Repository, remote: str = UPSTREAM) -> list[pygit2.Oid]:
    """The tips of upstream's line (see the module docstring): the remote's main or master
    and release branches; not its other branches, which may be a fork's own (a fork cloned
    as `upstream` carries habana_main and its engineers' branches)."""
    prefix = f"refs/remotes/{remote}/"
    names = sorted(repo.references)
    trunk = trunk_ref(repo, remote, names) or f"{prefix}master"
    tips = []
    for name in names:
        if name == trunk or name.startswith(f"{prefix}releases/"):
            try:
                tips.append(repo.references[name].peel(pygit2.Commit).id)
            except (pygit2.GitError, pygit2.InvalidSpecError, ValueError):
                continue
    return tips


# fork_tags per repository and remote, while the refs it was read from stay as they were:
# one command resolves a release name, its hint and upstream's history from one reading
_FORK_TAGS: dict[tuple[str, str], tuple[tuple[tuple[str, str], ...], frozenset[str]]] = {}


def _refs_now(repo: pygit2.Repository) -> tuple[tuple[str, str], ...]:
    return tuple(
        sorted(
            (r.name, str(r.target))
            for r in repo.references.iterator()
            if r.name.startswith(("refs/heads/", "refs/remotes/", "refs/tags/"))
        )
    )


def fork_tags(repo: pygit2.Repository, remote: str = UPSTREAM) -> frozenset[str]:
    """The version tags only the fork has (the module docstring's rule). git walks the
    history: `tag --no-merged` gives the tags upstream's line does not reach, and only if
    there are any, `rev-list` the commits branches reach beyond it."""
    key, refs = (repo.path, remote), _refs_now(repo)
    if key in _FORK_TAGS and _FORK_TAGS[key][0] == refs:
        return _FORK_TAGS[key][1]
    found: frozenset[str] = frozenset()
    line = upstream_line(repo, remote)
    known = {r.tag for r in _all_version_tags(repo)}
    if line and known:
        root = Path(repo.workdir or repo.path)
        off = [t for t in git(root, "tag", "--list", *(f"--no-merged={t}" for t in line)).stdout.split() if t in known]
        if off:
            beyond = set(
                git(
                    root,
                    "rev-list",
                    "--branches",
                    f"--exclude=refs/remotes/{remote}/pr/*",
                    "--remotes",
                    "--not",
                    *map(str, line),
                ).stdout.split()
            )
            found = frozenset(t for t in off if _commit_of(repo, t) in beyond)
    _FORK_TAGS[key] = (refs, found)
    return found


def _commit_of(repo: pygit2.Repository, tag: str) -> str | None:
    try:
        return str(repo.references[f"refs/tags/{tag}"].peel(pygit2.Commit).id)
    except (KeyError, pygit2.GitError, pygit2.InvalidSpecError, ValueError):
        return None  # a tag of a tree or blob: no history to be on


def version_tags(repo: pygit2.Repository, remote: str = UPSTREAM) -> list[Release]:
    """Upstream's version tags here, newest first (release candidates too)."""
    own = fork_tags(repo, remote)
    return [r for r in _all_version_tags(repo) if r.tag not in own]


def own_tags(repo: pygit2.Repository, remote: str = UPSTREAM) -> list[str]:
    """The fork's own tags: every tag that is not one of upstream's version tags (its
    version tags newest first, then the rest by name)."""
    upstream = {r.tag for r in version_tags(repo, remote)}
    own = fork_tags(repo, remote)
    versions = [r.tag for r in _all_version_tags(repo) if r.tag in own]
    rest = sorted(
        ref[len("refs/tags/") :]
        for ref in repo.references
        if ref.startswith("refs/tags/")
        and ref[len("refs/tags/") :] not in upstream
        and ref[len("refs/tags/") :] not in own
    )
    return versions + rest


def releases(repo: pygit2.Repository, remote: str = UPSTREAM) -> list[Release]:
    """Upstream's release tags here, newest first."""
    return [r for r in version_tags(repo, remote) if r.is_release]


def shorthand(spec: str) -> tuple[int, ...] | None:
    """The release numbers a name asks for: () for `latest`, (0, 6) for `v0.6`; None when
    the name is not a release name (a branch, a commit, v0.11.0rc1)."""
    if spec == LATEST:
        return ()
    m = _SHORTHAND.match(spec)
    return tuple(int(n) for n in m.group(1).split(".")) if m else None


def _starts_with(version: Version, prefix: tuple[int, ...]) -> bool:
    numbers = version.release + (0,) * (len(prefix) - len(version.release))  # 0.6 == 0.6.0
    return numbers[: len(prefix)] == prefix


def newest(
    repo: pygit2.Repository, prefix: tuple[int, ...], pre_releases: bool = False, remote: str = UPSTREAM
) -> Release | None:
    """The newest release of upstream's whose numbers start with `prefix` (any release for
    ()); with `pre_releases`, the newest version tag so, rc or dev tags too."""
    found = version_tags(repo, remote) if pre_releases else releases(repo, remote)
    return next((r for r in found if _starts_with(r.version, prefix)), None)


def nearest(repo: pygit2.Repository, spec: str, count: int = 3, remote: str = UPSTREAM) -> list[str]:
    """Upstream's release tags closest to what `spec` seems to ask for (for an error's
    hint), newer first among equals; the newest if it names no version."""
    known = releases(repo, remote)
    m = re.match(r"^v?(\d+(?:\.\d+)*)", spec)
    if m:
        want = tuple(int(n) for n in m.group(1).split("."))[:3]
        want += (0,) * (3 - len(want))

        def distance(r: Release) -> tuple[int, int]:
            # the first number that differs decides (a patch number means nothing across
            # minor releases), then by how much
            have = (r.version.release + (0, 0))[:3]
            i = next((i for i in range(3) if have[i] != want[i]), 3)
            return (3 - i, abs(have[i] - want[i]) if i < 3 else 0)

        known.sort(key=distance)  # stable: among equals, newest first still
    return [r.tag for r in known[:count]]


def closest_common(
    repo: pygit2.Repository, workdir: Path, commits: Sequence[pygit2.Oid], remote: str = UPSTREAM
) -> list[Release]:
    """The releases every one of `commits` contains that no other such release follows:
    one when the commits fork from one release's line, several when they sit on two
    (v0.31.0 and a v0.30.1 merged into it), none when no release is in all of them.
    Newest first; of tags on one commit, the newest stands for it.

    git does the graph work: `merge-base --octopus --all` gives the best common ancestors
    (every common ancestor reaches one of them), `tag --merged` the tags those reach,
    `merge-base --independent` the candidates no other candidate contains: a few calls,
    not a walk per tag and branch (vLLM has hundreds of tags).
    """
    if not commits:
        return []
    bases = git(workdir, "merge-base", "--octopus", "--all", *map(str, commits), check=False)
    tips = bases.stdout.split()
    if bases.returncode != 0 or not tips:
        return []
    merged = git(workdir, "tag", "--list", *(f"--merged={t}" for t in tips)).stdout.split()
    by_tag = {r.tag: r for r in releases(repo, remote)}
    candidates: dict[str, Release] = {}
    for tag in merged:
        if tag in by_tag:
            commit = str(repo.references[f"refs/tags/{tag}"].peel(pygit2.Commit).id)
            if commit not in candidates or by_tag[tag] > candidates[commit]:
                candidates[commit] = by_tag[tag]
    if not candidates:
        return []
    independent = git(workdir, "merge-base", "--independent", *candidates).stdout.split()
    return sorted((candidates[c] for c in independent if c in candidates), reverse=True)


def names(found: Iterable[Release]) -> str:
    return ", ".join(r.tag for r in found)
