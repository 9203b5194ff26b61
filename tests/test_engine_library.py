"""CONTRIBUTING.md rule 4: the engine is a library. Nothing under series/engine imports the verbs, the
CLI or the conflict store (the store is handed in as hooks), not even lazily inside a
function or under TYPE_CHECKING; and no text it produces names a verb or is printed (an
operation's words come from its ending, series.engine.ending). Read from the source, so a
new import or message anywhere fails."""

from __future__ import annotations

import ast
import re
import pkgutil
from pathlib import Path

import pytest

import series.verbs
from series.cli import verb_name

from tests.parsed import parsed

ENGINE = Path(__file__).resolve().parent.parent / "series" / "engine"
FORBIDDEN = ("series.resolutions", "series.commands", "series.cli", "series.verbs")


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module `path` imports (absolute names; relative ones resolved)."""
    package = "series.engine"
    found = []
    for node in ast.walk(parsed(path)):
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
    sample.write_text(
        "import series.cli\n"
        "def f():\n    from series import resolutions\n"
        "def g():\n    from ..commands import rebase\n"
        "if True:\n    import series.verbs.rebase as v\n"
    )
    names = {name for _, name in _imports(sample) if _forbidden(name)}
    assert names >= {"series.cli", "series.resolutions", "series.commands", "series.verbs.rebase"}


def _texts(path: Path) -> list[tuple[int, str]]:
    """Every string the module's code can produce (docstrings left out: they explain)."""
    tree = parsed(path)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def _verbs() -> list[str]:
    return [verb_name(m.name) for m in pkgutil.iter_modules(series.verbs.__path__) if not m.name.startswith("_")]


@pytest.mark.parametrize("path", sorted(ENGINE.glob("*.py")), ids=lambda p: p.name)
def test_engine_module_names_no_verb_and_prints_nothing(path: Path) -> None:
    verbs = _verbs()
    assert "rebase" in verbs and "adopt-upstream" in verbs, verbs
    named = [
        f"{path.name}:{line}: {text!r}" for line, text in _texts(path) for verb in verbs if f"series {verb}" in text
    ]
    printed = [
        f"{path.name}:{node.lineno}: print()"
        for node in ast.walk(parsed(path))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
    ]
    assert not named + printed, "the engine words or prints what the verb should:\n" + "\n".join(named + printed)


def _opens_a_transaction(tree: ast.AST) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "transaction"
    ]


@pytest.mark.parametrize("path", sorted(ENGINE.glob("*.py")), ids=lambda p: p.name)
def test_the_engine_never_opens_the_write_transaction(path: Path) -> None:
    """Issue 25: the verb opens the transaction and hands it to the engine (as a jj command starts
    the transaction); the engine takes the repository and the series, never opens one."""
    lines = _opens_a_transaction(parsed(path))
    assert not lines, f"{path.name}:{lines}: the engine calls .transaction(; take the transaction as `tx=`"


def test_the_transaction_check_sees_a_call(tmp_path: Path) -> None:
    assert _opens_a_transaction(ast.parse("def f(ws):\n    with ws.transaction('rebase') as op:\n        pass\n")) == [
        2
    ]


# -- the engine names no CLI flag (issue 25): hints quote the commands the verb handed in ----------

_FLAG = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string the code can produce, an f-string as one text ({} where a value goes),
    docstrings left out."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    parts = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            found.append((node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and id(node) not in parts
        ):
            found.append((node.lineno, node.value))
    return found


def _flags(path: Path, source: str | None = None) -> list[str]:
    """Every `--flag` in a string the module's code can produce, except an argument of a
    command line it runs (a literal that is only the flag, as in git(root, "worktree",
    "add", "--detach")) and a flag of a git command a message quotes ('git merge-tree
    --write-tree'): those are git's, not a verb's."""
    tree = parsed(path, source)
    found = []
    for line, text in _strings(tree):
        if re.fullmatch(r"--[A-Za-z][\w-]*(=.*)?", text):
            continue
        for flag in _FLAG.finditer(re.sub(r"git [^'\"]*", "", text)):
            found.append(f"{path.name}:{line}: {flag.group()} in {text!r}")
    return found


@pytest.mark.parametrize("path", sorted(ENGINE.glob("*.py")), ids=lambda p: p.name)
def test_the_engine_names_no_cli_flag(path: Path) -> None:
    """'--continue', '--abort', '--strict', '--skip-topic' are a verb's: the verb hands its
    commands in (series.engine.ending.Identity.go_on / stop, kept in the halt record)."""
    found = _flags(path)
    assert not found, "the engine names a CLI flag; let the verb hand the words in:\n" + "\n".join(found)


def test_the_flag_check_sees_a_hint(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    assert (
        len(
            _flags(
                sample,
                "def f(c):\n    raise E(f\"run '{c} --abort' and start again\")\nx = 'left out with --skip-topic'\n",
            )
        )
        == 2
    )
    assert (
        _flags(
            sample,
            "def f():\n    git(root, 'worktree', 'add', '--detach')\n"
            "    m = \"'git merge-tree --write-tree --stdin' is needed\"\n",
        )
        == []
    )


# -- an engine refusal says what was refused; the way on (a command the verb handed in) is its hint --


def _quoting_messages(path: Path, source: str | None = None) -> list[str]:
    """SeriesError calls whose message quotes a value the verb handed in ('{halt.stop}'):
    that quote is the way on, and belongs in `hint`, where the CLI prints it as 'hint:'."""
    tree = ast.parse(path.read_text() if source is None else source, str(path))
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "SeriesError"
            and node.args
            and isinstance(node.args[0], ast.JoinedStr)
        ):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.args[0].values)
            if "'{}'" in text:
                found.append(f"{path.name}:{node.lineno}: {text!r}")
    return found


@pytest.mark.parametrize("path", sorted(ENGINE.glob("*.py")), ids=lambda p: p.name)
def test_an_engine_refusal_keeps_the_way_on_in_its_hint(path: Path) -> None:
    found = _quoting_messages(path)
    assert not found, "move the quoted command into SeriesError(message, hint):\n" + "\n".join(found)


def test_the_hint_check_sees_a_quoted_command(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    assert len(_quoting_messages(sample, "raise SeriesError(f\"gone; run '{h.stop}' and start again\")\n")) == 1
    assert _quoting_messages(sample, "raise SeriesError(f\"gone\", f\"run '{h.stop}' and start again\")\n") == []
