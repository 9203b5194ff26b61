"""Every series.yaml mistake: a one-line error naming file, line and key; exit 1; no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_series, sh

HEAD = "upstream:\n  remote: upstream\n  base: v0.30.0\ntopics:\n"


def _fails(fork: Path, text: str, *args: str) -> str:
    (fork / "series.yaml").write_text(text)
    # touches exits 2 on an error, as grep does (its 1 means "not touched")
    proc = run_series(*(args or ("status",)), cwd=fork, expect=2 if args[:1] == ("touches",) else 1)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("series: error: series.yaml:"), proc.stderr
    # one line, and a hint on a line of its own when there is one
    assert proc.stderr.count("\n") == 1 + proc.stderr.count("\nhint: "), f"not one line:\n{proc.stderr}"
    return proc.stderr.strip()


@pytest.mark.parametrize(
    "text, expected",
    [
        pytest.param(
            HEAD + "  - name: a\n   branch: topic/api-hello\n",
            "series.yaml:6: malformed YAML: expected <block end>, but found '<block mapping start>' "
            "(line 6: 'branch: topic/api-hello'; check indentation and brackets)",
            id="bad-indent",
        ),
        pytest.param(
            HEAD + "  - name: a\n    scope: [vllm/v1\n",
            "series.yaml:6: malformed YAML: expected ',' or ']', but got '<stream end>' "
            "(line 6: 'scope: [vllm/v1'; check indentation and brackets)",
            id="open-bracket",
        ),
        pytest.param(
            "upstream:\n  remote: upstream\n  base: v0.30.0\n  base: v0.31.0\ntopics: []\n",
            "series.yaml:4: malformed YAML: found duplicate key \"base\"",
            id="duplicate-key",
        ),
        pytest.param(
            HEAD + "  - name: a\n    branch: topic/api-hello\n    dependson: [b]\n",
            "series.yaml:7: topics[0] (a).dependson: unknown key (did you mean 'depends_on'? allowed: ",
            id="unknown-topic-key",
        ),
        pytest.param(
            "upstream:\n  remote: upstream\n  basis: v0.30.0\ntopics: []\n",
            "series.yaml:3: upstream.basis: unknown key (did you mean 'base'?",
            id="unknown-upstream-key",
        ),
        pytest.param(
            HEAD.replace("topics:", "topic:"),
            "series.yaml:4: topic: unknown key (did you mean 'topics'?",
            id="unknown-top-key",
        ),
        pytest.param(
            HEAD + "  - name: a\n    branch: topic/api-hello\n  - name: a\n    branch: topic/sched-note\n",
            "series.yaml:7: topics[1].name: duplicate topic name 'a' (first at line 5)",
            id="duplicate-name",
        ),
        pytest.param(
            HEAD + "  - name: a\n    branch: topic/api-hello\n    depends_on: [b]\n",
            "series.yaml:7: topics[0] (a).depends_on: 'b' is not a topic in this file",
            id="dangling-depends_on",
        ),
        pytest.param(
            HEAD + "  - name: a\n    branch: topic/api-hello\n    depends_on: [b]\n"
            "  - name: b\n    branch: topic/sched-note\n",
            "series.yaml:7: topics[0] (a).depends_on: 'b' must come earlier in the series",
            id="depends_on-order",
        ),
        pytest.param(
            HEAD + "  - name: a\n    branch: topic/api-hello\n    status: superseded\n    superseded_by: pr-61050\n",
            "series.yaml:8: topics[0] (a).superseded_by: 'pr-61050' is not a topic in this file",
            id="dangling-superseded_by",
        ),
        pytest.param(
            HEAD + "  - name: a\n    branch: topic/api-hello\n    status: retired\n",
            "series.yaml:7: topics[0] (a).status: 'retired' is not one of active, superseded, merged, dropped",
            id="bad-status",
        ),
        pytest.param(
            HEAD + "  - name: Offload Fix\n    branch: topic/api-hello\n",
            "series.yaml:5: topics[0].name: required, lowercase [a-z0-9._-]",
            id="bad-name",
        ),
        pytest.param(
            "upstream:\n  remote: upstream\ntopics: []\n",
            "series.yaml:2: upstream.base: required, a non-empty string",
            id="missing-base",
        ),
        # past Python's int() limit (4,300 digits): ruamel's ValueError has no position
        pytest.param(
            HEAD + "  - name: a\n    branch: topic/api-hello\n    upstream_pr: " + "9" * 5000 + "\n",
            "series.yaml:7: upstream_pr: a number of 5000 digits is no value series.yaml takes "
            "(a pull request number has at most 9 digits)",
            id="upstream_pr-5000-digits",
        ),
        pytest.param(
            HEAD + "  - name: a\n    branch: topic/api-hello\n    upstream_pr: 12345678901\n",
            "series.yaml:7: topics[0] (a).upstream_pr: expected a pull request number (at most 9 digits)",
            id="upstream_pr-11-digits",
        ),
    ],
)
def test_config_error(fork: Path, text: str, expected: str) -> None:
    message = _fails(fork, text)
    assert message.startswith(f"series: error: {expected}"), message


def test_unknown_base_names_line_and_key(fork: Path) -> None:
    for command in ("status", "touches"):
        message = _fails(fork, "# fork\nupstream:\n  remote: upstream\n  base: v0.29.0\ntopics: []\n", command)
        assert message.startswith(
            "series: error: series.yaml:4: upstream.base: unknown ref 'v0.29.0': "
            "not a branch, tag or commit here\nhint: nearest tags: v0.30.0, v0.31.0"
        ), message


def test_missing_branch_names_line_and_key(fork: Path) -> None:
    sh("git branch -D -q topic/ipc-backport", fork)
    (fork / "series.yaml").write_text((fork / "series.yaml").read_text())
    proc = run_series("touches", "vllm", cwd=fork, expect=2)  # touches: errors are 2 (1 is "not touched")
    assert proc.stderr == (
        "series: error: series.yaml:17: topics (ipc-backport).branch: branch "
        "'topic/ipc-backport' does not exist (create it, or fix the name)\n"
    ), proc.stderr
    proc = run_series("check", cwd=fork, expect=1)
    assert "series.yaml:17: topics (ipc-backport).branch: branch 'topic/ipc-backport' does not exist" in proc.stdout, (
        proc.stdout
    )


def test_a_tool_edit_that_would_break_the_file_is_refused(fork: Path) -> None:
    # add validates the edited document before replacing the file
    sh("git branch topic/x topic/api-hello", fork)
    before = (fork / "series.yaml").read_text()
    proc = run_series("add", "topic/x", "--depends-on", "api-hello", "--after", "sched-note", cwd=fork, expect=1)
    assert "topics[1] (x).depends_on: 'api-hello' must come earlier in the series" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert (fork / "series.yaml").read_text() == before
