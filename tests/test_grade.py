"""The first-PR grade: every rule within and over its limit, and what each finding says."""

from __future__ import annotations

import subprocess

from series.propose.grade import Commit, Level, grade, tags_from_guide
from series.propose.reviewers import owners_of, parse_codeowners
from series.git.repo import FileStat
from series.model import ProposeSettings

SIGNED = "\n\nSigned-off-by: Fork Maintainer <fork@example.com>\n"
LIMITS = ProposeSettings()


def _levels(title: str, files: list[FileStat], messages: list[str], **kw: object) -> dict[str, Level]:
    commits = [Commit(f"{i:040x}", m) for i, m in enumerate(messages)]
    result = grade(title, files, commits, LIMITS, **kw)  # type: ignore[arg-type]
    for f in result.findings:
        if f.level is not Level.OK:
            assert f.why and f.fix, f"a {f.rule} finding must say why and how to fix: {f}"
    out: dict[str, Level] = {}
    for f in result.findings:
        out[f.rule] = max(out.get(f.rule, Level.OK), f.level, key=list(Level).index)
    return out


CODE = FileStat("vllm/v1/kv_offload/cpu/policies/lru.py", 10, 2, "M")
TEST = FileStat("tests/v1/kv_offload/test_lru.py", 8, 0, "M")
GOOD = "[Bugfix][KV Offload] Keep request order on touch"


def test_a_small_focused_signed_tested_change_is_all_ok() -> None:
    levels = _levels(GOOD, [CODE, TEST], ["fix order" + SIGNED])
    assert set(levels.values()) == {Level.OK}, levels


def test_size_within_at_and_over_the_line_limit() -> None:
    at = FileStat(CODE.path, 150, 50, "M")  # 200: the limit itself is fine
    over = FileStat(CODE.path, 150, 51, "M")
    assert _levels(GOOD, [at, TEST], ["x" + SIGNED])["size"] is Level.FLAG  # 208 with the test
    assert (
        _levels(GOOD, [FileStat(CODE.path, 100, 100, "M"), FileStat(TEST.path, 0, 0, "M")], ["x" + SIGNED])["size"]
        is Level.OK
    )
    assert _levels(GOOD, [over, TEST], ["x" + SIGNED])["size"] is Level.FLAG
    # --not-first: the first-PR limit does not apply, only the guide's RFC threshold (500)
    assert _levels(GOOD, [over, TEST], ["x" + SIGNED], first_pr=False)["size"] is Level.OK
    huge = FileStat(CODE.path, 400, 101, "M")
    assert _levels(GOOD, [huge, TEST], ["x" + SIGNED], first_pr=False)["size"] is Level.FLAG


def test_files_within_and_over_the_file_limit() -> None:
    three = [CODE, TEST, FileStat("vllm/v1/kv_offload/cpu/manager.py", 1, 1, "M")]
    assert _levels(GOOD, three, ["x" + SIGNED])["files"] is Level.OK
    four = three + [FileStat("vllm/v1/kv_offload/spec.py", 1, 0, "M")]
    assert _levels(GOOD, four, ["x" + SIGNED])["files"] is Level.FLAG
    assert "files" not in _levels(GOOD, four, ["x" + SIGNED], first_pr=False)


def test_one_concern_areas_docs_and_refactor_mixed() -> None:
    other = FileStat("vllm/entrypoints/openai/api_server.py", 1, 1, "M")
    assert _levels(GOOD, [CODE, TEST, other], ["x" + SIGNED])["concern"] is Level.FLAG
    docs = FileStat("docs/features/kv_offload.md", 3, 0, "M")
    assert _levels(GOOD, [CODE, TEST, docs], ["x" + SIGNED])["concern"] is Level.FLAG
    mixed = ["[Refactor] rename helpers" + SIGNED, "[Bugfix] fix order" + SIGNED]
    assert _levels(GOOD, [CODE, TEST], mixed)["concern"] is Level.FLAG
    assert _levels("[Doc] Describe offloading", [docs], ["x" + SIGNED])["concern"] is Level.OK


def test_dco_on_every_commit() -> None:
    assert _levels(GOOD, [CODE, TEST], ["a" + SIGNED, "b"])["dco"] is Level.FLAG
    assert _levels(GOOD, [CODE, TEST], ["a" + SIGNED, "b" + SIGNED])["dco"] is Level.OK


def test_title_tags_from_the_guide() -> None:
    assert _levels("Keep request order", [CODE, TEST], ["x" + SIGNED])["title"] is Level.FLAG
    assert _levels("[Bugfix]", [CODE, TEST], ["x" + SIGNED])["title"] is Level.FLAG
    assert _levels("[Fork] keep order", [CODE, TEST], ["x" + SIGNED])["title"] is Level.NOTE
    commits = [Commit("0" * 40, "fix the order" + SIGNED)]
    missing = next(f for f in grade("keep order", [CODE, TEST], commits, LIMITS).findings if f.rule == "title")
    assert '--title "[Bugfix][KV Offload] keep order"' in missing.fix, missing.fix


def test_tags_read_from_upstreams_contributing_guide() -> None:
    proc = subprocess.run(
        ["git", "-C", "/tmp/bench/upstream4", "show", "HEAD:docs/contributing/README.md"],
        capture_output=True,
        text=True,
    )
    guide = (
        proc.stdout
        if proc.returncode == 0
        else (
            "### PR Title and Classification\n\n- `[Bugfix]`, `[Feature]` and `[KV Offload]`; "
            "`[Hardware][Vendor]`\n\n### Code Quality\n\n`[NotATag]`\n"
        )
    )
    tags = tags_from_guide(guide)
    assert {"Bugfix", "Feature", "KV Offload", "Hardware"} <= set(tags), tags
    assert "Vendor" not in tags and "NotATag" not in tags, tags


def test_tests_touched_when_code_is() -> None:
    assert _levels(GOOD, [CODE], ["x" + SIGNED])["tests"] is Level.FLAG
    assert _levels("[Doc] x", [FileStat("docs/a.md", 1, 0, "M")], ["x" + SIGNED])["tests"] is Level.OK


def test_hot_paths_flagged_and_relaxed_with_not_first() -> None:
    for path in (
        "vllm/v1/core/sched/scheduler.py",
        "vllm/v1/attention/backends/flash_attn.py",
        "vllm/compilation/cuda_graph.py",
        "vllm/v1/sample/sampler.py",
    ):
        hot = FileStat(path, 1, 1, "M")
        assert _levels(GOOD, [hot, TEST], ["x" + SIGNED])["hot-path"] is Level.FLAG, path
        assert _levels(GOOD, [hot, TEST], ["x" + SIGNED], first_pr=False)["hot-path"] is Level.NOTE, path
    assert _levels(GOOD, [CODE, TEST], ["x" + SIGNED])["hot-path"] is Level.OK


def test_perf_claim_needs_a_benchmark_script() -> None:
    claim = ["Make touch 2x faster" + SIGNED]
    assert _levels(GOOD, [CODE, TEST], claim)["benchmark"] is Level.FLAG
    bench = FileStat("benchmarks/kv_offload/bench_lru.py", 30, 0, "A")
    assert _levels(GOOD, [CODE, TEST, bench], claim)["benchmark"] is Level.OK
    assert _levels("[Perf][KV Offload] Touch in place", [CODE, TEST], ["x" + SIGNED])["benchmark"] is Level.FLAG


def test_codeowners_last_match_wins_and_unowning() -> None:
    rules = parse_codeowners(
        "# core\n/vllm/v1/kv_offload @ApostaC @orozery\n*.md @docs-team\n"
        "/vllm/v1/kv_offload/cpu/policies/ @lru-owner\n/vllm/v1/kv_offload/spec.py\n"
        "docs/ @org/docs\n"
    )
    assert owners_of(rules, "vllm/v1/kv_offload/cpu/manager.py").owners == ("@ApostaC", "@orozery")
    assert owners_of(rules, "vllm/v1/kv_offload/cpu/policies/lru.py").owners == ("@lru-owner",)
    assert owners_of(rules, "vllm/v1/kv_offload/spec.py").owners == ()  # unowned by a later rule
    assert owners_of(rules, "vllm/v1/kv_offload/README.md").owners == ("@docs-team",)
    assert owners_of(rules, "docs/features/x.md").owners == ("@org/docs",)
    assert owners_of(rules, "vllm/v1/kv_offloadx/a.py").owners == ()
    assert (
        owners_of(rules, "vllm/v1/kv_offload/cpu/policies/lru.py").rule == "/vllm/v1/kv_offload/cpu/policies/ (line 4)"
    )


# vllm-project/vllm's .github/PULL_REQUEST_TEMPLATE.md, as series fills it
TEMPLATE = (
    "<!-- markdownlint-disable -->\nPLEASE FILL IN THE PR DESCRIPTION HERE\n\n## Purpose\n\n{purpose}\n\n"
    "## Test Plan\n\n{plan}\n\n## Test Result\n\n{result}\n\n---\n<details>\n<summary> Essential Elements "
    "</summary>\n\n- [ ] The test results\n</details>\n"
)
AGENT = "Co-authored-by: Claude\n"


def _described(body: str, *messages: str) -> dict[str, tuple[Level, str]]:
    from series.propose.grade import describe

    found = describe(body, [Commit(f"{i:040x}", m) for i, m in enumerate(messages)])
    for f in found:
        assert f.source in (".github/PULL_REQUEST_TEMPLATE.md", "AGENTS.md"), f"names its rule's file: {f}"
        if f.level is not Level.OK:
            assert f.why and f.fix, f
    return {f.rule: (f.level, f.what) for f in found}


def test_description_with_every_checklist_field_passes() -> None:
    body = TEMPLATE.format(
        purpose="Fixes #61050: keep request order.", plan="pytest tests/v1/kv_offload", result="12 passed"
    )
    found = _described(body, "[Bugfix] x" + SIGNED)
    assert {r: l for r, (l, _) in found.items()} == {
        "purpose": Level.OK,
        "test-plan": Level.OK,
        "test-result": Level.OK,
        "issue-link": Level.OK,
        "ai-assisted": Level.OK,
    }, found


def test_empty_template_sections_are_flagged_and_the_checklist_is_not_a_result() -> None:
    """The template's own checklist below '---' mentions "test results": it fills nothing."""
    found = _described(TEMPLATE.format(purpose="Keep request order.", plan="", result=""), "[Bugfix] x")
    assert found["test-plan"][0] is Level.FLAG and found["test-result"][0] is Level.FLAG, found
    assert found["test-result"][1] == "the description's 'test result' section is empty", found
    assert found["purpose"][0] is Level.OK and found["issue-link"][0] is Level.NOTE, found
    only_comment = TEMPLATE.format(purpose="<!-- say why -->", plan="x", result="y")
    assert _described(only_comment, "x")["purpose"][0] is Level.FLAG


def test_ai_assisted_pr_must_say_so_and_why_it_is_no_duplicate() -> None:
    """AGENTS.md: attribution by a trailer without an email (its own example); a human
    Co-authored-by with an email is not an agent."""
    plain = TEMPLATE.format(purpose="Keep request order.", plan="pytest x", result="1 passed")
    found = _described(plain, "[Bugfix] x\n\n" + AGENT + SIGNED.lstrip())
    assert found["ai-assisted"][0] is Level.FLAG, found
    assert "AI assistance was used and why this is not duplicating" in found["ai-assisted"][1], found
    said = TEMPLATE.format(
        purpose="Keep request order. Written with AI assistance (Claude); not a duplicate: "
        "#61050 changes eviction, this the touch order.",
        plan="pytest x",
        result="1 passed",
    )
    assert _described(said, "[Bugfix] x\n\n" + AGENT)["ai-assisted"][0] is Level.OK
    human = "[Bugfix] x\n\nCo-authored-by: Ada Upstream <ada@example.com>\n"
    assert _described(plain, human)["ai-assisted"][0] is Level.OK
    assert _described(plain, "x\n\nAssisted-by: some-agent\n")["ai-assisted"][0] is Level.FLAG
