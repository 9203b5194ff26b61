"""The semantic check's one walk of a file (series.semantic.one_pass) gives what a walk of
each scope gave (issue 34). Differential: the plain definitions the readings used before,
kept here as the reference, against one_pass on real code (this package's own modules) and
on the corners Python's grammar has (global, match, walrus in a decorator, nested classes).
tools/check_reading.py compares whole readings on a vLLM release."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from series.semantic import one_pass
from series.semantic.class_reading import read_method, sets_by_name, type_name
from series.semantic.uses import UseCollector, uses
from tests.parsed import parsed

SOURCES = sorted((Path(__file__).resolve().parent.parent / "series").rglob("*.py"))


def bindings(node: ast.AST) -> dict[str, int]:
    """How often each name is bound anywhere under `node` (uses' walk before issue 34)."""
    out: dict[str, int] = {}

    def add(name: str, times: int = 1) -> None:
        out[name] = out.get(name, 0) + times

    for n in ast.walk(node):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            add(n.id)
        elif isinstance(n, ast.arg):
            add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not node:
            add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                add((a.asname or a.name).split(".")[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            add(n.name)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            for name in n.names:
                add(name, 2)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            add(n.rest)
    return out


def own_members(node: ast.ClassDef) -> set[str] | None:
    own: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(n.name)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            own.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            own.add(n.attr)
        elif sets_by_name(n):
            return None
    return None if "__getattr__" in own else own


def assigns(node: ast.AST) -> list[ast.Assign]:
    """The assignments local_aliases reads, in the order it reads them."""
    return [
        n
        for n in sorted(
            (x for x in ast.walk(node) if isinstance(x, ast.Assign)), key=lambda x: (x.lineno, x.col_offset)
        )
        if len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and isinstance(n.value, (ast.Attribute, ast.Name))
    ]


def _assert_same(tree: ast.Module) -> None:
    facts = one_pass.walk(tree)
    assert facts.bound == bindings(tree)
    assert facts.imports == [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    loads: dict[str, int] = {}
    first: dict[str, int] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            first[n.id] = min(first.get(n.id, n.lineno), n.lineno)
            if isinstance(n.ctx, ast.Load):
                loads[n.id] = loads.get(n.id, 0) + 1
    assert (facts.loads, facts.first_line) == (loads, first)
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    assert set(facts.bindings) == set(scopes) and set(facts.own) == set(classes)
    for scope in scopes:
        assert facts.bindings[scope] == bindings(scope), scope.name
        assert facts.assigns[scope] == assigns(scope), scope.name
    for cls in classes:
        assert facts.own[cls] == own_members(cls), cls.name


def test_one_walk_equals_the_walks_on_this_package() -> None:
    for source in SOURCES[::6]:  # a sixth, all kinds of module: the reference walks are slow
        _assert_same(parsed(source))


CORNERS = '''
import os.path as p, json
from . import *
x = 1
del x
global_name = 0

def outer(a, /, b: int = (w := 3), *c, d, **e):
    global global_name
    y = p.join
    z = y
    def inner():
        nonlocal y
        q = json.dumps
        return q
    class Local:
        field = y
        def __getattr__(self, name):
            return name
    try:
        pass
    except ValueError as err:
        raise
    match a:
        case {"k": v, **rest}:
            pass
        case [first, *others]:
            pass
        case Point(x=px) as whole:
            pass
    for i in range(3):
        z = i
    with open(a) as handle:
        pass
    return lambda m: m

@(deco := lambda f: f)
async def decorated(self):
    async for item in self.items:
        yield item

class Outer(json.JSONEncoder):
    attr: int
    class Inner:
        def f(self):
            self.__dict__["x"] = 1
    def g(self):
        self.value = [v for v in self.items]

class Plain:
    class Deeper:
        class Deepest:
            def h(self):
                setattr(self, "x", 1)
    def k(self):
        self.y = 2
'''


def test_one_walk_equals_the_walks_on_the_grammars_corners() -> None:
    _assert_same(ast.parse(textwrap.dedent(CORNERS)))


def test_a_scope_walked_alone_reads_as_in_the_file() -> None:
    """hunk_uses visits only some scopes: a collector without the file's facts walks a
    scope when asked, and finds the same uses as one with them."""
    for source in SOURCES[:40:2]:
        tree = parsed(source)
        with_facts = uses(tree, "series/x.py")
        alone = UseCollector("series", set(), None)
        full = UseCollector("series", set(), one_pass.walk(tree))
        for collector in (alone, full):
            for node in one_pass.walk(tree).imports:
                collector.add_import(node)
            collector.visit(tree)
        assert alone.found == full.found
        assert [u.key for u in with_facts if u.kind.value != "local"] == [u.key for u in full.found]


def method_reading(method: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[set[str], dict[str, str], bool]:
    """upstream_api's three walks of a method before issue 34: what it stores on self, the
    types it gives them, whether it sets attributes by name."""
    stored = {
        n.attr
        for n in ast.walk(method)
        if isinstance(n, ast.Attribute)
        and isinstance(n.ctx, ast.Store)
        and isinstance(n.value, ast.Name)
        and n.value.id == "self"
    }
    a = method.args
    params = {p.arg: w for p in (*a.posonlyargs, *a.args, *a.kwonlyargs) if (w := type_name(p.annotation))}
    typed: dict[str, str] = {}
    for n in ast.walk(method):
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
            typed[target.attr] = written
    return stored, typed, any(sets_by_name(n) for n in ast.walk(method))


METHODS = '''
class A:
    def __init__(self, config: Config, other: "Other", n: int | None = None):
        self.config = config
        self.n: int = 0
        self.n: Tensor = 1
        self.count += 1
        setattr(self, "x", 1)
        def inner():
            self.deep: Deep = None
    def g(self, p: Optional[P]):
        self.p = p
        self.__dict__.update({})
    def h(self):
        self.register_buffer("b", None)
        other.x = 1
'''


def test_a_method_read_in_one_walk_as_in_three() -> None:
    trees = [parsed(source) for source in SOURCES[::3]] + [ast.parse(METHODS)]
    methods = [n for tree in trees for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    assert any(method_reading(m)[2] for m in methods) and any(method_reading(m)[1] for m in methods)
    for method in methods:
        assert read_method(method) == method_reading(method), method.name
