"""Mutation testing for series: plant one small bug at a time, run the tests that should
see it, and count the bugs no test noticed (issue 37).

    python tools/mutate.py series/ops/journal.py series/ops/changeset.py [--sample N --seed S]
        [--timeout SECONDS] [--jobs J] [--tests tests/test_x.py ...] [--list] [--json]

Each mutant is one edit of the source text (the rest of the file stays byte for byte):
flip a comparison, negate a condition, drop an elif/else branch or a statement, swap
and/or, change a constant, narrow a tuple in `in (...)`, return None at a function's
start. Everything runs in a scratch copy of the worktree, so the tree is never left
mutated, with `pytest -x -q -p no:xdist` on the tests that import the module plus those
of the verbs that use it (TESTS_FOR below): the first failure kills the mutant, and one
that hangs past --timeout counts as killed by timeout. Mutants known to behave exactly
as the original are listed, with the reason, in tools/mutate_equivalent.txt and left out
of the kill rate. Not part of the suite: see docs/testing.md for the figures.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENT = ROOT / "tools" / "mutate_equivalent.txt"

# The tests of the verbs that reach a module: the suite drives the CLI, so most modules are
# never imported by a test. Keys are path prefixes; the first tests named kill fastest.
TESTS_FOR: dict[str, list[str]] = {
    "series/ops/changeset.py": [
        "test_mutants_door.py",
        "test_transaction.py",
        "test_write_faults.py",
        "test_undo.py",
        "test_rebase_faults.py",
    ],
    "series/ops/journal.py": [
        "test_mutants_door.py",
        "test_transaction.py",
        "test_undo.py",
        "test_predict.py",
        "test_write_faults.py",
        "test_rebase_faults.py",
    ],
    "series/ops/fs.py": ["test_fs.py", "test_transaction.py", "test_write_faults.py", "test_line_ends.py"],
    "series/ops/halted.py": [
        "test_mutants_engine.py",
        "test_halted_guards.py",
        "test_rebase_faults.py",
        "test_rebase.py",
        "test_adopt_conflict.py",
    ],
    "series/engine/": [
        "test_mutants_engine.py",
        "test_rebase.py",
        "test_rebase_api.py",
        "test_git_exact.py",
        "test_rebase_odb.py",
        "test_merge_ahead.py",
        "test_resolutions.py",
        "test_rebase_faults.py",
    ],
    "series/history/touches.py": ["test_touches.py", "test_releases.py"],
    "series/semantic/breaks.py": [
        "test_mutants_breaks.py",
        "test_mutants_uses.py",
        "test_breaks.py",
        "test_breaks_kinds.py",
        "test_check.py",
    ],
    "series/semantic/uses.py": [
        "test_mutants_uses.py",
        "test_mutants_breaks.py",
        "test_breaks.py",
        "test_breaks_kinds.py",
        "test_hunk_uses.py",
        "test_check.py",
    ],
    "series/measure/predictions.py": ["test_predict.py", "test_measure.py"],
    "series/measure/measurement.py": ["test_measure.py", "test_measure_emit.py", "test_predict.py"],
    "series/forge/": [
        "test_trust_forge.py",
        "test_forge_github.py",
        "test_adopt_github.py",
        "test_propose.py",
        "test_forge_retire.py",
        "test_comment.py",
    ],
}

_FLIP = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


@dataclass(frozen=True)
class Mutant:
    path: str  # relative to the worktree
    line: int
    operator: str
    description: str  # "old -> new", one line
    start: tuple[int, int]  # (line, column) of the text replaced, 1-based line, 0-based column
    end: tuple[int, int]
    new: str

    def apply(self, source: str) -> str:
        lines = source.splitlines(keepends=True)
        offsets = [0]
        for text in lines:
            offsets.append(offsets[-1] + len(text))

        def at(pos: tuple[int, int]) -> int:  # ast columns count UTF-8 bytes
            line = lines[pos[0] - 1]
            return offsets[pos[0] - 1] + len(line.encode()[: pos[1]].decode())

        return source[: at(self.start)] + self.new + source[at(self.end) :]

    def key(self) -> str:
        return f"{self.path}:{self.line}:{self.start[1] + 1}: {self.description}"  # the column: one line, two mutants


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 70 else text[:67] + "..."


class _Finder(ast.NodeVisitor):
    """Every mutant of one module, in source order."""

    def __init__(self, path: str, source: str):
        self.path, self.source, self.found = path, source, []  # type: ignore[var-annotated]
        self.lines = source.splitlines()

    def add(
        self,
        node: ast.AST,
        operator: str,
        new: str,
        *,
        start: tuple[int, int] | None = None,
        end: tuple[int, int] | None = None,
        old: str | None = None,
    ) -> None:
        start = start or (node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = end or (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        old = old if old is not None else ast.get_source_segment(self.source, node) or ""
        self.found.append(Mutant(self.path, start[0], operator, f"{_short(old)} -> {_short(new)}", start, end, new))

    # -- what is never mutated: annotations, docstrings, f-strings, TYPE_CHECKING imports
    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        return None

    def visit_arg(self, node: ast.arg) -> None:
        return None

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)

    def visit_Raise(self, node: ast.Raise) -> None:
        # dropping the raise is a mutant; emptying its message is only cosmetic
        self.add(node, "drop statement", "pass")

    def _body(self, body: list[ast.stmt]) -> None:
        for n, stmt in enumerate(body):
            if (
                n == 0
                and isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            ):
                continue  # a docstring
            if (
                isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Call)
                or isinstance(stmt, (ast.AugAssign, ast.Delete, ast.Continue, ast.Break))
                or isinstance(stmt, ast.Assign)
                and all(isinstance(t, (ast.Attribute, ast.Subscript)) for t in stmt.targets)
            ):
                self.add(stmt, "drop statement", "pass")
            self.visit(stmt)

    def generic_visit(self, node: ast.AST) -> None:
        for field, value in ast.iter_fields(node):
            if field in ("returns", "annotation", "decorator_list", "type_comment"):
                continue
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                self._body(value)  # type: ignore[arg-type]
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def visit_Module(self, node: ast.Module) -> None:
        self._body(node.body)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        body = node.body[1:] if ast.get_docstring(node) is not None else node.body
        stub = len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
        if body and not stub and body[0].lineno > node.lineno and node.name != "__init__":
            first = body[0]
            self.add(
                first,
                "return None early",
                "return None\n" + " " * first.col_offset + "",
                end=(first.lineno, first.col_offset),
                old=f"def {node.name}",
            )
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_If(self, node: ast.If) -> None:
        if isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            return
        self.add(node.test, "negate condition", f"not ({ast.get_source_segment(self.source, node.test)})")
        if node.orelse:
            first = node.orelse[0]
            if isinstance(first, ast.If) and self.lines[first.lineno - 1].lstrip().startswith("elif"):
                self.add(first.test, "drop elif", "False")
            else:
                self.add(
                    first,
                    "drop else",
                    "pass",
                    end=(node.orelse[-1].end_lineno, node.orelse[-1].end_col_offset),
                    old="else: ...",
                )
        self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        self.add(node.test, "negate condition", f"not ({ast.get_source_segment(self.source, node.test)})")
        self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self.add(node.test, "negate condition", f"not ({ast.get_source_segment(self.source, node.test)})")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        for n, op in enumerate(node.ops):
            flipped = _FLIP.get(type(op))
            if flipped is not None:
                changed = ast.Compare(
                    node.left, [flipped() if i == n else o for i, o in enumerate(node.ops)], node.comparators
                )
                self.add(node, "flip comparison", f"({ast.unparse(changed)})")
            right = node.comparators[n]
            if (
                isinstance(op, (ast.In, ast.NotIn))
                and isinstance(right, (ast.Tuple, ast.List, ast.Set))
                and len(right.elts) >= 2
            ):
                for gone in right.elts:
                    kept = [e for e in right.elts if e is not gone]
                    narrowed = type(right)(kept, ast.Load()) if not isinstance(right, ast.Set) else ast.Set(kept)
                    text = ast.unparse(narrowed)
                    if isinstance(right, ast.Tuple) and len(kept) == 1:
                        text = f"({text.strip('()').rstrip(',')},)"
                    self.add(right, "narrow tuple", text)
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        swapped = ast.BoolOp(ast.Or() if isinstance(node.op, ast.And) else ast.And(), node.values)
        self.add(node, "swap and/or", f"({ast.unparse(swapped)})")
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            self.add(node, "negate condition", f"({ast.get_source_segment(self.source, node.operand)})")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, bool):
            self.add(node, "change constant", str(not value))
        elif isinstance(value, int):
            self.add(node, "change constant", "1" if value == 0 else "0" if value == 1 else str(value + 1))
        elif isinstance(value, str) and value:
            self.add(node, "change constant", '""')


def find_mutants(path: Path) -> list[Mutant]:
    source = path.read_text()
    finder = _Finder(str(path.resolve().relative_to(ROOT)), source)
    finder.visit(ast.parse(source))
    mutants = []
    for mutant in finder.found:
        try:
            ast.parse(mutant.apply(source))
        except SyntaxError:
            continue  # an edit that does not parse is no bug anyone could make
        mutants.append(mutant)
    return mutants


def _dotted(rel: str) -> str:
    return rel.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def tests_for(rel: str) -> list[str]:
    """The mapped tests first (they kill fastest), then every test file importing the module."""
    mapped = [t for prefix, tests in TESTS_FOR.items() if rel.startswith(prefix) for t in tests]
    module = _dotted(rel)
    parent, _, name = module.rpartition(".")
    importing = []
    for test in sorted((ROOT / "tests").glob("test_*.py")):
        for node in ast.walk(ast.parse(test.read_text())):
            if (
                isinstance(node, ast.Import)
                and any(a.name == module for a in node.names)
                or isinstance(node, ast.ImportFrom)
                and (node.module == module or node.module == parent and any(a.name == name for a in node.names))
            ):
                importing.append(test.name)
                break
    return [f"tests/{t}" for t in dict.fromkeys(mapped + importing) if (ROOT / "tests" / t).exists()]


def equivalents() -> dict[str, str]:
    """`path:line:column: old -> new  # why` per line: the mutants that behave as the original."""
    found = {}
    if EQUIVALENT.exists():
        for line in EQUIVALENT.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                key, _, why = line.partition("  # ")
                found[key.strip()] = why.strip()
    return found


class Scratch:
    """A copy of the worktree the mutants are written into; the worktree is only read."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="series-mutate-"))
        shutil.copytree(
            ROOT,
            self.dir / "tree",
            symlinks=True,
            ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", ".mypy_cache", ".pytest_cache"),
        )
        self.tree = self.dir / "tree"
        self._stamp = time.time() - 10**6

    def write(self, rel: str, text: str) -> None:
        # a new mtime each time: a cached .pyc of an earlier version is never taken for this one
        self._stamp += 2
        target = self.tree / rel
        target.write_text(text)
        os.utime(target, (self._stamp, self._stamp))

    def run(self, tests: list[str], timeout: float) -> tuple[str, float]:
        env = dict(os.environ, PYTHONPATH=str(self.tree))
        start = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", *tests],
            cwd=self.tree,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: the tests' git children too
            proc.wait()
            return "timeout", time.monotonic() - start
        return ("survived" if code == 0 else "killed"), time.monotonic() - start

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="+", type=Path)
    parser.add_argument("--sample", type=int, help="mutants per module, drawn at random (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, help="seconds per mutant (default: 3x the clean run, >= 60)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once, each in its own copy")
    parser.add_argument("--tests", nargs="+", help="the tests to run (default: found per module)")
    parser.add_argument("--list", action="store_true", help="list the mutants and their tests; run nothing")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    known = equivalents()
    scratches: list[Scratch] = []
    report = []
    try:
        if not args.list:
            scratches = [Scratch() for _ in range(max(1, args.jobs))]
        free = list(scratches)
        lock = threading.Lock()
        for module in args.modules:
            rel = str(module.resolve().relative_to(ROOT))
            mutants = find_mutants(ROOT / rel)
            chosen = (
                mutants
                if args.sample is None or args.sample >= len(mutants)
                else [
                    mutants[i]
                    for i in sorted(random.Random(f"{args.seed}:{rel}").sample(range(len(mutants)), args.sample))
                ]
            )
            tests = args.tests or tests_for(rel)
            if scratches:  # a test file written after the copy was made is not in it
                tests = [t for t in tests if (scratches[0].tree / t).exists()]
            entry: dict[str, object] = {"module": rel, "mutants": len(mutants), "tested": len(chosen), "tests": tests}
            report.append(entry)
            if args.list:
                entry["sampled"] = [m.key() for m in chosen]
                continue
            clean, seconds = scratches[0].run(tests, timeout=3600)
            if clean != "survived":
                print(f"{rel}: the tests fail without any mutant ({' '.join(tests)}); skipped", file=sys.stderr)
                entry["error"] = "tests fail unmutated"
                continue
            timeout = args.timeout or max(60.0, 3 * seconds)
            source = (ROOT / rel).read_text()

            def one(numbered: tuple[int, Mutant]) -> dict[str, object]:
                n, mutant = numbered
                if mutant.key() in known:
                    return {**asdict(mutant), "status": "equivalent", "why": known[mutant.key()]}
                with lock:
                    scratch = free.pop()
                try:
                    scratch.write(rel, mutant.apply(source))
                    try:
                        status, took = scratch.run(tests, timeout)
                    finally:
                        scratch.write(rel, source)
                finally:
                    with lock:
                        free.append(scratch)
                # progress on stderr, with --json too (the report is stdout's)
                print(f"  [{n}/{len(chosen)}] {status:8} {mutant.key()} ({took:.0f}s)", file=sys.stderr, flush=True)
                return {**asdict(mutant), "status": status, "seconds": round(took, 1)}

            with ThreadPoolExecutor(len(scratches)) as pool:
                results = list(pool.map(one, enumerate(chosen, 1)))
            dead = sum(1 for r in results if r["status"] in ("killed", "timeout"))
            live = [r for r in results if r["status"] == "survived"]
            counted = dead + len(live)
            entry.update(
                clean_seconds=round(seconds, 1),
                timeout=timeout,
                killed=dead,
                timeouts=sum(1 for r in results if r["status"] == "timeout"),
                survived=len(live),
                equivalent=len(results) - counted,
                kill_rate=round(dead / counted, 3) if counted else None,
                results=results,
            )
    finally:
        for scratch in scratches:
            scratch.remove()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report, args.list)
    return 0


def _print(report: list[dict[str, object]], listing: bool) -> None:
    for entry in report:
        print(
            f"{entry['module']}: {entry['mutants']} mutants, {entry['tested']} tested "
            f"({', '.join(str(t) for t in entry['tests']) or 'no tests found'})"
        )  # type: ignore[attr-defined]
        if listing:
            for key in entry["sampled"]:  # type: ignore[attr-defined]
                print(f"  {key}")
            continue
        if "error" in entry:
            print(f"  {entry['error']}")
            continue
        rate = entry["kill_rate"]
        print(
            f"  killed {entry['killed']} (timeouts {entry['timeouts']}), survived {entry['survived']}, "
            f"equivalent {entry['equivalent']}; kill rate {'-' if rate is None else f'{rate:.0%}'}"
        )
        for r in entry["results"]:  # type: ignore[attr-defined]
            if r["status"] == "survived":
                print(f"  SURVIVED {r['path']}:{r['line']}:{r['start'][1] + 1}: [{r['operator']}] {r['description']}")


if __name__ == "__main__":
    sys.exit(main())
