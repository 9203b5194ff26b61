"""Which test files can exercise a change: the Python import graph of a tree, read from git.

Upstream's own selector (vllm-project/ci-infra, buildkite/ci_selector) is the anchor: a
step's commands say which test files it runs (a directory target runs every test file
under it; `-k`/`-m` narrowing never shrinks that set, `--ignore` does), and the file-level
import graph says which of them reach a changed module. The graph is built from the blobs
of a git tree (no checkout), one `ast.parse` per blob ever: the imports of each blob are
cached by its id.

Edges, as CPython runs imports:
- `import a.b.c` and `from a.b import c` run `a/__init__.py`, `a/b/__init__.py` and
  `a/b/c.py` when it is a module: an edge to each file that exists;
- relative imports resolve against the importing file's package;
- imports inside functions count (they run when the function is called), imports under
  `if TYPE_CHECKING:` do not (they never run);
- a module a registry loads by name (`"vllm.v1.kv_offload.cpu.policies.lru"`) is not an
  edge: vLLM's connector and policy factories are imported by the engine, so two such
  hops make every test reach every registered module (1,612 test files for lru.py, 3
  without). ci_selector routes registries by a separate rule, not the import graph.
conftest.py files are not followed: every test under one loads it, so following the root
conftest (which imports most of vLLM) would select every file. A test reaches conftest
code through the fixtures it names; a changed conftest.py selects the test files under
its directory instead.
"""

from __future__ import annotations

import ast
import json
import multiprocessing
import os
import posixpath
import re
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

import pygit2

from series.cache import user_cache
from series.ops.fs import write_atomically

from series.git.repo import named_entries

TREE_MODE = pygit2.enums.FileMode.TREE

# (module as written, relative level, imported names)
ImportRecord = tuple[str, int, tuple[str, ...]]


def flatten(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str = "") -> dict[str, pygit2.Oid]:
    """{path: blob id} of every file of a tree."""
    out: dict[str, pygit2.Oid] = {}
    for name, entry in named_entries(tree).items():
        path = f"{prefix}{name}"
        if entry.filemode == TREE_MODE:
            out.update(flatten(repo, repo[entry.id].peel(pygit2.Tree), f"{path}/"))
        elif entry.filemode != pygit2.enums.FileMode.COMMIT:  # submodules have no blob
            out[path] = entry.id
    return out


def is_test_file(path: str) -> bool:
    """pytest's default python_files: test_*.py and *_test.py."""
    name = posixpath.basename(path)
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def module_name(path: str) -> str | None:
    if not path.endswith(".py"):
        return None
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def parse_imports(source: bytes) -> list[ImportRecord] | None:
    """The imports a module can run; None when it does not parse.

    Only statements are walked (an import is a statement), which keeps a full vLLM tree
    to a few seconds on the first run.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    out: list[ImportRecord] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)  # the body never runs; an else branch does
            continue
        if isinstance(node, ast.Import):
            out.extend((alias.name, 0, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.append((node.module or "", node.level, tuple(a.name for a in node.names)))
        else:
            stack.extend(
                child
                for child in ast.iter_child_nodes(node)
                if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case))
            )
    return out


class ImportCache:
    """Parsed imports by blob id, kept in one JSON file (blob ids never change meaning)."""

    def __init__(self, path: Path | None):
        self.path = path
        self.data: dict[str, list[list[object]] | None] = {}
        self.dirty = False
        if path is not None and path.exists():
            try:
                self.data = json.loads(path.read_text())
            except (OSError, ValueError):
                self.data = {}  # a damaged cache is rebuilt, never trusted

    def get(self, repo: pygit2.Repository, oid: pygit2.Oid) -> list[ImportRecord] | None:
        key = str(oid)
        if key in self.data:
            raw = self.data[key]
            return None if raw is None else [(str(m), int(lv), tuple(n)) for m, lv, n in raw]  # type: ignore[call-overload,arg-type]
        records = parse_imports(repo[oid].peel(pygit2.Blob).data)
        self.data[key] = None if records is None else [[m, lv, list(n)] for m, lv, n in records]
        self.dirty = True
        return records

    def prefetch(self, repo: pygit2.Repository, oids: Iterable[pygit2.Oid]) -> None:
        """Parse every blob not cached yet, on all cores when there are many (a first run
        over a vLLM tree: ~4,500 modules, ast.parse is nearly all of the time)."""
        missing = sorted({str(oid) for oid in oids} - self.data.keys())
        workers = min(os.cpu_count() or 1, 8)
        if len(missing) < _PARALLEL_FROM or workers < 2:
            return  # get() parses them one by one
        sources = [repo[key].peel(pygit2.Blob).data for key in missing]
        # fork: the workers need only parse_imports; no thread of ours runs at this point
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            parsed = list(pool.map(parse_imports, sources, chunksize=64))
        for key, records in zip(missing, parsed):
            self.data[key] = None if records is None else [[m, lv, list(n)] for m, lv, n in records]
        self.dirty = True

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, json.dumps(self.data))


_PARALLEL_FROM = 400  # fewer misses parse faster here than workers start


def default_cache() -> Path:
    return user_cache("imports.json")


@dataclass
class ImportGraph:
    files: dict[str, pygit2.Oid]  # every file of the tree
    modules: dict[str, str]  # dotted name -> path
    edges: dict[str, set[str]]  # path -> paths it imports
    unparsed: tuple[str, ...]  # .py files that do not parse (selected whole)

    def reverse(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for src, dsts in self.edges.items():
            for dst in dsts:
                out.setdefault(dst, set()).add(src)
        return out

    def reaching(self, changed: Iterable[str]) -> set[str]:
        """Every file whose imports reach a changed file (the changed files included)."""
        rev = self.reverse()
        seen = set(changed)
        queue = deque(seen)
        while queue:
            for importer in rev.get(queue.popleft(), ()):
                if importer not in seen and posixpath.basename(importer) != "conftest.py":
                    seen.add(importer)
                    queue.append(importer)
        return seen

    def closure(self, path: str) -> set[str]:
        """The files a file imports, transitively (itself included)."""
        seen = {path}
        queue = deque(seen)
        while queue:
            for dst in self.edges.get(queue.popleft(), ()):
                if dst not in seen:
                    seen.add(dst)
                    queue.append(dst)
        return seen


def build(repo: pygit2.Repository, files: Mapping[str, pygit2.Oid], cache: ImportCache | None = None) -> ImportGraph:
    cache = cache if cache is not None else ImportCache(None)
    modules: dict[str, str] = {}
    for path in files:
        name = module_name(path)
        if name is not None:
            modules[name] = path
    edges: dict[str, set[str]] = {}
    unparsed = []
    cache.prefetch(repo, [oid for path, oid in files.items() if module_name(path) is not None])
    for path, oid in files.items():
        name = module_name(path)
        if name is None:
            continue
        records = cache.get(repo, oid)
        if records is None:
            unparsed.append(path)
            continue
        package = name if path.endswith("/__init__.py") else name.rpartition(".")[0]
        targets: set[str] = set()
        for module, level, names in records:
            base = _absolute(package, module, level)
            if base is None:
                continue
            parts = base.split(".")
            for i in range(1, len(parts) + 1):
                hit = modules.get(".".join(parts[:i]))
                if hit is not None:
                    targets.add(hit)
            for imported in names:
                hit = modules.get(f"{base}.{imported}" if base else imported)
                if hit is not None:
                    targets.add(hit)
        targets.discard(path)
        edges[path] = targets
    cache.save()
    return ImportGraph(dict(files), modules, edges, tuple(sorted(unparsed)))


def _absolute(package: str, module: str, level: int) -> str | None:
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None  # beyond the top-level package: Python raises, nothing is imported
    parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([module] if module else []))


# --- which files a step runs (ci_selector's invoked_files) -----------------------------

_SEGMENT = re.compile(r"\s*(?:&&|\|\||;)\s*")


def pytest_targets(commands: Iterable[str], working_dir: str) -> tuple[list[str], list[str]]:
    """(targets, ignored): repo-relative paths the step's pytest commands name.

    `cd DIR` moves the directory later commands resolve against; `::test` suffixes and
    narrowing flags are dropped (a directory target runs every test file under it).
    """
    import shlex

    from series.evidence.testmap import unescape

    cwd = working_dir
    targets: list[str] = []
    ignored: list[str] = []
    for command in commands:
        for segment in _SEGMENT.split(unescape(command)):
            try:
                words = shlex.split(segment, comments=True)
            except ValueError:
                continue
            while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
                words.pop(0)
            if words[:1] == ["cd"] and len(words) > 1:
                cwd = _join(cwd, words[1])
                continue
            if words[:1] == ["pytest"]:
                args = words[1:]
            elif words[:3] in (["python", "-m", "pytest"], ["python3", "-m", "pytest"]):
                args = words[3:]
            else:
                continue
            _pytest_args(args, cwd, targets, ignored)
    return targets, ignored


_VALUE_FLAGS = {
    "-k",
    "-m",
    "-c",
    "-p",
    "-o",
    "--ignore",
    "--deselect",
    "--junitxml",
    "--rootdir",
    "--shard-id",
    "--num-shards",
    "--timeout",
    "--reruns",
    "--maxfail",
    "-n",
    "--durations",
    "--confcutdir",
    "--basetemp",
    "-W",
    "--log-level",
}


def _pytest_args(args: list[str], cwd: str, targets: list[str], ignored: list[str]) -> None:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--") and "=" in arg:
            flag, value = arg.split("=", 1)
            if flag in ("--ignore", "--deselect"):
                ignored.append(_join(cwd, value.split("::", 1)[0]))
            i += 1
        elif arg in _VALUE_FLAGS:
            if arg in ("--ignore", "--deselect") and i + 1 < len(args):
                ignored.append(_join(cwd, args[i + 1].split("::", 1)[0]))
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            if "$" not in arg:
                targets.append(_join(cwd, arg.split("::", 1)[0]))
            i += 1


def _join(cwd: str, path: str) -> str:
    if path.startswith("/vllm-workspace"):
        path = path[len("/vllm-workspace") :].lstrip("/")
        return posixpath.normpath(path) if path else ""
    joined = posixpath.normpath(posixpath.join(cwd, path)) if cwd else posixpath.normpath(path)
    return "" if joined == "." else joined


def invoked_files(files: Iterable[str], targets: Iterable[str], ignored: Iterable[str] = ()) -> set[str]:
    """The test files under the targets (a directory runs every test file below it)."""
    exact = {t for t in targets if t.endswith(".py")}
    prefixes = tuple(t.rstrip("/") + "/" for t in targets if not t.endswith(".py"))
    skip = tuple(i.rstrip("/") + ("" if i.endswith(".py") else "/") for i in ignored)
    out = set()
    for path in files:
        if path in exact:
            out.add(path)
            continue
        if not is_test_file(path):
            continue
        if (prefixes and path.startswith(prefixes)) or "" in targets:
            if not (skip and (path in skip or path.startswith(skip))):
                out.add(path)
    return out
