"""Every write command killed at every step of the transaction, with its whole process
group (git children included, as a CI cancellation does): once the next command has run,
refs and series.yaml are exactly as before or exactly as an uninterrupted run leaves them,
no ref lock file is left, every old head is reachable, and series.yaml parses.

The uninterrupted run happens on a copy of the same repository; the sealed test environment
fixes every date, so both runs build the very same commits. That reference's end state is the
same for every fault point of a scenario, so it is taken once per scenario (per test process:
_reference) and reused by the others (each still sets up and kills its own repository).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Callable

import pytest

from series.seriesfile import config
from tests.conftest import run_series, sh
from tests.harness import series_process
from tests.test_adopt import no_api  # noqa: F401  (a fixture)
from tests.test_rebase import refs_of

POINTS = ["after-journal", "after-refs", "after-config", "after-first-file", "after-files"]

Setup = Callable[[Path, Path], list[str]]  # (repository, scratch dir) -> the command's arguments


def _init(repo: Path, scratch: Path) -> list[str]:
    (repo / "series.yaml").unlink()
    return ["init", "--base", "v0.30.0"]


def _add(repo: Path, scratch: Path) -> list[str]:
    sh("git branch topic/late v0.30.0", repo)
    return ["add", "topic/late"]


def _import(repo: Path, scratch: Path) -> list[str]:
    run_series("export", str(scratch / "patches"), cwd=repo)
    sh("git branch -f topic/api-hello topic/sched-note", repo)
    return ["import", str(scratch / "patches"), "--force"]


def _import_fresh(repo: Path, scratch: Path) -> list[str]:
    """A clone without series.yaml: the export's copy, its resolutions and every branch in
    one operation (issue 25)."""
    from series.resolutions import ResolutionStore

    conflicted = b"a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> 0123abc (x)\nd\n"
    store = ResolutionStore(repo / "resolutions")
    store.record("sched-note", "x.py", conflicted, b"a\nbc\nd\n")
    store.record("api-hello", "y.py", conflicted, b"a\ncb\nd\n")
    run_series("export", str(scratch / "patches"), cwd=repo)
    shutil.rmtree(repo / "resolutions")
    (repo / "series.yaml").unlink()
    sh("git branch -D topic/sched-note topic/api-hello >/dev/null", repo)
    return ["import", str(scratch / "patches")]


def _undo(repo: Path, scratch: Path) -> list[str]:
    run_series("rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", cwd=repo)
    return ["undo"]


def _prune(repo: Path, scratch: Path) -> list[str]:
    from series.resolutions import ResolutionStore

    conflicted = b"a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> 0123abc (x)\nd\n"
    ResolutionStore(repo / "resolutions").record("gone-topic", "x.py", conflicted, b"a\nbc\nd\n")
    return ["resolutions", "--prune"]


COMMANDS: dict[str, Setup] = {
    "init": _init,
    "add": _add,
    "drop": lambda repo, scratch: ["drop", "api-hello", "--reason", "done upstream"],
    "supersede": lambda repo, scratch: ["supersede", "offload-evict-fix", "--by", "sched-note"],
    "rebase": lambda repo, scratch: ["rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix"],
    "import": _import,
    "import-fresh": _import_fresh,
    "undo": _undo,
    "build": lambda repo, scratch: ["build"],
    "resolutions-prune": _prune,
}


def state(repo: Path) -> tuple[dict[str, str], str | None]:
    """Refs, and series.yaml (with the resolutions it carries)."""
    path = repo / "series.yaml"
    text = path.read_text() if path.exists() else ""
    resolutions = sorted(f"{p.relative_to(repo)}:{p.read_text()}" for p in (repo / "resolutions").rglob("*.txt"))
    return refs_of(repo), None if not (text or resolutions) else text + "\n".join(resolutions)


State = tuple[dict[str, str], str | None]
_REFERENCES: dict[str, State] = {}


def _reference(key: str, run: Callable[[], State]) -> State:
    """The end state of an uninterrupted run of scenario `key`, run once per test process:
    the state holds only refs and file texts (no path of the test's own directory), the
    same whichever test's copy the run went on."""
    if key not in _REFERENCES:
        _REFERENCES[key] = run()
    return _REFERENCES[key]


def check_after_kill(
    repo: Path, before: tuple[dict[str, str], str | None], after: tuple[dict[str, str], str | None]
) -> None:
    rows = json.loads(run_series("log", "--json", cwd=repo).stdout)["operations"]  # the next command
    assert all(r["state"] == "done" for r in rows), rows
    assert not list((repo / ".git/refs").rglob("*.lock")), "a ref lock file is left"
    now = state(repo)
    assert now in (before, after), "refs and series.yaml are neither all old nor all new"
    if (repo / "series.yaml").exists():
        config.load(repo / "series.yaml")
    for sha in before[0].values():
        assert sh(f"git for-each-ref --contains {sha} --count=1", repo).strip(), f"{sha} is lost"


def killed(repo: Path, args: list[str], point: str) -> None:
    env = {**os.environ, "SERIES_FAULT": point, "SERIES_FAULT_GROUP": "1"}
    proc = series_process(args, repo, env, new_session=True)  # its own process group, killed whole
    assert proc.returncode in (-9, 0), (proc.returncode, proc.stderr)  # 0: the point is not on its path


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_write_command_killed_at_every_step(fork: Path, tmp_path: Path, command: str, point: str) -> None:
    args = COMMANDS[command](fork, tmp_path)

    def uninterrupted() -> State:
        reference = tmp_path / "reference"
        shutil.copytree(fork, reference, symlinks=True)
        proc = run_series(*args, cwd=reference, expect=None)
        assert proc.returncode in (0, 3), proc.stderr
        return state(reference)

    after = _reference(command, uninterrupted)
    before = state(fork)
    killed(fork, args, point)
    check_after_kill(fork, before, after)


@pytest.mark.parametrize("point", POINTS)
def test_adopt_killed_at_every_step(served: Path, tmp_path: Path, point: str) -> None:  # noqa: F811
    args = ["adopt-upstream", "61050", "--replaces", "offload-evict-fix", "--offline"]

    def uninterrupted() -> State:
        reference = tmp_path / "reference"
        shutil.copytree(served, reference, symlinks=True)
        run_series(*args, cwd=reference)
        return state(reference)

    after = _reference("adopt-upstream", uninterrupted)
    before = state(served)
    killed(served, args, point)
    check_after_kill(served, before, after)


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("ending", ["--continue", "--abort"])
def test_a_halted_rebase_killed_while_it_ends(
    fork: Path, upstream: Path, tmp_path: Path, ending: str, point: str
) -> None:
    """--continue and --abort are write commands too. The reference is a second fork built
    the same way (a copy would carry the conflict worktree's links to the first one). As
    with git, a rebase killed before it ended stays in progress, refs all old or all new
    (the journal finished or rolled back its transaction), and ending it again gives the
    reference's result; the resolution --continue recorded is the user's work, kept."""
    from tests.repos import build_fork
    from tests.test_rebase import resolve_lru

    def halt(repo: Path) -> None:
        proc = run_series("rebase", "--onto", "v0.31.0", cwd=repo, expect=3)
        assert "resolve offload-evict-fix" in proc.stdout, proc.stdout
        if ending == "--continue":
            resolve_lru(repo / ".git/series/rebase/worktree")

    def uninterrupted() -> State:
        reference = build_fork(upstream, tmp_path / "reference")
        halt(reference)
        run_series("rebase", ending, cwd=reference)
        return state(reference)

    after = _reference(f"rebase {ending}", uninterrupted)
    halt(fork)
    before = state(fork)
    killed(fork, ["rebase", ending], point)
    rows = json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"]  # the next command repairs
    assert all(r["state"] == "done" for r in rows), rows
    assert not list((fork / ".git/refs").rglob("*.lock")), "a ref lock file is left"
    now = state(fork)
    assert now[0] in (before[0], after[0]), "refs are neither all old nor all new"
    config.load(fork / "series.yaml")
    for sha in before[0].values():
        assert sh(f"git for-each-ref --contains {sha} --count=1", fork).strip(), f"{sha} is lost"
    if (fork / ".git/series/rebase/state.json").exists():  # killed before it ended
        if now[0] != before[0]:
            assert now == after, "refs all new, but series.yaml is not"
        else:
            assert now[1] is not None and before[1] is not None and now[1].startswith(before[1])
        run_series("rebase", ending, cwd=fork)
    assert state(fork) == after
