"""`series rebase` on real repositories (tests/repos.py): v0.30.0 -> v0.31.0.

In v0.31.0 upstream rewrote the LRU touch (offload-evict-fix conflicts), took our ipc
backport verbatim (ipc-backport is merged) and edited the scheduler far from our note
(sched-note and api-hello rebase cleanly).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_series, sh

LRU = "vllm/v1/kv_offload/cpu/policies/lru.py"


def refs_of(repo: Path) -> dict[str, str]:
    out = sh("git for-each-ref --format='%(refname) %(objectname)' refs/heads refs/tags", repo)
    return dict(line.split() for line in out.splitlines())


def snapshot(repo: Path) -> tuple[dict[str, str], bytes]:
    return refs_of(repo), (repo / "series.yaml").read_bytes()


def rev(repo: Path, spec: str) -> str:
    return sh(f"git rev-parse {spec}", repo).strip()


def show(repo: Path, spec: str) -> str:
    return sh(f"git show {spec}", repo)


def rebase_json(repo: Path, *args: str, expect: int = 0) -> dict:
    proc = run_series("rebase", *args, "--json", cwd=repo, expect=expect)
    return json.loads(proc.stdout)


def topics(report: dict) -> dict[str, dict]:
    return {t["name"]: t for t in report["topics"]}


def resolve_lru(worktree: Path) -> None:
    text = (worktree / LRU).read_text()
    head = text.split("<<<<<<< HEAD\n", 1)[1].split("=======\n", 1)[0]
    before, rest = text.split("<<<<<<< HEAD\n", 1)
    after = rest.split(">>>>>>> ", 1)[1].split("\n", 1)[1]
    (worktree / LRU).write_text(before + "        # keep request order: the first key is evicted last\n" + head + after)
    sh(f"git add {LRU}", worktree)


def test_clean_rebase_moves_topics_keeps_authorship_and_bumps_the_base(fork: Path) -> None:
    before_refs, before_yaml = snapshot(fork)
    old_msg = sh("git log -1 --format='%an|%ae|%ad|%B' topic/api-hello", fork)
    report = rebase_json(fork, "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix")
    rows = topics(report)
    assert rows["sched-note"]["outcome"] == "clean", rows
    assert rows["api-hello"]["range_diff"] == {"=": 1, "!": 0, "<": 0, ">": 0}, rows
    assert rows["offload-evict-fix"]["outcome"] == "skipped", rows
    assert rows["ipc-backport"]["outcome"] == "merged", rows
    after = refs_of(fork)
    assert after["refs/heads/topic/offload-evict-fix"] == before_refs["refs/heads/topic/offload-evict-fix"]
    assert after["refs/heads/topic/ipc-backport"] == before_refs["refs/heads/topic/ipc-backport"], (
        "a merged topic's branch is kept"
    )
    for branch in ("topic/sched-note", "topic/api-hello"):
        assert rev(fork, f"refs/heads/{branch}~1") == rev(fork, "v0.31.0"), branch
    assert sh("git log -1 --format='%an|%ae|%ad|%B' topic/api-hello", fork) == old_msg
    assert (
        sh("git log -1 --format='%cn|%cd' topic/api-hello", fork).strip()
        == "Fork Maintainer|Sun Feb 1 12:00:00 2026 +0000"
    )
    assert "# fork note" in show(fork, "topic/sched-note:vllm/v1/core/sched/scheduler.py")
    assert "(v0.31)" in show(fork, "topic/sched-note:vllm/v1/core/sched/scheduler.py")
    text = (fork / "series.yaml").read_text()
    assert "  base: v0.31.0   # bumped by 'series rebase'\n" in text, text
    assert "    status: merged\n    merged_in: v0.31.0\n" in text, text
    assert text.count("status:") == 1, "the skipped topic keeps its status"
    assert len(text.splitlines()) == len(before_yaml.decode().splitlines()) + 2
    # the integration branch: REF + every active topic, in order
    chain = sh("git log --first-parent --format=%s series/integration", fork).splitlines()
    assert chain[:2] == ["Merge topic 'api-hello' into integration", "Merge topic 'sched-note' into integration"], chain
    assert rev(fork, "series/integration~2") == rev(fork, "v0.31.0")
    assert "def hello" in show(fork, "series/integration:vllm/entrypoints/openai/api_server.py")
    assert Path(report["report"]).exists() and Path(report["report"]).with_suffix(".json").exists()
    sh("git fsck --no-dangling", fork)


def test_version_shorthand_takes_the_highest_release(fork: Path) -> None:
    proc = run_series("rebase", "--onto", "v0.31", "--dry-run", "--skip-topic", "offload-evict-fix", cwd=fork)
    assert "onto v0.31.0 ('v0.31')" in proc.stdout, proc.stdout
    sh("git tag v0.31.1 v0.31.0 && git tag v0.31.2rc1 v0.31.0", fork)
    report = rebase_json(fork, "--onto", "v0.31", "--dry-run", "--skip-topic", "offload-evict-fix")
    assert report["onto"]["name"] == "v0.31.1", report["onto"]
    proc = run_series("rebase", "--onto", "v0.99", cwd=fork, expect=1)
    assert "no release tag matches 'v0.99'" in proc.stderr and "v0.31.1" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_dry_run_reports_the_conflict_and_moves_nothing(fork: Path) -> None:
    before = snapshot(fork)
    report = rebase_json(fork, "--onto", "v0.31.0", "--dry-run", expect=3)
    rows = topics(report)
    assert rows["offload-evict-fix"]["outcome"] == "conflict"
    assert rows["offload-evict-fix"]["conflict"]["files"] == [LRU]
    assert rows["ipc-backport"]["dropped"][0]["subject"] == "[Backport] ipc VERSION 2"
    assert snapshot(fork) == before
    assert not (fork / ".git/series/rebase").exists()


def test_conflict_worktree_resolve_continue(fork: Path) -> None:
    before = snapshot(fork)
    proc = run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    assert "CONFLICT" in proc.stdout and LRU in proc.stdout, proc.stdout
    assert snapshot(fork) == before, "nothing under refs/heads moves on a conflict"
    worktree = fork / ".git/series/rebase/worktree"
    assert str(worktree) in proc.stdout
    assert "<<<<<<< HEAD" in (worktree / LRU).read_text()
    assert sh("git status --porcelain", worktree).strip() == f"UU {LRU}"
    assert sh("git config rerere.enabled", fork).strip() == "true"
    assert sh("git for-each-ref --format='%(refname)' refs/series/rebase", fork).strip(), (
        "new commits of a halted rebase are protected from gc"
    )
    proc = run_series("rebase", "--continue", cwd=fork, expect=1)
    assert f"unresolved conflicts in {LRU}" in proc.stderr, proc.stderr
    assert "hint: edit them, 'git add' each, then 'series rebase --continue'" in proc.stderr.splitlines(), (
        "the way on is the verb's words, on git's own 'hint:' line"
    )
    resolve_lru(worktree)
    report = rebase_json(fork, "--continue")
    rows = topics(report)
    assert report["status"] == "done" and rows["offload-evict-fix"]["outcome"] == "clean", rows
    assert rows["offload-evict-fix"]["resolved_by_hand"][0]["path"] == LRU
    lru = show(fork, f"topic/offload-evict-fix~1:{LRU}")
    assert "# keep request order" in lru and "if key in self.blocks" in lru
    assert sh("git log -1 --format=%s topic/offload-evict-fix", fork).strip() == "[Test] cover touch order"
    assert (
        sh("git log -1 --format=%an%ad topic/offload-evict-fix~1", fork).strip()
        == "Fork MaintainerSat Jan 10 12:00:00 2026 +0000"
    )
    assert not worktree.exists()
    assert sh("git worktree list", fork).count("\n") == 1
    assert not sh("git for-each-ref refs/series/rebase", fork).strip()
    assert "base: v0.31.0" in (fork / "series.yaml").read_text()


def test_abort_restores_every_ref_and_series_yaml(fork: Path) -> None:
    before = snapshot(fork)
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    proc = run_series("rebase", "--abort", cwd=fork)
    assert "aborted" in proc.stdout
    assert snapshot(fork) == before
    assert sh("git worktree list", fork).count("\n") == 1
    assert not sh("git for-each-ref refs/series/rebase", fork).strip()
    assert not (fork / ".git/series/rebase").exists()
    run_series("rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", cwd=fork)


def test_continue_or_abort_with_nothing_in_progress_is_an_error(fork: Path) -> None:
    for flag in ("--continue", "--abort"):
        proc = run_series("rebase", flag, cwd=fork, expect=1)
        assert "no rebase in progress" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    proc = run_series("rebase", "--onto", "v0.31.0", "--abort", cwd=fork, expect=2)


def test_a_second_rebase_while_one_is_halted_is_refused(fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    proc = run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=1)
    assert "in progress" in proc.stderr and "--abort" in proc.stderr, proc.stderr


def test_merged_commit_dropped_from_a_topic_that_stays(fork: Path) -> None:
    sh(
        "git checkout -q topic/api-hello && echo 'VERSION = 2' > vllm/multimodal/ipc.py && "
        "git commit -qam 'carry ipc 2 too' && git checkout -q --detach v0.30.0",
        fork,
    )
    report = rebase_json(fork, "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix")
    row = topics(report)["api-hello"]
    assert row["outcome"] == "clean" and [d["subject"] for d in row["dropped"]] == ["carry ipc 2 too"], row
    assert row["range_diff"]["<"] == 1 and row["range_diff"]["="] == 1, row
    assert sh("git rev-list --count v0.31.0..topic/api-hello", fork).strip() == "1"


def test_dirty_checked_out_topic_is_refused_clean_one_is_updated(fork: Path) -> None:
    sh("git checkout -q topic/sched-note && echo dirt >> README.md", fork)
    before = snapshot(fork)
    proc = run_series("rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", cwd=fork, expect=1)
    assert "topic/sched-note is checked out in" in proc.stderr and str(fork) in proc.stderr, proc.stderr
    assert snapshot(fork) == before
    sh("git checkout -q README.md", fork)
    run_series("rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", cwd=fork)
    assert sh("git status --porcelain --untracked-files=no", fork).strip() == "", "checkout updated"
    assert "(v0.31)" in (fork / "vllm/v1/core/sched/scheduler.py").read_text()


def test_inter_topic_conflict_names_both_topics_and_the_file(fork: Path) -> None:
    sh(
        """
    for t in one two; do
      git checkout -q -B topic/$t v0.30.0
      echo "# vLLM ($t build)" > README.md
      git commit -qam "api $t"
    done
    git checkout -q --detach v0.30.0
    cat >> series.yaml <<'EOF'
  - name: one
    branch: topic/one
  - name: two
    branch: topic/two
EOF
    """,
        fork,
    )
    integration_before = (
        rev(fork, "refs/heads/series/integration") if sh("git branch --list series/integration", fork).strip() else None
    )
    proc = run_series("rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", cwd=fork, expect=3)
    assert "topic one vs topic two, file README.md" in proc.stdout, proc.stdout
    assert rev(fork, "topic/two~1") == rev(fork, "v0.31.0"), "each topic alone is clean and moved"
    after = (
        rev(fork, "refs/heads/series/integration") if sh("git branch --list series/integration", fork).strip() else None
    )
    assert after == integration_before, "the integration branch is not rebuilt from topics that clash"


def test_depends_on_chain_goes_onto_the_dependency_new_head(fork: Path) -> None:
    sh(
        """
    git checkout -q -B topic/api-more topic/api-hello
    echo "# more" >> vllm/entrypoints/openai/api_server.py
    git commit -qam "api more"
    git checkout -q --detach v0.30.0
    cat >> series.yaml <<'EOF'
  - name: api-more
    branch: topic/api-more
    depends_on: [api-hello]
EOF
    """,
        fork,
    )
    report = rebase_json(fork, "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix")
    row = topics(report)["api-more"]
    assert row["outcome"] == "clean" and row["commits"] == 1 and row["depends_on"] == "api-hello", row
    assert rev(fork, "topic/api-more~1") == rev(fork, "topic/api-hello")
    assert rev(fork, "topic/api-hello~1") == rev(fork, "v0.31.0")
    # skipping the dependency skips the dependent too
    sh("git update-ref refs/heads/topic/api-more HEAD@{0} 2>/dev/null || true", fork)
    report = rebase_json(
        fork, "--onto", "v0.31.0", "--dry-run", "--skip-topic", "api-hello", "--skip-topic", "offload-evict-fix"
    )
    assert topics(report)["api-more"]["outcome"] == "skipped"


def test_the_lock_stops_a_second_process_and_dies_with_its_holder(fork: Path) -> None:
    lock = fork / ".git/series/lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import fcntl, os, sys\n"
                f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\n"
                "fcntl.flock(fd, fcntl.LOCK_EX)\n"
                "os.write(fd, b'series rebase, pid 77 on ci-3')\n"
                "print('locked', flush=True)\n"
                "sys.stdin.read()\n"
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        proc = run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=1)
        assert "another series command is running in this repository (series rebase, pid 77 on ci-3)" in proc.stderr, (
            proc.stderr
        )
    finally:
        holder.kill()  # a SIGKILL: the kernel releases the lock with the process
        holder.wait()
    assert lock.read_text(), "the dead holder's line is still in the file"
    run_series("rebase", "--onto", "v0.31.0", "--dry-run", "--skip-topic", "offload-evict-fix", cwd=fork)
    lock.write_text("")  # an empty lock file (a full disk, an older series) blocks nothing either
    run_series("rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", cwd=fork)


@pytest.mark.parametrize("layout", ["block", "flow"])
def test_the_series_yaml_editor_keeps_the_file_and_reads_back(layout: str, tmp_path: Path) -> None:
    from series.seriesfile import config, edit as seriesedit
    from series.seriesfile.edit import Edit
    from tests.repos import SERIES_YAML

    path = tmp_path / "series.yaml"
    text = (
        SERIES_YAML
        if layout == "block"
        else "upstream: {remote: upstream, base: v0.30.0}\ntopics: [{name: a, branch: topic/a}, {name: ipc-backport, branch: b}]\n"
    )
    edits = [
        Edit(("upstream", "base"), "v0.30.0", "@~1"),
        Edit(("topics", "ipc-backport", "status"), None, "merged"),
        Edit(("topics", "ipc-backport", "merged_in"), None, "0.31"),
    ]
    out = seriesedit.apply(text, path, edits)
    assert out is not None
    series = config.parse(out, path)[0]
    assert series.upstream.base == "@~1" and series.topic("ipc-backport").merged_in == "0.31"
    assert series.topic("ipc-backport").status.value == "merged"
    if layout == "block":  # line splices: every other line byte for byte, comments kept
        changed = [line for line in out.splitlines() if line not in SERIES_YAML.splitlines()]
        assert changed == [
            "  base: '@~1'   # bumped by 'series rebase'",
            "    status: merged",
            "    merged_in: '0.31'",
        ], changed
    with pytest.raises(seriesedit.EditConflict, match="upstream.base changed since"):
        seriesedit.apply(out, path, [Edit(("upstream", "base"), "v0.30.0", "v0.32.0")])
    assert seriesedit.apply(out, path, edits) == out, "edits already there are left alone"


def test_a_dependent_of_a_conflicting_topic_waits_then_follows_the_resolution(fork: Path) -> None:
    sh(
        """
    git checkout -q -B topic/evict-more topic/offload-evict-fix
    echo "# more tests" >> tests/v1/kv_offload/test_lru.py
    git commit -qam "more lru tests"
    git checkout -q --detach v0.30.0
    cat >> series.yaml <<'EOF2'
  - name: evict-more
    branch: topic/evict-more
    depends_on: [offload-evict-fix]
EOF2
    """,
        fork,
    )
    report = rebase_json(fork, "--onto", "v0.31.0", expect=3)
    row = topics(report)["evict-more"]
    assert row["outcome"] == "blocked" and "offload-evict-fix" in row["reason"], row
    resolve_lru(fork / ".git/series/rebase/worktree")
    report = rebase_json(fork, "--continue")
    assert topics(report)["evict-more"]["outcome"] == "clean"
    assert rev(fork, "topic/evict-more~1") == rev(fork, "topic/offload-evict-fix")
    assert "# keep request order" in show(fork, f"topic/evict-more:{LRU}")


def test_rebasing_again_onto_the_same_release_moves_nothing(fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", cwd=fork)
    before = snapshot(fork)
    proc = run_series("rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", cwd=fork)
    assert "already up to date" in proc.stdout, proc.stdout
    assert snapshot(fork) == before
    assert len(json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"]) == 1


def test_a_branch_moved_during_a_halted_rebase_is_caught_before_anything_moves(fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    sh("git branch -f topic/api-hello topic/api-hello~0 && git update-ref refs/heads/topic/api-hello v0.30.0", fork)
    before = snapshot(fork)
    resolve_lru(fork / ".git/series/rebase/worktree")
    proc = run_series("rebase", "--continue", cwd=fork, expect=1)
    assert "topic/api-hello moved while the rebase was halted" in proc.stderr, proc.stderr
    assert "hint: 'series rebase --abort', then start again" in proc.stderr.splitlines(), proc.stderr
    assert snapshot(fork) == before
    run_series("rebase", "--abort", cwd=fork)
    assert snapshot(fork) == before


def test_every_conflict_is_reported_at_once_and_continue_goes_to_the_next(fork: Path) -> None:
    sched = "vllm/v1/core/sched/scheduler.py"
    sh(
        f"""
    git checkout -q -B topic/sched-38 v0.30.0
    sed -i 's/# scheduler line 38$/# scheduler line 38 (fork)/' {sched}
    git commit -qam "fork line 38"
    git checkout -q --detach v0.30.0
    cat >> series.yaml <<'EOF2'
  - name: sched-38
    branch: topic/sched-38
EOF2
    """,
        fork,
    )
    report = rebase_json(fork, "--onto", "v0.31.0", expect=3)
    rows = topics(report)
    assert rows["offload-evict-fix"]["conflict"]["files"] == [LRU]
    assert rows["sched-38"]["conflict"]["files"] == [sched], "both conflicts in the first report"
    worktree = fork / ".git/series/rebase/worktree"
    resolve_lru(worktree)
    proc = run_series("rebase", "--continue", cwd=fork, expect=3)
    assert "resolve sched-38" in proc.stdout, proc.stdout
    (worktree / sched).write_text((fork / sched).read_text().replace("line 38\n", "line 38 (v0.31, fork)\n"))
    sh(f"git add {sched}", worktree)
    report = rebase_json(fork, "--continue")
    assert {t["name"]: t["outcome"] for t in report["topics"]}["sched-38"] == "clean"
    assert "(v0.31, fork)" in show(fork, f"topic/sched-38:{sched}")
    assert "# keep request order" in show(fork, f"topic/offload-evict-fix~1:{LRU}")


def test_a_commit_made_in_the_worktree_is_taken_as_the_resolution(fork: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    worktree = fork / ".git/series/rebase/worktree"
    resolve_lru(worktree)
    sh("git commit -qm 'my own wording'", worktree)
    run_series("rebase", "--continue", cwd=fork)
    assert sh("git log -1 --format=%s topic/offload-evict-fix~1", fork).strip() == "my own wording"


def test_report_text_snapshot(fork: Path) -> None:
    import re

    proc = run_series("rebase", "--onto", "v0.31", "--dry-run", cwd=fork, expect=3)
    text = re.sub(r"[0-9a-f]{12}", "<sha>", proc.stdout)
    text = re.sub(r"report: .*/\.git/series/reports/dry-run-\d{8}T\d{6}Z\.txt", "report: <file>", text)
    assert (
        text
        == """\
rebase (dry run) onto v0.31.0 ('v0.31') <sha> from v0.30.0: 2 clean, 1 conflict, 1 merged
  sched-note         clean      1 commit(s) -> <sha>  range-diff =1
  offload-evict-fix  CONFLICT   <sha> [Bugfix][KV offload] keep request order on touch: \
vllm/v1/kv_offload/cpu/policies/lru.py
                       upstream #60001 rewrote touch() in lru.py (<sha>, vLLM Upstream, 2026-02-10): \
[KV offload] rewrite LRU touch (#60001)
  ipc-backport       merged upstream (every commit is already in v0.31.0); status: merged, branch kept
                       dropped (already upstream): <sha> [Backport] ipc VERSION 2
                       landed by PR #60001: <sha> [KV offload] rewrite LRU touch (#60001) (vLLM Upstream, 2026-02-10)
  api-hello          clean      1 commit(s) -> <sha>  range-diff =1
base v0.30.0 is 1 commit (40 days) behind upstream/main
nothing was changed (dry run)
report: <file>
"""
    ), text


def test_renames_are_followed_both_ways(fork: Path, upstream: Path) -> None:
    """Upstream moves a file a topic edits; a topic moves a file upstream edits."""
    big = "".join(f"line {i}\n" for i in range(40))
    sh(
        f"""
    git checkout -q -b rel v0.31.0
    printf '{big}' > vllm/big.py && printf '{big}' > vllm/other.py && git add -A && git commit -qm base
    git tag v0.31.1
    git mv vllm/big.py vllm/moved.py
    sed -i 's/^line 2$/line 2 (upstream)/' vllm/other.py
    git commit -qam 'move big, edit other' && git tag v0.32.0
    """,
        upstream,
    )
    sh(
        """
    git fetch -q upstream --tags
    git checkout -q -B topic/edit-big v0.31.1
    sed -i 's/^line 30$/line 30 (fork)/' vllm/big.py && git commit -qam 'fork edits big'
    git checkout -q -B topic/move-other v0.31.1
    git mv vllm/other.py vllm/renamed.py && git commit -qm 'fork moves other'
    git checkout -q --detach v0.31.1
    cat > series.yaml <<'EOF2'
upstream:
  remote: upstream
  base: v0.31.1
topics:
  - name: edit-big
    branch: topic/edit-big
  - name: move-other
    branch: topic/move-other
EOF2
    """,
        fork,
    )
    run_series("rebase", "--onto", "v0.32.0", cwd=fork)
    moved = show(fork, "topic/edit-big:vllm/moved.py")
    assert "line 30 (fork)" in moved, "the topic's edit followed upstream's move"
    assert "vllm/big.py" not in sh("git ls-tree -r --name-only topic/edit-big", fork)
    renamed = show(fork, "topic/move-other:vllm/renamed.py")
    assert "line 2 (upstream)" in renamed, "upstream's edit followed the topic's move"
    assert "vllm/other.py" not in sh("git ls-tree -r --name-only topic/move-other", fork)


def test_a_topic_rebased_by_hand_onto_newer_upstream_replays_only_its_own_commits(fork: Path) -> None:
    sh("git checkout -q topic/api-hello && git rebase -q upstream/main && git checkout -q --detach v0.30.0", fork)
    report = rebase_json(fork, "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", "--dry-run")
    row = topics(report)["api-hello"]
    assert row["commits"] == 1 and row["outcome"] == "clean", row


def test_progress_goes_to_a_terminal_only(fork: Path) -> None:
    import pty
    import subprocess
    import sys

    args = ("rebase", "--onto", "v0.31.0", "--dry-run", "--skip-topic", "offload-evict-fix")
    assert run_series(*args, cwd=fork).stderr == "", "no progress output when stderr is not a terminal"
    master, slave = pty.openpty()
    proc = subprocess.run(
        [sys.executable, "-m", "series", *args], cwd=fork, stdout=subprocess.PIPE, stderr=slave, env=dict(os.environ)
    )
    os.close(slave)
    seen = b""
    try:
        while True:
            chunk = os.read(master, 4096)
            if not chunk:
                break
            seen += chunk
    except OSError:
        pass
    os.close(master)
    assert proc.returncode == 0
    # every topic is named as it is replayed, counted to the last (those git is still
    # merging go last, so the order need not be the series')
    assert b"replaying [" in seen and b"3/3 " in seen, seen
    assert all(name in seen for name in (b"api-hello", b"ipc-backport")), seen
