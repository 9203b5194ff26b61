"""What an upstream module offers, read statically from its source (stdlib `ast`, never
imported): the names it binds at top level, its functions' parameters, its classes' methods
and fields, what it re-exports (series.semantic.upstream_api finds names in a tree with it).

    ModuleApi.of(source, package)   None when the file does not parse

Names bound inside `if TYPE_CHECKING:` / `try:` blocks count; a module with a `__getattr__`
also offers the string keys of its top-level dict literals (vLLM's
`envs.environment_variables`, the lazy `MODULE_ATTRS` of a package), and one with a
`__getattr__` and no such keys, or a `from x import *`, offers anything. A run of top-level
statements is parsed once per process however many versions of the module share its text
(series.semantic.top_chunks: the old and new base's vllm/config.py, the versions a culprit
search reads).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from typing import Iterator

from series.semantic import top_chunks
from series.semantic.class_reading import read_method, type_name


@dataclass(frozen=True)
class Function:
    name: str
    params: tuple[str, ...]  # every named parameter, in order (self included)
    flexible: bool  # it takes **kwargs: any keyword goes
    line: int

    @classmethod
    def of(cls, node: ast.FunctionDef | ast.AsyncFunctionDef) -> "Function":
        a = node.args
        names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
        return cls(node.name, tuple(names), a.kwarg is not None, node.lineno)


@dataclass(frozen=True)
class ClassApi:
    name: str
    methods: dict[str, Function]
    fields: frozenset[str]  # names assigned in the class body (dataclass fields too), self.x too
    line: int
    bases: tuple[str, ...] = ()  # as written
    field_types: dict[str, str] = field(default_factory=dict)  # field -> its annotation's class, as written
    open: bool = False  # __getattr__: any attribute may be there

    def has(self, name: str) -> bool:
        return name in self.methods or name in self.fields


@dataclass(frozen=True)
class ModuleApi:
    names: frozenset[str]
    functions: dict[str, Function] = field(default_factory=dict)
    classes: dict[str, ClassApi] = field(default_factory=dict)
    reexports: dict[str, str] = field(default_factory=dict)  # name -> dotted origin
    open: bool = False  # offers any name (module __getattr__, star import)

    def has(self, name: str) -> bool:
        return self.open or name in self.names

    @classmethod
    def of(cls, source: bytes, package: str) -> "ModuleApi | None":
        """None when the file does not parse (nothing can be said about it). Read a run of
        top-level statements at a time, each text once per process (series.semantic.top_chunks)."""
        parts = _parts(source, package)
        if parts is None:
            try:
                tree = ast.parse(source)
            except (SyntaxError, ValueError):
                return None
            parts = [(0, _RunApi.of(tree.body, package))]
        names: set[str] = set()
        functions: dict[str, Function] = {}
        classes: dict[str, ClassApi] = {}
        reexports: dict[str, str] = {}
        keys: set[str] = set()
        star = False
        for moved, part in parts:  # in the file's order: a later binding of a name wins
            names |= part.names
            functions.update((k, _moved(f, moved)) for k, f in part.functions.items())
            classes.update((k, _moved_class(c, moved)) for k, c in part.classes.items())
            reexports.update(part.reexports)
            keys |= part.keys
            star = star or part.star
        lazy = "__getattr__" in functions
        return cls(
            frozenset(names | keys if lazy else names), functions, classes, reexports, open=star or (lazy and not keys)
        )


@dataclass(frozen=True)
class _RunApi:
    """What a run of top-level statements binds, its lines counted from the run's first."""

    names: frozenset[str]
    functions: dict[str, Function]
    classes: dict[str, ClassApi]
    reexports: dict[str, str]
    keys: frozenset[str]  # string keys of dict literals (a lazy module's names)
    star: bool

    @classmethod
    def of(cls, body: list[ast.stmt], package: str) -> "_RunApi":
        names: set[str] = set()
        functions: dict[str, Function] = {}
        classes: dict[str, ClassApi] = {}
        reexports: dict[str, str] = {}
        keys: set[str] = set()
        star = False
        for node in _top_level(body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
                functions[node.name] = Function.of(node)
            elif isinstance(node, ast.ClassDef):
                names.add(node.name)
                classes[node.name] = _class(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
                if isinstance(node.value, ast.Dict):
                    keys.update(
                        k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
                    )
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    names.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                origin = absolute(node, package)
                for alias in node.names:
                    if alias.name == "*":
                        star = True
                        continue
                    names.add(alias.asname or alias.name)
                    reexports[alias.asname or alias.name] = f"{origin}.{alias.name}"
        return cls(frozenset(names), functions, classes, reexports, frozenset(keys), star)


_PARTS: dict[tuple[str, str], "_RunApi | None"] = {}  # (package, text) -> what it binds, None: no parse


def _parts(source: bytes, package: str) -> list[tuple[int, _RunApi]] | None:
    """What each run of top-level statements binds, with the lines before it; None: parse the
    whole file. A text that does not parse alone is read with the next (a docstring whose
    lines start at column 0): every run still starts at a cut (series.semantic.top_chunks)."""
    texts = top_chunks.split(source)
    if texts is None:
        return None
    out: list[tuple[int, _RunApi]] = []
    pending: tuple[int, str, int] | None = None  # first line, text, texts joined
    for line, text in texts:
        joined = 1
        if pending is not None:
            line, text, joined = pending[0], pending[1] + text, pending[2] + 1
        part = _part(text, package)
        if part is not None:
            out.append((line - 1, part))
            pending = None
        elif joined >= 16:
            return None  # the file's own error, most likely: the whole parse tells
        else:
            pending = (line, text, joined)
    return out if pending is None else None


def _part(text: str, package: str) -> _RunApi | None:
    key = (package, text)
    if key not in _PARTS:
        try:
            _PARTS[key] = _RunApi.of(ast.parse(text).body, package)
        except (SyntaxError, ValueError):
            _PARTS[key] = None
    return _PARTS[key]


def _moved(f: Function, lines: int) -> Function:
    return replace(f, line=f.line + lines) if lines else f


def _moved_class(c: ClassApi, lines: int) -> ClassApi:
    if not lines:
        return c
    return replace(c, line=c.line + lines, methods={k: _moved(f, lines) for k, f in c.methods.items()})


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that bind module names, looking into if/try/with blocks."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _top_level(block)
        elif isinstance(node, ast.With):
            yield from _top_level(node.body)
        else:
            yield node


def _class(node: ast.ClassDef) -> ClassApi:
    methods: dict[str, Function] = {}
    fields: set[str] = set()
    types: dict[str, str] = {}
    dynamic = False
    assigned: dict[str, str] = {}  # typed in a method: the class body's own annotation wins
    for item in _top_level(node.body):
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            methods[item.name] = Function.of(item)
            # what its methods set on self is an instance's too
            stored, typed, by_name = read_method(item)
            fields.update(stored)
            assigned.update(typed)
            dynamic = dynamic or by_name
        elif isinstance(item, ast.Assign):
            fields.update(n.id for t in item.targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            fields.add(item.target.id)
            written = type_name(item.annotation)
            if written is not None:
                types[item.target.id] = written
        elif isinstance(item, ast.ClassDef):
            fields.add(item.name)
    bases = tuple(ast.unparse(b) for b in node.bases)
    return ClassApi(
        node.name,
        methods,
        frozenset(fields),
        node.lineno,
        bases,
        {**assigned, **types},
        dynamic or "__getattr__" in methods or "__getattribute__" in methods,
    )


def absolute(node: ast.ImportFrom, package: str) -> str:
    """The module an ImportFrom names, relative levels resolved against `package`."""
    if not node.level:
        return node.module or ""
    parts = package.split(".") if package else []
    parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
    return ".".join([*parts, *([node.module] if node.module else [])])


def module_name(path: str) -> tuple[str, str]:
    """('vllm/x/y.py') -> ('vllm.x.y', 'vllm.x'): the module and the package it sits in."""
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])
