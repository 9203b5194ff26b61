"""series adopt-upstream: a PR served as refs/pull/N/head by a bare upstream, carried with its
authors' authorship, replacing our topic (kept byte-identical), undoable."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from series.seriesfile import config
from tests.conftest import run_series, sh
from tests.repos import LRU_FIXED, TEST_LRU_ORDER, commit_files, git

LRU = "vllm/v1/kv_offload/cpu/policies/lru.py"
TEST = "tests/v1/kv_offload/test_lru.py"


@pytest.fixture(autouse=True)
def no_api(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that forgets --offline talks to a closed local port, never to GitHub."""
    monkeypatch.setenv("SERIES_GITHUB_API", "http://127.0.0.1:9")


def serve(work: Path, bare: Path) -> None:
    if bare.exists():
        sh(f"git --git-dir={bare} fetch -q --prune {work} '+refs/*:refs/*'", bare.parent)
    else:
        sh(f"git clone -q --mirror {work} {bare}", bare.parent)


def repo_of(path: Path) -> pygit2.Repository:
    return pygit2.Repository(str(path))


def branch(path: Path, name: str) -> str | None:
    ref = repo_of(path).references.get(f"refs/heads/{name}")
    return str(ref.target) if ref is not None else None


def test_adopt_keeps_authorship_field_by_field_and_supersedes_our_topic(served: Path) -> None:
    ours_before = branch(served, "topic/offload-evict-fix")
    yaml_before = (served / "series.yaml").read_text()
    proc = run_series("adopt-upstream", "61050", "--replaces", "offload-evict-fix", "--offline", cwd=served)
    assert "adopted PR #61050" in proc.stdout and "offload-evict-fix: superseded by pr-61050" in proc.stdout, (
        proc.stdout
    )
    assert "working from git alone" in proc.stderr, proc.stderr

    repo = repo_of(served)
    pr_head = repo.references["refs/remotes/upstream/pr/61050"].peel(pygit2.Commit)
    originals = [pr_head.parents[0], pr_head]
    new_head = repo.references["refs/heads/topic/pr-61050"].peel(pygit2.Commit)
    adopted = [new_head.parents[0], new_head]
    base = repo.revparse_single("v0.30.0").peel(pygit2.Commit)
    assert adopted[0].parents[0].id == base.id, "replayed onto upstream.base"
    for old, new in zip(originals, adopted):
        assert new.id != old.id
        assert new.author.name == old.author.name == "Ada Upstream"
        assert new.author.email == old.author.email == "ada@example.com"
        assert new.author.time == old.author.time, (new.author.time, old.author.time)
        assert new.author.offset == old.author.offset, (new.author.offset, old.author.offset)
        assert (new.committer.name, new.committer.email) == ("Fork Maintainer", "fork@example.com")
        assert new.message.startswith(old.message.rstrip()), new.message
        assert new.message.endswith(f"Upstream-PR: #61050\n(cherry picked from commit {old.id})\n"), new.message
        assert "Signed-off-by: Ada Upstream <ada@example.com>\nUpstream-PR:" in new.message, (
            "the trailers join the PR's trailer block"
        )
    assert [o.author.offset for o in originals] == [60, -300], "the PR's own offsets, +01:00 and -05:00"
    assert new_head.tree[LRU].data.decode() == LRU_FIXED and new_head.tree[TEST].data.decode() == TEST_LRU_ORDER

    assert branch(served, "topic/offload-evict-fix") == ours_before, "the superseded branch is untouched"
    series = config.load(served / "series.yaml")
    names = [t.name for t in series.topics]
    assert names == ["sched-note", "pr-61050", "offload-evict-fix", "ipc-backport", "api-hello"], names
    pr = series.topic("pr-61050")
    assert (pr.branch, pr.upstream_pr, pr.upstream_head, pr.status.value) == (
        "topic/pr-61050",
        61050,
        str(pr_head.id),
        "active",
    ), pr
    old = series.topic("offload-evict-fix")
    assert (old.status.value, old.superseded_by) == ("superseded", "pr-61050"), old
    text = (served / "series.yaml").read_text()
    assert "# bumped by 'series rebase'" in text and text.startswith(yaml_before.split("topics:")[0]), text

    # undo: the new branch is gone, series.yaml is back, our topic still where it was
    run_series("undo", cwd=served)
    assert branch(served, "topic/pr-61050") is None
    assert (served / "series.yaml").read_text() == yaml_before
    assert branch(served, "topic/offload-evict-fix") == ours_before


def test_without_replaces_off_a_terminal_lists_candidates_and_changes_nothing(served: Path) -> None:
    before = (served / "series.yaml").read_text()
    proc = run_series("adopt-upstream", "61050", "--offline", cwd=served, expect=1)
    assert "PR #61050 shares files with active topics: offload-evict-fix (2 shared files)" in proc.stderr, proc.stderr
    assert "--replaces TOPIC" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert (served / "series.yaml").read_text() == before and branch(served, "topic/pr-61050") is None


def _run_on_terminal(args: list[str], cwd: Path, answer: bytes) -> tuple[int, str]:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "series", *args],
        cwd=cwd,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=dict(os.environ),
        close_fds=True,
    )
    os.close(slave)
    out = b""
    answered = False
    while True:
        ready, _, _ = select.select([master], [], [], 20)
        if not ready:
            proc.kill()
            raise AssertionError(f"no output from the terminal session: {out!r}")
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
        if not answered and b"[y/N]" in out:
            os.write(master, answer)
            answered = True
    os.close(master)
    return proc.wait(timeout=20), out.decode(errors="replace")


def test_on_a_terminal_the_best_match_is_offered_for_confirmation(served: Path) -> None:
    code, out = _run_on_terminal(["adopt-upstream", "61050", "--offline"], served, b"y\n")
    assert code == 0, out
    assert "shares 2 file(s) with topic 'offload-evict-fix'" in out, out
    assert config.load(served / "series.yaml").topic("offload-evict-fix").superseded_by == "pr-61050"


def test_on_a_terminal_no_means_nothing_happens(served: Path) -> None:
    before = (served / "series.yaml").read_text()
    code, out = _run_on_terminal(["adopt-upstream", "61050", "--offline"], served, b"n\n")
    assert code == 1 and "not adopted" in out, out
    assert (served / "series.yaml").read_text() == before and branch(served, "topic/pr-61050") is None


def test_no_replace_appends_and_name_is_honoured(served: Path) -> None:
    run_series("adopt-upstream", "61050", "--no-replace", "--name", "ada-fix", "--offline", cwd=served)
    series = config.load(served / "series.yaml")
    assert [t.name for t in series.topics][-1] == "ada-fix"
    assert series.topic("ada-fix").branch == "topic/ada-fix" and series.topic("offload-evict-fix").active


def test_dry_run_moves_nothing_and_json_reports_the_commits(served: Path) -> None:
    import json

    before = (served / "series.yaml").read_text()
    out = run_series(
        "adopt-upstream", "61050", "--replaces", "offload-evict-fix", "--dry-run", "--json", "--offline", cwd=served
    ).stdout
    data = json.loads(out)
    assert data["dry_run"] is True and data["operation"] is None and len(data["commits"]) == 2, data
    assert data["commits"][0]["author"] == "Ada Upstream <ada@example.com>", data
    assert (served / "series.yaml").read_text() == before and branch(served, "topic/pr-61050") is None


def test_refresh_readopts_and_shows_the_range_diff(served: Path, work: Path, tmp_path: Path) -> None:
    run_series("adopt-upstream", "61050", "--replaces", "offload-evict-fix", "--offline", cwd=served)
    first = branch(served, "topic/pr-61050")
    proc = run_series("adopt-upstream", "61050", "--refresh", "--offline", cwd=served)
    assert "unchanged since it was adopted" in proc.stdout, proc.stdout
    # Ada pushes a review fix to her PR
    head = commit_files(
        work,
        "refs/pull/61050/head",
        {TEST: TEST_LRU_ORDER + "\n\ndef test_evict_order():\n    assert True\n"},
        "[Test][KV offload] review: cover eviction too",
        "2026-01-25T11:00:00+01:00",
    )
    git(work, "update-ref", "refs/pull/61050/head", head)
    serve(work, tmp_path / "upstream.git")
    sh("git checkout -q topic/pr-61050", served)
    proc = run_series("adopt-upstream", "61050", "--refresh", "--offline", cwd=served, expect=1)
    assert f"topic/pr-61050 is checked out in {served}" in proc.stderr, proc.stderr
    assert branch(served, "topic/pr-61050") == first
    sh("git checkout -q --detach v0.30.0", served)
    proc = run_series("adopt-upstream", "61050", "--refresh", "--offline", cwd=served)
    assert "re-adopted PR #61050" in proc.stdout and "range-diff" in proc.stdout, proc.stdout
    assert "-:  ------------ > 3:" in proc.stdout or "> 3:" in proc.stdout, proc.stdout
    assert "review: cover eviction too" in proc.stdout, proc.stdout
    now = branch(served, "topic/pr-61050")
    assert now != first and len(pygit2.Repository(str(served)).revparse_single(now).parents) == 1
    assert config.load(served / "series.yaml").topic("pr-61050").upstream_head == head


def test_a_pr_that_does_not_apply_to_our_base_is_a_conflict_and_nothing_moves(
    served: Path, work: Path, tmp_path: Path
) -> None:
    # PR #61300 is made on v0.31.0, whose LRU rewrite our base v0.30.0 lacks
    lru = (work / LRU).read_text()
    pr = commit_files(
        work,
        "v0.31.0",
        {LRU: lru.replace("if key in self.blocks:", "if key in self.blocks:  # x")},
        "[KV offload] annotate",
        "2026-02-12T00:00:00Z",
    )
    git(work, "update-ref", "refs/pull/61300/head", pr)
    serve(work, tmp_path / "upstream.git")
    sh("git fetch -q upstream", served)
    before = (served / "series.yaml").read_text()
    proc = run_series("adopt-upstream", "61300", "--no-replace", "--offline", "--dry-run", cwd=served, expect=3)
    assert (
        "does not apply to v0.30.0: conflicts in" in proc.stderr
        and LRU in proc.stderr
        and "nothing was changed" in proc.stderr
    ), proc.stderr
    assert not (served / ".git/series/rebase").exists(), "a dry run lays nothing out"
    # for real it halts, resumable (tests/test_adopt_conflict.py): still nothing moved
    proc = run_series("adopt-upstream", "61300", "--no-replace", "--offline", cwd=served, expect=3)
    assert "does not apply to v0.30.0: conflicts in" in proc.stdout and LRU in proc.stdout, proc.stdout
    assert (served / "series.yaml").read_text() == before and branch(served, "topic/pr-61300") is None
    run_series("adopt-upstream", "--abort", cwd=served)


def test_errors_are_one_line(served: Path) -> None:
    proc = run_series("adopt-upstream", "424242", "--offline", cwd=served, expect=1)
    assert "upstream has no pull request #424242" in proc.stderr, proc.stderr
    proc = run_series("adopt-upstream", "61050", "--replaces", "nope", "--offline", cwd=served, expect=1)
    assert "no topic named 'nope'" in proc.stderr, proc.stderr
    proc = run_series("adopt-upstream", "61050", "--refresh", "--offline", cwd=served, expect=1)
    assert "no topic carries PR #61050" in proc.stderr, proc.stderr
    run_series("adopt-upstream", "61050", "--replaces", "offload-evict-fix", "--offline", cwd=served)
    proc = run_series("adopt-upstream", "61050", "--replaces", "sched-note", "--offline", cwd=served, expect=1)
    assert "already carried as topic 'pr-61050'" in proc.stderr, proc.stderr
    for p in (proc,):
        assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_topics_that_depended_on_the_replaced_topic_now_depend_on_the_pr(served: Path) -> None:
    path = served / "series.yaml"
    path.write_text(
        path.read_text().replace(
            "    branch: topic/api-hello\n", "    branch: topic/api-hello\n    depends_on: [offload-evict-fix]\n"
        )
    )
    proc = run_series("adopt-upstream", "61050", "--replaces", "offload-evict-fix", "--offline", cwd=served)
    assert "api-hello now depends on pr-61050 (was offload-evict-fix)" in proc.stderr, proc.stderr
    assert config.load(path).topic("api-hello").depends_on == ("pr-61050",)
