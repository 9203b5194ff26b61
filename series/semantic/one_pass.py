"""One walk of a parsed Python file that gives the semantic check's readings everything they
used to walk the tree again for (series.semantic.uses, file_reading): issue 34.

    walk(root)  Facts: the imports in ast.walk's order, how often each bare name is read,
                the first line each appears on, every name bound anywhere; and, for every
                function under `root`, the names bound in it (nested scopes counted) and its
                plain `x = a.b` assignments; for every class, the members it binds itself

The readings used to walk each function's subtree once for its bindings and again for its
assignments, and each nested function's again (a method of a nested class: four times),
and the whole file four times more: on a fresh runner that was most of the check's cost
(cProfile, issue 34: `uses._bindings` 0.74 s of a 1.17 s dry run). Here every node is
visited once: what a node binds is counted in the innermost function (and class) holding
it, and each function's counts are then added to the function holding it, innermost
first, so a function's answer is that of its whole subtree, as a walk of it would give.
The answers are the walks' own, compared on real code in tests/test_one_pass.py and on a
whole vLLM release by tools/check_reading.py.
"""

from __future__ import annotations

import ast
from collections import deque
from dataclasses import dataclass, field

from series.semantic.class_reading import sets_by_name

Scope = ast.FunctionDef | ast.AsyncFunctionDef
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SETS_BY_NAME = (ast.Assign, ast.AugAssign, ast.Call)  # the only nodes sets_by_name can accept


@dataclass
class Facts:
    imports: list[ast.Import | ast.ImportFrom] = field(default_factory=list)  # ast.walk's order
    loads: dict[str, int] = field(default_factory=dict)  # bare name -> how often read
    first_line: dict[str, int] = field(default_factory=dict)  # bare name -> first line it is on
    bound: dict[str, int] = field(default_factory=dict)  # how often bound under the root
    bindings: dict[Scope, dict[str, int]] = field(default_factory=dict)  # per function: its subtree's
    assigns: dict[Scope, list[ast.Assign]] = field(default_factory=dict)  # `name = chain`, by position
    own: dict[ast.ClassDef, set[str] | None] = field(default_factory=dict)  # uses._own_members' answer

    def merge(self, other: "Facts") -> None:
        """Take in the per-scope answers of a walk of a subtree (a reading that walks only the
        scopes it needs: series.semantic.hunk_uses)."""
        self.bindings.update(other.bindings)
        self.assigns.update(other.assigns)
        self.own.update(other.own)


def _add(counts: dict[str, int], name: str, times: int = 1) -> None:
    counts[name] = counts.get(name, 0) + times


def walk(root: ast.AST) -> Facts:
    """The module docstring's answers for `root` and every scope under it."""
    facts = Facts()
    counts: dict[Scope | None, dict[str, int]] = {None: facts.bound}
    assigns: dict[Scope | None, list[ast.Assign]] = {}
    scopes: list[tuple[Scope, Scope | None]] = []  # (function, the one holding it), BFS order
    members: dict[ast.ClassDef, set[str]] = {}
    dynamic: set[ast.ClassDef] = set()  # a class (not its nested ones) sets by name
    classes: list[tuple[ast.ClassDef, ast.ClassDef | None]] = []
    loads, first = facts.loads, facts.first_line
    # breadth first, as ast.walk: the order of the imports is the order a later one wins in
    queue: deque[tuple[ast.AST, Scope | None, ast.ClassDef | None]] = deque([(root, None, None)])
    pop, push = queue.popleft, queue.append
    while queue:
        node, scope, cls = pop()
        inner_scope, inner_cls = scope, cls
        kind = type(node)
        if kind is ast.Name:
            name = node.id  # type: ignore[attr-defined]
            line = node.lineno  # type: ignore[attr-defined]
            if first.get(name, line + 1) > line:
                first[name] = line
            ctx = type(node.ctx)  # type: ignore[attr-defined]
            if ctx is ast.Load:
                loads[name] = loads.get(name, 0) + 1
            else:
                _add(counts[scope], name)
                if cls is not None and ctx is ast.Store:
                    members[cls].add(name)
            continue  # a Name's only child is its context
        if kind is ast.Attribute:
            if cls is not None and type(node.ctx) is ast.Store:  # type: ignore[attr-defined]
                members[cls].add(node.attr)  # type: ignore[attr-defined]
        elif kind is ast.arg:
            _add(counts[scope], node.arg)  # type: ignore[attr-defined]
        elif kind in _DEFS:
            name = node.name  # type: ignore[attr-defined]
            # bound where it stands, not in itself (uses' walk of a def skips the def's own name)
            _add(counts[scope], name)
            if cls is not None:
                members[cls].add(name)
            if kind is ast.ClassDef:
                assert isinstance(node, ast.ClassDef)
                members[node] = {name}  # a walk of the class meets the class itself first
                classes.append((node, cls))
                inner_cls = node
            else:
                assert isinstance(node, _SCOPES)
                counts[node], assigns[node] = {}, []
                scopes.append((node, scope))
                inner_scope = node
        elif kind is ast.Import or kind is ast.ImportFrom:
            assert isinstance(node, (ast.Import, ast.ImportFrom))
            facts.imports.append(node)
            for alias in node.names:
                _add(counts[scope], (alias.asname or alias.name).split(".")[0])
        elif kind is ast.ExceptHandler:
            if node.name:  # type: ignore[attr-defined]
                _add(counts[scope], node.name)  # type: ignore[attr-defined]
        elif kind is ast.Global or kind is ast.Nonlocal:
            for name in node.names:  # type: ignore[attr-defined]
                _add(counts[scope], name, 2)  # a global counts as many: never "bound once"
        elif kind is ast.MatchAs or kind is ast.MatchStar:
            if node.name:  # type: ignore[attr-defined]
                _add(counts[scope], node.name)  # type: ignore[attr-defined]
        elif kind is ast.MatchMapping:
            if node.rest:  # type: ignore[attr-defined]
                _add(counts[scope], node.rest)  # type: ignore[attr-defined]
        if kind is ast.Assign and scope is not None:
            assert isinstance(node, ast.Assign)
            if (
                len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, (ast.Attribute, ast.Name))
            ):
                assigns[scope].append(node)
        if cls is not None and kind in _SETS_BY_NAME and sets_by_name(node):
            dynamic.add(cls)
        # ast.iter_child_nodes, inline: the walk is most of the reading's time
        for name in node._fields:
            try:
                child = getattr(node, name)
            except AttributeError:
                continue
            if isinstance(child, ast.AST):
                push((child, inner_scope, inner_cls))
            elif isinstance(child, list):
                for item in child:
                    if isinstance(item, ast.AST):
                        push((item, inner_scope, inner_cls))
    # innermost first (a breadth-first order reversed): a scope's subtree is complete when
    # it is added to the scope holding it
    for scope_node, holder in reversed(scopes):
        target, mine = counts[holder], counts[scope_node]
        for name, times in mine.items():
            target[name] = target.get(name, 0) + times
        facts.bindings[scope_node] = mine
        if holder is not None:
            assigns[holder] += assigns[scope_node]
    for scope_node, _ in scopes:
        facts.assigns[scope_node] = sorted(assigns[scope_node], key=lambda x: (x.lineno, x.col_offset))
    for cls_node, outer in reversed(classes):
        if outer is not None:
            members[outer] |= members[cls_node]
            if cls_node in dynamic:
                dynamic.add(outer)
    for cls_node, _ in classes:
        own = members[cls_node]
        facts.own[cls_node] = None if cls_node in dynamic or "__getattr__" in own else own
    return facts
