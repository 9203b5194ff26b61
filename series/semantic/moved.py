"""Where upstream moved a name or a module the semantic check (series.semantic.breaks) found
gone: read from the commit that made it go, never from a search of the whole tree.

    moved_to(repo, commit, found, new)  the dotted module that now defines the name (or, for
                                        a module, the module it became), None when `commit`
                                        did not move it

vLLM moves code in one PR: the commit after which a name is gone from its module is the
one that wrote it elsewhere, so only the Python files under vllm/ that commit added or
changed are read, and a candidate counts only when the new base still defines the name
there (a def or class, not a re-export). The cost is one tree diff per break (and a byte
search of the files it changed, before any parse), nothing for a topic without breaks.
"""

from __future__ import annotations

import difflib
import re

import pygit2

from series.semantic.module_api import module_name
from series.semantic.upstream_api import Found, UpstreamTree

_KEPT = (
    pygit2.enums.DeltaStatus.ADDED,
    pygit2.enums.DeltaStatus.MODIFIED,
    pygit2.enums.DeltaStatus.RENAMED,
    pygit2.enums.DeltaStatus.COPIED,
)


def _deltas(commit: pygit2.Commit, renames: bool) -> list[pygit2.DiffDelta]:
    diff = commit.parents[0].tree.diff_to_tree(commit.tree)
    if renames:
        diff.find_similar()  # a moved file is a rename, as `git log --follow` reads it
    return list(diff.deltas)


_TOP_DEF = re.compile(rb"^(?:async[ \t]+def|def|class)[ \t]+([A-Za-z_]\w*)", re.M)
_DEFINED: dict[pygit2.Oid, dict[str, list[str]]] = {}  # per commit: name -> files it wrote it in


def _defined(repo: pygit2.Repository, commit: pygit2.Commit, deltas: list[pygit2.DiffDelta]) -> dict[str, list[str]]:
    """The top-level def/class names of the Python files under vllm/ the commit added or
    changed, by a byte search (a candidate is parsed only later, in the new base); once
    per commit, however many of its names the topics use."""
    if commit.id not in _DEFINED:
        found: dict[str, list[str]] = {}
        for d in deltas:
            path = d.new_file.path
            if d.status in _KEPT and path.startswith("vllm/") and path.endswith(".py"):
                for name in set(_TOP_DEF.findall(repo[d.new_file.id].peel(pygit2.Blob).data)):
                    found.setdefault(name.decode(), []).append(path)
        _DEFINED[commit.id] = found
    return _DEFINED[commit.id]


def moved_to(repo: pygit2.Repository, commit: pygit2.Commit | None, was: Found, new: UpstreamTree) -> str | None:
    """The module docstring's answer for `was` (where the old base defined the name)."""
    if commit is None or not commit.parents:
        return None
    deltas = _deltas(commit, renames=was.module)
    if was.module:
        for d in deltas:
            if (
                d.status == pygit2.enums.DeltaStatus.RENAMED
                and d.old_file.path == was.path
                and d.new_file.path.endswith(".py")
            ):
                dotted = module_name(d.new_file.path)[0]
                return dotted if new.path_of(dotted) is not None else None
        return None
    candidates = []
    for path in _defined(repo, commit, deltas).get(was.name, []):
        api = new.api_at(path) if path != was.path else None
        if api is not None and (was.name in api.functions or was.name in api.classes):
            candidates.append(path)
    if not candidates:
        return None
    # two modules defining it: the one whose path reads most like the old one
    best = max(sorted(candidates), key=lambda p: difflib.SequenceMatcher(None, p, was.path).ratio())
    return module_name(best)[0]
