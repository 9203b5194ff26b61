"""series.upstream.followups: what upstream's trunk landed after a PR a topic records (fixes,
follow-ups, reverts), whether the series carries it, and the revert warning of `status`
and the nightly report. Small real repositories: upstream squash-merges PR #61050 on main,
then a fix, a follow-up and a revert of it land; the fork adopted the PR as a topic."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pygit2
import pytest

from series.seriesfile import config
from series.model import Status
from series.upstream.followups import Carried, FollowUpKind, FollowUps, _Readers, _patch_id, classify, find
from series.workspace import Workspace
from tests.conftest import from_template, run_series, sh
from tests.repos import (
    LRU_FIXED,
    LRU_V030,
    TEST_LRU_ORDER,
    add_pull_request,
    build_fork,
    build_upstream,
    commit_files,
    git,
)

LRU = "vllm/v1/kv_offload/cpu/policies/lru.py"
TEST = "tests/v1/kv_offload/test_lru.py"
READERS = _Readers.of("vllm-project/vllm")
ADOPTED = "  - name: pr-61050\n    branch: topic/pr-61050\n    upstream_pr: 61050\n"


def land(upstream: Path, files: dict[str, str | None], text: str, date: str) -> str:
    """A commit on upstream's main (its tip moves), as a squash-merge lands."""
    sha = commit_files(upstream, "main", files, text, date)
    git(upstream, "update-ref", "refs/heads/main", sha)
    return sha


@pytest.fixture
def landed(tmp_path: Path, fork: Path, upstream: Path) -> dict[str, str]:
    """Upstream: PR #61050 squash-merged on main, a fix (#61060), a follow-up (#61065) and a
    revert (#61070) after it, and noise around; the fork fetched it all and adopted the PR
    as topic pr-61050 (active, over v0.30.0). Built once per session over the conftest's
    upstream and fork and copied in their place."""
    shutil.rmtree(fork)
    shutil.rmtree(upstream)
    return from_template("followups-landed", _landed, tmp_path)


def _landed(root: Path) -> dict[str, str]:
    upstream = build_upstream(root / "upstream")
    fork = build_fork(upstream, root / "fork")
    head = add_pull_request(upstream)
    shas = {
        "before": land(
            upstream, {"vllm/a.py": "A = 1\n"}, "[Misc] prepare the fix for #61050 (#61040)", "2026-02-11T00:00:00Z"
        )
    }
    shas["merge"] = land(
        upstream,
        {LRU: LRU_FIXED, TEST: TEST_LRU_ORDER},
        "[Bugfix][KV offload] Fix eviction order of touched blocks (#61050)",
        "2026-02-12T00:00:00Z",
    )
    shas["fix"] = land(
        upstream,
        {"vllm/fix.py": "FIXED = True\n"},
        "[Bugfix] Fix for #61050: eviction of pinned blocks (#61060)\n\nFollow-up to #61050.",
        "2026-02-13T00:00:00Z",
    )
    shas["noise"] = land(
        upstream,
        {"vllm/b.py": "B = 1\n"},
        "[Misc] unrelated (#61062)\n\nSee #61050 and #610500; fixes #6105.",
        "2026-02-14T00:00:00Z",
    )
    shas["follow"] = land(
        upstream,
        {"vllm/c.py": "C = 1\n"},
        "[KV offload] tidy the LRU (#61065)\n\nFollow-up to https://github.com/vllm-project/vllm/pull/61050",
        "2026-02-15T00:00:00Z",
    )
    shas["revert"] = land(
        upstream,
        {LRU: LRU_V030, TEST: "def test_lru():\n    assert True\n"},
        'Revert "[Bugfix][KV offload] Fix eviction order of touched blocks (#61050)" (#61070)\n\nThis reverts #61050.',
        "2026-02-16T00:00:00Z",
    )
    sh(
        f"git fetch -q upstream +refs/heads/*:refs/remotes/upstream/* +refs/pull/61050/head:refs/remotes/upstream/pr/61050 "
        f"&& git branch topic/pr-61050 {head}",
        fork,
    )
    with (fork / "series.yaml").open("a") as f:
        f.write(ADOPTED)
    return shas


def found(fork: Path) -> FollowUps:
    ws = Workspace(config.read((fork / "series.yaml").read_text(), fork / "series.yaml"), pygit2.Repository(str(fork)))
    return find(ws.repo, ws.series, ws.base_commit(), ws.own)


def set_topic(fork: Path, old: str, new: str) -> None:
    text = (fork / "series.yaml").read_text()
    assert old in text, text
    (fork / "series.yaml").write_text(text.replace(old, new))


@pytest.mark.parametrize(
    "text, kind",
    [
        ("[Bugfix] Fix for #61050: x (#61060)", FollowUpKind.FIX),
        ("[Bugfix] x (#61060)\n\nFixes #61050", FollowUpKind.FIX),
        ("[Bugfix] x (#61060)\n\nFix regression introduced by #61050", FollowUpKind.FIX),
        ("[Bugfix] x (#61060)\n\nbroken in https://github.com/vllm-project/vllm/pull/61050", FollowUpKind.FIX),
        ("[Misc] x (#61060)\n\nfollow-up to #61050", FollowUpKind.FOLLOW_UP),
        ("[Misc] followup #61050 (#61060)", FollowUpKind.FOLLOW_UP),
        ('Revert "[Core] x (#61050)" (#61070)', FollowUpKind.REVERT),
        (
            'Revert "[Core] x (#61050)"\n\nThis reverts commit 0123456789abcdef0123456789abcdef01234567.',
            FollowUpKind.REVERT,
        ),
        ("[Core] back out x (#61070)\n\nThis reverts #61050", FollowUpKind.REVERT),
        ('Revert "[Bugfix] Fix for #61050 (#61060)" (#61070)', FollowUpKind.FOLLOW_UP),  # the fix's, not the PR's
        ("[Misc] x (#61060)\n\nSee #61050", None),
        ("[Bugfix] Fix for #610500 (#61060)", None),
        ("[Bugfix] Fix for #6105 (#61060)", None),
        ("[Bugfix] x (#61060)\n\nfollow-up to https://github.com/someone/else/pull/61050", None),
        ('Revert "[Core] x (#61051)" (#61070)', None),
    ],
)
def test_classify_reads_the_ways_a_commit_names_a_pr(text: str, kind: FollowUpKind | None) -> None:
    assert classify(READERS, text, 61050, "0123456789abcdef0123456789abcdef01234567") is kind


def test_fix_follow_up_and_revert_of_an_adopted_pr_are_found_not_carried(fork: Path, landed: dict[str, str]) -> None:
    after = found(fork)
    assert after.trunk == "upstream/main"
    (pr,) = after.prs
    assert pr.merge is not None and pr.merge.sha == landed["merge"] and not pr.merge_in_base
    got = [(f.kind, f.commit.sha, f.commit.pr, f.carried) for f in pr.followups]
    assert got == [
        (FollowUpKind.REVERT, landed["revert"], 61070, None),
        (FollowUpKind.FOLLOW_UP, landed["follow"], 61065, None),
        (FollowUpKind.FIX, landed["fix"], 61060, None),
    ], got
    (warning,) = pr.warnings()
    assert "#61050 reverted upstream by #61070" in warning and "not in the base yet" in warning, warning
    # the walk reads trunk past the base only: v0.30.0..main
    assert after.walked == int(git(fork, "rev-list", "--count", "v0.30.0..upstream/main")), after.walked


@pytest.mark.parametrize(
    "text, kind",
    [
        # vLLM's own subjects (v0.5.4..main): a fix word anywhere in the subject, a revert with
        # its closing quote missing, GitHub's Revert button quoting the title without its number
        ("[Model][OpenVINO] Fix regressions from #61050 (#10045)", FollowUpKind.FIX),
        ("[Bugfix][VLM] Fix incompatibility between #7902 and #61050 (#7948)", FollowUpKind.FIX),
        ("[Doc] Fix incorrect docs from #61050 (#7788)", FollowUpKind.FIX),
        ('Revert "rename PromptInputs and inputs with backward compatibility (#61050) (#8810)', FollowUpKind.REVERT),
        ('Revert "[Misc][Bugfix]  Disable guided decoding" (#8593)', FollowUpKind.REVERT),
        ('Revert "[Misc] Enable guided decoding" (#8593)', None),  # another title
        ("[Bugfix] Add x, as #61050 did (#61060)", None),  # no fix word in the subject
        ("[Hotfix] x (#61060)\n\nsee #61050", None),  # the body only names it
    ],
)
def test_classify_reads_vllms_real_subjects(text: str, kind: FollowUpKind | None) -> None:
    merge_subject = "[Misc][Bugfix] Disable guided decoding (#61050)"
    assert classify(READERS, text, 61050, "0123456789abcdef0123456789abcdef01234567", merge_subject) is kind


def test_a_revert_naming_the_pr_by_title_only_is_found(fork: Path, upstream: Path) -> None:
    """GitHub's Revert button: 'Revert "<title>" (#M)', no "#61050" anywhere in the message."""
    head = add_pull_request(upstream)
    land(upstream, {LRU: LRU_FIXED}, "[Bugfix] Fix eviction order (#61050)", "2026-02-12T00:00:00Z")
    revert = land(upstream, {LRU: LRU_V030}, 'Revert "[Bugfix] Fix eviction order" (#61070)', "2026-02-13T00:00:00Z")
    sh(
        f"git fetch -q upstream +refs/heads/*:refs/remotes/upstream/* +refs/pull/61050/head:refs/remotes/upstream/pr/61050 "
        f"&& git branch topic/pr-61050 {head}",
        fork,
    )
    with (fork / "series.yaml").open("a") as f:
        f.write(ADOPTED)
    (pr,) = found(fork).prs
    assert [(f.kind, f.commit.sha, f.commit.pr) for f in pr.followups] == [(FollowUpKind.REVERT, revert, 61070)]
    assert "#61050 reverted upstream by #61070" in pr.warnings()[0], pr.warnings()


def test_a_mention_before_the_merge_is_no_follow_up(fork: Path, landed: dict[str, str]) -> None:
    """'Fix for #61050' before the squash is not after it (classify alone would call it a fix)."""
    assert classify(READERS, "[Misc] prepare the fix for #61050 (#61040)", 61050, None) is FollowUpKind.FIX
    (pr,) = found(fork).prs
    assert landed["before"] not in {f.commit.sha for f in pr.followups}


def test_a_topic_carrying_the_fix_by_patch_id_or_by_name(fork: Path, landed: dict[str, str]) -> None:
    # the fix cherry-picked onto the base: another sha, the same patch-id
    sh(
        f"git checkout -q -B topic/take-fix v0.30.0 && git cherry-pick {landed['fix']} >/dev/null && "
        "git checkout -q -B topic/named v0.30.0 && echo x > vllm/follow.py && git add vllm/follow.py && "
        "git commit -qm '[Fork] tidy as upstream did in #61065' && git checkout -q --detach v0.30.0",
        fork,
    )
    with (fork / "series.yaml").open("a") as f:
        f.write("  - name: take-fix\n    branch: topic/take-fix\n  - name: named\n    branch: topic/named\n")
    (pr,) = found(fork).prs
    how = {f.kind: (f.carried, f.carried_by) for f in pr.followups}
    assert how[FollowUpKind.FIX] == (Carried.PATCH_ID, "take-fix"), how
    assert how[FollowUpKind.FOLLOW_UP] == (Carried.NAMED, "named"), how
    assert how[FollowUpKind.REVERT] == (None, None), how


def test_patch_id_is_gits(fork: Path, landed: dict[str, str]) -> None:
    """The carried-by-patch-id rule compares libgit2's patch-id: git's `patch-id --stable`."""
    repo = pygit2.Repository(str(fork))
    for sha in (landed["merge"], landed["fix"], landed["revert"]):
        ours = _patch_id(repo, repo[sha].peel(pygit2.Commit))
        theirs = sh(f"git show {sha} | git patch-id --stable", fork).split()[0]
        assert str(ours) == theirs, sha


def test_a_revert_reverted_in_turn_relands_the_pr(fork: Path, upstream: Path, landed: dict[str, str]) -> None:
    """GitHub's Revert button on the revert relands #61050: no warning, nothing to carry;
    reverted once more, the warning is back."""
    subject = 'Revert "[Bugfix][KV offload] Fix eviction order of touched blocks (#61050)" (#61070)'
    reland = land(
        upstream, {LRU: LRU_FIXED, TEST: TEST_LRU_ORDER}, f'Revert "{subject}" (#61080)', "2026-02-17T00:00:00Z"
    )
    sh("git fetch -q upstream", fork)
    after = found(fork)
    (pr,) = after.prs
    revert = next(f for f in pr.followups if f.kind is FollowUpKind.REVERT)
    assert revert.relanded_by is not None and revert.relanded_by.sha == reland and revert.moot
    assert pr.warnings() == [] and revert not in [f for _, f in after.uncarried()]
    assert revert.sentence().endswith(f"relanded by #61080 ({reland[:12]})"), revert.sentence()
    assert revert.to_json()["relanded_by"] == revert.relanded_by.to_json()
    land(upstream, {LRU: LRU_V030}, f'Revert "Revert "{subject}" (#61080)" (#61090)', "2026-02-18T00:00:00Z")
    sh("git fetch -q upstream", fork)
    (pr,) = found(fork).prs
    revert = next(f for f in pr.followups if f.kind is FollowUpKind.REVERT)
    assert revert.relanded_by is None and not revert.moot
    (warning,) = pr.warnings()
    assert "#61050 reverted upstream by #61070" in warning, warning


def test_the_base_has_the_revert_while_the_topic_is_active(fork: Path, upstream: Path, landed: dict[str, str]) -> None:
    git(upstream, "tag", "v0.31.1", landed["revert"])
    sh("git fetch -q upstream --tags", fork)
    set_topic(fork, "base: v0.30.0", "base: v0.31.1")
    (pr,) = found(fork).prs
    assert pr.merge_in_base and {f.carried for f in pr.followups} == {Carried.BASE}
    (warning,) = pr.warnings()
    assert "which the base has" in warning and "still replays #61050" in warning, warning
    # retired (merged) over a base with the revert: the fork ships neither, nothing to say
    set_topic(fork, ADOPTED, ADOPTED + "    status: merged\n    merged_in: v0.31.1\n")
    (pr,) = found(fork).prs
    assert pr.status is Status.MERGED and pr.warnings() == []


def test_the_base_has_the_pr_but_not_its_revert(fork: Path, upstream: Path, landed: dict[str, str]) -> None:
    git(upstream, "tag", "v0.31.1", landed["fix"])
    sh("git fetch -q upstream --tags", fork)
    set_topic(fork, "base: v0.30.0", "base: v0.31.1")
    set_topic(fork, ADOPTED, ADOPTED + "    status: merged\n    merged_in: v0.31.1\n")
    (pr,) = found(fork).prs
    carried = {f.kind: f.carried for f in pr.followups}
    assert carried == {FollowUpKind.FIX: Carried.BASE, FollowUpKind.FOLLOW_UP: None, FollowUpKind.REVERT: None}
    (warning,) = pr.warnings()
    assert "the base has #61050" in warning and "but not the revert" in warning, warning
    # dropped, and upstream's squash not in the base: the fork does not ship #61050
    set_topic(fork, "base: v0.31.1", "base: v0.30.0")
    set_topic(fork, "status: merged\n    merged_in: v0.31.1\n", "status: dropped\n")
    (pr,) = found(fork).prs
    assert pr.warnings() == []


def test_this_reverts_commit_names_the_squash(fork: Path, upstream: Path) -> None:
    head = add_pull_request(upstream)
    merge = land(upstream, {LRU: LRU_FIXED}, "[Bugfix] Fix eviction order (#61050)", "2026-02-12T00:00:00Z")
    revert = land(
        upstream,
        {LRU: LRU_V030},
        f'Revert "[Bugfix] Fix eviction order"\n\nThis reverts commit {merge}.\n',
        "2026-02-13T00:00:00Z",
    )
    sh(
        f"git fetch -q upstream +refs/heads/*:refs/remotes/upstream/* +refs/pull/61050/head:refs/remotes/upstream/pr/61050 "
        f"&& git branch topic/pr-61050 {head}",
        fork,
    )
    with (fork / "series.yaml").open("a") as f:
        f.write(ADOPTED)
    (pr,) = found(fork).prs
    assert [(f.kind, f.commit.sha, f.commit.pr) for f in pr.followups] == [(FollowUpKind.REVERT, revert, None)]
    assert "reverted upstream by " + revert[:12] in pr.warnings()[0], pr.warnings()


def test_a_superseded_topic_is_named_with_its_replacement(fork: Path, landed: dict[str, str]) -> None:
    set_topic(
        fork,
        "  - name: offload-evict-fix\n    branch: topic/offload-evict-fix\n",
        "  - name: offload-evict-fix\n    branch: topic/offload-evict-fix\n"
        "    status: superseded\n    superseded_by: pr-61050\n",
    )
    after = found(fork)
    assert after.prs[0].superseded == ("offload-evict-fix",)
    assert set(after.warnings()) == {"pr-61050", "offload-evict-fix"}


def test_status_shows_the_warning_and_json_the_list(fork: Path, landed: dict[str, str]) -> None:
    text = run_series("status", cwd=fork).stdout
    row = next(line for line in text.splitlines() if line.lstrip().startswith("pr-61050"))
    assert "warning: 1 upstream revert" in row and "not carried: follow-up #61065, fix #61060" in row, text
    assert "warning: #61050 reverted upstream by #61070" in text, text
    data = json.loads(run_series("status", "--json", cwd=fork).stdout)
    (pr,) = data["upstream_followups"]["prs"]
    assert [(f["kind"], f["commit"]["pr"], f["carried"]) for f in pr["followups"]] == [
        ("revert", 61070, None),
        ("follow-up", 61065, None),
        ("fix", 61060, None),
    ], pr
    assert len(pr["warnings"]) == 1 and data["upstream_followups"]["trunk"] == "upstream/main"


def test_status_says_when_trunk_is_not_there(fork: Path, landed: dict[str, str]) -> None:
    sh("git update-ref -d refs/remotes/upstream/main && git update-ref -d refs/remotes/upstream/HEAD || true", fork)
    text = run_series("status", cwd=fork).stdout
    assert "follow-ups of upstream PRs not read: neither upstream/main nor upstream/master is fetched" in text, text
    data = json.loads(run_series("status", "--json", cwd=fork).stdout)
    assert data["upstream_followups"] == {"trunk": None, "walked": 0, "prs": []}, data


def test_ci_report_lists_what_is_not_carried(fork: Path, landed: dict[str, str]) -> None:
    text = run_series("ci", "report", cwd=fork).stdout
    assert "## Upstream follow-ups and reverts not carried" in text, text
    assert "- **warning** (pr-61050): #61050 reverted upstream by #61070" in text, text
    for sha, kind in ((landed["revert"], "revert"), (landed["follow"], "follow-up"), (landed["fix"], "fix")):
        assert any(f"`{sha[:12]}`" in line and f"| {kind} |" in line for line in text.splitlines()), (kind, text)


def test_the_walk_reaches_back_to_the_oldest_topic(fork: Path, upstream: Path, landed: dict[str, str]) -> None:
    """Three places to start from (the base, and two topics' branches leaving trunk at
    different commits): the walk starts at the oldest, where a retired topic's squash is."""
    git(upstream, "tag", "v0.31.1", landed["fix"])
    sh(
        f"git fetch -q upstream --tags && git branch topic/pr-61051 {landed['noise']} && "
        f"git branch topic/pr-61052 {landed['before']}",
        fork,
    )
    set_topic(fork, "base: v0.30.0", "base: v0.31.1")
    set_topic(
        fork,
        ADOPTED,
        ADOPTED + "    status: merged\n    merged_in: v0.31.1\n"
        "  - name: pr-61051\n    branch: topic/pr-61051\n    upstream_pr: 61051\n"
        "  - name: pr-61052\n    branch: topic/pr-61052\n    upstream_pr: 61052\n",
    )
    after = found(fork)
    assert after.walked == int(git(fork, "rev-list", "--count", "v0.30.0..upstream/main")), after.walked
    assert after.prs[0].merge is not None and after.prs[0].merge.sha == landed["merge"]
