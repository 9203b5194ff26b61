"""What a class's source says about its instances, read with stdlib `ast` (the pieces
series.semantic.upstream_api and series.semantic.uses share): the class an annotation
names, which attributes `self.x = p` types, which statements give self attributes no
`self.x =` names, which bases give none at all.
"""

from __future__ import annotations

import ast
from collections import deque

_ADDS_NOTHING = frozenset({"object", "ABC", "abc.ABC", "Generic", "typing.Generic", "Protocol", "typing.Protocol"})


def adds_nothing(written: str) -> bool:
    """A base (as written) that gives an instance no attribute: object, ABC, Generic[T]..."""
    return written.split("[", 1)[0] in _ADDS_NOTHING


def type_name(annotation: ast.expr | None) -> str | None:
    """The class an annotation names, as written: `X`, `m.X`, `X | None`, `Optional[X]`."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [
            a for a in (annotation.left, annotation.right) if not (isinstance(a, ast.Constant) and a.value is None)
        ]
        return type_name(sides[0]) if len(sides) == 1 else None
    if isinstance(annotation, ast.Subscript) and type_name(annotation.value) in ("Optional", "typing.Optional"):
        return type_name(annotation.slice)
    parts: list[str] = []
    while isinstance(annotation, ast.Attribute):
        parts.append(annotation.attr)
        annotation = annotation.value
    return ".".join([annotation.id, *reversed(parts)]) if isinstance(annotation, ast.Name) else None


# calls that give an instance attributes no `self.x =` names (torch's modules register some)
_BY_NAME = frozenset(
    {"setattr", "__setattr__", "register_buffer", "register_parameter", "register_module", "add_module"}
)


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def sets_by_name(node: ast.AST) -> bool:
    """`setattr(self, ...)`, `self.register_buffer(...)`, a write to `self.__dict__`: an
    attribute of self that no `self.x =` names."""
    if isinstance(node, (ast.Assign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(
            isinstance(t, ast.Subscript)
            and isinstance(t.value, ast.Attribute)
            and t.value.attr == "__dict__"
            and _is_self(t.value.value)
            for t in targets
        )
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if (
        isinstance(f, ast.Attribute)
        and f.attr == "update"
        and isinstance(f.value, ast.Attribute)
        and f.value.attr == "__dict__"
    ):
        return _is_self(f.value.value)
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    if name not in _BY_NAME:
        return False
    if name in ("setattr", "__setattr__"):
        return bool(node.args) and _is_self(node.args[0])
    return isinstance(f, ast.Attribute) and _is_self(f.value)


def read_method(method: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[set[str], dict[str, str], bool]:
    """What a method gives its instances, in one walk of it (issue 34): the attributes it
    stores on self (`self.x = ...`, `self.x += ...`), their types (`self.x: T = ...`, and `self.x = p` of a parameter annotated
    `p: T`: x is a T; a later one in ast.walk's order wins), and whether
    it also sets attributes by name (sets_by_name)."""
    a = method.args
    params = {p.arg: w for p in (*a.posonlyargs, *a.args, *a.kwonlyargs) if (w := type_name(p.annotation))}
    stored: set[str] = set()
    out: dict[str, str] = {}
    by_name = False
    queue: deque[ast.AST] = deque([method])
    while queue:  # ast.walk's order (a later `self.x: T` wins), its generators inlined
        n = queue.popleft()
        for name in n._fields:
            child = getattr(n, name, None)
            if isinstance(child, ast.AST):
                queue.append(child)
            elif isinstance(child, list):
                queue.extend(item for item in child if isinstance(item, ast.AST))
        kind = type(n)
        if kind is ast.Attribute:
            assert isinstance(n, ast.Attribute)
            if isinstance(n.ctx, ast.Store) and _is_self(n.value):
                stored.add(n.attr)
            continue
        if kind is not ast.AnnAssign and kind not in (ast.Assign, ast.AugAssign, ast.Call):
            continue
        by_name = by_name or sets_by_name(n)
        target: ast.expr | None = None
        written: str | None = None
        if isinstance(n, ast.AnnAssign):
            target, written = n.target, type_name(n.annotation)
        elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.value, ast.Name):
            target, written = n.targets[0], params.get(n.value.id)
        if (
            written
            and isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            out[target.attr] = written
    return stored, out, by_name
