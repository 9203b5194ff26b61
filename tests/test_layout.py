"""The layout docs/architecture.md describes: a verb is one module, found by its name, loaded alone.

CONTRIBUTING.md rule 5 and docs/architecture.md: series/verbs/<verb>.py defines `command`;
series.cli finds it by the module's name and imports it only when that verb runs; the
library packages never import click, the CLI or a verb.
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterable, Mapping

import click

import series.verbs
from series.cli import group, module_name, verb_name

from tests.parsed import parsed

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "series"


def _verb_modules() -> list[str]:
    return [m.name for m in pkgutil.iter_modules(series.verbs.__path__) if not m.name.startswith("_")]


def test_every_verb_module_defines_its_command_under_its_own_name() -> None:
    import importlib

    names = _verb_modules()
    assert {"rebase", "adopt_upstream", "import_", "status", "touches"} <= set(names)
    for name in names:
        module = importlib.import_module(f"series.verbs.{name}")
        command = getattr(module, "command", None)
        assert isinstance(command, click.Command), f"series/verbs/{name}: no click command named 'command'"
        assert command.name == verb_name(name), f"series/verbs/{name} defines verb {command.name!r}"
        assert module_name(verb_name(name)) == name
    ctx = click.Context(group)
    assert group.list_commands(ctx) == sorted(verb_name(n) for n in names)
    assert group.get_command(ctx, "no-such-verb") is None


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def test_the_library_never_imports_click_the_cli_or_a_verb() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in ("cli.py", "cli_support.py", "__main__.py") or rel.startswith("verbs/"):
            continue
        bad = {
            m
            for m in _imports(path)
            if m == "click" or m.startswith("click.") or m == "series.cli" or m.startswith("series.verbs")
        }
        if bad:
            offenders.append(f"series/{rel}: {', '.join(sorted(bad))}")
    assert offenders == []


def _loaded_verbs(*argv: str, extra_path: Path | None = None) -> tuple[list[str], str]:
    script = textwrap.dedent(f"""
        import sys
        import series.verbs
        if {str(extra_path)!r} != "None":
            series.verbs.__path__.append({str(extra_path)!r})
        from series.cli import main
        try:
            main({list(argv)!r})
        except SystemExit:
            pass
        print("LOADED", " ".join(sorted(m for m in sys.modules if m.startswith("series.verbs."))))
        print("PYGIT2", "pygit2" in sys.modules)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("LOADED"))
    return line.split()[1:], proc.stdout


def test_a_verb_loads_only_its_own_module() -> None:
    loaded, _ = _loaded_verbs("status", "--help")
    assert loaded == ["series.verbs.status"]
    loaded, _ = _loaded_verbs("rebase", "--help")
    assert all(m.startswith("series.verbs.rebase") for m in loaded), loaded
    assert "series.verbs.rebase" in loaded


def test_help_loads_no_verb_and_not_pygit2() -> None:
    loaded, out = _loaded_verbs("--help")
    assert loaded == [] and "PYGIT2 False" in out and "undo " in out, (loaded, out)


def test_status_loads_no_other_verb(fork: Path) -> None:
    loaded, out = _loaded_verbs("-C", str(fork), "status")
    assert "offload-evict-fix" in out, out
    assert loaded == ["series.verbs.status"], loaded


def test_the_listing_read_from_source_is_each_commands_own_short_help() -> None:
    import importlib

    ctx = click.Context(group)
    for verb in group.list_commands(ctx):
        command = importlib.import_module(f"series.verbs.{module_name(verb)}").command
        for limit in (20, 45, 80):
            assert group.listed_help(ctx, verb, limit) == command.get_short_help_str(limit), verb


def test_a_new_verb_is_one_module(tmp_path: Path) -> None:
    (tmp_path / "say_hello.py").write_text(
        textwrap.dedent('''
        """`series say-hello`: a verb nothing else lists."""
        import click

        from series.cli_support import emit


        @click.command("say-hello")
        def command() -> None:
            """Say hello."""
            emit("hello from one module")
    ''')
    )
    loaded, out = _loaded_verbs("say-hello", extra_path=tmp_path)
    assert "hello from one module" in out
    assert loaded == ["series.verbs.say_hello"]
    _, listing = _loaded_verbs("--help", extra_path=tmp_path)
    assert "say-hello" in listing


# -- the transaction's layers (issue 25): git/ is only git, one atomic write --------------------------------

ABOVE_GIT = (
    "series.seriesfile.config",
    "series.seriesfile.edit",
    "series.seriesfile.blockyaml",  # series.yaml
    "series.workspace",
    "series.ops.journal",
    "series.ops.changeset",
    "series.ops.fs",  # the transaction
    "series.engine",
)


def _names(found: set[str], prefixes: tuple[str, ...]) -> set[str]:
    return {m for m in found if any(m == p or m.startswith(p + ".") for p in prefixes)}


def test_the_git_layer_imports_nothing_of_series_yaml_the_transaction_or_the_engine() -> None:
    offenders = [
        f"series/git/{path.name}: {', '.join(sorted(bad))}"
        for path in sorted((PACKAGE / "git").glob("*.py"))
        if (bad := _names(_imports(path), ABOVE_GIT))
    ]
    assert offenders == []


def _renames(path: Path) -> list[int]:
    """Lines that rename a file over another: os.replace/os.rename, or Path.replace/rename
    with its one argument (str.replace takes two, dataclasses.replace keywords)."""
    lines = []
    for node in ast.walk(parsed(path)):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("replace", "rename")
        ):
            continue
        on_os = isinstance(node.func.value, ast.Name) and node.func.value.id == "os"
        if on_os or (len(node.args) == 1 and not node.keywords):
            lines.append(node.lineno)
    return lines


def test_one_atomic_write_helper() -> None:
    """Replacing a file is series.ops.fs's (write_atomically, stage + replace_staged, replacing):
    the temp it creates is O_EXCL, so nothing planted at its name is written through."""
    found = {
        path.relative_to(PACKAGE).as_posix(): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := _renames(path))
    }
    assert set(found) == {"ops/fs.py"}, found


def test_the_rename_check_sees_each_form(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os\nos.replace(a, b)\nos.rename(a, b)\ntmp.replace(path)\ntmp.rename(path)\n"
        "s.replace('a', 'b')\ndataclasses.replace(x, y=1)\n"
    )
    assert _renames(sample) == [2, 3, 4, 5]


def test_neither_the_engine_nor_the_transaction_imports_the_other() -> None:
    """The engine takes a series in its repository and a transaction (series.engine.ports); the
    transaction (workspace, its journal, the halt record) imports no engine."""
    tx = ("workspace.py", "ops/journal.py", "ops/changeset.py", "ops/fs.py", "ops/halted.py")
    offenders = [
        f"series/engine/{path.name}: {', '.join(sorted(bad))}"
        for path in sorted((PACKAGE / "engine").glob("*.py"))
        if (bad := _names(_imports(path), ("series.workspace",)))
    ]
    offenders += [
        f"series/{name}: {', '.join(sorted(bad))}"
        for name in tx
        if (bad := _names(_imports(PACKAGE / name), ("series.engine",)))
    ]
    assert offenders == []


# -- a verb imports no other verb (issue 25): what two verbs share is the library's ------------------


def _verb_of(module: str) -> str | None:
    """The verb a dotted name belongs to: series.verbs.<verb>[.<part>...], else None."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["series", "verbs"] else None


def _called(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _verb_imports(path: Path, source: str | None = None) -> set[str]:
    """Every series.verbs.* name a file (at `path` in the package, its text `source` or
    what is there) imports, at module level or inside a function; `from series.verbs
    import x`, relative imports and import_module name their verbs too."""
    tree = parsed(path, source)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("series.verbs."))
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and node.module.startswith("series.verbs")
        ):
            found.update({node.module} | {f"{node.module}.{a.name}" for a in node.names})
        if isinstance(node, ast.ImportFrom) and node.module == "series" and node.level == 0:
            if any(a.name == "verbs" for a in node.names):
                found.add("series.verbs.?")
        if isinstance(node, ast.ImportFrom) and node.level > 0:  # relative: resolved from the file
            package = ("series",) + path.relative_to(PACKAGE).parent.parts
            base = ".".join(package[: len(package) - node.level + 1])
            module = f"{base}.{node.module}" if node.module else base
            if module.startswith("series.verbs"):
                found.update({module} | {f"{module}.{a.name}" for a in node.names})
        if isinstance(node, ast.Call) and _called(node) in ("import_module", "__import__") and node.args:
            arg = node.args[0]
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                found.add("series.verbs.?")  # a computed name: the check cannot tell, so not allowed
            elif arg.value.startswith("series.verbs."):
                found.add(arg.value)
    return found - {"series.verbs"}  # the package itself: the names imported from it carry the verb


def _cross_verb_imports() -> list[str]:
    offenders = []
    for path in sorted((PACKAGE / "verbs").rglob("*.py")):
        rel = path.relative_to(PACKAGE / "verbs")
        if rel.as_posix() == "__init__.py":
            continue
        own = rel.parts[0].removesuffix(".py")
        bad = {m for m in _verb_imports(path) if _verb_of(m) != own}
        if bad:
            offenders.append(f"series/verbs/{rel.as_posix()}: {', '.join(sorted(bad))}")
    return offenders


def test_no_verb_imports_another_verb() -> None:
    """A verb package's own parts (rebase/reach.py for rebase) are the same verb; code two
    verbs share lives in the library (CONTRIBUTING.md rule 4), so each verb loads alone."""
    assert _cross_verb_imports() == []


def test_the_cross_verb_check_sees_each_form() -> None:
    sample = PACKAGE / "verbs" / "propose" / "steps.py"  # only its place is used: the text is below
    source = (
        "from series.verbs.init import topic_name\n"
        "def f():\n    from series.verbs import status, test\n"
        "    import series.verbs.touches\n"
        "    importlib.import_module('series.verbs.undo')\n"
        "from series.verbs.rebase import reach\n"
    )
    found = {_verb_of(m) for m in _verb_imports(sample, source)}
    assert found == {"init", "status", "test", "touches", "undo", "rebase"}, found
    relative = _verb_imports(sample, "from ..preflight import rank\nfrom . import steps\nfrom .. import add\n")
    assert {_verb_of(m) for m in relative} == {"preflight", "propose", "add"}, relative


def _command_names() -> set[str]:
    """Every word a user types to pick a verb or a subcommand (`series ci report`)."""
    names: set[str] = set()
    ctx = click.Context(group)
    stack: list[click.Command] = [c for n in group.list_commands(ctx) if (c := group.get_command(ctx, n))]
    while stack:
        command = stack.pop()
        names.add(module_name(command.name or ""))
        if isinstance(command, click.Group):
            stack.extend(command.commands.values())
    return names


def test_no_two_classes_in_the_package_share_a_name() -> None:
    """CONTRIBUTING.md rule 10: `Outcome` meaning a rebase's end, a predict run's and a test case's
    made every reader check the import; a class name says which one it is."""
    where: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(path.relative_to(PACKAGE).as_posix())
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}


def test_module_names_are_unique_and_none_reads_as_build_output() -> None:
    """CONTRIBUTING.md rule 10. A library module's name is unique in the package (git/cli.py beside
    series/cli.py, two integration.py: which one is imported?). A module under verbs/ is
    named by what the user types, so it may repeat the name of the library module it drives
    (verbs/touches.py and history/touches.py) only when that name is a verb or subcommand.
    No directory is named like build output (build/, dist/): .gitignore templates, black,
    ruff and pytest's norecursedirs skip such a directory at any depth."""
    library: dict[str, list[str]] = {}
    verbs: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if path.name in ("__init__.py", "__main__.py"):
            continue
        (verbs if rel.startswith("verbs/") else library).setdefault(path.stem, []).append(rel)
    assert {n: p for n, p in library.items() if len(p) > 1} == {}
    assert {n: p for n, p in verbs.items() if len(p) > 1} == {}
    commands = _command_names()
    assert {n: verbs[n] + library[n] for n in verbs if n in library and n not in commands} == {}
    assert [
        d.relative_to(PACKAGE).as_posix() for d in PACKAGE.rglob("*") if d.is_dir() and d.name in ("build", "dist")
    ] == []


def test_no_import_alias_hides_what_it_imports() -> None:
    """`from series import halted as st` made every `st.` a lookup. A module or name is
    imported by its own name; an alias is kept only where that name is taken in the module
    (a `committer` parameter, the builtin `format`), and then it still says what it is:
    `committer as git_committer`, `format as patch_format`."""
    hidden = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(parsed(path)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    name = alias.name.rsplit(".", 1)[-1]
                    if alias.asname and name.lower() not in alias.asname.lower():
                        hidden.append(
                            f"series/{path.relative_to(PACKAGE).as_posix()}:{node.lineno}: "
                            f"{alias.name} as {alias.asname}"
                        )
    assert hidden == []


# -- only the transaction writes the state dir and series.yaml; only git/ writes refs (issue 25) -------------

TRANSACTION = {"ops/fs.py", "ops/journal.py", "ops/changeset.py", "workspace.py", "ops/halted.py", "seriesfile/edit.py"}
# Outside the transaction, what may name the state dir, and why it is not the transaction's record:
STATE_DIR_USERS = {
    "engine/report.py": "the rebase report, the verb's output (written atomically, never read to decide)",
    "engine/odb.py": "a scratch object directory for git's own writes, removed at exit",
    "upstream/store.py": "the last fetch of `series upstream`: read offline, written only through Transaction.write",
}
REF_WRITERS = {"demo.py": "builds the demo's own repositories in a fresh directory, never the user's"}
STATE_NAMES = {"state_dir", "journal_dir", "state_file", "rebase_dir"}
CONFIG_NAMES = {"config_path", "FILENAME", "series.yaml"}
FILE_WRITES = {
    "write_atomically",
    "stage",
    "replace_staged",
    "replacing",
    "write_text",
    "write_bytes",
    "unlink",
    "rmtree",
    "rmdir",
    "remove",
    "copytree",
    "copyfile",
    "move",
}
REF_CALLS = {"set_target", "create_reference", "create_branch", "create_tag"}
REF_COMMANDS = {"update-ref", "symbolic-ref"}


def _mentioned(node: ast.AST) -> set[str]:
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            found.add(sub.value)
    return found


def _writes_of(source: str, name: str) -> tuple[list[str], list[str], list[str]]:
    """(state-dir names used, writes of the state dir or series.yaml, ref writes) in one
    module: a write counts when its call (receiver or arguments) names either."""
    tree = parsed(Path(name), source)
    state = sorted(
        {f"{name}:{n.lineno}: {n.id}" for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in STATE_NAMES}
        | {
            f"{name}:{n.lineno}: {a.name}"
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom)
            for a in n.names
            if a.name in STATE_NAMES
        }
    )
    files, refs = [], []
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        called = _called(n)
        if called in FILE_WRITES and _mentioned(n) & (STATE_NAMES | CONFIG_NAMES):
            files.append(f"{name}:{n.lineno}: {called}")
        on_references = (
            isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Attribute)
            and n.func.value.attr == "references"
            and called in ("create", "delete")
        )
        by_git = any(isinstance(a, ast.Constant) and a.value in REF_COMMANDS for a in n.args)
        if on_references or called in REF_CALLS or by_git:
            refs.append(f"{name}:{n.lineno}: {called}")
    return state, files, refs


def _outside_the_transaction() -> tuple[list[str], list[str], list[str]]:
    state, files, refs = [], [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        named, wrote, moved = _writes_of(path.read_text(), rel)
        if rel not in TRANSACTION:
            state += [] if rel in STATE_DIR_USERS else named
            files += wrote
        if not rel.startswith("git/") and rel not in REF_WRITERS:
            refs += moved
    return state, files, refs


def test_only_the_transaction_writes_the_state_dir_and_series_yaml() -> None:
    """The journal, the lock, the halt record and series.yaml are the transaction's (fs, journal,
    transaction, workspace, halted, seriesedit): a module outside it neither finds the state
    dir nor writes a file named from it or from series.yaml's path; files of the series
    beside series.yaml go through Transaction.write / remove."""
    state, files, _ = _outside_the_transaction()
    assert state == [] and files == [], state + files


def test_only_the_git_layer_writes_refs() -> None:
    """Refs move in series.git.refs' update-ref transactions (through the transaction's journal, or
    for the halt record's temporary refs through series.ops.halted), never by pygit2 elsewhere."""
    assert _outside_the_transaction()[2] == []


def test_the_write_checks_see_each_form() -> None:
    source = (
        "from series.ops.fs import state_dir\n"
        "def f(repo, ws):\n"
        "    (state_dir(repo) / 'x').write_text('y')\n"
        "    ws.config_path.write_text('z')\n"
        "    write_atomically(ws.config_path, 'z')\n"
        "    repo.references.create('refs/heads/x', oid)\n"
        "    repo.references['refs/heads/y'].set_target(oid)\n"
        "    git(root, 'update-ref', 'refs/heads/x', sha)\n"
        "    op.move('refs/heads/x', sha)\n"
    )
    state, files, refs = _writes_of(source, "sample.py")
    assert [s.split(": ")[1] for s in state] == ["state_dir", "state_dir"], state
    assert [f.split(": ")[1] for f in files] == ["write_text", "write_text", "write_atomically"], files
    assert [r.split(": ")[1] for r in refs] == ["create", "set_target", "git"], refs


# -- no import cycle, not even through an import inside a function (issue 25) -------------------------


def _module_of(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_edges(path: Path, modules: set[str], root: Path = PACKAGE) -> list[tuple[str, int]]:
    """The package's modules `path` imports, at module level or inside a function (an
    import under `if TYPE_CHECKING:` never runs, so it is left out)."""
    me = _module_of(path, root)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    tree = parsed(path)
    typing_only = {
        id(sub)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for sub in ast.walk(node)
    }
    edges = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            edges += [(a.name, node.lineno) for a in node.names if a.name in modules]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in modules:
                    edges.append((target, node.lineno))
                elif base in modules:
                    edges.append((base, node.lineno))
    return [(m, line) for m, line in edges if m != me]


def _import_cycles(root: Path = PACKAGE) -> list[list[str]]:
    """Each set of modules that import each other, by any path."""
    paths = {_module_of(p, root): p for p in sorted(root.rglob("*.py"))}
    graph = {m: sorted({t for t, _ in _import_edges(p, set(paths), root)}) for m, p in paths.items()}
    return strongly_connected(graph)


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one node, each sorted (also
    tools/package_graph.py's, over packages)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
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
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return cycles


def test_no_import_cycle_not_even_inside_a_function() -> None:
    """An import moved inside a function to dodge a cycle still couples the two modules
    both ways: what both need goes in a third module (series/verbs/test/step_commands.py
    did that for the test verb and its evidence run)."""
    assert _import_cycles() == []


def test_the_cycle_check_sees_a_lazy_import(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "sub" / "__init__.py").write_text("from pkg.sub import b\n")
    (root / "a.py").write_text("from pkg import sub\n")
    (root / "sub" / "b.py").write_text("def f():\n    from pkg import a\n    from . import c\n")
    (root / "sub" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub import b\n"
    )
    assert _import_cycles(root) == [["pkg.a", "pkg.sub", "pkg.sub.b"]]
