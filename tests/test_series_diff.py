"""series diff OLD NEW: exports, series.yaml revisions and journal operations."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2

from series.workspace import transaction
from tests.conftest import run_series, sh


def _changes(out: str) -> dict[tuple[str, str], dict[str, object]]:
    return {(c["topic"], c["change"]): c for c in json.loads(out)["changes"]}


def test_diff_of_two_exports(fork: Path, tmp_path: Path) -> None:
    run_series("export", str(tmp_path / "one"), cwd=fork)
    sh("git branch -f topic/offload-evict-fix topic/offload-evict-fix~1", fork)
    (fork / "series.yaml").write_text(
        (fork / "series.yaml")
        .read_text()
        .replace("    branch: topic/api-hello\n", "    branch: topic/api-hello\n    status: dropped\n")
    )
    run_series("export", str(tmp_path / "two"), cwd=fork)
    out = run_series("diff", str(tmp_path / "one"), str(tmp_path / "two"), "--json", cwd=fork).stdout
    changes = _changes(out)
    assert changes[("api-hello", "status")]["new_status"] == "dropped", out
    assert changes[("offload-evict-fix", "commits")]["counts"] == {
        "equal": 1,
        "changed": 0,
        "dropped": 1,
        "added": 0,
    }, out
    assert changes[("sched-note", "commits")]["counts"]["equal"] == 1, out
    text = run_series("diff", str(tmp_path / "one"), str(tmp_path / "two"), cwd=fork).stdout
    assert "~ api-hello: active -> dropped" in text and "[Test] cover touch order" in text, text


def test_diff_of_two_series_yaml_revisions(fork: Path) -> None:
    sh("git add series.yaml && git commit -qm 'series: four topics'", fork)
    text = (fork / "series.yaml").read_text()
    text = text.replace(
        "  - name: ipc-backport\n    branch: topic/ipc-backport\n",
        "  - name: ipc-backport\n    branch: topic/ipc-backport\n    status: merged\n    merged_in: v0.31.0\n",
    )
    text = text.replace("  - name: api-hello\n    branch: topic/api-hello\n    scope: [vllm/entrypoints/]\n", "")
    text += "  - name: new-thing\n    branch: topic/new-thing\n"
    (fork / "series.yaml").write_text(text)
    sh("git commit -qam 'series: retire, drop, add'", fork)
    out = run_series("diff", "HEAD~1:series.yaml", "HEAD:series.yaml", cwd=fork).stdout
    assert "+ new-thing (added, active)" in out, out
    assert "- api-hello (removed, was active)" in out, out
    assert "~ ipc-backport: active -> merged (in v0.31.0)" in out, out
    assert "range-diff" not in out, "a series.yaml alone has no commits to compare"


def test_diff_of_two_journal_operations_around_a_rebase(fork: Path) -> None:
    """A rebase as the engine journals it: branches move and upstream.base changes together."""
    new_heads = {}
    for topic in ("sched-note", "api-hello"):
        sh(f"git checkout -q --detach topic/{topic} && git rebase -q --onto v0.31.0 v0.30.0", fork)
        new_heads[topic] = sh("git rev-parse HEAD", fork).strip()
    sh("git checkout -q --detach v0.30.0", fork)
    repo = pygit2.Repository(str(fork))
    with transaction(repo, "rebase", "onto v0.31.0", config_path=fork / "series.yaml") as tx:
        for topic, head in new_heads.items():
            tx.move(f"refs/heads/topic/{topic}", head)
        tx.edit(("upstream", "base"), "v0.31.0")
        op = tx.commit()
    number = op.id.split("-")[0]
    out = run_series("diff", f"{number}^", number, "--json", cwd=fork).stdout
    data = json.loads(out)
    assert (data["old_base"], data["new_base"]) == ("v0.30.0", "v0.31.0"), out
    changes = _changes(out)
    # the commits were replayed unchanged: range-diff pairs them as equal
    assert changes[("sched-note", "commits")]["counts"]["equal"] == 1, out
    assert changes[("offload-evict-fix", "commits")]["counts"]["equal"] == 2, out
    text = run_series("diff", f"{number}^", op.id, cwd=fork).stdout
    assert "base: v0.30.0 -> v0.31.0" in text, text
    # and later, after the user amends a topic, the operation still shows its own state
    sh(
        "git checkout -q topic/api-hello && echo '# x' >> vllm/entrypoints/openai/api_server.py && "
        "git commit -qam amend && git checkout -q --detach v0.30.0",
        fork,
    )
    again = _changes(run_series("diff", f"{number}^", number, "--json", cwd=fork).stdout)
    assert again[("api-hello", "commits")]["counts"]["equal"] == 1


def test_diff_of_an_export_against_a_changed_topic_shows_changed_commits(fork: Path, tmp_path: Path) -> None:
    run_series("export", str(tmp_path / "one"), cwd=fork)
    sh(
        "git checkout -q topic/sched-note && sed -i 's/fork note/fork note, reworded/' "
        "vllm/v1/core/sched/scheduler.py && git commit -qa --amend --no-edit && "
        "git checkout -q --detach v0.30.0",
        fork,
    )
    run_series("export", str(tmp_path / "two"), cwd=fork)
    changes = _changes(run_series("diff", str(tmp_path / "one"), str(tmp_path / "two"), "--json", cwd=fork).stdout)
    assert changes[("sched-note", "commits")]["counts"]["changed"] == 1


def test_diff_rejects_what_it_cannot_read(fork: Path) -> None:
    proc = run_series("diff", "nope", "series.yaml", cwd=fork, expect=1)
    assert "operation id" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_diff_of_a_real_rebase_from_the_journal(fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", cwd=fork)
    ops = sorted(p.name for p in (fork / ".git" / "series" / "journal").glob("*.json"))
    assert len(ops) == 1, ops
    number = ops[0].split("-")[0]
    out = run_series("diff", f"{number}^", number, "--json", cwd=fork).stdout
    data = json.loads(out)
    assert (data["old_base"], data["new_base"]) == ("v0.30.0", "v0.31.0"), out
    changes = _changes(out)
    assert changes[("ipc-backport", "status")]["new_status"] == "merged", out
    assert ("ipc-backport", "commits") not in changes, "a merged topic has no range to compare"
    assert changes[("sched-note", "commits")]["counts"] == {"equal": 1, "changed": 0, "dropped": 0, "added": 0}
    # the skipped topic did not move: its range is the same commits on both sides
    assert changes[("offload-evict-fix", "commits")]["counts"]["equal"] == 2, out
    text = run_series("diff", f"{number}^", number, cwd=fork).stdout
    assert "~ ipc-backport: active -> merged (in v0.31.0)" in text, text
