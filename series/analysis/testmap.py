"""Upstream's CI map: which of vLLM's Buildkite steps cover the paths a series touches.

vLLM describes its test steps in `.buildkite/test_areas/*.yaml`: a group with `steps:`,
each with `label`, `key`, `device`, `commands` and `source_file_dependencies`, path
prefixes where `!prefix` excludes (`vllm/` but not `!vllm/distributed/kv_transfer/`);
dependency lists are shared with YAML anchors. The files are read from the base commit's
tree with pygit2 (no checkout) and parsed with ruamel's safe loader, which resolves the
anchors.

Matching, as upstream's pipeline generator selects steps for a pull request: a changed
path selects a step when its most specific (longest) matching dependency is not a
negation; a step's own YAML file counts as a dependency. A step with no dependencies runs
on every upstream change: it is selected only when asked (`include_always`), since it
says nothing about what the series touches.
"""
from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any, Iterable

import pygit2
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from series.errors import SeriesError
from series.git.repo import named_entries

TEST_AREAS = ".buildkite/test_areas"
WORKSPACE = "/vllm-workspace"          # where upstream's CI image has the checkout
DEFAULT_WORKING_DIR = "/vllm-workspace/tests"


@dataclass(frozen=True)
class Step:
    file: str                            # .buildkite/test_areas/<area>.yaml
    group: str | None
    label: str
    key: str | None
    device: str | None
    commands: tuple[str, ...]
    dependencies: tuple[str, ...]        # as written, "!" negations included
    working_dir: str = DEFAULT_WORKING_DIR
    optional: bool = False
    parallelism: int | None = None
    num_devices: int | None = None
    timeout_in_minutes: int | None = None
    env: tuple[tuple[str, str], ...] = ()

    @property
    def ident(self) -> str:
        return self.key or self.label

    @property
    def cpu(self) -> bool:
        """Runs without a GPU in upstream's CI (device cpu, cpu-small, cpu-medium ...)."""
        return (self.device or "").startswith("cpu")

    @property
    def always(self) -> bool:
        return not self.dependencies

    @property
    def repo_dir(self) -> str:
        """working_dir relative to the checkout ('' for the root)."""
        wd = self.working_dir.rstrip("/")
        if wd == WORKSPACE or wd == "":
            return ""
        if wd.startswith(WORKSPACE + "/"):
            return wd[len(WORKSPACE) + 1:]
        return wd.lstrip("/")

    def covers(self, path: str) -> bool:
        if path == self.file:
            return True
        best: tuple[int, bool] | None = None
        for dep in self.dependencies:
            negated = dep.startswith("!")
            prefix = dep[1:] if negated else dep
            if prefix and path.startswith(prefix):
                if best is None or len(prefix) > best[0] or (len(prefix) == best[0] and negated):
                    best = (len(prefix), negated)
        return best is not None and not best[1]


@dataclass(frozen=True)
class Selection:
    step: Step
    paths: tuple[str, ...]               # the touched paths that select it
    topics: tuple[str, ...] = ()         # the topics that touch those paths


@dataclass(frozen=True)
class TestMap:
    steps: tuple[Step, ...]
    files: tuple[str, ...]
    problems: tuple[str, ...] = field(default=())  # files skipped, with why

    def select(self, touched: dict[str, tuple[str, ...]], include_always: bool = False) -> list[Selection]:
        """Steps covering any touched path ({path: topics touching it}), in file order."""
        out = []
        for step in self.steps:
            if step.always:
                if include_always:
                    out.append(Selection(step, (), ()))
                continue
            hits = tuple(p for p in sorted(touched) if step.covers(p))
            if hits:
                topics = tuple(dict.fromkeys(t for p in hits for t in touched[p]))
                out.append(Selection(step, hits, topics))
        return out

    @property
    def always_count(self) -> int:
        return sum(1 for s in self.steps if s.always)


def _yaml() -> YAML:
    return YAML(typ="safe", pure=True)


def load(repo: pygit2.Repository, tree: pygit2.Tree, directory: str = TEST_AREAS) -> TestMap:
    """Every step of every test_areas file in `tree`."""
    try:
        folder = tree[directory]
    except KeyError:
        raise SeriesError(
            f"no {directory}/ in the base tree: this upstream has no vLLM-style test areas "
            "to select from") from None
    steps: list[Step] = []
    files: list[str] = []
    problems: list[str] = []
    for name, entry in sorted(named_entries(repo[folder.id].peel(pygit2.Tree)).items()):
        if not name.endswith((".yaml", ".yml")) or entry.filemode == pygit2.enums.FileMode.TREE:
            continue
        path = f"{directory}/{name}"
        text = repo[entry.id].peel(pygit2.Blob).data.decode("utf-8", errors="replace")
        try:
            steps.extend(parse(text, path))
        except (YAMLError, ValueError) as exc:
            problems.append(f"{path}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
            continue
        files.append(path)
    return TestMap(tuple(steps), tuple(files), tuple(problems))


def parse(text: str, path: str) -> list[Step]:
    doc = _yaml().load(io.StringIO(text))
    if doc is None:
        return []
    if not isinstance(doc, dict):
        raise ValueError("expected a mapping with 'steps'")
    return list(_steps(doc, path, doc.get("group") or doc.get("label")))


def _steps(node: dict[str, Any], path: str, group: str | None) -> Iterable[Step]:
    for raw in node.get("steps") or []:
        if not isinstance(raw, dict):
            continue  # "wait" and other Buildkite scalars
        if "steps" in raw and "commands" not in raw:  # a nested group
            yield from _steps(raw, path, raw.get("group") or raw.get("label") or group)
            continue
        label = raw.get("label") or raw.get("key")
        if not label:
            continue
        commands = raw.get("commands", raw.get("command")) or []
        if isinstance(commands, str):
            commands = [commands]
        deps = raw.get("source_file_dependencies") or []
        env = raw.get("env") or {}
        yield Step(
            file=path, group=group, label=str(label), key=raw.get("key"),
            device=raw.get("device"), commands=tuple(str(c) for c in commands),
            dependencies=tuple(str(d) for d in deps),
            working_dir=str(raw.get("working_dir") or DEFAULT_WORKING_DIR),
            optional=bool(raw.get("optional", False)),
            parallelism=_int(raw.get("parallelism")), num_devices=_int(raw.get("num_devices")),
            timeout_in_minutes=_int(raw.get("timeout_in_minutes")),
            env=tuple((str(k), str(v)) for k, v in env.items()) if isinstance(env, dict) else (),
        )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def unescape(command: str) -> str:
    """Buildkite escapes `$` as `$$` so upload does not interpolate; a shell wants one."""
    return command.replace("$$", "$")
