"""`series test --run`: upstream's tests over the installed release build, tree by tree.

1. The environment (`--python`, default this interpreter) must have the series' base
   release of vLLM installed, or the patched wheel `series build` made from it (its
   version names the integration commit), and pytest.
2. Each named tree (base, series, without:T, only:T; main and pr:T on upstream's trunk)
   becomes a shadow of the installed package with that tree's changes over the build laid
   in (series.evidence.testrun): for main and pr:T, main's Python over the release's compiled
   parts.
3. All trees on the base run the same tests: the base's tests/ with every tree's test
   changes, so a topic's new test also runs on the base and without the topic. Trees on
   the trunk run main's tests/ with their own test changes (what the PR's CI runs), and
   are judged against `main`, which is added beside any pr: tree.
4. The test files: those of the upstream CI steps covering the change (GPU steps
   included: pytest's skips and the baseline sort out what cannot run here) that reach a
   changed module through the import graph, plus the topics' own tests
   (series.evidence.imports). `--step KEY` runs whole steps' commands instead. The steps
   are the base's CI map's, and main's for the trees on the trunk.
5. The trees run side by side (series.evidence.pytestrun), each its own pytest process;
   trees with the same package files run once. Results per test id go into
   series.evidence.matrix, cached per file.
"""

from __future__ import annotations

import difflib
import os
import posixpath
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import pygit2

from series.evidence import imports, testmap
from series.evidence.testmap import BuildkiteStep
from series.evidence import interpreter, matrix, named_trees, pytestrun, testrun
from series.evidence.interpreter import Environment
from series.evidence.matrix import ResultMatrix, TreeInfo
from series.evidence.testrun import CaseOutcome, Scratch
from series.errors import SeriesError
from series.verbs.test.step_commands import local_args, parse_command
from series.workspace import Workspace

Say = Callable[[str], None]


class EvidenceInterrupted(Exception):
    """The run was stopped by a signal; `matrix` holds what finished and the partial tree."""

    def __init__(self, partial: ResultMatrix, signum: int):
        super().__init__(partial.interrupted or "interrupted")
        self.matrix = partial
        self.signum = signum


@dataclass(frozen=True)
class EvidenceTree:
    info: TreeInfo
    commit: pygit2.Commit
    trunk: str | None = None  # main, pr:T: "upstream/main"; they run main's tests, judged against main

    @property
    def on_trunk(self) -> bool:
        return self.trunk is not None


@dataclass(frozen=True)
class Layout:
    """The tests one group of trees runs: the base's (or main's) tests/ with the group's
    test changes, the import graph they were selected by, the files selected, and with
    --step the steps run whole (the base's CI map's, or main's: what the PR's CI runs)."""

    tests: dict[str, pygit2.Oid]
    graph: imports.ImportGraph
    files: tuple[str, ...]
    steps: tuple[BuildkiteStep, ...] = ()


def tree_names(without: str | None, compare: tuple[str, str] | None, named: tuple[str, ...] = ()) -> list[str]:
    names = ["base"]
    if compare:
        names += [f"only:{compare[0]}", f"only:{compare[1]}"]
    else:
        names.append("series")
    if without:
        names.append(f"without:{without}")
    for name in map(named_trees.canonical, named):
        if name.startswith("pr:") and "main" not in names:
            names.append("main")  # the yardstick of a tree on the trunk
        if name not in names:
            names.append(name)
    return names


def resolve_trees(ws: Workspace, names: list[str]) -> list[EvidenceTree]:
    out = []
    for name in names:
        found = named_trees.resolve(ws, name)
        against = "" if name in ("base", "main") else "main" if found.on_trunk else "base"
        out.append(
            EvidenceTree(TreeInfo(name, str(found.commit.id), found.describe, 0, against), found.commit, found.trunk)
        )
    return out


def nearest_step(tmap: testmap.TestMap, wanted: tuple[str, ...]) -> list[BuildkiteStep]:
    by_id = {s.ident: s for s in tmap.steps}
    out = []
    for key in wanted:
        if key in by_id:
            out.append(by_id[key])
            continue
        near = difflib.get_close_matches(key, list(by_id), n=3, cutoff=0.6)
        raise SeriesError(
            f"--step {key}: no such step in {tmap.source}",
            f"did you mean {', '.join(near)}?" if near else "'series test --all-steps' lists the steps",
        )
    return out


@dataclass(frozen=True)
class FileSelection:
    files: tuple[str, ...]
    candidates: frozenset[str]  # the test files of the steps
    steps: tuple[str, ...]


def select_files(
    graph: imports.ImportGraph,
    steps: list[BuildkiteStep],
    tests: Mapping[str, object],
    changed: list[str],
    package: str,
) -> FileSelection:
    """Test files of `steps` that can exercise `changed` (see series.evidence.imports)."""
    candidates: set[str] = set()
    for step in steps:
        targets, ignored = imports.pytest_targets(step.commands, step.repo_dir)
        candidates |= imports.invoked_files(tests, targets, ignored)
    reach = graph.reaching([p for p in changed if p in graph.edges])
    chosen = {c for c in candidates if c in reach}
    chosen |= {p for p in changed if p in tests and imports.is_test_file(p)}  # the topics' own tests
    for path in changed:
        directory = posixpath.dirname(path) + "/"
        unparsed = path in graph.unparsed
        if posixpath.basename(path) == "conftest.py" and path.startswith("tests/"):
            chosen |= {c for c in candidates if c.startswith(directory)}
        elif unparsed or (path.startswith(package + "/") and not path.endswith(".py")):
            # data files and unparsable modules: no import edge to follow, so every
            # test file of the steps covering the path
            for step in steps:
                if step.covers(path):
                    targets, ignored = imports.pytest_targets(step.commands, step.repo_dir)
                    chosen |= imports.invoked_files(tests, targets, ignored)
    return FileSelection(tuple(sorted(chosen)), frozenset(candidates), tuple(s.ident for s in steps))


def default_jobs(trees: int) -> int:
    """All trees at once up to one more than the cores: the trees' pytest is CPU, so three
    trees on two cores end in about 1.5 tree-times (two at a time: 2)."""
    return max(1, min(trees, (os.cpu_count() or 1) + 1))


def run(
    ws: Workspace,
    covering: list[BuildkiteStep],
    changed: list[str],
    names: list[str],
    *,
    python: str,
    steps: tuple[str, ...] = (),
    use_cache: bool = True,
    jobs: int | None = None,
    say: Say = lambda _: None,
) -> ResultMatrix:
    repo = ws.repo
    env = interpreter.probe(python)
    package = env.package_dir.name
    built = named_trees.installed_commit(ws, env)
    base = ws.base_commit()
    trees = resolve_trees(ws, names)
    cache = imports.ImportCache(imports.default_cache())
    layouts: dict[bool, Layout] = {}
    selections: list[FileSelection] = []
    for trunk in dict.fromkeys(t.on_trunk for t in trees):
        root = named_trees.trunk(ws)[0] if trunk else base
        group = [t for t in trees if t.on_trunk == trunk]
        tests, analysis = _tests_of(repo, root, group, say)
        graph = imports.build(repo, analysis, cache)
        group_covering, chosen_steps = _steps_of(repo, root if trunk else None, base, covering, changed, steps)
        selection = (
            FileSelection((), frozenset(), tuple(s.ident for s in chosen_steps))
            if chosen_steps
            else select_files(graph, group_covering, tests, changed, package)
        )
        selections.append(selection)
        layouts[trunk] = Layout(tests, graph, selection.files, tuple(chosen_steps))
    if not steps and not any(s.files for s in selections):
        raise SeriesError(
            "no test file of the covering CI steps imports what the series changes: "
            "name steps with --step KEY to run them whole"
        )
    files = tuple(sorted({f for s in selections for f in s.files}))
    m = ResultMatrix(
        [t.info for t in trees],
        selected=files,
        # the release's CI map and main's (trees on the trunk) each chose: the counts are of both
        candidates=len(frozenset().union(*(s.candidates for s in selections))),
        steps=tuple(dict.fromkeys(step for s in selections for step in s.steps)),
        build=f"{package} {env.version} at {env.package_dir}",
    )
    say(f"{m.build}; pytest {env.pytest}")
    if files:
        say(f"{len(files)} test files selected of {m.candidates} in {len(m.steps)} covering steps")

    try:
        with pytestrun.trapped(), Scratch() as scratch:
            _run_trees(
                env,
                built,
                trees,
                m,
                scratch,
                repo,
                layouts,
                package,
                use_cache,
                jobs or default_jobs(len(trees)),
                say,
            )
    except pytestrun.Stopped as stop:  # before the trees started
        m.interrupted = str(stop)
        raise EvidenceInterrupted(m, stop.signum) from None
    return m


def _steps_of(
    repo: pygit2.Repository,
    trunk: pygit2.Commit | None,
    base: pygit2.Commit,
    covering: list[BuildkiteStep],
    changed: list[str],
    wanted: tuple[str, ...],
) -> tuple[list[BuildkiteStep], list[BuildkiteStep]]:
    """(the CI steps covering `changed`, the --step steps) for one group of trees. Trees on
    the trunk take them from main's CI map, as the PR's CI does: on vLLM, v0.33.0's map has
    other steps covering a kv_offload change than v0.31.0's, and other commands in 13 of
    them. The base's covering steps are the plan's (test_plan read the map once); its map is
    read again only for --step, since parsing vLLM's ~70 test_areas files takes seconds."""
    if trunk is None:
        return covering, nearest_step(testmap.load_commit(repo, base), wanted) if wanted else []
    tmap = testmap.load_commit(repo, trunk)
    if wanted:
        return [], nearest_step(tmap, wanted)
    return [s.step for s in tmap.select({path: () for path in changed})], []


def _tests_of(
    repo: pygit2.Repository, root: pygit2.Commit, group: list[EvidenceTree], say: Say
) -> tuple[dict[str, pygit2.Oid], dict[str, pygit2.Oid]]:
    """The tests/ a group of trees runs (the root's with each tree's test changes: not a
    without: tree's, which would take the left-out topic's tests back out), and the files
    the import graph is read from (the root's with every tree's changes)."""
    root_files = imports.flatten(repo, root.tree)
    tests: dict[str, pygit2.Oid] = {p: o for p, o in root_files.items() if _is_test_side(p)}
    analysis = dict(root_files)
    owner: dict[str, str] = {}
    for tree in group:
        if tree.commit.id == root.id:
            continue
        # a PR branch named as it is (pr:T@REV) may stand on an older main: its own changes
        # are those since it left the trunk
        since = repo.merge_base(root.id, tree.commit.id) if tree.on_trunk else None
        start = repo[since].peel(pygit2.Commit) if since is not None else root
        for path, oid in named_trees.changes(repo, start.tree, tree.commit.tree).items():
            if oid is not None:
                analysis[path] = oid  # a deleted module keeps its edges: its importers are affected
            if not _is_test_side(path) or tree.info.counterfactual:
                continue
            if path in owner and tests.get(path) != oid:
                say(
                    f"note: {path} differs between {owner[path]} and {tree.info.name}; "
                    f"{tree.info.name}'s version runs in every tree"
                )
            owner[path] = tree.info.name
            if oid is None:
                tests.pop(path, None)
            else:
                tests[path] = oid
    return tests, analysis


def _run_trees(
    env: Environment,
    built: pygit2.Commit,
    trees: list[EvidenceTree],
    m: ResultMatrix,
    scratch: Scratch,
    repo: pygit2.Repository,
    layouts: Mapping[bool, Layout],
    package: str,
    use_cache: bool,
    jobs: int,
    say: Say,
) -> None:
    """Every tree's pytest at once, at most `jobs` side by side (pytestrun.side_by_side).
    Trees whose package changes are the same bytes run the same code over the same tests:
    the first of them runs, the others get its outcomes."""
    roots: dict[bool, Path] = {}
    writing = threading.Lock()

    def layout_root(trunk: bool) -> Path:
        """A group's tests/, written when the first of its trees has a file to run: a run
        the cache answers writes none (main's tests/ are thousands of files, ~7 s here)."""
        with writing:
            if trunk not in roots:
                tests = {p: repo[o].peel(pygit2.Blob).data for p, o in layouts[trunk].tests.items()}
                roots[trunk] = scratch.write_tests(tests, scratch.fresh("trunk-layout") if trunk else None)
            return roots[trunk]

    runs: dict[str, tuple[EvidenceTree, dict[str, bytes | None]]] = {}  # package digest -> the tree that runs
    same: dict[str, str] = {}  # tree name -> digest
    over: dict[str, str] = {}  # tree name -> how it is laid over the build
    for index, tree in enumerate(trees):
        changes = named_trees.package_changes(repo, built, tree.commit, package)
        over[tree.info.name] = named_trees.laid_over(tree.trunk, package, env.version)
        describe = tree.info.describe + (f"; {over[tree.info.name]}" if tree.on_trunk else "")
        m.trees[index] = TreeInfo(tree.info.name, tree.info.commit, describe, len(changes), tree.info.against)
        if tree.on_trunk:
            for path in named_trees.compiled_drift(repo, built, tree.commit)[:1]:
                say(
                    f"warning: {tree.info.name}: {path} (and the rest of csrc/ the release built) differs from "
                    f"the build's sources: custom ops the tree calls run as {package} {env.version} compiled them"
                )
        digest = ("trunk:" if tree.on_trunk else "") + matrix.package_digest(changes)
        if digest in runs:
            say(
                f"{tree.info.name}: {tree.info.describe}; the same package files as "
                f"{runs[digest][0].info.name}: its results"
            )
        else:
            runs[digest] = (tree, changes)
        same[tree.info.name] = digest

    def job(
        tree: EvidenceTree, changes: dict[str, bytes | None], digest: str
    ) -> Callable[[pytestrun.JobControl], tuple[dict[str, CaseOutcome], int]]:
        layout = layouts[tree.on_trunk]

        def prepare() -> tuple[Path, list[Path]]:
            """The tests' layout and the tree's shadow of the package (a symlink per installed
            file: main's over the release is ~1,800 files written in), made only to run."""
            shadow = [testrun.shadow(env.package_dir, changes, scratch.fresh("shadow"))] if changes else []
            return layout_root(tree.on_trunk), shadow

        def run_tree(control: pytestrun.JobControl) -> tuple[dict[str, CaseOutcome], int]:
            control.say(f"{tree.info.name}: {tree.info.describe}; {len(changes)} package files {over[tree.info.name]}")
            if layout.steps:
                return _run_steps(env, scratch, *prepare(), list(layout.steps), tree.info.name, control), 0
            return _run_files(
                env,
                scratch,
                prepare,
                layout.files,
                digest,
                layout.graph,
                layout.tests,
                tree.info.name,
                use_cache,
                control,
            )

        return run_tree

    order = list(runs)
    done, signum = pytestrun.side_by_side([job(*runs[d], d) for d in order], jobs, say)
    by_digest = dict(zip(order, done))
    errors = [r for r in done if isinstance(r, BaseException) and not isinstance(r, pytestrun.Interrupted)]
    for tree in trees:
        result = by_digest[same[tree.info.name]]
        if isinstance(result, pytestrun.Interrupted):
            m.results[tree.info.name] = result.partial
            m.incomplete.add(tree.info.name)
        elif isinstance(result, tuple):
            m.results[tree.info.name], m.from_cache[tree.info.name] = result
    if errors:
        raise errors[0]
    if signum is not None:
        m.interrupted = signal.Signals(signum).name
        raise EvidenceInterrupted(m, signum)


def _is_test_side(path: str) -> bool:
    return path.startswith("tests/") or path in testrun.ROOT_CONFIG


def _inputs(graph: imports.ImportGraph, tests: Mapping[str, pygit2.Oid], path: str) -> list[tuple[str, str]]:
    """The tests/ files one test file loads: its imports there, its conftests and
    __init__s, and the root configuration: what its cached result depends on."""
    loads = set(graph.closure(path))
    parts = path.split("/")[:-1]
    for i in range(1, len(parts) + 1):
        for name in ("conftest.py", "__init__.py"):
            helper = "/".join(parts[:i] + [name])
            if helper in tests:
                loads |= graph.closure(helper)
    loads |= set(testrun.ROOT_CONFIG)
    return [(p, str(tests[p])) for p in sorted(loads) if p in tests]


FILE_ARGS = ("-q", "-rN")


def _run_files(
    env: Environment,
    scratch: Scratch,
    prepare: Callable[[], tuple[Path, list[Path]]],
    files: tuple[str, ...],
    digest: str,
    graph: imports.ImportGraph,
    tests: Mapping[str, pygit2.Oid],
    name: str,
    use_cache: bool,
    control: pytestrun.JobControl,
) -> tuple[dict[str, CaseOutcome], int]:
    say = control.say
    outcomes: dict[str, CaseOutcome] = {}
    keys = {f: matrix.file_key(env.build_key, digest, _inputs(graph, tests, f), FILE_ARGS) for f in files}
    todo = []
    hits = 0
    for f in files:
        cached = matrix.cache_get(keys[f]) if use_cache else None
        if cached is None:
            todo.append(f)
        else:
            outcomes.update(cached)
            hits += 1
    if hits:
        say(f"  {name}: {hits} test files from the cache")
    if not todo:
        return outcomes, hits
    root, shadow = prepare()
    report = scratch.fresh(name.replace(":", "-")) / "junit.xml"
    result = pytestrun.run_pytest(
        env,
        root,
        [*FILE_ARGS, *(f[len("tests/") :] for f in todo)],
        pythonpath=shadow,
        workdir=root / "tests",
        report=report,
        progress=_ticker(name, say),
        cancel=control,
    )
    _check_started(result, name)
    say(f"  {name}: done, {_summary(result.outcomes)}")
    by_file: dict[str, dict[str, CaseOutcome]] = {f: {} for f in todo}
    for test, outcome in result.outcomes.items():
        by_file.setdefault(test.split("::", 1)[0], {})[test] = outcome
    for f, found in by_file.items():
        outcomes.update(found)
        if f in keys and result.returncode in (0, 1, 5):
            matrix.cache_put(keys[f], found)
    return outcomes, hits


def _run_steps(
    env: Environment,
    scratch: Scratch,
    root: Path,
    shadow: list[Path],
    steps: list[BuildkiteStep],
    name: str,
    control: pytestrun.JobControl,
) -> dict[str, CaseOutcome]:
    say = control.say
    outcomes: dict[str, CaseOutcome] = {}
    for step in steps:
        extra = dict(step.env)
        workdir = root / step.repo_dir if (root / step.repo_dir).is_dir() else root
        for command in step.commands:
            parsed = parse_command(command)
            if parsed is None:
                say(f"  {name}: [{step.ident}] not run here (not a plain pytest command): {command}")
                continue
            kind, assigned, args = parsed
            if kind == "export":
                extra.update(assigned)
                continue
            report = scratch.fresh(name.replace(":", "-")) / "junit.xml"
            result = pytestrun.run_pytest(
                env,
                root,
                local_args(args, {**extra, **assigned}),
                pythonpath=shadow,
                workdir=workdir,
                extra_env={**extra, **assigned},
                report=report,
                progress=_ticker(f"{name} [{step.ident}]", say),
                cancel=control,
            )
            _check_started(result, name)
            say(f"  {name} [{step.ident}]: done, {_summary(result.outcomes)}")
            outcomes.update(result.outcomes)
    return outcomes


def _check_started(result: pytestrun.PytestResult, name: str) -> None:
    if result.outcomes or result.returncode in (0, 1, 5):
        return
    raise SeriesError(f"pytest did not run in tree {name} (exit {result.returncode}):\n{result.log_tail}")


def _summary(outcomes: Mapping[str, CaseOutcome]) -> str:
    return ", ".join(f"{n} {k}" for k, n in matrix.counts(outcomes).items() if n) or "no tests"


def _ticker(name: str, say: Say) -> Callable[[pytestrun.Progress], None]:
    """Live progress: a line when the counts change, at most every 2 seconds."""
    last = [""]
    at = [0.0]

    def tick(progress: pytestrun.Progress) -> None:
        line = progress.line()
        now = time.monotonic()
        if progress.outcomes and line != last[0] and now - at[0] >= 2.0:
            say(f"  {name}: {line}")
            last[0], at[0] = line, now

    return tick
