"""What an upstream tree offers, read statically (stdlib `ast`, never imported).

    UpstreamTree(repo, commit)    one base's modules by dotted name: `module("vllm.envs")`,
                                  `find("vllm.x.f")` -> where the name is defined and what it is

A module is parsed once per blob (the same file in the old and the new base, or in two
rebases, costs one parse; what it offers is kept on disk per blob, series.semantic.blob_cache,
so a later run parses it not at all), and a tree's path lookups once per (tree, path): the check
looks only at the names the topics use, so its cost follows the topics, not upstream's
distance. What one module offers: series.semantic.module_api.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Union

import pygit2

from series.semantic import blob_cache, class_reading, module_api, top_chunks
from series.semantic.class_reading import adds_nothing
from series.semantic.module_api import ClassApi, Function, ModuleApi, module_name

BlobReader = Callable[[str], Union[bytes, None]]  # path -> the file at one commit, None: absent


def _function(f: Function) -> list[object]:
    return [f.name, list(f.params), f.flexible, f.line]


def _encode(api: ModuleApi | None) -> object:
    if api is None:
        return None
    return {
        "names": sorted(api.names),
        "functions": [_function(f) for f in api.functions.values()],
        "classes": [
            {
                "name": c.name,
                "methods": [_function(f) for f in c.methods.values()],
                "fields": sorted(c.fields),
                "line": c.line,
                "bases": list(c.bases),
                "types": c.field_types,
                "open": c.open,
            }
            for c in api.classes.values()
        ],
        "reexports": api.reexports,
        "open": api.open,
    }


def _read_function(raw: list[Any]) -> Function:
    name, params, flexible, line = raw
    return Function(str(name), tuple(str(p) for p in params), bool(flexible), int(line))


def _decode(raw: object) -> ModuleApi | None:
    """A ModuleApi read back (ValueError, TypeError, KeyError: not one)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError("not an object")
    functions = {f.name: f for f in map(_read_function, raw["functions"])}
    classes = {}
    for c in raw["classes"]:
        methods = {f.name: f for f in map(_read_function, c["methods"])}
        classes[str(c["name"])] = ClassApi(
            str(c["name"]),
            methods,
            frozenset(map(str, c["fields"])),
            int(c["line"]),
            tuple(map(str, c["bases"])),
            {str(k): str(v) for k, v in c["types"].items()},
            bool(c["open"]),
        )
    return ModuleApi(
        frozenset(map(str, raw["names"])),
        functions,
        classes,
        {str(k): str(v) for k, v in raw["reexports"].items()},
        bool(raw["open"]),
    )


_PARSED: dict[pygit2.Oid, "ModuleApi | None"] = {}  # per blob: one parse however many trees share it


@dataclass(frozen=True)
class Found:
    """Where a dotted name is defined in one base, and what it is."""

    path: str  # the module file that defines it
    name: str  # its name there
    function: Function | None = None
    cls: ClassApi | None = None
    member: str | None = None  # "Class.member" was asked: the member's name, None: not
    # in the class body
    module: bool = False  # the name is a module
    asked: str | None = None  # "Class.member" was asked: that member, in the body or not


class UpstreamTree:
    """One base commit's modules, by dotted name (module docstring)."""

    def __init__(self, repo: pygit2.Repository, commit: pygit2.Oid):
        self.repo = repo
        self.commit = commit
        self.tree = repo[commit].peel(pygit2.Commit).tree
        self._paths: dict[str, tuple[str, pygit2.Oid] | None] = {}

    def _blob(self, path: str) -> pygit2.Oid | None:
        try:
            entry = self.tree[path]
        except KeyError:
            return None
        return entry.id if entry.type_str == "blob" else None

    def path_of(self, dotted: str) -> tuple[str, pygit2.Oid] | None:
        """The file of module `dotted` (x/y.py or x/y/__init__.py), None when there is none."""
        if dotted not in self._paths:
            base = dotted.replace(".", "/")
            found = None
            for path in (f"{base}.py", f"{base}/__init__.py"):
                oid = self._blob(path)
                if oid is not None:
                    found = (path, oid)
                    break
            self._paths[dotted] = found
        return self._paths[dotted]

    def module(self, dotted: str) -> tuple[str, ModuleApi] | None:
        found = self.path_of(dotted)
        if found is None:
            return None
        path, oid = found
        if oid not in _PARSED:
            package = module_name(path)[1]
            # on disk too (series.semantic.blob_cache): the next run over the same base parses nothing
            _PARSED[oid] = blob_cache.cached(
                (
                    "api",
                    blob_cache.version(__file__, module_api.__file__, class_reading.__file__, top_chunks.__file__),
                    package,
                    str(oid),
                ),
                lambda: _encode(ModuleApi.of(self.repo[oid].peel(pygit2.Blob).data, package)),
                _decode,
            )
        api = _PARSED[oid]
        return (path, api) if api is not None else None

    def split(self, dotted: str) -> tuple[str, list[str]] | None:
        """The longest module prefix of `dotted` and the attribute names after it."""
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            if self.path_of(".".join(parts[:cut])) is not None:
                return ".".join(parts[:cut]), parts[cut:]
        return None

    def find(self, dotted: str, hops: int = 4) -> Found | None:
        """Where `dotted` (module.name[.member]) is defined; re-exports are followed."""
        split = self.split(dotted)
        if split is None:
            return None
        mod, rest = split
        loaded = self.module(mod)
        if loaded is None:
            return None
        path, api = loaded
        if not rest:
            return Found(path, mod, module=True)
        name = rest[0]
        if name not in api.names:
            return Found(path, name) if api.open else None
        if name in api.reexports and name not in api.functions and name not in api.classes and hops:
            # defined elsewhere (upstream or not): where it comes from, else here
            deeper = self.find(".".join([api.reexports[name], *rest[1:]]), hops - 1)
            return deeper if deeper is not None else Found(path, name)
        cls = api.classes.get(name)
        if cls is not None and len(rest) > 2 and hops:
            # a field of a class type (`vllm_config.cache_config.x`): on into that class
            typed = self.field_type(mod, api, cls, rest[1])
            deeper = self.find(".".join([typed, *rest[2:]]), hops - 1) if typed else None
            if deeper is not None:
                return deeper
        if cls is not None and len(rest) > 1:
            # an inherited member is not in the body: its bases tell (series.semantic.members)
            member = rest[1] if cls.has(rest[1]) else None
            return Found(path, name, cls.methods.get(rest[1]), cls, member, asked=rest[1])
        return Found(path, name, api.functions.get(name), cls)

    def field_type(self, module: str, api: ModuleApi, cls: ClassApi, name: str) -> str | None:
        """The dotted class a field is annotated with, in `cls` or, as the MRO reads it, the
        first base that binds it (`self.vllm_config` of a subclass of the WorkerBase whose
        __init__ set it); None when that class does not say, or no class binds it."""
        return self._binding(module, api, cls, name, 4)[1]

    def _binding(self, module: str, api: ModuleApi, cls: ClassApi, name: str, depth: int) -> tuple[bool, str | None]:
        """(some class of the chain binds `name`, its type there)."""
        if name in cls.field_types:
            return True, self.resolve(module, api, cls.field_types[name])
        if cls.has(name) or cls.open or depth == 0:
            return True, None  # bound untyped, or anything: a base's type would be a guess
        for written in cls.bases:
            if adds_nothing(written):
                continue
            base = self.base_class(module, written)
            where = module_name(base.path)[0] if base is not None else ""
            loaded = self.module(where) if base is not None else None
            if base is None or base.cls is None or loaded is None:
                return True, None  # a base the tree does not define may bind it
            bound, typed = self._binding(where, loaded[1], base.cls, name, depth - 1)
            if bound:
                return True, typed
        return False, None

    def base_class(self, module: str, written: str) -> Found | None:
        """The class a base written in `module` (as the class statement spells it) names,
        where this tree defines it; None for anything else (a call, a name from outside)."""
        loaded = self.module(module)
        if loaded is None or "(" in written:
            return None
        target = self.resolve(module, loaded[1], written)
        found = self.find(target) if target is not None else None
        return found if found is not None and found.cls is not None and found.asked is None else None

    @staticmethod
    def resolve(module: str, api: ModuleApi, written: str) -> str | None:
        """The dotted name a class name written in `module` means there."""
        root, _, tail = written.partition(".")
        if root in api.reexports:
            return ".".join(filter(None, [api.reexports[root], tail]))
        return f"{module}.{written}" if root in api.classes else None

    def api_at(self, path: str) -> ModuleApi | None:
        """The module at a file path (None: no such file, or it does not parse)."""
        dotted = module_name(path)[0]
        loaded = self.module(dotted) if path.endswith(".py") else None
        return loaded[1] if loaded is not None and loaded[0] == path else None
