"""Hostile input to `series ci` (issue 22): a rebase report that is not one, and `ci init`
onto what is not a plain file inside the fork. Each is one line, exit 1, nothing written."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_series


def one_line_error(proc: object, *named: str) -> str:
    err = proc.stderr.strip()  # type: ignore[attr-defined]
    assert proc.returncode == 1 and len(err.splitlines()) == 1, err  # type: ignore[attr-defined]
    assert err.startswith("series: error: ") and "Traceback" not in err, err
    for word in named:
        assert word in err, (word, err)
    return err


# -- ci report --rebase / ci owners --report ------------------------------------------------

def test_a_real_rebase_report_is_read(fork: Path, tmp_path: Path) -> None:
    proc = run_series("rebase", "--onto", "v0.31.0", "--dry-run", "--json", cwd=fork, expect=3)
    report = tmp_path / "rebase.json"
    report.write_text(proc.stdout)
    out = run_series("ci", "report", "--rebase", str(report), cwd=fork).stdout
    assert "| rebase | **conflict** |" in out and "| offload-evict-fix | active |" in out, out
    assert "**conflict** at" in out, out
    owners = run_series("ci", "owners", "--report", str(report), cwd=fork).stdout.strip()
    assert owners == "Fork Maintainer", owners


TOPIC = {"name": "offload-evict-fix", "outcome": "conflict"}


@pytest.mark.parametrize("content, said", [
    (json.dumps({"schema": 1, "status": "clean", "topics": 5}), "'topics' is not a list"),
    (json.dumps([{"schema": 1}]), "'the document' is not an object"),
    (json.dumps({"status": "clean", "topics": []}), "'schema' is None, not 1"),
    (json.dumps({"schema": 2, "status": "clean", "topics": []}), "'schema' is 2, not 1"),
    (json.dumps({"schema": 1, "topics": []}), "'status' is not a string"),
    (json.dumps({"schema": 1, "status": "clean", "topics": [5]}), "'topics[0]' is not an object"),
    (json.dumps({"schema": 1, "status": "clean", "topics": [{"name": 5, "outcome": "clean"}]}),
     "topics[0]: 'name' is not a string"),
    (json.dumps({"schema": 1, "status": "conflict", "topics": [dict(TOPIC, conflict=[])]}),
     "topics[0]: 'conflict' is not an object"),
    (json.dumps({"schema": 1, "status": "conflict",
                 "topics": [dict(TOPIC, conflict={"commit": "ab", "subject": "s", "files": "x"})]}),
     "topics[0]: 'files' is not a list of strings"),
    ("{not json", "not JSON"),
    (b"\xff\xfe{}", "not UTF-8 at byte 0"),
])
@pytest.mark.parametrize("verb", [("ci", "report", "--rebase"), ("ci", "owners", "--report")])
def test_a_rebase_report_that_is_not_one_is_named(fork: Path, tmp_path: Path, content: str | bytes,
                                                 said: str, verb: tuple[str, ...]) -> None:
    report = tmp_path / "rebase.json"
    report.write_bytes(content if isinstance(content, bytes) else content.encode())
    proc = run_series(*verb, str(report), cwd=fork, expect=None)
    one_line_error(proc, str(report), "not a 'series rebase --json' report", said)
