"""Print the package-level import graph of series/ (issue 35), and its cycles.

A module's package is its first part under series/ (`series.engine.merge` is `engine`);
a loose module is its own package (`series.workspace` is `workspace`). Every import
counts: at module level, inside a function (a lazy import is still a dependency) and
under `if TYPE_CHECKING:` (the types a module names are a dependency of its reader too).

    python tools/package_graph.py            # edges, with the module:line that makes each
                                             # (UP: against the order docs/architecture.md lists)
    python tools/package_graph.py --cycles   # only the strongly connected packages
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "series"
sys.path.insert(0, str(ROOT))

# one reading of an import, the fitness test's (tests/test_package_order.py)
from tests.test_layout import strongly_connected  # noqa: E402
from tests.test_package_order import ORDER, imports_of, module_of, package_of  # noqa: E402


def package_edges() -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> the module:line places that make the edge."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        source = package_of(module_of(path, PACKAGE))
        for target, line in imports_of(path, PACKAGE):
            dest = package_of(target)
            if dest != source and dest != "series":
                edges[(source, dest)].append(f"{path.relative_to(ROOT).as_posix()}:{line}")
    return edges


def package_cycles(edges: dict[tuple[str, str], list[str]]) -> list[list[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
        graph[b]
    return strongly_connected({v: sorted(graph[v]) for v in sorted(graph)})


def main(argv: list[str]) -> int:
    edges = package_edges()
    cycles = package_cycles(edges)
    in_cycle = {p: i for i, c in enumerate(cycles) for p in c}
    if "--cycles" not in argv:
        for (a, b), places in sorted(edges.items()):
            up = " UP" if a in ORDER and b in ORDER and ORDER.index(b) > ORDER.index(a) else ""
            print(f"{a} -> {b}{up}  ({len(places)}: {', '.join(places[:3])}{' ...' if len(places) > 3 else ''})")
    print(f"\n{len(cycles)} cycle(s) of packages")
    for c in cycles:
        print("  " + " ".join(c))
        for (a, b), places in sorted(edges.items()):
            if in_cycle.get(a) == in_cycle.get(b) == cycles.index(c):
                print(f"    {a} -> {b}: {', '.join(places)}")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
