"""The custom ops a base registers in its C++/CUDA sources (`torch.ops._C.<name>` and the
other extension namespaces), read from the tree, never built: what the semantic check
(series.semantic.breaks) judges a topic's `torch.ops._C.foo(...)` against.

    OpRegistry(repo, tree).where(name)   the csrc file whose `.def("name(...)` registers it
    registers(repo, tree, path, name)    that file registers it in that tree

Every `X.def("name...` of every C++/CUDA source under csrc/ counts, whatever its library
block and namespace (a multi-line `ops.def(\n "name(...)"` too): vLLM registers one
extension's ops from several files (csrc/torch_bindings.cpp, csrc/libtorch_stable/*,
kernels' own .cu files), so an op counts as gone only when no file registers it any
more. The registrations of a csrc tree are kept on disk per tree id
(series.semantic.blob_cache) and each file's in memory per blob: the cost is one scan of
csrc (about 5 MB) per new csrc tree, paid only when a topic calls a custom op.
"""

from __future__ import annotations

import re

import pygit2

from series.semantic import blob_cache

_DEF = re.compile(rb"\.def\(\s*\"([A-Za-z_]\w*)[.(\"]")
_SOURCES = (".cpp", ".cc", ".cu", ".cuh", ".h", ".hpp")
_ROOT = "csrc"
_BY_BLOB: dict[pygit2.Oid, frozenset[str]] = {}


def _names(repo: pygit2.Repository, oid: pygit2.Oid) -> frozenset[str]:
    if oid not in _BY_BLOB:
        _BY_BLOB[oid] = frozenset(m.decode() for m in _DEF.findall(repo[oid].peel(pygit2.Blob).data))
    return _BY_BLOB[oid]


def _sources(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str) -> dict[str, pygit2.Oid]:
    out: dict[str, pygit2.Oid] = {}
    for entry in tree:
        path = f"{prefix}/{entry.name}"
        if entry.type_str == "tree":
            out.update(_sources(repo, repo[entry.id].peel(pygit2.Tree), path))
        elif entry.type_str == "blob" and (entry.name or "").endswith(_SOURCES):
            out[path] = entry.id
    return out


def registers(repo: pygit2.Repository, tree: pygit2.Tree, path: str, name: str) -> bool:
    try:
        entry = tree[path]
    except KeyError:
        return False
    return entry.type_str == "blob" and name in _names(repo, entry.id)


def _decode(raw: object) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise ValueError("not an object")
    return {str(k): str(v) for k, v in raw.items()}


class OpRegistry:
    """The custom ops one base tree registers (module docstring), read on first use."""

    def __init__(self, repo: pygit2.Repository, tree: pygit2.Tree):
        self.repo, self.tree = repo, tree
        self._where: dict[str, str] | None = None

    def _compute(self, csrc: pygit2.Tree) -> dict[str, str]:
        where: dict[str, str] = {}
        for path, oid in sorted(_sources(self.repo, csrc, _ROOT).items()):
            for name in _names(self.repo, oid):
                where.setdefault(name, path)
        return where

    def where(self, name: str) -> str | None:
        if self._where is None:
            try:
                csrc = self.tree[_ROOT]
            except KeyError:
                csrc = None
            if csrc is None or csrc.type_str != "tree":
                self._where = {}
            else:
                tree = self.repo[csrc.id].peel(pygit2.Tree)
                self._where = blob_cache.cached(
                    ("ops", blob_cache.version(__file__), str(csrc.id)), lambda: self._compute(tree), _decode
                )
        return self._where.get(name)
