"""`series demo`: build a small vLLM-shaped upstream and a fork, then run the tour.

Each step prints the command line a user would type and its real output (the demo runs
the real CLI as a subprocess in the demo fork), so the demo is also an end-to-end check.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import click

import pygit2

from series import demo, demo_github, demo_workload
from series.cli_support import emit
from series.errors import SeriesError


@dataclass(frozen=True)
class DemoStep:
    say: str  # what the step shows, in one sentence
    argv: tuple[str, ...]  # series arguments
    expect: tuple[int, ...] = (0,)
    before: Callable[[Path], None] | None = field(default=None, compare=False)
    shell: str | None = None  # a git command the user would type instead
    save: str | None = None  # write the output to this file in {measure} (shown: its name)
    github: str | None = None  # run against the demo's loopback GitHub, PR #61050 in this state


def _resolve_stats_conflict(fork: Path) -> None:
    """What the maintainer does in the conflict worktree: keep both changes, git add."""
    from series.ops.halted import worktree_path
    from series.git.repo import open_repo

    root = worktree_path(open_repo(fork))  # where the halted rebase laid the conflict out
    path = root / "vllm/v1/kv_offload/cpu/manager.py"
    if not path.exists():
        raise SeriesError(f"demo: the conflict worktree was not found at {root}")
    text = demo.MANAGER_V031.replace(
        "            if not self.free:\n                self._evict_one()\n",
        "            if not self.free:\n                self.evictions += 1\n                self._evict_one()\n",
    ).replace(
        "        self.free = list(range(num_blocks))\n",
        "        self.free = list(range(num_blocks))\n        self.evictions = 0\n",
    )
    path.write_text(text)
    subprocess.run(["git", "add", "vllm/v1/kv_offload/cpu/manager.py"], cwd=root, check=True)
    shown = path.relative_to(fork) if path.is_relative_to(fork) else path
    print(f"  (resolved {shown} by hand and ran `git add` there)")


def _land_follow_up(fork: Path) -> None:
    """Upstream lands a fix for #61050 on main, and the maintainer fetches it."""
    upstream = pygit2.Repository(str(fork.parent / "upstream.git"))
    demo.land_follow_up(upstream)
    subprocess.run(["git", "fetch", "--quiet", "upstream"], cwd=fork, check=True)
    print("  (upstream landed #61210, \"Fix for #61050\", on main; the maintainer ran `git fetch upstream`)")


STEPS: list[DemoStep] = [
    DemoStep(
        "A fresh clone of upstream: bring in the fork's series from its patch files (series.yaml comes along):",
        ("import", "{topics}"),
    ),
    DemoStep("What the fork carries over upstream v0.30.0:", ("status",)),
    DemoStep(
        "Does our series touch the offload directory? (exit 1 would mean no topic does)",
        ("touches", "vllm/v1/kv_offload"),
    ),
    DemoStep("Where topics sit across upstream's tree, and where they overlap:", ("touches",)),
    DemoStep("Every topic's scope claim, checked against its real diff:", ("check",)),
    DemoStep(
        "Which upstream files changed since our base that our topics also touch:",
        ("touches", "--between", "v0.30.0..v0.31.0"),
    ),
    DemoStep(
        "Upstream PR #61050 fixes the same eviction bug: carry it instead of our topic, authorship kept:",
        ("adopt-upstream", "61050", "--replaces", "offload-evict-fix"),
    ),
    DemoStep(
        "Their PR and ours, measured before saying anything on #61050. First the predictions, "
        "written down and frozen before the run (series log keeps the hash):",
        ("predict", "{measure}/predictions.yaml"),
    ),
    DemoStep(
        "A tiny CPU workload (an eviction trace over the offload policy) in three trees: the "
        "release, our superseded topic from its kept branch, their PR; --artifact writes what a "
        "GPU seat's job would upload (series measure --emit github writes that job):",
        (
            "measure",
            "--predictions",
            "{measure}/predictions.yaml",
            "--tree",
            "base",
            "--tree",
            "ours=topic:offload-evict-fix",
            "--tree",
            "theirs=topic:pr-61050",
            "--artifact",
            "{measure}/artifacts",
            "--",
            "python",
            "{measure}/evict_trace.py",
        ),
    ),
    DemoStep(
        "One prediction failed. It stays, struck; the reason goes in the journal, the claim is never rewritten:",
        ("predict", "{measure}/predictions.yaml", "--explain", "no-chunk0", demo_workload.WHY_NO_CHUNK0_FAILED),
    ),
    DemoStep(
        "The report from the artifacts (as from a GPU seat's), as JSON for the comment:",
        ("measure", "--collect", "{measure}/artifacts", "--predictions", "{measure}/predictions.yaml", "--json"),
        save="report.json",
    ),
    DemoStep(
        "The numbers go on #61050 as a comment, not a second PR (--dry-run: nothing is posted):",
        ("comment", "61050", "--measurement", "{measure}/report.json", "--dry-run"),
    ),
    DemoStep(
        "After posting, whose turn is it? One row per upstream PR the series records: its state, "
        "who owes the next move (a reply is due within 48 h), the gates (here from the demo's "
        "loopback GitHub; the fetch is stored for --offline):",
        ("upstream",),
        github="open",
    ),
    DemoStep(
        "A new release is out. How far along its history does the whole series still apply? (a dry run: nothing moves)",
        ("rebase", "--onto", "v0.31", "--as-far-as-possible", "--dry-run"),
    ),
    DemoStep(
        "Rebase every topic onto v0.31 (one topic is already upstream, one conflicts; the "
        "report names the upstream PR behind each):",
        ("rebase", "--onto", "v0.31"),
        expect=(3,),
    ),
    DemoStep("Resolve in the printed worktree, then go on:", ("rebase", "--continue"), before=_resolve_stats_conflict),
    DemoStep("The series after the rebase:", ("status",)),
    DemoStep("The operations so far (each can be undone with `series undo`):", ("log",)),
    DemoStep("v0.32 squash-merges #61050: the adopted PR retires by itself:", ("rebase", "--onto", "v0.32")),
    DemoStep("Upstream's side of it: merged, and in which release:", ("upstream",), github="merged"),
    DemoStep("Upstream CI steps that cover what the series touches:", ("test",)),
    DemoStep("The patched wheel: the release wheel with the series overlaid:", ("build", "--wheel", "{wheel}")),
    DemoStep(
        "Evidence for a PR comment: upstream's tests over the release build (the v0.32.0 wheel, "
        "installed in its own environment), with and without the topic whose conflict we resolved:",
        ("test", "offload-stats", "--run", "--python", "{env}", "--without", "offload-stats"),
    ),
    DemoStep(
        "Ready to send a topic upstream? The grade against vLLM's first-PR norms, the reviewers "
        "the guide allows, the description, and the duplicate search last (nothing is sent):",
        ("propose", "offload-stats", "--dry-run"),
    ),
    DemoStep(
        "An adopted PR keeps living upstream: a fix for #61050 lands after it, and status says "
        "the series does not carry it yet:",
        ("status",),
        before=_land_follow_up,
    ),
]


# Run in the interpreter that has pytest: the top-level entries (packages, modules, their
# .dist-info) of pytest and what it requires, one path a line.
_PYTEST_ENTRIES = r"""
import importlib.metadata as md
from packaging.requirements import Requirement
todo, seen, entries = ["pytest"], set(), set()
while todo:
    dist = md.distribution(todo.pop())
    if dist.metadata["Name"].lower() in seen:
        continue
    seen.add(dist.metadata["Name"].lower())
    base = dist.locate_file("")
    entries |= {str(base / f.parts[0]) for f in dist.files or ()
                if f.parts and f.parts[0] not in ("..", "bin", "__pycache__")}
    todo += [r.name for r in map(Requirement, dist.requires or ())
             if r.marker is None or r.marker.evaluate({"extra": ""})]
print("\n".join(sorted(entries)))
"""


def _evidence_env(directory: Path, wheel: Path, python: str) -> Path | None:
    """A venv holding the release wheel, and this interpreter's pytest (None without one).

    The venv has no pip: the demo wheel is pure Python, so installing it is unpacking it
    into the venv's site-packages; a .pth line lets the venv import pytest after its own
    packages, so its vllm is the wheel's. Only pytest and its requirements are linked
    there, not the whole environment: pytest would auto-load every plugin installed
    beside it (hypothesis alone is a second of imports per run) into upstream's tests.
    """
    import zipfile

    probe = subprocess.run([python, "-c", _PYTEST_ENTRIES], capture_output=True, text=True)
    if probe.returncode != 0:
        return None
    env = directory / "release-env"
    subprocess.run([python, "-m", "venv", "--without-pip", str(env)], check=True, capture_output=True)
    env_python = env / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [str(env_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(purelib)
    linked = env / "pytest-site"
    linked.mkdir()
    for entry in map(Path, probe.stdout.splitlines()):
        if entry.exists() and not (linked / entry.name).exists():
            (linked / entry.name).symlink_to(entry)
    (purelib / "zz-demo-pytest.pth").write_text(f"{linked}\n")
    return env_python


def run(directory: Path, echo: Callable[[str], None], python: str = sys.executable) -> Path:
    directory = directory.resolve()
    if directory.exists() and any(directory.iterdir()):
        raise SeriesError(f"{directory} is not empty", "give 'series demo' a new directory")
    directory.mkdir(parents=True, exist_ok=True)
    upstream_path, fork = directory / "upstream.git", directory / "fork"
    echo(f"Building a small upstream vLLM in {upstream_path} and a fork in {fork} ...")
    upstream = demo.build_upstream(upstream_path)
    demo.clone_fork(upstream_path, fork)
    topics = demo.example_topics()
    wheel = demo.build_release_wheel(upstream, "v0.32.0", directory / "wheels")
    env_python = _evidence_env(directory, wheel, python)
    measure = demo_workload.write(directory)
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", SERIES_OFFLINE="1")
    github = demo_github.FakeGitHub(upstream)
    try:
        _tour(
            fork,
            python,
            env,
            github,
            {"{wheel}": str(wheel), "{topics}": str(topics), "{env}": str(env_python), "{measure}": str(measure)},
            env_python is not None,
            echo,
        )
    finally:
        github.close()
    echo("")
    echo(f"Done. The fork is in {fork}: cd there and try 'series --help'.")
    return fork


def _tour(
    fork: Path,
    python: str,
    env: dict[str, str],
    github: demo_github.FakeGitHub,
    values: dict[str, str],
    has_pytest: bool,
    echo: Callable[[str], None],
) -> None:
    measure = Path(values["{measure}"])
    # the loopback GitHub gets its own token: never the user's (GH_TOKEN beats the others)
    online = {key: value for key, value in env.items() if key != "SERIES_OFFLINE"}
    online.update(SERIES_GITHUB_API=github.url, GH_TOKEN=demo_github.TOKEN)
    for number, step in enumerate(STEPS, 1):
        argv = tuple(_fill(a, values) for a in step.argv)
        echo("")
        echo(f"## {number}. {step.say}")
        if "{env}" in step.argv and not has_pytest:
            echo(f"(skipped: {python} has no pytest; `pip install pytest` and run the demo again)")
            continue
        if step.before is not None:
            step.before(fork)
        echo(f"$ series {shlex.join(argv)}" + (f" > {measure / step.save}" if step.save else ""))
        # a saved output is the command's stdout alone (JSON), its stderr shown apart
        if step.github is not None:
            github.state = step.github
        proc = subprocess.run(
            [python, "-m", "series", *argv],
            cwd=fork,
            env=online if step.github else env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if step.save else subprocess.STDOUT,
            text=True,
        )
        output = proc.stdout.rstrip()
        if step.save is not None:
            if proc.returncode in step.expect:
                (measure / step.save).write_text(proc.stdout)
                output = f"(saved to {measure / step.save})"
            output = "\n".join(filter(None, [proc.stderr.rstrip(), output]))
        if output:
            echo(output)
        if proc.returncode not in step.expect:
            raise SeriesError(
                f"demo step {number} (series {shlex.join(argv)}) exited {proc.returncode}, expected {step.expect}"
            )


def _fill(arg: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        arg = arg.replace(key, value)
    return arg


@click.command("demo")
@click.argument("directory", required=False, type=click.Path(path_type=Path, file_okay=False))
def command(directory: Path | None) -> None:
    """Build a small vLLM-shaped upstream and a fork in DIRECTORY, and run the tour.

    \b
    Works offline. DIRECTORY must be new or empty (default: a new temporary directory). The tour:
    status, touches, check, adopt-upstream 61050, their PR and ours measured on a tiny CPU
    workload (predictions frozen first, one failing and explained, the comment for #61050
    rendered with --dry-run), whose turn it is on #61050 after posting (series upstream,
    against a loopback server shaped like GitHub's API), rebase onto v0.31 with a merged
    topic and a conflict resolved, retiring the adopted PR on v0.32, test selection, the
    patched wheel, and a fix for #61050 landing upstream afterwards, which status reports.
    """

    if directory is None:
        import tempfile

        directory = Path(tempfile.mkdtemp(prefix="series-demo-"))
    run(directory, emit)
