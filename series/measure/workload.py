"""Running a workload command in a named tree, for `series measure` (issue 23).

Two ways to put a tree under the command:
  - a checkout: the tree's files written from git into a scratch directory (the
    repository and its worktrees are not touched), the command run there with the
    checkout first on PYTHONPATH;
  - the installed build (`--python PY`): the tree's package changes laid over the
    installed release as `series test --run` lays them (series.evidence.testrun.shadow: a
    shadow of symlinks, first on PYTHONPATH, no bytecode written), the command run in an
    empty directory with PYTHONSAFEPATH, so neither a source tree at the working
    directory nor the script's own directory shadows the build; `python` in the command
    is PY.
The command gets SERIES_TREE (the tree's name) and SERIES_METRICS (a path it writes one
JSON object of metrics to). It runs in its own session, so stopping `series` stops it and
whatever it started; its output goes to a log whose tail a failure shows.
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import pygit2

from series.measure.measurement import METRICS_LIMIT, Values, read_metrics
from series.evidence import pytestrun, testrun
from series.evidence.testrun import Scratch
from series.errors import SeriesError

_SKIP = (".", "..", ".git")
_TAIL = 12


@dataclass(frozen=True)
class Stage:
    """Where and how one tree's command runs."""

    tree: str
    cwd: Path
    env: dict[str, str]  # set over the inherited environment
    python: str | None  # PY: replaces a leading `python` / `python3` of the command


def export_tree(repo: pygit2.Repository, tree: pygit2.Tree, into: Path) -> Path:
    """The tree's files under `into` (modes kept; submodules left empty; a name git itself
    refuses, such as .git or .., skipped)."""
    into.mkdir(parents=True, exist_ok=True)
    for entry in tree:
        name = entry.name or ""
        if name.lower() in _SKIP or "/" in name or not name:
            continue
        target = into / name
        if entry.filemode == pygit2.enums.FileMode.TREE:
            export_tree(repo, repo[entry.id].peel(pygit2.Tree), target)
        elif entry.filemode == pygit2.enums.FileMode.LINK:
            os.symlink(repo[entry.id].peel(pygit2.Blob).data, target)
        elif entry.filemode == pygit2.enums.FileMode.COMMIT:
            target.mkdir()
        else:
            target.write_bytes(repo[entry.id].peel(pygit2.Blob).data)
            if entry.filemode == pygit2.enums.FileMode.BLOB_EXECUTABLE:
                target.chmod(0o755)
    return into


def checkout_stage(repo: pygit2.Repository, name: str, commit: pygit2.Commit, scratch: Scratch) -> Stage:
    checkout = export_tree(repo, commit.tree, scratch.fresh(f"{name}-checkout"))
    inherited = os.environ.get("PYTHONPATH", "")
    return Stage(name, checkout, {"PYTHONPATH": os.pathsep.join(p for p in (str(checkout), inherited) if p)}, None)


def build_stage(
    name: str, python: str, package_dir: Path, changes: Mapping[str, bytes | None], scratch: Scratch
) -> Stage:
    """The installed build with the tree's package changes over it (none: the build itself)."""
    shadow = [str(testrun.shadow(package_dir, changes, scratch.fresh(f"{name}-shadow")))] if changes else []
    inherited = [
        p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and not (Path(p) / package_dir.name).is_dir()
    ]  # a source tree would shadow the build
    env = {
        "PYTHONPATH": os.pathsep.join([*shadow, *inherited]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONSAFEPATH": "1",
        "SERIES_PYTHON": python,
        "PATH": os.pathsep.join([str(Path(python).parent), os.environ.get("PATH", "")]),
    }
    return Stage(name, scratch.fresh(f"{name}-work"), env, python)


def run(stage: Stage, command: tuple[str, ...], metrics: Path, log: Path) -> Values:
    """One run of the command in `stage`; the metrics it wrote. Every way the workload can
    fail (exit status, no file, a file that is not one JSON object of metrics) is a
    SeriesError naming the tree."""
    argv = list(command)
    if stage.python is not None and argv[0] in ("python", "python3"):
        argv[0] = stage.python
    env = {**os.environ, **stage.env, "SERIES_TREE": stage.tree, "SERIES_METRICS": str(metrics)}
    with open(log, "wb") as out:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=stage.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise SeriesError(
                f"tree {stage.tree}: cannot run {argv[0]} ({exc.strerror or exc}); "
                "the command runs in the tree's checkout (or an empty directory with "
                "--python): name files outside it by absolute path"
            ) from None
        try:
            code = proc.wait()
        except BaseException:
            pytestrun.stop_group(proc)  # Ctrl-C, a kill (pytestrun.trapped): the whole session goes
            raise
        pytestrun.end_leftovers(proc)
    if code != 0:
        raise SeriesError(f"tree {stage.tree}: the command exited {code}{_tail(log)}")
    return read_metrics(_read_metrics_file(metrics, stage.tree), stage.tree)


def _read_metrics_file(path: Path, tree: str) -> bytes:
    try:
        info = path.stat()
    except FileNotFoundError:
        raise SeriesError(
            f"tree {tree}: the command wrote no metrics: it must write one JSON object of "
            "metric -> number, true/false or string to the file $SERIES_METRICS names"
        ) from None
    except OSError as exc:
        raise SeriesError(f"tree {tree}: cannot read the metrics file ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise SeriesError(f"tree {tree}: $SERIES_METRICS is not a regular file; write the JSON object there")
    if info.st_size > METRICS_LIMIT:
        raise SeriesError(
            f"tree {tree}: the metrics file is {info.st_size} bytes; it holds at most "
            f"{METRICS_LIMIT} (one JSON object of metric -> number, true/false or string)"
        )
    try:
        with open(path, "rb") as f:
            return f.read(METRICS_LIMIT + 1)  # read_metrics refuses what is larger
    except OSError as exc:
        raise SeriesError(f"tree {tree}: cannot read the metrics file ({exc.strerror or exc})") from None


def _tail(log: Path) -> str:
    with open(log, "rb") as f:  # the end only: a workload may print a lot
        f.seek(max(0, f.seek(0, os.SEEK_END) - 16384))
        lines = f.read().decode(errors="replace").strip().splitlines()[-_TAIL:]
    where = (
        "(it runs in the tree's checkout, or an empty directory with --python: name files outside it by absolute path)"
    )
    return (f" {where}:\n" + "\n".join(f"  | {line}" for line in lines)) if lines else f" {where}; it printed nothing"
