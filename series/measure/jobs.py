"""A measurement written as jobs for another machine (`series measure --emit`, issue 23).

The GPU is on another seat: a GitHub workflow (workflow_dispatch, one job per tree) or a
Buildkite pipeline (one step per tree). Each job checks out the fork, installs series by
the one spec (series.distribution), installs the patched wheel the nightly built when its
release matches the base (else builds it with `series build --wheel`), writes the
predictions file back from the frozen bytes embedded in the job (checked against their
sha256, then frozen in that clone, whose journal starts empty), runs `series measure
--tree NAME=SPEC... --only NAME --artifact out -- CMD` and uploads out/ (tree.json, metrics.json,
environment.json and a pip freeze). `series measure --collect` reads the downloads back
and checks each tree's hash against the local freeze: the honest check stays here.

Values from the user (tree names and specs, CMD, paths) reach the shell only through
`env:` and are never part of a script: a script is this module's fixed text. GitHub
evaluates `${{` anywhere, env: included, and Buildkite interpolates `$` when the pipeline
is uploaded, so each value is escaped for its seat first (`_github`, `_buildkite`) and then
quoted as a YAML string. CMD is carried as one shell-quoted line (shlex.join) that the
script reads back with `eval "workload=(...)"`: the quoting is the shell's own, so any
argument comes back byte for byte. Actions are pinned by commit, the same pins as the
nightly template (tests/test_measure_emit.py keeps them equal).
"""

from __future__ import annotations

import base64
import enum
import hashlib
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

import pygit2

from series.measure.predictions import FrozenPredictions
from series.errors import SeriesError
from series.git.repo import workdir

CHECKOUT = "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1"
SETUP_PYTHON = "actions/setup-python@5fda3b95a4ea91299a34e894583c3862153e4b97 # v7.0.0"
UPLOAD_ARTIFACT = "actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f # v7.0.0"
NIGHTLY_WORKFLOW = "series-nightly.yml"  # ci/github/nightly.yml as `series ci init` writes it
NIGHTLY_WHEEL = "series-nightly-wheel"  # its artifact with the patched wheel
UPSTREAM_URL = "https://github.com/vllm-project/vllm.git"
PREDICTIONS_LIMIT = 64 << 10  # the bytes ride in the job's env: a workflow file is no place for more


class Seat(str, enum.Enum):
    """Where the emitted jobs run (the str mixin keeps the --emit value)."""

    GITHUB = "github"
    BUILDKITE = "buildkite"


DEFAULT_PATHS = {Seat.GITHUB: ".github/workflows/series-measure.yml", Seat.BUILDKITE: ".buildkite/series-measure.yml"}


@dataclass(frozen=True)
class MeasureJobs:
    """What the jobs measure: the same as the local `series measure` line would."""

    predictions: str  # the file's path from `cwd`, as the job writes it
    predictions_bytes: bytes  # the frozen bytes
    sha256: str  # their frozen hash
    trees: tuple[tuple[str, str], ...]  # (NAME, SPEC), one job each
    command: tuple[str, ...]  # CMD
    repeat: int
    overlay: bool  # --python was given: the runner's interpreter, wheel installed
    cwd: str  # where the local run started, from the fork's top ('.')
    fork: str  # the fork's top here: in CMD's paths it becomes the checkout's
    base: str  # series.yaml's upstream base (fetched when the clone lacks it)
    remote: str  # series.yaml's upstream remote
    release: str | None  # the base's vLLM version: the wheel to install (None: none)
    pip_spec: str  # series.distribution.pip_spec()
    # (branch, sha) of upstream's trunk as resolved here, when a tree stands on it (main,
    # pr:TOPIC): the checkout has no <remote>/main, and upstream's main moves on after the
    # jobs are written; pinned, the runner replays the same PR tree this machine would
    trunk: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        if hashlib.sha256(self.predictions_bytes).hexdigest() != self.sha256:
            raise SeriesError(
                f"{self.predictions} changed while the jobs were written (not its frozen "
                f"sha256:{self.sha256}): run the command again"
            )
        if len(self.predictions_bytes) > PREDICTIONS_LIMIT:
            raise SeriesError(
                f"{self.predictions}: {len(self.predictions_bytes)} bytes; --emit carries the "
                f"predictions inside the job, at most {PREDICTIONS_LIMIT}"
            )
        if not self.trees:
            raise SeriesError("--emit: name a tree (--tree NAME=SPEC)")
        if not self.command:
            raise SeriesError("--emit: no workload to run", "give the workload after '--' (-- CMD ...)")


def plan(
    repo: pygit2.Repository,
    path: Path,
    frozen: FrozenPredictions,
    here: Path,
    trees: tuple[tuple[str, str], ...],
    command: tuple[str, ...],
    *,
    repeat: int,
    overlay: bool,
    base: str,
    remote: str,
    release: str | None,
    pip_spec: str,
    trunk: tuple[str, str] | None = None,
) -> MeasureJobs:
    """The jobs of this measurement, whose predictions `frozen` holds (require_frozen: a
    file never frozen is refused here as a local run refuses it); their frozen bytes go
    into the job. Paths are from the fork's top, where a checkout starts: the job runs
    where this command runs (`here`), and a predictions file outside the fork is written
    into the checkout's .series-measure/."""
    top = workdir(repo).resolve()
    start = here.resolve()
    if not start.is_relative_to(top):
        start = top
    where = path.resolve()
    if not where.is_relative_to(top) or where.is_relative_to(top / ".git"):
        where = top / ".series-measure" / where.name
    return MeasureJobs(
        predictions=Path(os.path.relpath(where, start)).as_posix(),
        predictions_bytes=path.read_bytes(),
        sha256=frozen.file.sha256,
        trees=trees,
        command=command,
        repeat=repeat,
        overlay=overlay,
        cwd=start.relative_to(top).as_posix() or ".",
        fork=str(top),
        base=base,
        remote=remote,
        release=release,
        pip_spec=pip_spec,
        trunk=trunk,
    )


def unshipped(repo: pygit2.Repository, command: tuple[str, ...]) -> list[str]:
    """Files of the fork that CMD names (by absolute path) and HEAD does not hold: the
    job's checkout will not have them unless they are committed and pushed."""
    top = str(workdir(repo).resolve()).rstrip("/") + "/"
    try:
        tree: pygit2.Tree | None = repo.head.peel(pygit2.Commit).tree
    except (pygit2.GitError, KeyError):
        tree = None
    out = []
    for arg in command:
        for word in arg.replace("=", " ").split():
            if word.startswith(top) and Path(word).is_file():
                rel = word[len(top) :]
                if tree is None or rel not in tree:
                    out.append(rel)
    return out


def write(seat: Seat, text: str, out: Path | None, root: Path) -> Path:
    """Write the jobs to `out` (default: the seat's file in the fork) in one atomic step."""
    from series.ops.fs import write_atomically

    target = out if out is not None else root / DEFAULT_PATHS[seat]
    if target.is_dir():
        raise SeriesError(
            f"--out {target} is a directory: name the file to write "
            f"(e.g. {target / DEFAULT_PATHS[seat].rsplit('/', 1)[-1]})"
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise SeriesError(f"--out {target}: a part of {target.parent} is a file, not a directory") from None
    write_atomically(target, text)
    return target


def render(seat: Seat, jobs: MeasureJobs) -> str:
    return _render_github(jobs) if seat == Seat.GITHUB else _render_buildkite(jobs)


def artifact_dir(jobs: MeasureJobs) -> str:
    """Where a job's `--artifact` directory is, from the checkout's top."""
    return "out" if jobs.cwd == "." else f"{jobs.cwd}/out"


def collect_steps(seat: Seat, path: str, jobs: MeasureJobs, predictions_arg: str) -> list[str]:
    """What the user does next, in order: the last line is the collect that makes the report."""
    collect = f"series measure --collect DIR --predictions {shlex.quote(predictions_arg)}"
    if seat == Seat.GITHUB:
        return [
            f"commit and push {path} (workflow_dispatch runs only a workflow on the default branch); "
            "set the variable SERIES_MEASURE_RUNNER to your GPU runner's label",
            f"gh workflow run {path.rsplit('/', 1)[-1]}",
            "gh run download RUN_ID --pattern 'series-measure-*' --dir DIR   (RUN_ID: gh run list)",
            collect,
        ]
    return [
        f"buildkite-agent pipeline upload {path}   (SERIES_MEASURE_QUEUE: your GPU queue, default gpu; "
        "SERIES_NIGHTLY_BUILD: the nightly build whose wheel to use)",
        "buildkite-agent artifact download 'out/**' DIR --build BUILD_ID",
        collect,
    ]


# -- the scripts: fixed text; every value comes from the environment ---------------------------------

_BRANCHES = """\
git config user.name "series measure"
git config user.email "series-measure@users.noreply.github.com"
# every remote branch as a local branch, as series.yaml names the topics
for ref in $(git for-each-ref --format='%(refname:strip=3)' refs/remotes/origin/); do
  [ "$ref" = HEAD ] || git branch --force "$ref" "origin/$ref" >/dev/null 2>&1 || true
done
git remote get-url "$SERIES_REMOTE" >/dev/null 2>&1 || git remote add "$SERIES_REMOTE" "$SERIES_UPSTREAM_URL"
git rev-parse -q --verify "$SERIES_BASE^{commit}" >/dev/null || git fetch --tags "$SERIES_REMOTE"
# main and pr:TOPIC stand on upstream's trunk: the commit seen where the jobs were written
if [ -n "${SERIES_TRUNK_SHA:-}" ]; then
  have() { git rev-parse -q --verify "$SERIES_TRUNK_SHA^{commit}" >/dev/null; }
  have || git fetch --quiet --no-tags "$SERIES_REMOTE" "refs/heads/$SERIES_TRUNK_BRANCH" || true
  have || git fetch --quiet --no-tags "$SERIES_REMOTE" "$SERIES_TRUNK_SHA"
  git update-ref "refs/remotes/$SERIES_REMOTE/$SERIES_TRUNK_BRANCH" "$SERIES_TRUNK_SHA"
fi
"""

_WHEEL = """\
found=$(find wheel -name "vllm-$SERIES_VLLM+series.*.whl" 2>/dev/null | head -n 1)
if [ -z "$found" ]; then
  echo "no nightly wheel of vLLM $SERIES_VLLM: building it (series build --wheel)"
  rm -rf wheel
  series build --wheel "vllm==$SERIES_VLLM" --out wheel
  found=$(find wheel -name 'vllm-*.whl' | head -n 1)
fi
python -m pip install "$found"
"""

_GITHUB_NIGHTLY = """\
mkdir -p wheel
run=$(gh run list --workflow "$NIGHTLY_WORKFLOW" --status success --limit 1 --json databaseId --jq '.[0].databaseId' || true)
if [ -n "$run" ]; then gh run download "$run" --name "$NIGHTLY_WHEEL" --dir wheel || true; fi
"""

_BUILDKITE_NIGHTLY = """\
mkdir -p wheel
if [ -n "${SERIES_NIGHTLY_BUILD:-}" ]; then
  buildkite-agent artifact download 'nightly/*.whl' wheel --build "$SERIES_NIGHTLY_BUILD" || true
fi
"""

# Written back from the frozen bytes the job carries, so the claims measured there are the
# ones frozen here even when the file was never committed; python, not base64/sha256sum,
# which differ between runners' systems.
_PREDICTIONS = """\
cd "$(git rev-parse --show-toplevel)/$MEASURE_CWD"
python - <<'EOF'
import base64, hashlib, os, pathlib, sys
data = base64.b64decode(os.environ["MEASURE_PREDICTIONS_BASE64"])
if hashlib.sha256(data).hexdigest() != os.environ["MEASURE_PREDICTIONS_SHA256"]:
    sys.exit("the predictions in this job are not the frozen ones (sha256 differs): emit the job again")
path = pathlib.Path(os.environ["MEASURE_PREDICTIONS"])
path.parent.mkdir(parents=True, exist_ok=True)
path.write_bytes(data)
EOF
series predict "$MEASURE_PREDICTIONS"
"""

# The workload names its files by absolute path (it runs outside the tree): the fork's top
# where the jobs were written becomes the checkout's, and tree.json keeps the command as it
# was asked for (`ran_as`: as it ran), so every job's artifact, wherever its checkout was,
# is one measurement with the local run's command. One tree per job: every tree is named
# (--tree), this job's --only is measured; --collect judges the claims with all of them.
_MEASURE = """\
top=$(git rev-parse --show-toplevel)
cd "$top/$MEASURE_CWD"
eval "workload=($MEASURE_COMMAND)"
workload=("${workload[@]//"$MEASURE_FORK"/"$top"}")
eval "trees=($MEASURE_TREES)"
args=(--predictions "$MEASURE_PREDICTIONS" --only "$MEASURE_ONLY" --repeat "$MEASURE_REPEAT" --artifact out)
for tree in "${trees[@]}"; do args+=(--tree "$tree"); done
if [ "$MEASURE_OVERLAY" = true ]; then args+=(--python "$(command -v python)"); fi
series measure "${args[@]}" -- "${workload[@]}"
python - <<'EOF'
import json, os, pathlib, shlex
asked = shlex.split(os.environ["MEASURE_COMMAND"])
for path in pathlib.Path("out").glob("*/tree.json"):
    doc = json.loads(path.read_text())
    if doc["command"] != asked:
        doc["ran_as"], doc["command"] = doc["command"], asked
        path.write_text(json.dumps(doc, indent=2) + "\\n")
EOF
python -m pip freeze > out/pip-freeze.txt 2>/dev/null || true
"""


def _tree_env(jobs: MeasureJobs, name: str, spec: str) -> dict[str, str]:
    return {
        "MEASURE_ONLY": name,
        "MEASURE_COMMAND": shlex.join(jobs.command),
        "MEASURE_REPEAT": str(jobs.repeat),
        "MEASURE_OVERLAY": "true" if jobs.overlay else "false",
    }


def _shared_env(jobs: MeasureJobs) -> dict[str, str]:
    env = {
        "SERIES_REMOTE": jobs.remote,
        "SERIES_BASE": jobs.base,
        "MEASURE_CWD": jobs.cwd,
        "MEASURE_PREDICTIONS": jobs.predictions,
        "MEASURE_PREDICTIONS_SHA256": jobs.sha256,
        "MEASURE_PREDICTIONS_BASE64": base64.b64encode(jobs.predictions_bytes).decode(),
        "MEASURE_FORK": jobs.fork,
        "MEASURE_TREES": shlex.join(f"{n}={s}" for n, s in jobs.trees),
    }
    if jobs.release is not None:
        env["SERIES_VLLM"] = jobs.release
    if jobs.trunk is not None:
        env["SERIES_TRUNK_BRANCH"], env["SERIES_TRUNK_SHA"] = jobs.trunk
    return env


def _yaml_str(value: str) -> str:
    """A YAML double-quoted scalar (JSON's escapes are YAML's): any text, one line."""
    return json.dumps(value, ensure_ascii=False)


def _github(value: str) -> str:
    """The literal text GitHub leaves alone: `${{` would start an expression, even in env:."""
    return _yaml_str(value.replace("${{", "${{ '${{' }}"))


def _buildkite(value: str) -> str:
    """The literal text Buildkite's upload leaves alone: it interpolates `$`; `$$` is one `$`."""
    return _yaml_str(value.replace("$", "$$"))


def _block(script: str, indent: int) -> str:
    pad = " " * indent
    return "|\n" + "".join(f"{pad}{line}\n" if line else "\n" for line in script.splitlines())


def _label(name: str, spec: str) -> str:
    return f"measure {name} ({spec})"


def _render_github(jobs: MeasureJobs) -> str:
    def env_block(env: dict[str, str], indent: int) -> str:
        return "".join(f"{' ' * indent}{k}: {_github(v)}\n" for k, v in env.items())

    wheel = (
        f"""
      - name: The patched wheel (the nightly's, else built)
        env:
          GH_TOKEN: ${{{{ github.token }}}}
          NIGHTLY_WORKFLOW: {NIGHTLY_WORKFLOW}
          NIGHTLY_WHEEL: {NIGHTLY_WHEEL}
        run: {_block(_GITHUB_NIGHTLY + _WHEEL, 10)}"""
        if jobs.release is not None
        else ""
    )
    out = [
        f"""\
# Written by `series measure --emit github`: the measurement of {len(jobs.trees)} tree(s) on another
# seat, one job per tree (run it from the Actions tab or `gh workflow run`). Nothing here
# was run where it was written. Each job uploads its tree's tree.json, metrics.json and
# environment.json; download them all into DIR and run
#   series measure --collect DIR --predictions FILE
# which checks them against the predictions frozen where this was written.
name: series measure

on:
  workflow_dispatch:

permissions: {{}}

jobs:
"""
    ]
    for n, (name, spec) in enumerate(jobs.trees, 1):
        out.append(f"""\
  measure-{n}:
    name: {_github(_label(name, spec))}
    runs-on: ${{{{ vars.SERIES_MEASURE_RUNNER || 'ubuntu-latest' }}}}   # your GPU runner's label
    timeout-minutes: 180
    permissions:
      contents: read          # the checkout
      actions: read           # the nightly's wheel artifact
    defaults:
      run:
        shell: bash
    env:
      SERIES_PIP_SPEC: ${{{{ vars.SERIES_PIP_SPEC || '{jobs.pip_spec}' }}}}   # series.distribution.pip_spec()
      SERIES_UPSTREAM_URL: ${{{{ vars.SERIES_UPSTREAM_URL || '{UPSTREAM_URL}' }}}}
      PIP_INDEX_URL: ${{{{ secrets.SERIES_PIP_INDEX_URL }}}}   # optional: a private index or mirror
{env_block(_shared_env(jobs), 6)}{env_block(_tree_env(jobs, name, spec), 6)}    steps:
      - uses: {CHECKOUT}
        with:
          fetch-depth: 0            # topic branches and tags: the trees are made from them
          persist-credentials: false

      - uses: {SETUP_PYTHON}
        with:
          python-version: "3.12"

      - name: Install series
        run: python -m pip install "$SERIES_PIP_SPEC"

      - name: Topic branches and upstream
        run: {_block(_BRANCHES, 10)}{wheel}
      - name: The frozen predictions
        run: {_block(_PREDICTIONS, 10)}
      - name: Measure
        run: {_block(_MEASURE, 10)}
      - name: Upload the measurement
        uses: {UPLOAD_ARTIFACT}
        with:
          name: series-measure-{n}
          path: {_github(artifact_dir(jobs))}
          if-no-files-found: error
          retention-days: 30
""")
    return out[0] + "\n".join(out[1:])


def _render_buildkite(jobs: MeasureJobs) -> str:
    def env_block(env: dict[str, str], indent: int) -> str:
        return "".join(f"{' ' * indent}{k}: {_buildkite(v)}\n" for k, v in env.items())

    def commands(script: str) -> str:
        return _block(script.replace("$", "$$"), 8)

    install = (
        'python3 -m venv .series-venv && .series-venv/bin/pip install -q "$$SERIES_PIP_SPEC"\n'
        '      - export PATH="$$PWD/.series-venv/bin:$$PATH"\n'
        '      - export SERIES_UPSTREAM_URL="$${SERIES_UPSTREAM_URL:-' + UPSTREAM_URL + '}"'
    )
    out = [
        f"""\
# Written by `series measure --emit buildkite`: the measurement of {len(jobs.trees)} tree(s) on
# another seat, one step per tree. Upload this file from a pipeline step:
#   buildkite-agent pipeline upload FILE
# (SERIES_MEASURE_QUEUE: the agents' queue, default gpu; SERIES_NIGHTLY_BUILD: the nightly
# build whose patched wheel to use, else it is built). Nothing here was run where it was
# written. Download the steps' out/** into DIR and run
#   series measure --collect DIR --predictions FILE
# `$$` below: the step's shell expands it, not the upload.
env:
  SERIES_PIP_SPEC: {_yaml_str(jobs.pip_spec)}   # series.distribution.pip_spec(): this version of series

steps:
"""
    ]
    for n, (name, spec) in enumerate(jobs.trees, 1):
        wheel = f"      - {commands(_BUILDKITE_NIGHTLY + _WHEEL)}" if jobs.release is not None else ""
        out.append(f"""\
  - label: {_buildkite(":stopwatch: " + _label(name, spec))}
    key: series-measure-{n}
    agents:
      queue: "${{SERIES_MEASURE_QUEUE:-gpu}}"
    timeout_in_minutes: 180
    env:
{env_block(_shared_env(jobs), 6)}{env_block(_tree_env(jobs, name, spec), 6)}    artifact_paths:
      - {_buildkite(artifact_dir(jobs) + "/**")}
    commands:
      - {install}
      - {commands(_BRANCHES)}{wheel}      - {commands(_PREDICTIONS)}      - {commands(_MEASURE)}""")
    return out[0] + "\n".join(out[1:])
