"""Exit codes and messages: user errors are one line, bugs get exit 4 and a log file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import run_series
from tests.parsed import parsed

BUG_SCRIPT = """
import sys
import series.verbs.status as status
def broken(ws):
    raise RuntimeError("boom from a test")
status.run = broken
from series.cli import main
sys.argv = ["series", "status"]
main()
"""


def test_a_bug_exits_4_and_names_a_log_with_the_traceback(fork: Path, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", BUG_SCRIPT], cwd=fork, capture_output=True, text=True)
    assert proc.returncode == 4, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    logs = list((tmp_path / "logs").glob("series-*.log"))
    assert len(logs) == 1 and str(logs[0]) in proc.stderr, (logs, proc.stderr)
    text = logs[0].read_text()
    assert "boom from a test" in text and "Traceback" in text and "pygit2" in text, text


def test_the_bug_log_never_holds_the_environment(fork: Path, tmp_path: Path) -> None:
    secret = "ghp_" + "x" * 36
    subprocess.run(
        [sys.executable, "-c", BUG_SCRIPT],
        cwd=fork,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "GITHUB_TOKEN": secret},
    )
    for log in (tmp_path / "logs").glob("*.log"):
        assert secret not in log.read_text(), log


def test_usage_error_exits_2(fork: Path) -> None:
    proc = run_series("status", "--no-such-flag", cwd=fork, expect=2)
    assert "no such option" in proc.stderr.lower(), proc.stderr


def test_help_teaches(fork: Path) -> None:
    out = run_series("--help", cwd=fork).stdout
    assert "series.yaml" in out and "rebase --onto" in out, out
    assert "Exit codes: 0 ok, 1 an error you can fix" in out and "4 a bug in series" in out, out
    assert "5 'test --run'" in out and "touches: 0 touched, 1 not touched" in out, out


def test_a_mistyped_verb_names_the_nearest(fork: Path) -> None:
    proc = run_series("stauts", cwd=fork, expect=2)
    assert "No such command 'stauts'. Did you mean 'status'?" in proc.stderr, proc.stderr
    assert "Did you mean" not in run_series("xyzzy", cwd=fork, expect=2).stderr
    proc = run_series("help", "rebsae", cwd=fork, expect=2)
    assert "Did you mean 'rebase'?" in proc.stderr, proc.stderr


def test_help_verb_is_the_verbs_own_help(fork: Path) -> None:
    assert run_series("help", cwd=fork).stdout == run_series("--help", cwd=fork).stdout
    for verb in (["rebase"], ["add"], ["ci", "report"]):  # add has a required argument
        assert run_series("help", *verb, cwd=fork).stdout == run_series(*verb, "--help", cwd=fork).stdout
    assert "Usage: series ci report" in run_series("help", "ci", "report", cwd=fork).stdout
    run_series("help", "status", "extra", cwd=fork, expect=2)


def test_version_names_git_pygit2_and_libgit2(fork: Path) -> None:
    import pygit2

    lines = run_series("--version", cwd=fork).stdout.splitlines()
    assert lines[0].startswith("series ") and lines[1].startswith("git version "), lines
    assert lines[2] == f"pygit2 {pygit2.__version__} (libgit2 {pygit2.LIBGIT2_VERSION})", lines
    lines = run_series("--version", cwd=fork, env={"PATH": str(fork)}).stdout.splitlines()  # no git on PATH
    assert lines[1] == "git: git is not installed or not on PATH", lines


def test_a_hint_is_its_own_line_after_the_error(fork: Path) -> None:
    """SeriesError(message, hint): what was refused on the error line, how to go on on a
    `hint:` line, as git prints them; a caller wording the error elsewhere keeps both."""
    from series.errors import SeriesError

    proc = run_series("add", "topic/nope", cwd=fork, expect=1)
    assert proc.stderr == (
        "series: error: no local branch 'topic/nope'\nhint: create it first (git branch NAME START)\n"
    ), proc.stderr
    error = SeriesError("unknown ref 'x'", "nearest tags: v0.30.0")
    assert (str(error), error.hint, error.text) == (
        "unknown ref 'x'",
        "nearest tags: v0.30.0",
        "unknown ref 'x' (nearest tags: v0.30.0)",
    )
    assert SeriesError("plain").text == "plain" and SeriesError("plain").hint is None


def test_no_error_outside_the_engine_hides_its_hint_in_the_message() -> None:
    """A refusal whose message goes on with what to do ('...: run X', '...; pass --Y')
    passes that as hint=, so it is printed on its own line. The engine names no CLI
    command or flag, so its refusals are the verbs' to word (issue 25's transaction item)."""
    import ast
    import re

    said = re.compile(r"[;:] (run '|(pass|set|give|use|add|install|fetch|create|delete|remove|drop|try|see) )")
    package = Path(__file__).resolve().parent.parent / "series"
    errors = {"SeriesError", "ConflictError", "ForgeError", "ForgeUnreachable", "HttpRefused", "HttpUnreachable"}
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).parts[0] == "engine":
            continue
        for node in ast.walk(parsed(path)):
            if (
                isinstance(node, ast.Call)
                and len(node.args) == 1
                and getattr(node.func, "id", getattr(node.func, "attr", "")) in errors
            ):
                text = "".join(
                    c.value for c in ast.walk(node.args[0]) if isinstance(c, ast.Constant) and isinstance(c.value, str)
                )
                if said.search(text):
                    found.append(f"{path.relative_to(package)}:{node.lineno}: {text[:80]}")
    assert found == []
