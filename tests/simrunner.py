"""A local stand-in for a CI runner: runs the jobs `series measure --emit` writes.

What a runner does and a test cannot (check out from GitHub, set up Python, pip install
series from the package index, upload) is replaced by a local equivalent; every `run:`
script (GitHub) and `commands:` line (Buildkite) runs as it is written, under bash the way
the runner starts it, in a clone of the fork, with the environment the job declares. The
expressions and the upload-time interpolation are evaluated here by what each seat
documents, and anything this runner does not know is an error, so a template that starts
using something new fails the test instead of being skipped.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ruamel.yaml import YAML


@dataclass
class Runner:
    fork: Path  # what the checkout clones
    work: Path  # scratch: one directory per job
    path: list[Path]  # PATH in front of the system's: the runner's python, the shims
    vars: dict[str, str] = field(default_factory=dict)  # GitHub vars / Buildkite upload env
    extra: dict[str, str] = field(default_factory=dict)  # the agent's own environment (Buildkite)
    log: list[str] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        path = os.pathsep.join([*map(str, self.path), os.environ["PATH"]])
        # A job pip-installs the patched wheel into `python`: never the suite's own interpreter,
        # where a vllm left behind changes what every later test sees.
        python = shutil.which("python", path=path)
        if python and Path(python).parent in (Path(sys.prefix) / "bin", Path(sys.base_prefix) / "bin"):
            raise AssertionError(
                "the simulated runner's python is the suite's own: a job would install into it; "
                "put a venv of its own first on the Runner's path (tests.fakeenv.make_env)"
            )
        return dict(os.environ, **self.extra, PATH=path)

    def checkout(self, where: Path) -> None:
        # actions/checkout with fetch-depth 0: every branch as origin/*, every tag
        subprocess.run(
            ["git", "clone", "-q", "--no-local", str(self.fork), str(where)], check=True, capture_output=True
        )

    def bash(self, script: str, cwd: Path, env: dict[str, str], flags: tuple[str, ...]) -> None:
        proc = subprocess.run(["bash", *flags, "-c", script], cwd=cwd, env=env, capture_output=True, text=True)
        self.log.append(f"$ {script}\n{proc.stdout}{proc.stderr}")
        if proc.returncode != 0:
            raise AssertionError(
                f"a job's script failed (exit {proc.returncode}):\n{script}\n"
                f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
            )


# -- GitHub Actions ----------------------------------------------------------------------------

_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_LITERAL = re.compile(r"^'((?:[^']|'')*)'$")


def _evaluate(expr: str, runner: Runner) -> str:
    """The expressions the emitted workflow uses: literals, vars.X || 'default', secrets, the token."""
    if m := _LITERAL.match(expr):
        return m[1].replace("''", "'")
    if m := re.fullmatch(r"vars\.(\w+)\s*\|\|\s*('(?:[^']|'')*')", expr):
        return runner.vars.get(m[1]) or _evaluate(m[2], runner)
    if m := re.fullmatch(r"secrets\.(\w+)", expr):
        return ""
    if expr == "github.token":
        return "ghs_simulated"
    raise AssertionError(f"the simulated runner does not know the expression ${{{{ {expr} }}}}")


def github_value(text: object, runner: Runner) -> str:
    return _EXPRESSION.sub(lambda m: _evaluate(m[1], runner), str(text))


def run_github(workflow_text: str, runner: Runner, artifacts: Path) -> None:
    workflow = YAML(typ="safe").load(workflow_text)
    assert set(workflow["on"]) == {"workflow_dispatch"}, workflow["on"]
    for job_id, job in workflow["jobs"].items():
        checkout = runner.work / job_id
        env = runner.env()
        env.update({k: github_value(v, runner) for k, v in (workflow.get("env") or {}).items()})
        env.update({k: github_value(v, runner) for k, v in (job.get("env") or {}).items()})
        assert job["defaults"]["run"]["shell"] == "bash"
        for step in job["steps"]:
            uses, with_ = step.get("uses", ""), step.get("with") or {}
            if uses.startswith("actions/checkout@"):
                assert with_["fetch-depth"] == 0 and with_["persist-credentials"] is False
                runner.checkout(checkout)
            elif uses.startswith("actions/setup-python@"):
                pass  # the runner's python is first on PATH
            elif uses.startswith("actions/upload-artifact@"):
                shutil.copytree(
                    checkout / github_value(with_["path"], runner), artifacts / github_value(with_["name"], runner)
                )
            elif "run" in step and step.get("name") == "Install series":
                assert step["run"] == 'python -m pip install "$SERIES_PIP_SPEC"', step
                assert env["SERIES_PIP_SPEC"], env  # installed here: the `series` shim on PATH
            elif "run" in step:
                step_env = dict(env, **{k: github_value(v, runner) for k, v in (step.get("env") or {}).items()})
                # what `shell: bash` runs
                runner.bash(step["run"], checkout, step_env, ("--noprofile", "--norc", "-eo", "pipefail"))
            else:
                raise AssertionError(f"the simulated runner does not know the step {step}")


# -- Buildkite ---------------------------------------------------------------------------------

_INTERPOLATION = re.compile(r"\$\$|\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)")


def buildkite_value(text: object, runner: Runner) -> str:
    """What `buildkite-agent pipeline upload` makes of a value: $$ is $, $X and ${X:-d} expand."""

    def one(m: re.Match[str]) -> str:
        if m[0] == "$$":
            return "$"
        name = m[1] or m[3]
        return runner.vars.get(name) or (m[2] or "")

    return _INTERPOLATION.sub(one, str(text))


def run_buildkite(pipeline_text: str, runner: Runner, artifacts: Path) -> None:
    pipeline = YAML(typ="safe").load(pipeline_text)
    shared = {k: buildkite_value(v, runner) for k, v in (pipeline.get("env") or {}).items()}
    for step in pipeline["steps"]:
        key = step["key"]
        checkout = runner.work / key
        runner.checkout(checkout)
        env = dict(
            runner.env(), **shared, **{k: buildkite_value(v, runner) for k, v in (step.get("env") or {}).items()}
        )
        commands = [buildkite_value(c, runner) for c in step["commands"]]
        install = 'python3 -m venv .series-venv && .series-venv/bin/pip install -q "$SERIES_PIP_SPEC"'
        assert commands[0] == install, commands[0]  # installed here: the `series` shim on PATH
        # the agent runs a step's commands as one script, with bash -e
        runner.bash("\n".join(commands[1:]), checkout, env, ("-e",))
        for pattern in step["artifact_paths"]:
            for found in glob.glob(buildkite_value(pattern, runner), root_dir=checkout, recursive=True):
                if (checkout / found).is_file():
                    (artifacts / key / found).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(checkout / found, artifacts / key / found)
