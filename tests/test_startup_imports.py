"""Start-up loads only what the command's path needs (issue 34): a fitness test, not a timing.

`series --help` and a verb up to its first git call (where it opens the workspace) import
none of the heavy packages: the analyses, the forge, the wheel and the test trees, and for
--help not pygit2.
They load inside the function that first needs them. tools/bench_startup.py has the
figures; this keeps a new top-level import from silently taking them back.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# What was analysis/ (the semantic check, history, the rebase report, propose, measure, test
# selection) and ship/ (the wheel, the test trees), and the forge.
ANALYSES = (
    "series.semantic",
    "series.history",
    "series.report",
    "series.propose",
    "series.measure",
    "series.evidence.testmap",
    "series.evidence.testmap_legacy",
    "series.evidence.pipeline",
    "series.evidence.imports",
)
HEAVY = ANALYSES + ("series.forge", "series.wheel", "series.evidence")

# The CLI in a fresh interpreter, stopped where the verb asks for its workspace (the first
# git call); prints what was imported by then.
_PROBE = textwrap.dedent("""
    import sys
    import series.cli

    def stop(self, *args, **kwargs):
        raise SystemExit(0)

    series.cli.Context.workspace = stop
    try:
        series.cli.main(sys.argv[1:])
    except SystemExit:
        pass
    print("LOADED", " ".join(sorted(sys.modules)))
""")


# The same, with the workspace's module imported where the verb stops: what opening the
# workspace costs before it opens the repository (config.find and read_text are file reads).
_PROBE_WORKSPACE = _PROBE.replace("raise SystemExit(0)", "import series.workspace\n    raise SystemExit(0)")

# What opening the repository brings (pygit2, ~35-50 ms of its own) and the write path's
# modules: loaded by open_workspace at its first git call, never at start-up.
REPOSITORY = ("pygit2", "series.ops", "series.topics", "series.seriesfile.edit", "series.git")


def _loaded(*argv: str, probe: str = _PROBE) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, cwd=ROOT)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("LOADED")), None)
    assert line is not None, proc.stdout + proc.stderr
    return set(line.split()[1:])


def _under(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


# Loaded where they are used: the error path (a bug log's traceback and platform, the
# printable() patterns of series.validate), the pager (shutil.which), a misspelt key's
# suggestion (difflib), the global options' holder (a plain class: no dataclasses).
ON_USE = ("traceback", "series.validate", "difflib", "dataclasses", "logging")


def test_help_imports_no_heavy_package_and_not_pygit2() -> None:
    loaded = _loaded("--help")
    assert _under(loaded, HEAVY + ("series.engine", "series.verbs.", "pygit2")) == []
    assert _under(loaded, ON_USE) == []


def test_rebase_dry_run_imports_no_heavy_package_before_its_first_git_call() -> None:
    """The rebase engine and its semantic check load once the workspace is open."""
    loaded = _loaded("rebase", "--onto", "v0.31.0", "--dry-run")
    assert "series.verbs.rebase" in loaded
    assert _under(loaded, HEAVY + ("series.engine.rebase", "series.engine.replay")) == []


def test_the_workspace_module_loads_no_pygit2_before_the_repository_opens() -> None:
    """series.workspace imports config (to find and read series.yaml) and nothing of git:
    pygit2 and the write path load in open_workspace when it opens the repository."""
    loaded = _loaded("rebase", "--onto", "v0.31.0", "--dry-run", probe=_PROBE_WORKSPACE)
    assert {"series.workspace", "series.seriesfile.config"} <= loaded
    assert _under(loaded, REPOSITORY + ("difflib", "shutil")) == []


def test_build_of_a_wheel_file_imports_neither_analysis_forge_nor_the_download() -> None:
    """The ship is the build's own work; the index client (urllib.request, html.parser,
    packaging's tags) is only for a wheel fetched without pip."""
    loaded = _loaded("build", "--wheel", "vllm-0.31.0-cp38-abi3-manylinux_2_28_x86_64.whl")
    assert "series.verbs.build" in loaded
    assert _under(loaded, ANALYSES + ("series.forge", "urllib.request", "html.parser", "packaging.tags")) == []
