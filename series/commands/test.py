"""`series test`: the upstream CI steps that cover what the series touches; list or export them.

Selection reads the base's `.buildkite/test_areas` (series.analysis.testmap) and each
topic's own diff. `--run` (series.commands.evidence) runs upstream's tests over the
installed release build in named trees and compares them with the base; this module
parses the steps' commands for it and renders the plan.
"""
from __future__ import annotations

import io
import json
import re
import shlex
from dataclasses import dataclass
from typing import Any, Callable

from series.analysis import testmap
from series.analysis.testmap import Selection
from series.build import integration
from series.build.matrix import Matrix
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


def select(ws: Workspace, topics: tuple[str, ...] = (), include_always: bool = False) -> Plan:
    chosen = integration.require_topics(ws, topics) if topics else None
    touched = integration.topic_paths(ws, chosen)
    base = ws.base_commit()
    tmap = testmap.load(ws.repo, base.tree)
    selected = tuple(tmap.select(touched, include_always))
    return Plan(ws.series.upstream.base, touched, selected, tmap.always_count, tmap.problems)


def run(ws: Workspace, plan: Plan, *, python: str, without: str | None = None,
        compare: tuple[str, str] | None = None, trees: tuple[str, ...] = (), steps: tuple[str, ...] = (),
        use_cache: bool = True, say: Callable[[str], None] = lambda _: None) -> Matrix:
    """The evidence run (series.commands.evidence) for the plan's covering steps."""
    from series.commands import evidence

    names = evidence.tree_names(without, compare, trees)
    covering = [s.step for s in plan.selected]
    return evidence.run(ws, covering, sorted(plan.touched), names, python=python, steps=steps,
                        use_cache=use_cache, say=say)


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


_SHARD_TEXT = re.compile(r"\s+--(?:shard-id|num-shards)(?:=|\s+)\S+")


def github_matrix(plan: Plan) -> str:
    """One job per step; a Buildkite-sharded step runs whole (GitHub has no BUILDKITE_PARALLEL_JOB)."""
    include = [{"key": s.step.ident, "label": s.step.label, "device": s.step.device or "",
                "file": s.step.file, "working_directory": s.step.repo_dir or ".",
                "run": "\n".join(_SHARD_TEXT.sub("", testmap.unescape(c)).strip() for c in s.step.commands),
                "topics": ",".join(s.topics), "optional": s.step.optional}
               for s in plan.selected]
    return json.dumps({"include": include})


def buildkite(plan: Plan) -> str:
    from ruamel.yaml import YAML

    steps = []
    for sel in plan.selected:
        s = sel.step
        step: dict[str, Any] = {"label": s.label, "key": s.key or re.sub(r"[^a-z0-9-]+", "-", s.label.lower())}
        step["commands"] = ([f"cd {s.repo_dir}"] if s.repo_dir else []) + list(s.commands)
        if s.device:
            step["agents"] = {"queue": s.device}
        for name in ("parallelism", "timeout_in_minutes"):
            if getattr(s, name):
                step[name] = getattr(s, name)
        if s.env:
            step["env"] = dict(s.env)
        if s.optional:
            step["soft_fail"] = True
        steps.append(step)
    out = io.StringIO()
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 1 << 16  # one command, one line
    yaml.dump({"steps": steps}, out)
    return out.getvalue()
