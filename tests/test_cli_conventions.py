"""Shell conventions: completion with topic names, "schema": 1 in JSON, touches' exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests import forkserver
from tests.conftest import run_series
from tests.harness import series_process
from tests.repos import git


def complete(words: str, cwd: Path) -> list[str]:
    env = dict(
        os.environ,
        COMP_WORDS=words,
        COMP_CWORD=str(len(words.split()) - (0 if words.endswith(" ") else 1)),
        _SERIES_COMPLETE="bash_complete",
    )
    proc = series_process([], cwd, env)  # forked by the fork server: a process of its own, as a shell's
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line]
    assert all("," in line for line in lines), repr(proc.stdout)
    return [line.split(",", 1)[1] for line in lines]


def test_completion_scripts_and_topic_names(fork: Path) -> None:
    for shell, marker in (("bash", "complete -o"), ("zsh", "#compdef series"), ("fish", "complete --no-files")):
        out = run_series("completion", shell, cwd=fork).stdout
        assert marker in out and "_SERIES_COMPLETE" in out, (shell, out[:200])
    assert complete("series test off", fork) == ["offload-evict-fix"]
    assert "ipc-backport" in complete("series test --without ", fork)
    assert "rebase" in complete("series reb", fork)
    assert complete("series test off", fork.parent) == []  # no series.yaml: nothing, and no traceback


def test_json_documents_lead_with_the_schema(fork: Path) -> None:
    data = json.loads(run_series("status", "--json", cwd=fork).stdout)
    assert next(iter(data)) == "schema" and data["schema"] == 1, list(data)[:3]
    run_series("drop", "api-hello", cwd=fork)
    data = json.loads(run_series("log", "--json", cwd=fork).stdout)
    assert list(data) == ["schema", "operations"] and data["schema"] == 1, data
    assert [op["command"] for op in data["operations"]] == ["drop"], data


def test_touches_not_touched_is_1_and_an_error_is_2(fork: Path) -> None:
    assert run_series("touches", "docs", cwd=fork, expect=1).stderr == ""
    proc = run_series("touches", "--between", "v0.30.0..nope", cwd=fork, expect=2)
    assert "unknown ref 'nope'" in proc.stderr, proc.stderr


def test_markdown_report_has_tables_details_and_a_mermaid_picture(fork: Path) -> None:
    out = run_series("ci", "report", cwd=fork).stdout
    assert out.startswith("# series: v0.30.0\n"), out[:80]
    assert "| topic | status | commits | files | lines | rebase |" in out
    assert "<details><summary>offload-evict-fix: 2 file(s)</summary>" in out, out
    mermaid = out[out.index("```mermaid") :]
    assert "flowchart LR" in mermaid and "t_offload_evict_fix -- 1 --> d_vllm_v1" in mermaid, mermaid
    assert "| KV offload tests | cpu | offload-evict-fix |" in out, out


def test_owners_come_from_owner_keys_else_authors(fork: Path) -> None:
    assert run_series("ci", "owners", "offload-evict-fix", cwd=fork).stdout.strip() == "Fork Maintainer"
    text = (
        (fork / "series.yaml")
        .read_text()
        .replace("  - name: offload-evict-fix\n", "  - name: offload-evict-fix\n    owner: alice\n")
    )
    (fork / "series.yaml").write_text(text)
    assert run_series("ci", "owners", "offload-evict-fix", cwd=fork).stdout.strip() == "@alice"


def on_a_terminal(args: list[str], cwd: Path, **env: str) -> str:
    """Run series with stdout and stderr on a pseudo-terminal; return what the terminal got."""
    import pty

    master, slave = pty.openpty()
    full_env = {**os.environ, "TERM": "xterm", **env}
    proc: forkserver.Child | subprocess.Popen[bytes] | None = forkserver.spawn(
        args, str(cwd), full_env, (slave, slave, slave)
    )  # `python -m series`, forked by the fork server (or started, where it cannot serve it)
    if proc is None:
        proc = subprocess.Popen(
            [sys.executable, "-m", "series", *args], cwd=cwd, stdin=slave, stdout=slave, stderr=slave, env=full_env
        )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not data:
            break
        chunks.append(data)
    proc.wait()
    os.close(master)
    return b"".join(chunks).decode(errors="replace")


def pager(tag: str) -> str:
    return f"{sys.executable} -c \"import sys; sys.stdout.write('{tag}>' + sys.stdin.read())\""


PAGER = pager("PAGED")


def test_long_output_on_a_terminal_goes_through_the_pager(fork: Path) -> None:
    paged = on_a_terminal(["touches"], fork, PAGER=PAGER, LINES="5", COLUMNS="100")
    assert "PAGED>" in paged and "topics over v0.30.0" in paged, paged
    short = on_a_terminal(["touches"], fork, PAGER=PAGER, LINES="200", COLUMNS="100")
    assert "PAGED>" not in short and "topics over v0.30.0" in short, short
    assert "PAGED>" not in on_a_terminal(["--no-pager", "touches"], fork, PAGER=PAGER, LINES="5")


def test_the_pager_is_chosen_as_git_does_with_series_pager_first(fork: Path) -> None:
    def paged_by(**env: str) -> str:
        out = on_a_terminal(["touches"], fork, LINES="5", COLUMNS="100", **env)
        assert "topics over v0.30.0" in out, out
        return out.split(">", 1)[0].strip() if ">" in out.split("topics over", 1)[0] else ""

    assert paged_by(PAGER=pager("PAGER"), GIT_PAGER=pager("GIT")) == "GIT"
    assert paged_by(PAGER=pager("PAGER"), GIT_PAGER=pager("GIT"), SERIES_PAGER=pager("SERIES")) == "SERIES"
    assert paged_by(GIT_PAGER=pager("GIT"), SERIES_PAGER="") == ""  # set but empty: no pager
    assert paged_by(PAGER=pager("PAGER"), GIT_PAGER="cat") == ""  # cat: no pager, as in git
    git(fork, "config", "core.pager", pager("CORE"))
    assert paged_by(PAGER=pager("PAGER")) == "CORE"
    assert paged_by(PAGER=pager("PAGER"), GIT_PAGER=pager("GIT")) == "GIT"


def test_colour_on_a_terminal_honours_no_color_and_the_flag(fork: Path) -> None:
    sh_fail = ["rebase", "--onto", "v0.31.0", "--dry-run"]  # reports a conflict
    assert "\x1b[" in on_a_terminal(sh_fail, fork, LINES="200")
    assert "\x1b[" not in on_a_terminal(sh_fail, fork, LINES="200", NO_COLOR="1")
    assert "\x1b[" not in on_a_terminal(["--color", "never", *sh_fail], fork, LINES="200")
    piped = run_series("--color", "always", *sh_fail, cwd=fork, expect=None).stdout
    assert "\x1b[31m" in piped, piped
    assert "\x1b[" not in run_series(*sh_fail, cwd=fork, expect=None).stdout


def test_clicolor_force_colours_a_pipe_unless_no_color_or_the_flag_says_no(fork: Path) -> None:
    sh_fail = ["rebase", "--onto", "v0.31.0", "--dry-run"]  # reports a conflict

    def coloured(*args: str, **env: str) -> bool:
        return "\x1b[31m" in run_series(*args, *sh_fail, cwd=fork, expect=None, env=env).stdout

    assert coloured(CLICOLOR_FORCE="1")
    assert not coloured(CLICOLOR_FORCE="0")
    assert not coloured(CLICOLOR_FORCE="1", NO_COLOR="1")  # no-color.org wins over bixense
    assert not coloured("--color", "never", CLICOLOR_FORCE="1")  # the flag wins over both
    assert coloured("--color", "always", NO_COLOR="1")


def test_output_options_are_accepted_after_the_verb_too(fork: Path) -> None:
    sh_fail = ["rebase", "--onto", "v0.31.0", "--dry-run"]
    proc = run_series(*sh_fail, "--color=always", "-v", cwd=fork, expect=None)
    assert "\x1b[31m" in proc.stdout and "series.git: $ git" in proc.stderr, proc
    assert (
        "\x1b[" not in run_series("--color", "always", *sh_fail, "--color", "never", cwd=fork, expect=None).stdout
    )  # the later one wins
    proc = run_series("status", "-q", cwd=fork)
    assert proc.stdout == "" and proc.stderr == ""
    assert run_series("ci", "report", "--quiet", cwd=fork).stdout == ""  # a verb's own verb too
    assert "PAGED>" not in on_a_terminal(["touches", "--no-pager"], fork, PAGER=PAGER, LINES="5")


def test_quiet_prints_only_errors(fork: Path) -> None:
    proc = run_series("-q", "status", cwd=fork)
    assert proc.stdout == "" and proc.stderr == ""
    assert json.loads(run_series("-q", "status", "--json", cwd=fork).stdout)["schema"] == 1
    proc = run_series("-q", "test", "no-such-topic", cwd=fork, expect=1)
    assert "no topic named 'no-such-topic'" in proc.stderr, proc.stderr
