"""STYLE rule 4: the engine is a library. Nothing under series/engine imports the verbs, the
CLI or the conflict store (the store is handed in as hooks), not even lazily inside a
function or under TYPE_CHECKING; read from the source, so a new import anywhere fails."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parent.parent / "series" / "engine"
FORBIDDEN = ("series.resolutions", "series.commands", "series.cli", "series.verbs")


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module `path` imports (absolute names; relative ones resolved)."""
    package = "series.engine"
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            found.append((node.lineno, base))
            # `from series import resolutions` names the module in the alias
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def _forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


@pytest.mark.parametrize("path", sorted(ENGINE.glob("*.py")), ids=lambda p: p.name)
def test_engine_module_imports_no_verb_cli_or_store(path: Path) -> None:
    bad = [f"{path.name}:{line}: {name}" for line, name in _imports(path) if _forbidden(name)]
    assert not bad, "the engine imports what must be handed to it:\n" + "\n".join(bad)


def test_the_check_sees_every_form_of_import(tmp_path: Path) -> None:
    """The walk finds top-level, lazy, aliased and relative imports (else the test above
    could pass on an engine that imports the store)."""
    sample = tmp_path / "sample.py"
    sample.write_text("import series.cli\n"
                      "def f():\n    from series import resolutions\n"
                      "def g():\n    from ..commands import rebase\n"
                      "if True:\n    import series.verbs.rebase as v\n")
    names = {name for _, name in _imports(sample) if _forbidden(name)}
    assert names >= {"series.cli", "series.resolutions", "series.commands", "series.verbs.rebase"}
