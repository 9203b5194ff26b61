"""`series test`: the upstream CI steps that cover what the series touches; run or export them.

Selection reads the base's `.buildkite/test_areas` (series.analysis.testmap) and each
topic's own diff. `--run` executes the plain pytest commands of the runnable steps (CPU
ones, or those named with --step) in a temporary worktree of the integration commit, with
the current interpreter's pytest and the worktree first on PYTHONPATH, reading per-test
outcomes from JUnit XML. `--without TOPIC` runs the same steps on the integration built
without that topic, keeping the full series' tests/ so the topic's own tests run against
code that lacks its fix: the tests that fail without it and pass with it are its evidence.
"""
from __future__ import annotations

import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pygit2

from series.analysis import testmap
from series.analysis.pipeline import SHARD_TEXT as _SHARD_TEXT  # noqa: F401 (tests use it)
from series.analysis.testmap import Selection, Step
from series.build import integration
from series.errors import SeriesError
from series.git.cli import git
from series.git.repo import changed_paths, workdir
from series.workspace import Workspace

_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELL_OPS = ("&&", "||", ";", "|", "`", "$(", ">", "<")


@dataclass(frozen=True)
class Plan:
    base: str
    touched: dict[str, tuple[str, ...]]
    selected: tuple[Selection, ...]
    always: int                          # steps upstream runs on every change (not listed)
    problems: tuple[str, ...]


@dataclass(frozen=True)
class CommandRun:
    command: str
    status: str                          # passed | failed | no-tests | skipped
    detail: str = ""
    tests: dict[str, str] = field(default_factory=dict)  # test id -> passed|failed|skipped


@dataclass(frozen=True)
class StepRun:
    step: str
    label: str
    commands: tuple[CommandRun, ...]

    @property
    def status(self) -> str:
        ran = [c for c in self.commands if c.status != "skipped"]
        if not ran:
            return "skipped"
        return "failed" if any(c.status == "failed" for c in ran) else "passed"

    def tests(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for c in self.commands:
            out.update(c.tests)
        return out


def select(ws: Workspace, topics: tuple[str, ...] = (), include_always: bool = False) -> Plan:
    chosen = integration.require_topics(ws, topics) if topics else None
    touched = integration.topic_paths(ws, chosen)
    base = ws.base_commit()
    tmap = testmap.load(ws.repo, base.tree)
    selected = tuple(tmap.select(touched, include_always))
    return Plan(ws.series.upstream.base, touched, selected, tmap.always_count, tmap.problems)


def runnable(plan: Plan, steps: tuple[str, ...]) -> list[Step]:
    if steps:
        by_id = {s.step.ident: s.step for s in plan.selected}
        unknown = [k for k in steps if k not in by_id]
        if unknown:
            raise SeriesError(f"--step {', '.join(unknown)}: not among the selected steps "
                              f"({', '.join(by_id) or 'none'})")
        return [by_id[k] for k in steps]
    return [s.step for s in plan.selected if s.step.cpu]


def parse_command(command: str) -> tuple[str, dict[str, str], list[str]] | None:
    """('export'|'pytest', env, args) for what --run can execute; None for anything else."""
    text = testmap.unescape(command).strip()
    if any(op in text for op in _SHELL_OPS):
        return None
    try:
        words = shlex.split(text)
    except ValueError:
        return None
    env: dict[str, str] = {}
    if words[:1] == ["export"]:
        pairs = [w.split("=", 1) for w in words[1:] if _ASSIGN.match(w)]
        return ("export", {k: v for k, v in pairs}, []) if pairs else None
    while words and _ASSIGN.match(words[0]):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    if words[:1] == ["pytest"]:
        return "pytest", env, words[1:]
    if words[:3] in (["python", "-m", "pytest"], ["python3", "-m", "pytest"]):
        return "pytest", env, words[3:]
    return None


_SHARD_OPTIONS = ("--shard-id", "--num-shards")


def local_args(args: list[str], env: dict[str, str]) -> list[str]:
    """Upstream's pytest arguments as one local process runs them: a sharded step
    (`--shard-id=$$BUILDKITE_PARALLEL_JOB`) runs whole, and $VARS expand from env."""
    out: list[str] = []
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        if arg in _SHARD_OPTIONS:
            skip_next = True
            continue
        if arg.startswith(tuple(f"{o}=" for o in _SHARD_OPTIONS)):
            continue
        out.append(_expand(arg, env))
    return out


def _expand(arg: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: env.get(m.group(1), m.group(0)), arg)


def _junit(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    outcomes: dict[str, str] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        ident = f"{case.get('classname', '')}::{case.get('name', '')}"
        tags = {child.tag for child in case}
        outcomes[ident] = ("failed" if tags & {"failure", "error"} else
                           "skipped" if "skipped" in tags else "passed")
    return outcomes


def run_steps(tree: Path, steps: list[Step], use_installed: bool = False,
              runner: Callable[..., subprocess.CompletedProcess] = subprocess.run,
              progress: Callable[[str], None] = lambda _: None) -> list[StepRun]:
    results: list[StepRun] = []
    scratch = Path(tempfile.mkdtemp(prefix="series-junit-"))
    try:
        for number, step in enumerate(steps, 1):
            progress(f"[{number}/{len(steps)}] {step.label}")
            env = dict(os.environ)
            env.update(dict(step.env))
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            if not use_installed:
                env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH")) if p)
            cwd = tree / step.repo_dir
            runs = []
            for index, command in enumerate(step.commands):
                parsed = parse_command(command)
                if parsed is None:
                    runs.append(CommandRun(command, "skipped", "not a plain pytest command"))
                    continue
                kind, extra, args = parsed
                if kind == "export":
                    env.update({k: os.path.expandvars(v) for k, v in extra.items()})
                    continue
                args = local_args(args, {**env, **extra})
                report = scratch / f"{len(results)}-{index}.xml"
                argv = [sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider",
                        f"--junitxml={report}"]
                proc = runner(argv, cwd=cwd if cwd.is_dir() else tree, env={**env, **extra},
                              capture_output=True, text=True)
                tests = _junit(report)
                status = {0: "passed", 5: "no-tests"}.get(proc.returncode, "failed")
                tail = (proc.stdout or "").strip().splitlines()[-1:] or [""]
                runs.append(CommandRun(command, status, tail[0].strip("= "), tests))
            results.append(StepRun(step.ident, step.label, tuple(runs)))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return results


def _checkout(ws: Workspace, commit: str, tests_from: pygit2.Tree | None) -> Path:
    scratch = Path(tempfile.mkdtemp(prefix="series-test-"))
    tree = scratch / "tree"
    git(workdir(ws.repo), "worktree", "add", "--detach", str(tree), commit)
    if tests_from is not None:
        own = ws.repo[commit].peel(pygit2.Commit).tree
        for change in changed_paths(ws.repo, own, tests_from):
            if not change.path.startswith("tests/"):
                continue
            target = tree / change.path
            if change.new_id is None:
                target.unlink(missing_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(ws.repo[change.new_id].peel(pygit2.Blob).data)
    return tree


def _remove(ws: Workspace, tree: Path) -> None:
    git(workdir(ws.repo), "worktree", "remove", "--force", str(tree), check=False)
    git(workdir(ws.repo), "worktree", "prune", check=False)
    shutil.rmtree(tree.parent, ignore_errors=True)


@dataclass(frozen=True)
class RunReport:
    with_series: list[StepRun]
    without: str | None = None
    without_series: list[StepRun] = field(default_factory=list)

    def evidence(self) -> list[tuple[str, str]]:
        """(step, test) that pass with the series and fail without the topic."""
        out = []
        for full, less in zip(self.with_series, self.without_series):
            before = less.tests()
            for test, outcome in full.tests().items():
                if outcome == "passed" and before.get(test) == "failed":
                    out.append((full.step, test))
        return out

    @property
    def failed(self) -> bool:
        return any(s.status == "failed" for s in self.with_series)


def run(ws: Workspace, plan: Plan, steps: tuple[str, ...] = (), without: str | None = None,
        use_installed: bool = False, progress: Callable[[str], None] = lambda _: None) -> RunReport:
    chosen = runnable(plan, steps)
    if not chosen:
        raise SeriesError("no selected step can run here (none is CPU-marked): name one with "
                          "--step KEY, or export them with --format github-matrix|buildkite")
    full = integration.build(ws)
    tree = _checkout(ws, full.sha, None)
    try:
        progress("with the series:")
        with_series = run_steps(tree, chosen, use_installed, progress=progress)
    finally:
        _remove(ws, tree)
    if without is None:
        return RunReport(with_series)
    integration.require_topics(ws, (without,))
    less = integration.build(integration.without(ws, (without,)))
    tree = _checkout(ws, less.sha, full.commit.tree)
    try:
        progress(f"without {without}:")
        without_series = run_steps(tree, chosen, use_installed, progress=progress)
    finally:
        _remove(ws, tree)
    return RunReport(with_series, without, without_series)


# --- output -------------------------------------------------------------------------------


def plan_json(plan: Plan) -> dict[str, Any]:
    return {"base": plan.base, "always_steps_not_listed": plan.always, "problems": list(plan.problems),
            "steps": [{"key": s.step.key, "label": s.step.label, "device": s.step.device,
                       "cpu": s.step.cpu, "optional": s.step.optional, "file": s.step.file,
                       "working_dir": s.step.repo_dir, "commands": list(s.step.commands),
                       "paths": list(s.paths), "topics": list(s.topics)} for s in plan.selected]}


def render_plan(plan: Plan) -> str:
    lines = [f"{len(plan.selected)} upstream CI steps of {plan.base} cover "
             f"{len(plan.touched)} paths the series touches"]
    for sel in plan.selected:
        s = sel.step
        flags = ", ".join(f for f in (s.device or "no device", "optional" if s.optional else "") if f)
        lines.append(f"  {s.label}  [{s.ident}; {flags}]  ({', '.join(sel.topics)})")
        for command in s.commands:
            lines.append(f"      {command}")
    if plan.always:
        lines.append(f"({plan.always} more steps run upstream on every change; --all-steps lists them)")
    for problem in plan.problems:
        lines.append(f"warning: skipped {problem}")
    return "\n".join(lines)


def formatted(ws: Workspace, plan: Plan, fmt: str, devices: tuple[str, ...] = (),
              exclude_optional: bool = False, max_steps: int | None = None) -> str:
    """The selected steps as a fork's CI runs them (series.analysis.pipeline), narrowed."""
    from series.analysis import pipeline

    settings = pipeline.load_settings(ws.series.path)
    chosen = pipeline.narrow(plan.selected, devices, exclude_optional, max_steps)
    if fmt == "github-matrix":
        return pipeline.github_matrix(chosen, settings)
    return pipeline.buildkite(chosen, settings)


def run_json(report: RunReport) -> dict[str, Any]:
    def steps(runs: list[StepRun]) -> list[dict[str, Any]]:
        return [{"step": r.step, "label": r.label, "status": r.status,
                 "commands": [{"command": c.command, "status": c.status, "detail": c.detail,
                               "tests": c.tests} for c in r.commands]} for r in runs]
    data: dict[str, Any] = {"with_series": steps(report.with_series), "failed": report.failed}
    if report.without:
        data["without"] = {"topic": report.without, "steps": steps(report.without_series),
                           "evidence": [{"step": s, "test": t} for s, t in report.evidence()]}
    return data


def render_run(report: RunReport) -> str:
    lines = []

    def block(title: str, runs: list[StepRun]) -> None:
        lines.append(title)
        for r in runs:
            tests = r.tests()
            counts = {k: sum(1 for v in tests.values() if v == k) for k in ("passed", "failed", "skipped")}
            lines.append(f"  {r.status:<7} {r.label} [{r.step}]: {counts['passed']} passed, "
                         f"{counts['failed']} failed, {counts['skipped']} skipped")
            for c in r.commands:
                if c.status in ("failed", "skipped", "no-tests"):
                    lines.append(f"      {c.status}: {c.command}" + (f" ({c.detail})" if c.detail else ""))

    block("with the series:", report.with_series)
    if report.without:
        block(f"without {report.without}:", report.without_series)
        evidence = report.evidence()
        if evidence:
            lines.append(f"tests that fail without {report.without} and pass with it:")
            lines.extend(f"  {test}  [{step}]" for step, test in evidence)
        else:
            lines.append(f"no selected test fails without {report.without}")
    return "\n".join(lines)
