"""Print the package-level import graph of series/ (issue 35), and its cycles.

A module's package is its first part under series/ (`series.engine.merge` is `engine`);
a loose module is its own package (`series.workspace` is `workspace`). Every import
counts: at module level, inside a function (a lazy import is still a dependency) and
under `if TYPE_CHECKING:` (the types a module names are a dependency of its reader too).

    python tools/package_graph.py            # edges, with the module:line that makes each
    python tools/package_graph.py --cycles   # only the strongly connected packages
"""
from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "series"


def module_of(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "series"


def _is_module(name: str) -> bool:
    return (PACKAGE / f"{name}.py").is_file() or (PACKAGE / name / "__init__.py").is_file()


def imports_of(path: Path) -> list[tuple[str, int]]:
    """Every series.* module (or name in one) `path` imports, with its line."""
    me = module_of(path)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base == "series":   # `from series import workspace`: the name is the module
                found += [(f"series.{a.name}" if _is_module(a.name) else "series", node.lineno)
                          for a in node.names]
            else:
                found.append((base, node.lineno))
    return [(m, line) for m, line in found if m == "series" or m.startswith("series.")]


def package_edges() -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> the module:line places that make the edge."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        source = package_of(module_of(path))
        for target, line in imports_of(path):
            dest = package_of(target)
            if dest != source and dest != "series":
                edges[(source, dest)].append(f"{path.relative_to(ROOT).as_posix()}:{line}")
    return edges


def strongly_connected(edges: dict[tuple[str, str], list[str]]) -> list[list[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
        graph[b]
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main(argv: list[str]) -> int:
    edges = package_edges()
    cycles = strongly_connected(edges)
    in_cycle = {p: i for i, c in enumerate(cycles) for p in c}
    if "--cycles" not in argv:
        for (a, b), places in sorted(edges.items()):
            print(f"{a} -> {b}  ({len(places)}: {', '.join(places[:3])}{' ...' if len(places) > 3 else ''})")
    print(f"\n{len(cycles)} cycle(s) of packages")
    for c in cycles:
        print("  " + " ".join(c))
        for (a, b), places in sorted(edges.items()):
            if in_cycle.get(a) == in_cycle.get(b) == cycles.index(c):
                print(f"    {a} -> {b}: {', '.join(places)}")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
