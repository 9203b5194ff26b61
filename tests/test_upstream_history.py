"""Upstream with real history: squash-merged PRs "[Tag] title (#N)" between two releases.

Attribution names the PR that rewrote the lines a conflicting topic edits (not the others
that touched the file); --bisect finds the first breaking commit on the first-parent line,
at either edge; --as-far-as-possible stops right before it, and moves nothing when even
the first commit blocks; a merged topic names the PR that landed it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from series.seriesfile import config
from tests.conftest import from_template, run_series, sh
from tests.repos import LRU_V030, LRU_V031, build_fork, build_upstream, commit_all, git, write

LRU = "vllm/v1/kv_offload/cpu/policies/lru.py"
SCHED = "vllm/v1/core/sched/scheduler.py"
AUTHORS = {60010: "Sam Sched", 60011: "Dot Docs", 60012: "Lu Rewrite", 60013: "Ipc Ian", 60014: "Eve Evict"}


def _pr(path: Path, number: int, subject: str, files: dict[str, str], day: int) -> str:
    write(path, files)
    who = AUTHORS[number]
    env = {
        "GIT_AUTHOR_NAME": who,
        "GIT_AUTHOR_EMAIL": "x@example.com",
        "GIT_COMMITTER_NAME": "GitHub",
        "GIT_COMMITTER_EMAIL": "noreply@github.com",
    }
    commit_all(path, f"{subject} (#{number})", f"2026-01-{day:02d}T10:00:00Z", env=env)
    return git(path, "rev-parse", "HEAD").strip()


def history_upstream(path: Path, rewrite_at: int) -> dict[int, str]:
    """v0.30.0, then five squash-merged PRs; #60012 (rewrites touch(), which our
    offload-evict-fix edits) lands at position `rewrite_at` (1..5). v0.31.0 = the last."""
    build_upstream(path)
    git(path, "tag", "-d", "v0.31.0")
    git(path, "reset", "-q", "--hard", "v0.30.0")
    lru = LRU_V030
    others = [
        (
            60010,
            "[Core] scheduler tweak",
            lambda: {
                SCHED: (path / SCHED).read_text().replace("# scheduler line 38\n", "# scheduler line 38 (tweaked)\n")
            },
        ),
        (
            60011,
            "[Doc] LRU module docstring",
            lambda: {LRU: (path / LRU).read_text().replace('"""LRU eviction policy', '"""The LRU eviction policy')},
        ),
        (60013, "[Misc] ipc VERSION 2", lambda: {"vllm/multimodal/ipc.py": "VERSION = 2\n"}),
        (
            60014,
            "[KV offload] name the evicted slot",
            lambda: {LRU: (path / LRU).read_text().replace("key, _ = self.blocks", "key, _slot = self.blocks")},
        ),
    ]
    rewrite = (
        60012,
        "[KV offload] rewrite LRU touch",
        lambda: {
            LRU: (path / LRU)
            .read_text()
            .replace(
                LRU_V030.split("    def touch", 1)[1].split("    def evict", 1)[0],
                LRU_V031.split("    def touch", 1)[1].split("    def evict", 1)[0],
            )
        },
    )
    order = others[: rewrite_at - 1] + [rewrite] + others[rewrite_at - 1 :]
    shas = {}
    for day, (number, subject, files) in enumerate(order, start=2):
        shas[number] = _pr(path, number, subject, files(), day)
    assert "if key in self.blocks" in (path / LRU).read_text() and lru
    git(path, "tag", "v0.31.0")
    return shas


def _fork_over(root: Path, rewrite_at: int) -> tuple[Path, dict[int, str]]:
    shas = history_upstream(root / "upstream", rewrite_at)
    return build_fork(root / "upstream", root / "fork"), shas


def fork_over(tmp_path: Path, rewrite_at: int) -> tuple[Path, dict[int, str]]:
    """tmp_path/upstream with #60012 at `rewrite_at`, and tmp_path/fork over it (built
    once per session for each `rewrite_at`, copied)."""
    return from_template(f"history-{rewrite_at}", lambda root: _fork_over(root, rewrite_at), tmp_path)


def rebase(fork: Path, *args: str, expect: int = 0) -> dict:
    return json.loads(run_series("rebase", "--onto", "v0.31.0", *args, "--json", cwd=fork, expect=expect).stdout)


def rows(report: dict) -> dict[str, dict]:
    return {t["name"]: t for t in report["topics"]}


def test_attribution_names_the_pr_that_rewrote_the_lines_not_the_others(tmp_path: Path) -> None:
    fork, shas = fork_over(tmp_path, 3)
    report = rebase(fork, "--dry-run", expect=3)
    culprits = rows(report)["offload-evict-fix"]["upstream"][LRU]["culprits"]
    assert [(c["pr"], c["overlaps"]) for c in culprits] == [(60012, True), (60014, False), (60011, False)], culprits
    first = culprits[0]
    assert (first["sha"], first["author"], first["date"], first["symbol"]) == (
        shas[60012],
        "Lu Rewrite",
        "2026-01-04",
        "touch",
    ), first
    assert first["subject"] == "[KV offload] rewrite LRU touch (#60012)"
    text = run_series("rebase", "--onto", "v0.31.0", "--dry-run", cwd=fork, expect=3).stdout
    assert f"upstream #60012 rewrote touch() in lru.py ({shas[60012][:12]}, Lu Rewrite, 2026-01-04)" in text, text
    assert "upstream #60011 also changed lru.py" in text, text


def test_the_conflict_worktree_says_what_to_read_first(tmp_path: Path) -> None:
    fork, shas = fork_over(tmp_path, 3)
    text = run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3).stdout
    read_first = f"upstream #60012 rewrote touch() in {LRU}: read it first (git show {shas[60012][:12]} -- {LRU})"
    assert read_first in text, text
    assert f"  {read_first}" in run_series("status", cwd=fork).stdout, "status repeats it while halted"
    run_series("rebase", "--abort", cwd=fork)


def test_merged_topic_names_the_pr_that_landed_it(tmp_path: Path) -> None:
    fork, shas = fork_over(tmp_path, 3)
    row = rows(rebase(fork, "--dry-run", expect=3))["ipc-backport"]
    assert row["outcome"] == "merged"
    assert [(e["pr"], e["sha"]) for e in row["evidence"]] == [(60013, shas[60013])], row
    text = run_series("rebase", "--onto", "v0.31.0", "--dry-run", cwd=fork, expect=3).stdout
    assert f"landed by PR #60013: {shas[60013][:12]} [Misc] ipc VERSION 2 (#60013)" in text, text


@pytest.mark.parametrize("rewrite_at", [1, 3, 5])
def test_bisect_finds_the_first_breaking_commit_at_the_edges_too(tmp_path: Path, rewrite_at: int) -> None:
    fork, shas = fork_over(tmp_path, rewrite_at)
    first = rows(rebase(fork, "--dry-run", "--bisect", expect=3))["offload-evict-fix"]["first_breaking"]
    assert (first["sha"], first["pr"], first["position"], first["total"]) == (shas[60012], 60012, rewrite_at, 5), first
    assert first["files"] == [LRU] and first["replays"] <= 4, first
    assert "first_breaking" not in rows(rebase(fork, "--dry-run", "--bisect", expect=3))["sched-note"]


def test_as_far_as_possible_stops_right_before_the_blocking_commit(tmp_path: Path) -> None:
    fork, shas = fork_over(tmp_path, 4)
    before = sh("git rev-parse topic/offload-evict-fix", fork).strip()
    report = rebase(fork, "--as-far-as-possible", expect=0)
    reach = report["as_far_as_possible"]
    assert (reach["position"], reach["total"]) == (3, 5), reach
    assert reach["blocker"]["sha"] == shas[60012] and reach["blocker"]["pr"] == 60012, reach
    assert reach["blocked"] == {"offload-evict-fix": [LRU]}, reach
    target = reach["target"]["sha"]
    assert report["status"] == "done" and report["onto"]["sha"] == target
    order = sorted(shas, key=lambda n: sh(f"git log -1 --format=%ad --date=iso {shas[n]}", fork))
    assert target == shas[order[2]], (target, order)
    # every topic moved there, the one that conflicts later too; series.yaml records the commit
    for branch in ("topic/offload-evict-fix", "topic/sched-note", "topic/api-hello"):
        assert sh(f"git merge-base --is-ancestor {target} {branch} && echo yes", fork).strip() == "yes"
    assert sh("git rev-parse topic/offload-evict-fix", fork).strip() != before
    assert config.load(fork / "series.yaml").upstream.base == target
    # the next step conflicts: the plain rebase from there names the same commit
    again = rebase(fork, "--dry-run", expect=3)
    assert rows(again)["offload-evict-fix"]["upstream"][LRU]["culprits"][0]["sha"] == shas[60012]


def test_as_far_as_possible_moves_nothing_when_the_first_commit_blocks(tmp_path: Path) -> None:
    fork, shas = fork_over(tmp_path, 1)
    before_refs = sh("git for-each-ref --format='%(refname) %(objectname)'", fork)
    before_yaml = (fork / "series.yaml").read_bytes()
    proc = run_series("rebase", "--onto", "v0.31.0", "--as-far-as-possible", cwd=fork, expect=3)
    assert "nothing moved: even the first commit after v0.30.0" in proc.stdout, proc.stdout
    assert f"upstream #60012 {shas[60012][:12]}" in proc.stdout, proc.stdout
    assert sh("git for-each-ref --format='%(refname) %(objectname)'", fork) == before_refs
    assert (fork / "series.yaml").read_bytes() == before_yaml
    data = json.loads(
        run_series("rebase", "--onto", "v0.31.0", "--as-far-as-possible", "--json", cwd=fork, expect=3).stdout
    )
    assert data["status"] == "blocked" and data["as_far_as_possible"]["position"] == 0, data


def test_as_far_as_possible_goes_all_the_way_when_everything_applies(tmp_path: Path) -> None:
    fork, _ = fork_over(tmp_path, 3)
    text = (fork / "series.yaml").read_text()
    (fork / "series.yaml").write_text(
        text.replace("  - name: offload-evict-fix\n", "  - name: offload-evict-fix\n    status: dropped\n")
    )
    report = rebase(fork, "--as-far-as-possible", "--dry-run")
    assert report["as_far_as_possible"]["position"] == 5 and report["onto"]["name"] == "v0.31.0", report


def test_report_and_status_say_how_far_behind_upstream_main(tmp_path: Path) -> None:
    fork, _ = fork_over(tmp_path, 3)
    report = rebase(fork, "--dry-run", expect=3)
    assert report["behind"]["commits"] == 5 and report["behind"]["tip_name"] == "upstream/main", report
    status = json.loads(run_series("status", "--json", cwd=fork).stdout)
    assert status["behind"]["commits"] == 5 and status["behind"]["days"] == 5, status
    assert "5 commits (5 days) behind upstream/main" in run_series("status", cwd=fork).stdout


def test_bisect_and_as_far_need_onto(tmp_path: Path) -> None:
    fork, _ = fork_over(tmp_path, 3)
    proc = run_series("rebase", "--continue", "--bisect", cwd=fork, expect=2)
    assert "--bisect and --as-far-as-possible go with --onto REF" in proc.stderr, proc.stderr


def test_touches_between_groups_upstream_changes_by_pr(tmp_path: Path) -> None:
    fork, shas = fork_over(tmp_path, 3)
    data = json.loads(run_series("touches", "--between", "v0.30.0..v0.31.0", "--json", cwd=fork).stdout)
    pulls = {u["pr"]: [f["path"] for f in u["files"]] for u in data["upstream_pulls"]}
    assert pulls == {60010: [SCHED], 60011: [LRU], 60012: [LRU], 60013: ["vllm/multimodal/ipc.py"], 60014: [LRU]}, pulls
    text = run_series("touches", "--between", "v0.30.0..v0.31.0", cwd=fork).stdout
    assert (
        "  #60012   2026-01-04 Lu Rewrite       [KV offload] rewrite LRU touch\n"
        f"      {LRU} (offload-evict-fix)" in text
    ), text


def test_path_history_and_the_first_parent_line_are_gits(tmp_path: Path) -> None:
    """Differential: which upstream commits changed a path (git log's default history
    simplification, merges included) and the first-parent line (git rev-list --first-parent)."""
    import pygit2

    from series.history.attribution import path_commits
    from series.engine.bisect import mainline

    up = tmp_path / "upstream"
    history_upstream(up, 3)
    sh(
        f"""
    git checkout -q -b side v0.30.0
    printf 'side\\n' >> {SCHED} && git commit -qam '[Core] side branch edit'
    printf 'ipc side\\n' > vllm/multimodal/ipc.py && git commit -qam '[Misc] side ipc'
    git checkout -q main && git merge -q --no-ff -X theirs side -m 'Merge side (#60020)'
    printf 'after\\n' >> {LRU} && git commit -qam '[KV offload] after the merge (#60021)'
    """,
        up,
    )
    repo = pygit2.Repository(str(up))
    old, new = repo.revparse_single("v0.30.0").peel(pygit2.Commit), repo.revparse_single("main").peel(pygit2.Commit)
    paths = [LRU, SCHED, "vllm/multimodal/ipc.py", "README.md"]
    ours = path_commits(repo, old.id, new.id, paths)
    for path in paths:
        theirs = sh(f"git log --format=%H v0.30.0..main -- {path}", up).split()
        assert sorted(str(c.id) for c in ours[path]) == sorted(theirs), path
    # main before the merge is one chain: the one-pass path (vLLM's squash-merged main)
    from series.history.attribution import _linear, upstream_commits

    before = repo.revparse_single("main~2").peel(pygit2.Commit)
    assert _linear(upstream_commits(repo, old.id, before.id), before.id)
    assert not _linear(upstream_commits(repo, old.id, new.id), new.id)
    chain = path_commits(repo, old.id, before.id, paths)
    for path in paths:
        theirs = sh(f"git log --format=%H --reverse v0.30.0..main~2 -- {path}", up).split()
        assert [str(c.id) for c in chain[path]] == theirs, path
    line = [str(c.id) for c in mainline(repo, old, new)]
    assert line == sh("git rev-list --first-parent --reverse v0.30.0..main", up).split()
    # kept and asked a path or two at a time (a rebase's conflicts as they show up): git's answer still
    from series.history.attribution import PathHistory

    for end, spec in ((before, "v0.30.0..main~2"), (new, "v0.30.0..main")):
        kept = PathHistory(repo, old.id, end.id)
        assert not kept.walked
        asked = {**kept.of(paths[:1]), **kept.of(paths[2:0:-1]), **kept.of(paths)}
        for path in paths:
            theirs = sh(f"git log --format=%H {spec} -- {path}", up).split()
            assert sorted(str(c.id) for c in asked[path]) == sorted(theirs), (spec, path)


def _crafted_upstream_commit(fork: Path, tmp_path: Path, header: bytes, subject: bytes) -> str:
    """A commit on top of v0.31.0 that changes lru.py (a file a topic edits), written
    byte for byte (git hash-object --literally), tagged v0.31.1."""
    sh("git checkout -q --detach v0.31.0", fork)
    (fork / LRU).write_text((fork / LRU).read_text() + "# tail\n")
    tree = sh(f"git add {LRU} && git write-tree", fork).strip()
    sh("git checkout -q -f --detach v0.30.0", fork)
    tip = sh("git rev-parse v0.31.0", fork).strip()
    raw = (
        (
            f"tree {tree}\nparent {tip}\nauthor Bo Gus <bo@example.com> 1767400000 +0000\n"
            f"committer Bo Gus <bo@example.com> 1767400000 +0000\n"
        ).encode()
        + header
        + b"\n"
        + subject
        + b"\n"
    )
    (tmp_path / "crafted").write_bytes(raw)
    sha = sh(f"git hash-object -t commit -w --literally {tmp_path / 'crafted'}", fork).strip()
    sh(f"git tag v0.31.1 {sha}", fork)
    return sha


def _every_reader(fork: Path, sha: str) -> list[dict]:
    """The crafted commit as rebase, --bisect, touches --between and --as-far-as-possible
    describe it (every one of them exit 0 or 3, never 4)."""
    rebased = json.loads(
        run_series("rebase", "--onto", "v0.31.1", "--dry-run", "--bisect", "--json", cwd=fork, expect=3).stdout
    )
    culprits = rows(rebased)["offload-evict-fix"]["upstream"][LRU]["culprits"]
    between = json.loads(run_series("touches", "--between", "v0.31.0..v0.31.1", "--json", cwd=fork).stdout)
    text = (fork / "series.yaml").read_text()
    (fork / "series.yaml").write_text(
        text.replace("  - name: offload-evict-fix\n", "  - name: offload-evict-fix\n    status: dropped\n")
    )
    reach = json.loads(
        run_series("rebase", "--onto", "v0.31.1", "--as-far-as-possible", "--dry-run", "--json", cwd=fork).stdout
    )["as_far_as_possible"]
    (fork / "series.yaml").write_text(text)
    found = [c for c in culprits if c["sha"] == sha] + [c for c in between["upstream_pulls"] if c["sha"] == sha]
    assert len(found) == 2 and reach["target"]["sha"] == sha, (culprits, between, reach)
    return [*found, reach["target"]]


def test_a_subject_ending_in_thousands_of_digits_names_no_pr(tmp_path: Path) -> None:
    fork, _ = fork_over(tmp_path, 3)
    sha = _crafted_upstream_commit(fork, tmp_path, b"", b"[Misc] huge (#" + b"9" * 5000 + b")")
    for seen in _every_reader(fork, sha):
        assert seen["pr"] is None and seen["subject"].endswith("9" * 100 + ")"), seen


def test_an_upstream_commit_in_an_unknown_encoding_reads_as_its_bytes(tmp_path: Path) -> None:
    fork, _ = fork_over(tmp_path, 3)
    sha = _crafted_upstream_commit(fork, tmp_path, b"encoding bogus-charset\n", "[Misc] caf\u00e9 (#60020)".encode())
    for seen in _every_reader(fork, sha):
        assert (seen["pr"], seen["subject"], seen["author"]) == (60020, "[Misc] caf\u00e9 (#60020)", "Bo Gus"), seen


def _a_topic_that_clashes_with_api_hello(fork: Path) -> None:
    """topic/api-bye edits the lines api-hello edits: each applies anywhere, never together."""
    yaml = (fork / "series.yaml").read_text()
    (fork / "series.yaml").unlink()
    sh("git checkout -q -B topic/api-bye v0.30.0", fork)
    write(
        fork,
        {"vllm/entrypoints/openai/api_server.py": "def serve():\n    return 'ok'\n\n\ndef bye():\n    return 'bye'\n"},
    )
    commit_all(fork, "[Fork] bye endpoint", "2026-01-20T12:00:00Z")
    sh("git checkout -q --detach v0.30.0", fork)
    (fork / "series.yaml").write_text(yaml + "  - name: api-bye\n    branch: topic/api-bye\n")


def test_as_far_as_possible_moves_nothing_when_the_topics_do_not_combine_there(tmp_path: Path) -> None:
    fork, _ = fork_over(tmp_path, 4)
    _a_topic_that_clashes_with_api_hello(fork)
    refs, text = sh("git for-each-ref", fork), (fork / "series.yaml").read_bytes()
    proc = run_series("rebase", "--onto", "v0.31.0", "--as-far-as-possible", cwd=fork, expect=1)
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "as far as possible: nothing moved: every topic applies at" in proc.stderr, proc.stderr
    assert (
        "(3 of 5 on v0.31.0's first-parent line), but the topics do not combine there (topic api-hello "
        "vs topic api-bye, file vllm/entrypoints/openai/api_server.py), so the integration branch "
        "series/integration could not be rebuilt" in proc.stderr
    ), proc.stderr
    assert sh("git for-each-ref", fork) == refs and (fork / "series.yaml").read_bytes() == text
    assert not (fork / ".git/series/rebase").exists()


def test_as_far_as_possible_with_the_integration_branch_dirty_moves_nothing(tmp_path: Path) -> None:
    fork, _ = fork_over(tmp_path, 4)
    run_series("build", cwd=fork)
    sh(f"git worktree add -q {tmp_path / 'integ'} series/integration", fork)
    (tmp_path / "integ/README.md").write_text("local change\n")
    refs, text = sh("git for-each-ref", fork), (fork / "series.yaml").read_bytes()
    proc = run_series("rebase", "--onto", "v0.31.0", "--as-far-as-possible", cwd=fork, expect=1)
    assert "series/integration is checked out in" in proc.stderr and "nothing was changed" in proc.stderr
    assert sh("git for-each-ref", fork) == refs and (fork / "series.yaml").read_bytes() == text
    assert "in progress" not in run_series("status", cwd=fork).stdout
    sh("git checkout -q -- README.md", tmp_path / "integ")
    assert rebase(fork, "--as-far-as-possible")["as_far_as_possible"]["position"] == 3
