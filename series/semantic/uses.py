"""What a Python file uses of other modules, read with stdlib `ast` (series.semantic.breaks
compares it against upstream's API).

    uses(source, path)  every Use: names imported from a module, attribute chains on an
                        imported module (`envs.VLLM_X`, `m.f`), keywords passed to a call
                        of an imported name, methods a class overrides on an imported base,
                        attributes of a parameter annotated with an imported class (config
                        fields), attributes of `self` in a class whose one base is an
                        imported class and that the class does not bind itself (what it
                        inherits: `self.vllm_config.x`), strings naming an object of an
                        imported package (what registries import by name), module-level
                        names of the file itself
    bound(source)       every name the file binds anywhere (to tell a name left undefined)

Scopes are not tracked, but for annotated parameters (a local that shadows an import reads as the import): the check
reports a use only when the name existed upstream before and is gone now, so the
approximation can miss a break but not invent one from shadowing.
"""

from __future__ import annotations

import ast
import builtins
import enum
import re
from typing import Sequence
from dataclasses import dataclass, field

from series.semantic import one_pass
from series.semantic.class_reading import type_name
from series.semantic.module_api import Function, absolute, module_name

BUILTINS = frozenset(dir(builtins)) | {
    "__file__",
    "__name__",
    "__doc__",
    "__spec__",
    "__path__",
    "__package__",
    "__builtins__",
    "__loader__",
}


REGISTRY_ENTRY = "registry"  # a QUALNAME's `extra` when it is a model registry's entry
_QUALNAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+(:[A-Za-z_]\w*)?\Z")


class UseKind(str, enum.Enum):
    NAME = "name"  # a dotted upstream name: imported, or an attribute of a module
    KEYWORD = "keyword"  # `extra` passed as a keyword to the dotted name
    OVERRIDE = "override"  # a method `extra` defined on a subclass of the dotted name
    LOCAL = "local"  # a module-level name of this very file
    QUALNAME = "qualname"  # a string naming an upstream object, which a registry imports by
    # name: "vllm.x.Cls", "vllm.x:Cls", a model registry's ("mod", "Cls")


@dataclass(frozen=True)
class Use:
    kind: UseKind
    target: str  # dotted name (LOCAL: the bare name)
    extra: str = ""
    line: int = field(default=0, compare=False)
    method: Function | None = field(default=None, compare=False)  # OVERRIDE: the topic's own def

    @property
    def key(self) -> tuple[UseKind, str, str]:
        return (self.kind, self.target, self.extra)


def parse(source: bytes) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _chain(node: ast.expr) -> list[str] | None:
    """a.b.c -> ['a', 'b', 'c'] (None when the root is not a plain name)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


_METHODS: dict[type, str] = {}
# node types without children that no visit_ method reads
_LEAVES = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)


class UseCollector(ast.NodeVisitor):
    """The Uses of one file (`uses`); the aliases its imports bind are known before it visits."""

    def __init__(self, package: str, top: set[str], facts: one_pass.Facts | None = None):
        """`facts`: the file's one walk (series.semantic.one_pass), when the caller made it;
        else a scope is walked when it is first asked about."""
        self.package = package
        self.top = top  # the file's own module-level names
        self.aliases: dict[str, str] = {}
        self.found: list[Use] = []
        self._roots: frozenset[str] | None = None
        self.facts = facts if facts is not None else one_pass.Facts()

    def _scope_facts(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> one_pass.Facts:
        """Facts that answer for `node`: the file's, or a walk of `node` (its nested scopes kept)."""
        known = self.facts.own if isinstance(node, ast.ClassDef) else self.facts.bindings
        if node not in known:
            self.facts.merge(one_pass.walk(node))
        return self.facts

    def visit(self, node: ast.AST) -> None:
        """ast.NodeVisitor.visit, its method looked up once per node type (the visit is half of
        a file's reading: issue 34)."""
        kind = type(node)
        method = _METHODS.get(kind)
        if method is None:
            method = _METHODS[kind] = "visit_" + kind.__name__
        getattr(self, method, self.generic_visit)(node)

    def generic_visit(self, node: ast.AST) -> None:
        """ast.NodeVisitor.generic_visit, but for the leaves no visit_ method reads (a Name's
        Load, an operator): nothing to find there."""
        for name in node._fields:
            try:
                child = getattr(node, name)
            except AttributeError:
                continue
            if isinstance(child, ast.AST):
                if not isinstance(child, _LEAVES):
                    self.visit(child)
            elif isinstance(child, list):
                for item in child:
                    if isinstance(item, ast.AST) and not isinstance(item, _LEAVES):
                        self.visit(item)

    def dotted(self, node: ast.expr) -> str | None:
        chain = _chain(node)
        if chain is None or chain[0] not in self.aliases:
            return None
        return ".".join([self.aliases[chain[0]], *chain[1:]])

    def add_import(self, node: ast.Import | ast.ImportFrom) -> None:
        """What the names an import binds mean (a later import of a name wins)."""
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                self.aliases[alias.asname or root] = alias.name if alias.asname else root
            return
        origin = absolute(node, self.package)
        for alias in node.names:
            if alias.name != "*":
                self.aliases[alias.asname or alias.name] = f"{origin}.{alias.name}"

    def visit_Import(self, node: ast.Import) -> None:
        self.add_import(node)
        for alias in node.names:
            self.found.append(Use(UseKind.NAME, alias.name, line=node.lineno))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.add_import(node)
        origin = absolute(node, self.package)
        for alias in node.names:
            if alias.name != "*":
                self.found.append(Use(UseKind.NAME, f"{origin}.{alias.name}", line=node.lineno))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        dotted = self.dotted(node)
        if dotted is None:
            self.generic_visit(node)
        else:
            self.found.append(Use(UseKind.NAME, dotted, line=node.lineno))

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id in self.top and node.id not in self.aliases:
            self.found.append(Use(UseKind.LOCAL, node.id, line=node.lineno))

    def visit_Call(self, node: ast.Call) -> None:
        dotted = self.dotted(node.func)
        if dotted is not None:
            for kw in node.keywords:
                if kw.arg is not None:
                    self.found.append(Use(UseKind.KEYWORD, dotted, kw.arg, line=kw.value.lineno))
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """A parameter annotated with an upstream class reads as that class in the body
        (`vllm_config: VllmConfig` -> `vllm_config.cache_config` is a use of the field), and
        so does a local bound once, to an upstream attribute chain (`local_aliases`)."""
        a = node.args
        typed = {}
        for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs):
            written = (type_name(arg.annotation) or "").split(".")
            if written[0] in self.aliases:
                typed[arg.arg] = ".".join([self.aliases[written[0]], *written[1:]])
        saved = {name: self.aliases.get(name) for name in typed}
        self.aliases.update(typed)
        local = self.local_aliases(node)
        saved.update({name: self.aliases.get(name) for name in local if name not in saved})
        self.aliases.update(local)
        self.generic_visit(node)
        for name, was in saved.items():
            if was is None:
                del self.aliases[name]
            else:
                self.aliases[name] = was

    def local_aliases(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, str]:
        """`config = vllm_config.model_config`: a local the function (nested scopes counted)
        binds exactly once, by a plain assignment of an attribute chain that reads as an
        upstream name; any other binding of it (a loop, a second assignment, a parameter,
        `global`) and it means nothing known."""
        facts = self._scope_facts(node)
        binds = facts.bindings[node]
        out: dict[str, str] = {}
        saved = dict(self.aliases)
        # one_pass keeps only the single-name assignments of a chain or a name, by position
        for n in facts.assigns[node]:
            target = n.targets[0]
            if isinstance(target, ast.Name) and binds.get(target.id) == 1:
                dotted = self.dotted(n.value)
                if dotted is not None:
                    out[target.id] = self.aliases[target.id] = dotted  # a later chain may start from it
        self.aliases = saved
        return out

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str) or not _QUALNAME.match(node.value):
            return
        if self._roots is None:
            self._roots = frozenset(v.split(".")[0] for v in self.aliases.values())
        if node.value.split(".")[0] in self._roots:
            self.found.append(Use(UseKind.QUALNAME, node.value.replace(":", "."), line=node.lineno))

    def visit_Tuple(self, node: ast.Tuple) -> None:
        """vLLM's model registry: `"Arch": ("module", "Class")`, relative to its package."""
        strings = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if (
            self.package.endswith("model_executor.models")
            and len(node.elts) == len(strings) == 2
            and all(x.isidentifier() for x in strings)
        ):
            module, cls = strings
            if cls[:1].isupper():
                self.found.append(
                    Use(UseKind.QUALNAME, f"{self.package}.{module}.{cls}", REGISTRY_ENTRY, line=node.lineno)
                )
                return
        self.generic_visit(node)

    def self_base(self, node: ast.ClassDef) -> str | None:
        """The upstream class `self` reads as in this class's methods: its only base."""
        return self.dotted(node.bases[0]) if len(node.bases) == 1 and not node.keywords else None

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            dotted = self.dotted(base)
            if dotted is None:
                continue
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.name.startswith("__"):
                    self.found.append(
                        Use(UseKind.OVERRIDE, dotted, item.name, line=item.lineno, method=Function.of(item))
                    )
        # `self` in the methods reads as the one upstream base, but for what the class
        # itself binds; with another base (or none) it means nothing known
        was, start = self.aliases.pop("self", None), len(self.found)
        single = self.self_base(node)
        own = self._scope_facts(node).own[node] if single is not None else None
        if single is not None and own is not None:
            self.aliases["self"] = single
        self.generic_visit(node)
        self.aliases.pop("self", None)
        if was is not None:
            self.aliases["self"] = was
        if single is not None and own is not None:
            mine = frozenset(f"{single}.{name}" for name in own)
            under = tuple(f"{m}." for m in mine)
            self.found[start:] = [
                u
                for u in self.found[start:]
                if u.kind == UseKind.OVERRIDE or not (u.target in mine or u.target.startswith(under))
            ]


def top_names(tree: ast.Module) -> set[str]:
    """The names a module defines at top level with def/class/assignment (not imports)."""
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return out


def uses(
    tree: ast.Module, path: str, also_top: set[str] | frozenset[str] = frozenset(), facts: one_pass.Facts | None = None
) -> list[Use]:
    """`also_top`: module-level names of another version of the file, whose loads count as
    LOCAL uses here too (a helper the merge deleted is no longer defined in this one).
    `facts`: one_pass.walk(tree), when the caller has it."""
    facts = facts if facts is not None else one_pass.walk(tree)
    collector = UseCollector(module_name(path)[1], top_names(tree) | set(also_top), facts)
    # imports first, wherever they are, so a use above a function-level import resolves
    for node in facts.imports:
        collector.add_import(node)
    collector.visit(tree)
    return collector.found


def bound(tree: ast.Module) -> set[str]:
    """Every name bound anywhere in the file (defs, params, targets, imports, globals)."""
    return set(one_pass.walk(tree).bound)


def imported_top(tree: ast.Module) -> set[str]:
    """The names a module binds with module-level imports (inside if/try/with blocks too)."""
    out: set[str] = set()
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody"):
                stack += getattr(node, block, [])
            stack += [s for h in getattr(node, "handlers", []) for s in h.body]
    return out


def loads(tree: ast.Module) -> dict[str, int]:
    """How often each bare name is read."""
    return one_pass.walk(tree).loads


def uses_to_json(found: Sequence[Use]) -> list[object]:
    """The uses as the disk caches keep them (series.semantic.hunk_uses, file_reading)."""
    return [
        [
            u.kind.value,
            u.target,
            u.extra,
            u.line,
            None if u.method is None else [u.method.name, list(u.method.params), u.method.flexible, u.method.line],
        ]
        for u in found
    ]


def uses_from_json(raw: object) -> list[Use]:
    """uses_to_json's uses back; a ValueError (or TypeError, KeyError) when `raw` is not them."""
    if not isinstance(raw, list):
        raise ValueError("not a list")
    out = []
    for kind, target, extra, line, method in raw:
        fn = (
            None
            if method is None
            else Function(str(method[0]), tuple(str(p) for p in method[1]), bool(method[2]), int(method[3]))
        )
        out.append(Use(UseKind(kind), str(target), str(extra), int(line), fn))
    return out
