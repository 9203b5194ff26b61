"""Upstream's CI map: which of vLLM's Buildkite steps cover the paths a series touches.

vLLM describes its test steps in `.buildkite/test_areas/*.yaml`: a group with `steps:`,
each with `label`, `key`, `device`, `commands` and `source_file_dependencies`;
dependency lists are shared with YAML anchors. The files are read from the base commit's
tree with pygit2 (no checkout) and parsed with ruamel's safe loader, which resolves the
anchors.

Matching is the rule of upstream's pipeline generator (vllm-project/ci-infra,
buildkite_step.py), restated here, not copied; tools/testmap_parity.py runs their code
against this one on every path of real trees:
- a dependency `dep` (trailing "/" ignored) matches a path when `path == dep` or
  `path.startswith(dep + "/")`: `vllm/v1/kv_offload` does not match
  `vllm/v1/kv_offload_extra/foo.py`;
- a changed path selects a step when some dependency matches it and no `!dep` exclusion
  does: an exclusion always wins, however specific the include;
- a file with a top-level `depends_on:` adds its own path to each of its steps'
  dependencies (a step changes when its YAML does);
- a step of an AMD GPU device (mi250_1 ... mi355_8) that runs natively (`dind: false`)
  also runs when the AMD test wrapper script changes;
- a path matching `run_all_patterns` of `.buildkite/ci_config.yaml` (regular expressions
  matched at the start, less `run_all_exclude_patterns`) runs every step;
- `optional: true` steps never run by themselves: upstream puts a block step before them.
A step with no dependencies runs upstream only in run-all and nightly builds: it is listed
only when asked (`include_always`), since it says nothing about what the series touches.

A base with no test_areas but a `.buildkite/test-pipeline.yaml` (vLLM before test_areas) is
read with the rule of that era instead (series.evidence.testmap_legacy: substring matching,
the bootstrap's run-all patterns); there a step with no dependencies runs on every change.
"""

from __future__ import annotations

import functools
import io
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

import pygit2
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from series.evidence import testmap_legacy
from series.errors import SeriesError
from series.git.repo import named_entries

TEST_AREAS = ".buildkite/test_areas"
WORKSPACE = "/vllm-workspace"  # where upstream's CI image has the checkout
DEFAULT_WORKING_DIR = "/vllm-workspace/tests"
CI_CONFIG = ".buildkite/ci_config.yaml"
# Upstream's AMD GPU devices (amd.py AMD_DEVICE_CONFIGS) and the wrapper that natively run
# (dind: false) AMD steps execute: a change to it runs them.
AMD_GPU_DEVICES = frozenset(f"mi{chip}_{n}" for chip in (250, 300, 325, 355) for n in (1, 2, 4, 8))
AMD_NATIVE_RUNTIME = (".buildkite/scripts/hardware_ci/run-amd-test.sh",)


def matches(dependency: str, path: str) -> bool:
    """Upstream's one matching rule: the dependency itself, or a path below it."""
    normalized = dependency.rstrip("/")
    if not normalized:
        return False
    return path == normalized or path.startswith(normalized + "/")


@functools.lru_cache(maxsize=4096)
def _prefixes(path: str) -> frozenset[str]:
    """Every normalized dependency `matches` accepts for `path`: the path itself and each
    part of it that ends just before a '/'."""
    return frozenset([path, *(path[:i] for i, c in enumerate(path) if c == "/")])


def dependencies_match(dependencies: Iterable[str], path: str) -> bool:
    """Some include matches `path` and no `!` exclusion does (an exclusion always wins)."""
    deps = list(dependencies)
    includes = [d for d in deps if not d.startswith("!")]
    excludes = [d[1:] for d in deps if d.startswith("!")]
    return any(matches(d, path) for d in includes) and not any(matches(d, path) for d in excludes)


@dataclass(frozen=True)
class BuildkiteStep:
    file: str  # .buildkite/test_areas/<area>.yaml
    group: str | None
    label: str
    key: str | None
    device: str | None
    commands: tuple[str, ...]
    dependencies: tuple[str, ...]  # as written, "!" negations included
    working_dir: str = DEFAULT_WORKING_DIR
    optional: bool = False
    parallelism: int | None = None
    num_devices: int | None = None
    timeout_in_minutes: int | None = None
    env: tuple[tuple[str, str], ...] = ()
    own_file: bool = False  # the file has a top-level depends_on: its path counts
    dind: bool = True
    soft_fail: bool = False
    no_plugin: bool = False
    num_nodes: int | None = None
    mount_buildkite_agent: bool = False
    substring_rule: bool = False  # test-pipeline.yaml's era: a dependency anywhere in the path

    @property
    def ident(self) -> str:
        return self.key or self.label

    @property
    def cpu(self) -> bool:
        """Runs without a GPU in upstream's CI (device cpu, cpu-small, cpu-medium ...)."""
        return (self.device or "").startswith("cpu")

    @functools.cached_property
    def always(self) -> bool:
        return not self.dependencies and not self.own_file

    @property
    def all_dependencies(self) -> tuple[str, ...]:
        """As upstream's generator sees them: the step's own YAML file appended."""
        return self.dependencies + ((self.file,) if self.own_file else ())

    @property
    def repo_dir(self) -> str:
        """working_dir relative to the checkout ('' for the root)."""
        wd = self.working_dir.rstrip("/")
        if wd == WORKSPACE or wd == "":
            return ""
        if wd.startswith(WORKSPACE + "/"):
            return wd[len(WORKSPACE) + 1 :]
        return wd.lstrip("/")

    @functools.cached_property
    def _rules(self) -> tuple[frozenset[str], frozenset[str]]:
        """(includes, exclusions), normalized once: covers() runs for every path x step."""
        deps = self.all_dependencies

        def norm(ds: Iterable[str]) -> frozenset[str]:
            return frozenset(n for n in (d.rstrip("/") for d in ds) if n)

        return (norm(d for d in deps if not d.startswith("!")), norm(d[1:] for d in deps if d.startswith("!")))

    def covers(self, path: str) -> bool:
        if self.substring_rule:
            return any(d in path for d in self.dependencies)
        # matches(d, path) for a normalized d is "d is one of path's prefixes": a few set
        # lookups per path instead of a string comparison per dependency
        includes, excludes = self._rules
        prefixes = _prefixes(path)
        if not includes.isdisjoint(prefixes) and excludes.isdisjoint(prefixes):
            return True
        return self.device in AMD_GPU_DEVICES and not self.dind and dependencies_match(AMD_NATIVE_RUNTIME, path)


@dataclass(frozen=True)
class StepSelection:
    step: BuildkiteStep
    paths: tuple[str, ...]  # the touched paths that select it
    topics: tuple[str, ...] = ()  # the topics that touch those paths


@dataclass(frozen=True)
class TestMap:
    steps: tuple[BuildkiteStep, ...]
    files: tuple[str, ...]
    problems: tuple[str, ...] = field(default=())  # files skipped, with why
    run_all: tuple[str, ...] = ()  # ci_config.yaml run_all_patterns
    run_all_exclude: tuple[str, ...] = ()
    source: str = TEST_AREAS  # what was read: the test_areas or test-pipeline.yaml
    rule: str = "vllm-project/ci-infra pipeline_generator"  # whose rule selects, for messages

    def runs_all(self, path: str) -> bool:
        """Upstream's run-all trigger (global_config._should_run_all) for one changed path."""
        return any(re.match(p, path) for p in self.run_all) and not any(re.match(p, path) for p in self.run_all_exclude)

    def select(self, touched: dict[str, tuple[str, ...]], include_always: bool = False) -> list[StepSelection]:
        """Steps covering any touched path ({path: topics touching it}), in file order.

        A path that triggers upstream's run-all selects every step, with no dependencies or not."""
        paths = sorted(touched)
        everything = tuple(p for p in paths if self.runs_all(p))
        out = []
        for step in self.steps:
            if everything:
                hits = tuple(sorted(set(everything) | {p for p in touched if step.covers(p)}))
                out.append(StepSelection(step, hits, tuple(dict.fromkeys(t for p in hits for t in touched[p]))))
                continue
            if step.always:
                if include_always:
                    out.append(StepSelection(step, (), ()))
                continue
            hits = tuple(p for p in paths if step.covers(p))
            if hits:
                topics = tuple(dict.fromkeys(t for p in hits for t in touched[p]))
                out.append(StepSelection(step, hits, topics))
        return out

    @property
    def always_count(self) -> int:
        return sum(1 for s in self.steps if s.always)


def _yaml() -> YAML:
    return YAML(typ="safe", pure=True)


def load_commit(repo: pygit2.Repository, commit: pygit2.Commit) -> TestMap:
    """The map of `commit`'s tree, with the rule upstream's CI applied when it was made."""
    return load(repo, commit.tree, when=commit.commit_time)


def load(repo: pygit2.Repository, tree: pygit2.Tree, directory: str = TEST_AREAS, when: int | None = None) -> TestMap:
    """Every step of every test_areas file in `tree`; failing those, of its test-pipeline.yaml,
    by the rule in force at `when` (unix time; None: that layout's last rule)."""
    try:
        folder = tree[directory]
    except KeyError:
        legacy = testmap_legacy.read(repo, tree)
        if legacy is not None:
            return _load_legacy(legacy, when)
        raise SeriesError(
            f"no {directory}/ nor {testmap_legacy.TEST_PIPELINE} in the base tree: this upstream has "
            "no vLLM-style CI map to select tests from"
        ) from None
    steps: list[BuildkiteStep] = []
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
    run_all, run_all_exclude = _run_all(repo, tree, problems)
    return TestMap(tuple(steps), tuple(files), tuple(problems), run_all, run_all_exclude)


def _load_legacy(text: str, when: int | None) -> TestMap:
    era = testmap_legacy.era_at(when)
    path = testmap_legacy.TEST_PIPELINE
    rule = f"vllm-project/ci-infra bootstrap and template as of {era.commit}"
    try:
        raw = testmap_legacy.parse_steps(text)
    except (YAMLError, ValueError) as exc:
        problem = f"{path}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        return TestMap((), (), (problem,), source=path, rule=rule)
    steps = tuple(
        BuildkiteStep(file=path, group=None, key=None, substring_rule=True, **fields)
        for fields in testmap_legacy.steps_of(raw, era)
    )
    return TestMap(
        steps,
        (path,),
        (),
        testmap_legacy.run_all_regexes(era.run_all),
        testmap_legacy.run_all_regexes(era.run_all_ignore),
        source=path,
        rule=rule,
    )


def _run_all(
    repo: pygit2.Repository, tree: pygit2.Tree, problems: list[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    try:
        entry = tree[CI_CONFIG]
    except KeyError:
        return (), ()
    text = repo[entry.id].peel(pygit2.Blob).data.decode("utf-8", errors="replace")
    try:
        doc = _yaml().load(io.StringIO(text)) or {}
        include = tuple(str(p) for p in doc.get("run_all_patterns") or ())
        exclude = tuple(str(p) for p in doc.get("run_all_exclude_patterns") or ())
        for pattern in include + exclude:
            re.compile(pattern)
    except (YAMLError, AttributeError, re.error) as exc:
        problems.append(f"{CI_CONFIG}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
        return (), ()
    return include, exclude


def parse(text: str, path: str) -> list[BuildkiteStep]:
    doc = _yaml().load(io.StringIO(text))
    if doc is None:
        return []
    if not isinstance(doc, dict):
        raise ValueError("expected a mapping with 'steps'")
    own_file = bool(doc.get("depends_on"))
    return list(_steps(doc, path, doc.get("group") or doc.get("label"), own_file))


def _steps(node: dict[str, Any], path: str, group: str | None, own_file: bool = False) -> Iterable[BuildkiteStep]:
    for raw in node.get("steps") or []:
        if not isinstance(raw, dict):
            continue  # "wait" and other Buildkite scalars
        if "steps" in raw and "commands" not in raw:  # a nested group
            yield from _steps(raw, path, raw.get("group") or raw.get("label") or group, own_file)
            continue
        label = raw.get("label") or raw.get("key")
        if not label:
            continue
        commands = raw.get("commands", raw.get("command")) or []
        if isinstance(commands, str):
            commands = [commands]
        deps = raw.get("source_file_dependencies") or []
        env = raw.get("env") or {}
        yield BuildkiteStep(
            file=path,
            group=group,
            label=str(label),
            key=raw.get("key"),
            device=raw.get("device"),
            commands=tuple(str(c) for c in commands),
            dependencies=tuple(str(d) for d in deps),
            working_dir=str(raw.get("working_dir") or DEFAULT_WORKING_DIR),
            optional=bool(raw.get("optional", False)),
            parallelism=_int(raw.get("parallelism")),
            num_devices=_int(raw.get("num_devices")),
            timeout_in_minutes=_int(raw.get("timeout_in_minutes")),
            env=tuple((str(k), str(v)) for k, v in env.items()) if isinstance(env, dict) else (),
            own_file=own_file,
            dind=raw.get("dind", True) is not False,
            soft_fail=raw.get("soft_fail") is True,
            no_plugin=raw.get("no_plugin") is True,
            num_nodes=_int(raw.get("num_nodes")),
            mount_buildkite_agent=raw.get("mount_buildkite_agent") is True,
        )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def unescape(command: str) -> str:
    """Buildkite escapes `$` as `$$` so upload does not interpolate; a shell wants one."""
    return command.replace("$$", "$")
