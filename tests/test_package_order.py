"""The packages form layers (issue 35): a package imports only packages below it.

docs/architecture.md, "Package order", lists them bottom to top; ORDER below is that list
(a test checks the two agree). A package is a module's first part under series/
(`series.engine.merge` is `engine`); a loose module is its own (`series.workspace`). Every
import counts: at module level, inside a function (a lazy import is still a dependency: the
module cannot run without it) and under `if TYPE_CHECKING:` (the types a module names
come from there; the checker and every reader follow the edge). The module-level cycle
check (tests/test_layout.py) cannot see a cycle between packages made of modules that do
not import each other: `engine/merged.py -> forge.retire -> analysis.attribution` and
`analysis/... -> engine.report` were one, and every verb imported series.cli, which finds
the verbs.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.parsed import parsed

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "series"

ORDER = (  # bottom to top; the why of each place is in docs/architecture.md
    "series",
    "cache",
    "errors",
    "model",
    "validate",
    "persisted",
    "git",
    "seriesfile",
    "ops",
    "topics",
    "workspace",
    "topic_status",
    "status_change",
    "engine",
    "resolution_check",
    "patches",
    "resolutions",
    "forge",
    "history",
    "semantic",
    "report",
    "wheel",
    "evidence",
    "propose",
    "measure",
    "upstream",
    "distribution",
    "demo_workload",
    "demo_github",
    "demo",
    "output",
    "cli_support",
    "verbs",
    "cli",
    "__main__",
)


def module_of(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def imports_of(path: Path, root: Path) -> list[tuple[str, int]]:
    """Every module of the package (or name in one) `path` imports, with its line:
    absolute, relative, lazy or under TYPE_CHECKING, and importlib.import_module("...")."""
    top = root.name
    me = module_of(path, root)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    found: list[tuple[str, int]] = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base == top:  # `from series import workspace` names the module; `__version__` is the root's
                found += [(f"{top}.{a.name}" if _is_module(root, a.name) else top, node.lineno) for a in node.names]
            else:
                found.append((base, node.lineno))
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("import_module", "__import__")
        ):
            found.append((node.args[0].value, node.lineno))
    return [(m, line) for m, line in found if m == top or m.startswith(top + ".")]


def _is_module(root: Path, name: str) -> bool:
    return (root / f"{name}.py").is_file() or (root / name / "__init__.py").is_file()


def upward_edges(root: Path = PACKAGE, order: tuple[str, ...] = ORDER) -> list[str]:
    """Each import of a package above the importing one, as 'module:line: a -> b', and
    each package the order does not place."""
    rank = {name: i for i, name in enumerate(order)}
    found = []
    for path in sorted(root.rglob("*.py")):
        source = package_of(module_of(path, root))
        where = f"{root.name}/{path.relative_to(root).as_posix()}"
        if source not in rank:
            found.append(f"{where}: package {source!r} has no place in the order (add it)")
            continue
        for target, line in sorted(imports_of(path, root), key=lambda t: t[1]):
            dest = package_of(target)
            if dest not in rank:
                found.append(f"{where}:{line}: imports {target}, whose package {dest!r} has no place in the order")
            elif rank[dest] > rank[source]:
                found.append(f"{where}:{line}: {source} -> {dest} ({target}), above it")
    return found


def test_no_package_imports_one_above_it() -> None:
    offenders = upward_edges()
    assert offenders == [], "upward imports (docs/architecture.md, Package order):\n" + "\n".join(offenders)


def test_the_order_check_sees_each_form(tmp_path: Path) -> None:
    """An upward import found at module level, inside a function, under TYPE_CHECKING, as a
    relative import, as `from pkg import module` and through import_module; a downward one
    and the root's own names (`from pkg import __version__`) are not."""
    root = tmp_path / "pkg"
    (root / "low").mkdir(parents=True)
    (root / "high").mkdir()
    (root / "__init__.py").write_text("__version__ = '1'\n")
    (root / "high" / "__init__.py").write_text("")
    (root / "high" / "top.py").write_text("from pkg.low import base\nfrom pkg import __version__\n")
    (root / "low" / "__init__.py").write_text("")
    (root / "low" / "base.py").write_text(
        "import importlib\nfrom typing import TYPE_CHECKING\n"
        "import pkg.high.top\n"
        "def f():\n    from pkg.high import top\n"
        "if TYPE_CHECKING:\n    from ..high.top import X\n"
        "from pkg import high\n"
        "importlib.import_module('pkg.high.top')\n"
        "from pkg import loose\n"
    )
    (root / "loose.py").write_text("")
    found = upward_edges(root, ("pkg", "loose", "low", "high"))
    assert [f.split(": ", 1)[0] for f in found] == [f"pkg/low/base.py:{n}" for n in (3, 5, 7, 8, 9)], found
    assert all("low -> high" in f for f in found), found
    (root / "extra.py").write_text("")
    assert "pkg/extra.py: package 'extra' has no place in the order (add it)" in upward_edges(
        root, ("pkg", "loose", "low", "high")
    )


def test_the_documented_order_is_the_checked_one() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Package order", 1)[1].split("\n## ", 1)[0]
    listed = tuple(re.findall(r"^\d+\. `([\w.]+)`", section, re.M))
    assert listed == ORDER, listed


def test_every_package_has_a_place() -> None:
    present = {package_of(module_of(p, PACKAGE)) for p in PACKAGE.rglob("*.py")}
    assert present == set(ORDER), (present - set(ORDER), set(ORDER) - present)
