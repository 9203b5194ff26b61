"""One answer to "a topic's own commits and paths" (series.topics), whichever verb asks.

Two topics a fork really has: a stacked one (depends_on: its branch contains its
dependency's commits) and one rebased by hand onto a newer release (its branch contains
upstream's commits too). Every verb that reports, exports, selects tests for or builds a
topic must see the same own commits and paths as `series status`.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from tests.conftest import run_series, sh

LRU = "vllm/v1/kv_offload/cpu/policies/lru.py"
TEST_LRU = "tests/v1/kv_offload/test_lru.py"
API = "vllm/entrypoints/openai/api_server.py"
STACKED = "  - name: offload-more\n    branch: topic/offload-more\n    depends_on: [offload-evict-fix]\n"


@pytest.fixture
def stacked(fork: Path) -> Path:
    """offload-more stacked on offload-evict-fix; api-hello rebased by hand onto upstream's
    v0.31.0, whose one commit changes lru.py, the scheduler and ipc.py."""
    sh(
        "git checkout -q -B topic/offload-more topic/offload-evict-fix && "
        f"echo '# more' >> {LRU} && git commit -qam '[KV offload] more' && "
        "git checkout -q topic/api-hello && git rebase -q upstream/main && "
        "git checkout -q --detach v0.30.0",
        fork,
    )
    with (fork / "series.yaml").open("a") as f:
        f.write(STACKED)
    return fork


def _json(fork: Path, *args: str, env: dict[str, str] | None = None, expect: int = 0) -> dict:  # type: ignore[type-arg]
    return json.loads(run_series(*args, "--json", cwd=fork, env=env, expect=expect).stdout)


def _status(fork: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    return {t["name"]: t for t in _json(fork, "status")["topics"]}


def _touched(fork: Path) -> dict[str, list[str]]:
    return {t["name"]: [f["path"] for f in t["files"]] for t in _json(fork, "touches", "vllm", "tests")["topics"]}


def _selected(fork: Path) -> dict[str, list[str]]:
    return {s["key"]: s["topics"] for s in _json(fork, "test")["steps"]}


def _preflight(fork: Path, httpserver: HTTPServer, name: str) -> dict:  # type: ignore[type-arg]
    # GitHub with no pull requests at all: the report is the topic's own commits and paths
    httpserver.expect_request("/repos/vllm-project/vllm/pulls").respond_with_json([])
    return _json(fork, "preflight", name, env={"SERIES_GITHUB_API": httpserver.url_for("")})


def test_stacked_and_hand_rebased_topics_are_counted_alike_everywhere(
    stacked: Path, tmp_path: Path, httpserver: HTTPServer
) -> None:
    status = _status(stacked)
    assert (status["offload-more"]["commits"], status["offload-more"]["files"]) == (1, 1), status
    assert status["offload-more"]["on_base"] is True, "it sits on its dependency's head"
    assert (status["api-hello"]["commits"], status["api-hello"]["files"]) == (1, 1), status
    assert status["api-hello"]["on_base"] is False, status

    touched = _touched(stacked)
    assert touched["offload-more"] == [LRU] and touched["api-hello"] == [API], touched

    check = _json(stacked, "check", expect=1)
    # upstream's lru.py, scheduler and ipc.py changes counted as api-hello's would fall
    # outside its scope [vllm/entrypoints/]
    assert [p["key"] for p in check["problems"]] == ["topics (offload-evict-fix).scope", "topics (api-hello).branch"], (
        check
    )
    assert "not on v0.30.0" in check["problems"][1]["message"], check

    export = _json(stacked, "export", str(tmp_path / "patches"))
    patches = {t["name"]: t["patches"] for t in export["topics"]}
    assert patches["offload-more"] == ["0001-KV-offload-more.patch"], patches
    assert patches["api-hello"] == ["0001-Fork-hello-endpoint.patch"], patches
    assert [n.split(":")[0] for n in export["notes"]] == ["api-hello"], export["notes"]

    report = _preflight(stacked, httpserver, "offload-more")
    assert report["paths"] == [LRU] and len(report["commits"]) == 1, report

    # api-hello's own change selects no step; upstream's lru.py change would select kv-offload
    assert _selected(stacked) == {"kv-offload": ["offload-evict-fix", "offload-more"]}

    run_series("build", cwd=stacked)
    built = set(sh("git diff --name-only v0.30.0 series/integration", stacked).split())
    assert built == {p for paths in touched.values() for p in paths}, (
        "the integration tree is the base plus the topics' own changes, upstream's v0.31.0 not among them"
    )


def _dependency_moves_on(fork: Path) -> None:
    """offload-evict-fix gains a commit after offload-more was stacked on it."""
    sh(
        f"git checkout -q topic/offload-evict-fix && echo 'X = 1' >> {TEST_LRU} && "
        "git commit -qam '[Test] one more' && git checkout -q --detach v0.30.0",
        fork,
    )


def test_a_dependency_that_moved_on_is_not_undone_by_the_integration_build(stacked: Path) -> None:
    _dependency_moves_on(stacked)
    status = _status(stacked)
    assert status["offload-more"]["commits"] == 1 and status["offload-more"]["on_base"] is False, status
    assert _touched(stacked)["offload-more"] == [LRU]
    run_series("build", cwd=stacked)
    # the stacked topic's own diff starts at the dependency's head it was made on: from the
    # dependency's head now it would revert '[Test] one more' in the integration tree
    assert "X = 1" in sh(f"git show series/integration:{TEST_LRU}", stacked)
    assert "# more" in sh(f"git show series/integration:{LRU}", stacked)


def test_export_flags_a_stacked_topic_off_its_dependency_as_status_does(stacked: Path, tmp_path: Path) -> None:
    _dependency_moves_on(stacked)
    assert _status(stacked)["offload-more"]["on_base"] is False
    line = next(l for l in run_series("status", cwd=stacked).stdout.splitlines() if "offload-more" in l)
    assert "warning: not on the head of offload-evict-fix (forks at " in line, line
    problems = {p["key"]: p["message"] for p in _json(stacked, "check", expect=1)["problems"]}
    assert (
        "not on the head of offload-evict-fix: re-stack it on that branch: 'series rebase --onto v0.30.0'"
        in problems["topics (offload-more).branch"]
    ), problems
    export = _json(stacked, "export", str(tmp_path / "patches"))
    assert sorted(n.split(":")[0] for n in export["notes"]) == ["api-hello", "offload-more"], export["notes"]
    assert "offload-more: branch does not sit on the head of offload-evict-fix;" in export["notes"][-1], export
    assert {t["name"]: t["patches"] for t in export["topics"]}["offload-more"] == ["0001-KV-offload-more.patch"]


def test_a_dependency_dropped_with_its_branch_gone_leaves_its_commits_to_the_stack(
    stacked: Path, httpserver: HTTPServer
) -> None:
    """The rebase replays them with the stacked topic, so every verb counts them as its own."""
    text = (stacked / "series.yaml").read_text()
    (stacked / "series.yaml").write_text(
        text.replace(
            "    branch: topic/offload-evict-fix\n", "    branch: topic/offload-evict-fix\n    status: dropped\n"
        )
    )
    sh("git branch -D -q topic/offload-evict-fix", stacked)
    status = _status(stacked)
    assert status["offload-more"]["commits"] == 3 and status["offload-more"]["files"] == 2, status
    assert _touched(stacked)["offload-more"] == [TEST_LRU, LRU]
    assert _selected(stacked) == {"kv-offload": ["offload-more"]}
    report = _preflight(stacked, httpserver, "offload-more")
    assert report["paths"] == [TEST_LRU, LRU] and len(report["commits"]) == 3, report


def test_diff_compares_a_stacked_topics_own_commits(stacked: Path, tmp_path: Path) -> None:
    run_series("export", str(tmp_path / "one"), cwd=stacked)
    sh(
        f"git checkout -q topic/offload-more && echo '# again' >> {LRU} && "
        "git commit -qam '[KV offload] again' && git checkout -q --detach v0.30.0",
        stacked,
    )
    run_series("export", str(tmp_path / "two"), cwd=stacked)
    out = _json(stacked, "diff", str(tmp_path / "one"), str(tmp_path / "two"))
    counts = {c["topic"]: c["counts"] for c in out["changes"] if c["change"] == "commits"}
    # its dependency's two commits are offload-evict-fix's, not offload-more's
    assert counts["offload-more"] == {"equal": 1, "changed": 0, "dropped": 0, "added": 1}, counts
    assert counts["api-hello"] == {"equal": 1, "changed": 0, "dropped": 0, "added": 0}, counts


def test_init_and_add_count_what_status_counts(stacked: Path) -> None:
    """Before series.yaml exists (init) or holds the topic (add), the same answer."""
    commits = {n: t["commits"] for n, t in _status(stacked).items()}
    (stacked / "series.yaml").unlink()
    out = run_series("init", "--base", "v0.30.0", cwd=stacked).stdout
    found = {line.split()[0]: line.split()[2:] for line in out.splitlines() if line.startswith("  ")}
    assert found["offload-more"] == ["1", "commit", "(on", "offload-evict-fix)"], out
    assert found["api-hello"] == ["1", "commit"], out
    assert {n: t["commits"] for n, t in _status(stacked).items()} == commits
    text = (stacked / "series.yaml").read_text()
    (stacked / "series.yaml").write_text(text[: text.index("  - name: offload-more\n")])
    out = run_series("add", "topic/offload-more", "--depends-on", "offload-evict-fix", cwd=stacked).stdout
    assert out.startswith("added topic offload-more (topic/offload-more, 1 commit over v0.30.0)"), out
    assert "warning" not in out, "it sits on its dependency's head"
    assert {n: t["commits"] for n, t in _status(stacked).items()} == commits


def test_only_series_topics_separates_a_branchs_own_commits() -> None:
    """CONTRIBUTING.md rule 3: which of a branch's commits are its own (not upstream's, not a
    dependency's) is decided in series.topics, and every verb, the rebase plan included,
    asks it: nothing else reads upstream's tips or walks a branch's own range."""
    root = Path(__file__).resolve().parent.parent / "series"
    users: dict[str, set[str]] = {"upstream_tips": set(), "topic_range": set(), "own_work": set()}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.ImportFrom)
                else [node.id]
                if isinstance(node, ast.Name)
                else [node.attr]
                if isinstance(node, ast.Attribute)
                else []
            )
            for name in names:
                if name in users:
                    users[name].add(str(path.relative_to(root.parent)))
    assert users == {"upstream_tips": {"series/topics.py"}, "topic_range": set(), "own_work": set()}, users
