"""series propose: replay onto upstream main, grade, reviewers, description, duplicates last, draft PR.

The upstream here has what the real one has for a proposal: a PR template, CODEOWNERS and
the contributing guide on main, lines of serving.py written by two people (one with a
GitHub noreply address, one whose login only the API knows), and an open PR from 2019
that touches the same file. GitHub is a local HTTP server; the fork remote is a bare
repository.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from tests.conftest import from_template, run_series, sh
from tests.repos import TEST_AREA, commit_all, commit_files, git, write

SLUG = "/repos/vllm-project/vllm"
TOKEN = "ghp_PROPOSEsecret1234567890"
SERVING = "vllm/entrypoints/openai/serving.py"
KAY = {
    "GIT_AUTHOR_NAME": "Kay Dev",
    "GIT_AUTHOR_EMAIL": "4242+kaydev@users.noreply.github.com",
    "GIT_COMMITTER_NAME": "Kay Dev",
    "GIT_COMMITTER_EMAIL": "kay@example.com",
}
LEE = {
    "GIT_AUTHOR_NAME": "Lee Writer",
    "GIT_AUTHOR_EMAIL": "lee@example.com",
    "GIT_COMMITTER_NAME": "Lee Writer",
    "GIT_COMMITTER_EMAIL": "lee@example.com",
}
ME = {
    "GIT_AUTHOR_NAME": "Fork Maintainer",
    "GIT_AUTHOR_EMAIL": "fork@example.com",
    "GIT_COMMITTER_NAME": "Fork Maintainer",
    "GIT_COMMITTER_EMAIL": "fork@example.com",
}
TEMPLATE = """\
<!-- markdownlint-disable -->

## Overview

<!-- Summarize the change in 1-2 lines. Link relevant issues and PRs. -->

## Claims

<!-- State the accomplishments in a few concrete bullets. -->

## Validation

<!-- Show evidence that the claims are met by this change. -->

## Details

<!-- Explain motivation, design decisions. -->

---

<details>
<summary> Pull Request Checklist </summary>

- [ ] **Design Fit:** Minimizes impact on core components.
</details>

**BEFORE SUBMITTING, PLEASE READ <https://docs.vllm.ai/en/latest/contributing>** (anything written below this line will be removed by GitHub Actions)
"""
CODEOWNERS = "/vllm/entrypoints @DarkLight1337 @chaunceyjiang\n/tests/entrypoints @AndreasKaratzas\n"
GUIDE = """\
# Contributing

### PR Title and Classification

- `[Bugfix]`, `[Feature]`, `[Perf]` and `[Refactor]` for code changes.
- `[Frontend]`, `[Core]` and `[KV Offload]` for areas.

### Code Quality
"""
SERIES_YAML = """\
upstream:
  remote: upstream
  base: v0.30.0
  github: vllm-project/vllm
topics:
  - name: serving-fix
    branch: topic/serving-fix
    summary: keep the request order when serving
  - name: offload-note
    branch: topic/offload-note
"""
TEST_AREAS = (
    TEST_AREA
    + """\
- label: Entrypoints tests
  key: entrypoints
  device: cpu
  source_file_dependencies:
    - vllm/entrypoints
    - tests/entrypoints
  commands:
    - pytest -v -s entrypoints/openai
"""
)


def _serving(edits: dict[int, str]) -> str:
    return "".join(edits.get(i, f"line {i}\n") for i in range(1, 11))


@pytest.fixture
def proposal(tmp_path: Path) -> Path:
    """upstream work repo -> bare mirror (upstream) -> fork clone; a bare fork remote 'origin'
    (built once per session, each test gets a copy)."""
    return from_template("proposal", build_proposal, tmp_path)


def build_proposal(tmp_path: Path) -> Path:
    """The layout `proposal` copies, built in `tmp_path`; returns the fork."""
    work = tmp_path / "upstream-work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    write(
        work,
        {
            "README.md": "# vLLM\n",
            "vllm/__init__.py": "",
            SERVING: _serving({}),
            "vllm/v1/kv_offload/lru.py": "class LRU:\n    pass\n",
            "tests/entrypoints/openai/test_serving.py": "def test_serving():\n    assert True\n",
            ".buildkite/test_areas/areas.yaml": TEST_AREAS,
        },
    )
    commit_all(work, "Release v0.30.0 base", "2026-01-01T00:00:00Z")
    write(work, {SERVING: _serving({i: f"kay {i}\n" for i in range(1, 6)})})
    commit_all(work, "[Frontend] kay's half", "2026-01-02T00:00:00Z", env=KAY)
    write(
        work, {SERVING: _serving({**{i: f"kay {i}\n" for i in range(1, 6)}, **{i: f"lee {i}\n" for i in range(6, 11)}})}
    )
    commit_all(work, "[Frontend] lee's half", "2026-01-03T00:00:00Z", env=LEE)
    git(work, "tag", "v0.30.0")
    write(
        work,
        {
            ".github/PULL_REQUEST_TEMPLATE.md": TEMPLATE,
            ".github/CODEOWNERS": CODEOWNERS,
            "docs/contributing/README.md": GUIDE,
            "vllm/v1/kv_offload/lru.py": "class LRU:\n    x = 1\n",
        },
    )
    commit_all(work, "Release v0.31.0", "2026-02-01T00:00:00Z")
    git(work, "tag", "v0.31.0")
    serving = (work / SERVING).read_text()
    old = commit_files(
        work,
        "v0.30.0",
        {SERVING: serving.replace("lee 8\n", "lee 8 (theirs)\n")},
        "[Frontend] an old idea about serving",
        "2019-05-01T00:00:00Z",
    )
    git(work, "update-ref", "refs/pull/50001/head", old)
    # PR 50003 touched serving.py too, but it is squash-merged into main: not a duplicate
    merged = commit_files(
        work,
        "v0.30.0",
        {SERVING: serving.replace("kay 3\n", "kay 3 (merged)\n")},
        "[Frontend] merged long ago",
        "2026-01-20T00:00:00Z",
    )
    git(work, "update-ref", "refs/pull/50003/head", merged)
    write(work, {"README.md": "# vLLM, merged\n"})
    commit_all(work, "[Frontend] merged long ago (#50003)", "2026-02-02T00:00:00Z")
    bare = tmp_path / "upstream.git"
    sh(f"git clone -q --mirror {work} {bare}", tmp_path)
    fork = tmp_path / "fork"
    subprocess.run(["git", "clone", "-q", "-o", "upstream", str(bare), str(fork)], check=True, capture_output=True)
    git(fork, "checkout", "-q", "-B", "topic/serving-fix", "v0.30.0")
    write(
        fork,
        {
            SERVING: serving.replace("kay 3\n", "kay 3 (fixed)\n").replace("lee 8\n", "lee 8 (fixed)\n"),
            "tests/entrypoints/openai/test_serving.py": "def test_serving():\n    assert True\n\n\ndef test_order():\n    assert True\n",
        },
    )
    commit_all(
        fork,
        "[Bugfix][Frontend] Keep the request order when serving\n\n"
        "Requests were served out of order when the queue was full.",
        "2026-01-10T00:00:00Z",
        env=ME,
    )
    git(fork, "checkout", "-q", "-B", "topic/offload-note", "v0.30.0")
    write(fork, {"vllm/v1/kv_offload/note.py": "NOTE = 1\n"})
    commit_all(fork, "[KV Offload] a note", "2026-01-11T00:00:00Z", env=ME)
    git(fork, "checkout", "-q", "--detach", "v0.30.0")
    (fork / "series.yaml").write_text(SERIES_YAML)
    origin = tmp_path / "my-fork.git"
    sh(f"git init -q --bare {origin} && git -C {fork} remote add origin {origin}", tmp_path)
    return fork


def _pull(number: int, title: str, created: str, user: str = "someone", head: str = "1" * 40) -> dict[str, object]:
    return {
        "number": number,
        "title": title,
        "state": "open",
        "user": {"login": user},
        "html_url": f"https://github.com/vllm-project/vllm/pull/{number}",
        "created_at": created,
        "updated_at": created,
        "closed_at": None,
        "merged_at": None,
        "head": {"sha": head},
        "base": {"sha": "2" * 40},
    }


def _serve(server: HTTPServer, fork: Path, created: list[dict[str, object]], head_50001: str = "1" * 40) -> None:
    lee = git(fork, "log", "-1", "--format=%H", "--author=Lee", "v0.30.0").strip()
    server.expect_request(f"{SLUG}/commits/{lee}").respond_with_json({"sha": lee, "author": {"login": "leewriter"}})
    server.expect_request(
        f"{SLUG}/pulls",
        method="GET",
        query_string={"state": "open", "sort": "updated", "direction": "desc", "per_page": "100"},
    ).respond_with_json(
        [
            _pull(50001, "[Frontend] an old idea about serving", "2019-05-01T00:00:00Z", head=head_50001),
            _pull(50002, "[Core] unrelated", "2026-01-05T00:00:00Z"),
        ]
    )
    server.expect_request(f"{SLUG}/pulls/50001/files").respond_with_json(
        [{"filename": SERVING, "status": "modified", "patch": "@@ -8,1 +8,1 @@\n-lee 8\n+lee 8 (theirs)"}]
    )
    server.expect_request(f"{SLUG}/pulls/50002/files").respond_with_json(
        [{"filename": "vllm/v1/core/sched/scheduler.py", "status": "modified", "patch": "@@ -1 +1 @@\n-a\n+b"}]
    )
    server.expect_request("/user").respond_with_json({"login": "forkdev"})

    def opened(request: Request) -> Response:
        created.append(request.get_json())
        return Response(
            json.dumps(
                {**_pull(62000, str(request.get_json()["title"]), "2026-03-01T00:00:00Z", "forkdev"), "draft": True}
            ),
            status=201,
            content_type="application/json",
        )

    server.expect_request(f"{SLUG}/pulls", method="POST").respond_with_handler(opened)
    # every other commit lookup: GitHub knows no login (the author has no account)
    server.expect_request(re.compile(f"^{SLUG}/commits/[0-9a-f]{{40}}$"), method="GET").respond_with_json(
        {"author": None}
    )


def _api(server: HTTPServer) -> dict[str, str]:
    return {"SERIES_GITHUB_API": server.url_for("").rstrip("/"), "GITHUB_TOKEN": TOKEN}


def _calls(server: HTTPServer) -> list[str]:
    """The API calls in the order they came: "GET /pulls", "GET /commits" (any sha), ..."""
    out = []
    for request, _ in server.log:
        path = request.path.removeprefix(SLUG)
        out.append(f"{request.method} {'/commits' if path.startswith('/commits/') else path}")
    return out


def test_dry_run_grades_suggests_describes_then_stops_on_an_old_open_duplicate(
    proposal: Path, httpserver: HTTPServer
) -> None:
    _serve(httpserver, proposal, [])
    proc = run_series("propose", "serving-fix", "--dry-run", "--json", cwd=proposal, expect=1, env=_api(httpserver))
    data = json.loads(proc.stdout)
    assert data["steps"] == ["replay", "grade", "reviewers", "description", "duplicates"], data["steps"]
    # 1. replayed onto upstream's current main (v0.31.0), not the base
    main = git(proposal, "rev-parse", "upstream/main").strip()
    assert data["onto"] == main and data["branch"] == "pr/serving-fix", data
    assert git(proposal, "rev-parse", f"{data['head']}^").strip() == main
    # 2. the grade: within every limit, but no sign-off (never added without --signoff)
    levels = {f["rule"]: f["level"] for f in data["grade"]["findings"]}
    assert levels == {
        "size": "ok",
        "files": "ok",
        "concern": "ok",
        "dco": "flag",
        "title": "ok",
        "tests": "ok",
        "hot-path": "ok",
        "benchmark": "ok",
        # the description's rules: vLLM's PR template checklist and AGENTS.md
        "purpose": "ok",
        "test-plan": "ok",
        "test-result": "ok",
        "issue-link": "note",
        "ai-assisted": "ok",
    }, data["grade"]
    assert data["commits"][0]["signed_off"] is False
    # 3. reviewers: CODEOWNERS owners of both paths, and the two authors of the changed lines
    r = data["reviewers"]
    assert r["codeowners"] == ".github/CODEOWNERS"
    assert r["mentionable"] == ["@AndreasKaratzas", "@DarkLight1337", "@chaunceyjiang", "@kaydev", "@leewriter"], r
    assert [(a["name"], a["login"]) for a in r["authors"]] == [
        ("Kay Dev", "kaydev"),
        ("Lee Writer", "leewriter"),
        ("vLLM Upstream", None),
    ], r["authors"]
    assert r["not_mentionable"] == ["vLLM Upstream <upstream@example.com>"], r
    # 4. the description: upstream's template, filled; the release-notes line above the footer
    body = data["description"]["body"]
    assert data["description"]["template"] == ".github/PULL_REQUEST_TEMPLATE.md"
    assert data["description"]["filled"] == ["Overview", "Claims", "Validation"], data["description"]
    assert "Keep the request order when serving.\n\nRequests were served out of order" in body, body
    assert "pytest -v tests/entrypoints/openai/test_serving.py" in body, body
    assert "Entrypoints tests (`entrypoints`, cpu): `pytest -v -s entrypoints/openai`" in body, body
    assert "KV offload tests" not in body, "a step that does not cover the paths is not in the plan"
    assert body.index("Release notes: keep the request order when serving") < body.index("\n---\n"), body
    assert "Pull Request Checklist" in body and "<!-- Explain motivation" in body, "unfilled parts stay"
    # 5. duplicates: the 2019 PR is open and shares the file; it stops the proposal
    dup = data["duplicates"]
    assert [c["number"] for c in dup["candidates"]] == [50001] and dup["stopped"] is True, dup
    assert dup["candidates"][0]["overlapping_hunks"] == 1
    # scored as vLLM's duplicate bot will score the PR once posted (preflight's score): this title
    # and description against the candidate's, below the bot's threshold here
    score = dup["candidates"][0]["duplicate_bot"]
    assert score["number"] == 50001 and not score["flagged"] and 0 < score["files"] <= 1, score
    assert abs(score["score"] - (0.75 * score["text"] + 0.25 * score["files"])) < 1e-3, score
    assert dup["duplicate_bot"]["title"] == data["title"] and dup["duplicate_bot"]["flagged"] == [], dup
    assert "series: error: open upstream PR(s) #50001" in proc.stderr, proc.stderr
    # the duplicate search ran after every other step: every API call of steps 1-4 came first
    calls = _calls(httpserver)
    first_search = calls.index("GET /pulls")
    assert all(c.startswith("GET /commits") for c in calls[:first_search]) and first_search >= 1, calls
    assert set(calls[first_search + 1 :]) == {"GET /pulls/50001/files", "GET /pulls/50002/files"}, calls
    assert "POST /pulls" not in calls and "GET /user" not in calls, calls
    assert git(proposal, "ls-remote", "origin") == "", "nothing pushed"
    assert "upstream_pr" not in (proposal / "series.yaml").read_text()


def test_text_report_lists_the_two_ways_on(proposal: Path, httpserver: HTTPServer) -> None:
    _serve(httpserver, proposal, [])
    proc = run_series("propose", "serving-fix", "--dry-run", cwd=proposal, expect=1, env=_api(httpserver))
    out = proc.stdout
    assert out.startswith("1. replay: 1 commit(s) of 'serving-fix' onto upstream/main"), out
    assert "FLAG  dco:" in out and "fix: read the DCO" in out, out
    assert "may be @-mentioned: @AndreasKaratzas @DarkLight1337 @chaunceyjiang @kaydev @leewriter" in out, out
    assert "#50001 open someone: [Frontend] an old idea about serving" in out, out
    lines = out.splitlines()
    under = lines[lines.index("   #50001 open someone: [Frontend] an old idea about serving") + 2]
    assert under.startswith("      duplicate bot: ") and under.endswith("threshold: not flagged"), out
    assert "   duplicate bot: scored as " in out, out
    assert "series adopt-upstream 50001 --replaces serving-fix" in out, out
    assert "series propose serving-fix --despite 50001" in out, out
    assert "6. would run" not in out, "a stopped proposal does not say what it would send"
    assert TOKEN not in out + proc.stderr


def test_despite_pushes_to_the_fork_and_opens_a_draft_pr(proposal: Path, httpserver: HTTPServer) -> None:
    created: list[dict[str, object]] = []
    _serve(httpserver, proposal, created)
    dry = run_series(
        "propose", "serving-fix", "--dry-run", "--despite", "50001", "--signoff", cwd=proposal, env=_api(httpserver)
    ).stdout
    assert "6. would run (--dry-run: nothing pushed, no PR opened):" in dry, dry
    assert "head=<your GitHub login>:pr/serving-fix base=main draft=true" in dry, dry
    assert "OK    dco: all 1 commit(s) carry Signed-off-by" in dry, dry
    httpserver.clear_log()
    proc = run_series(
        "propose", "serving-fix", "--despite", "50001", "--signoff", "--json", cwd=proposal, env=_api(httpserver)
    )
    data = json.loads(proc.stdout)
    assert data["steps"] == ["replay", "grade", "reviewers", "description", "duplicates", "push", "pull request"], data
    # the push went to the fork remote, with the replayed, signed-off head
    head = data["head"]
    assert git(proposal, "ls-remote", "origin").split() == [head, "refs/heads/pr/serving-fix"]
    message = git(proposal, "log", "-1", "--format=%B", head)
    assert message.rstrip().endswith("Signed-off-by: Fork Maintainer <fork@example.com>"), message
    # the draft PR request: head user:branch, draft, title and the rendered body
    assert len(created) == 1, created
    sent = created[0]
    assert sent["head"] == "forkdev:pr/serving-fix" and sent["base"] == "main" and sent["draft"] is True, sent
    assert sent["title"] == "[Bugfix][Frontend] Keep the request order when serving", sent
    assert sent["body"] == data["description"]["body"] and "Release notes:" in str(sent["body"]), sent
    calls = _calls(httpserver)
    assert calls.index("POST /pulls") == len(calls) - 1 and calls.index("GET /pulls") < calls.index("GET /user"), calls
    # series.yaml gains upstream_pr (one journaled operation, with the local PR branch)
    text = (proposal / "series.yaml").read_text()
    assert "    upstream_pr: 62000\n  - name: offload-note" in text, text
    assert git(proposal, "rev-parse", "refs/heads/pr/serving-fix").strip() == head
    assert data["pull_request"]["number"] == 62000 and data["pull_request"]["head"] == "forkdev:pr/serving-fix"
    log = run_series("log", cwd=proposal).stdout
    assert "propose" in log and "serving-fix proposed upstream as PR #62000" in log, log
    # proposing it again would open a second PR: refused, dry run or not, the same way
    # (before the fork remote or anything else is looked at), naming the PR and --update
    httpserver.expect_request(f"{SLUG}/pulls/62000").respond_with_json(_pull(62000, "mine", "2026-03-01T00:00:00Z"))
    git(proposal, "remote", "remove", "origin")
    refusals = [
        run_series("propose", "serving-fix", *dry, cwd=proposal, expect=1, env=_api(httpserver)).stderr
        for dry in (("--dry-run",), ())
    ]
    assert refusals[0] == refusals[1], refusals
    assert refusals[0] == (
        "series: error: topic 'serving-fix' already has upstream PR #62000 "
        "(https://github.com/vllm-project/vllm/pull/62000), open (upstream_pr in series.yaml): "
        "propose opens a topic's PR once\n"
        "hint: push the topic's new work to it with 'series propose serving-fix --update' "
        "(--dry-run shows the range-diff)\n"
    ), refusals[0]
    offline = run_series("propose", "serving-fix", "--dry-run", "--offline", cwd=proposal, expect=1).stderr
    assert "already has upstream PR #62000 (upstream_pr in series.yaml)" in offline, offline
    assert "'series propose serving-fix --update'" in offline, offline
    auth = {r.headers.get("Authorization") for r, _ in httpserver.log}
    assert auth == {f"Bearer {TOKEN}"}, auth


def test_offline_search_in_git_refs_stops_whatever_the_age(proposal: Path) -> None:
    proc = run_series("propose", "serving-fix", "--dry-run", "--offline", "--fetch", cwd=proposal, expect=1)
    assert "#50001 unknown Ada Upstream: [Frontend] an old idea about serving" in proc.stdout, proc.stdout
    assert "source: git refs" in proc.stdout and "#50003" not in proc.stdout, proc.stdout
    assert (
        "note: offline: 2 PR heads under refs/remotes/upstream/pr/ searched; 1 that touch these files "
        "are merged into upstream/main, left out" in proc.stdout
    ), proc.stdout
    ok = run_series("propose", "offload-note", "--dry-run", "--offline", cwd=proposal).stdout
    assert "5. duplicates (open PRs of any age, source: git refs): none share a file" in ok, ok
    assert "FLAG  tests: code changed" in ok and "OK    title: title tags [KV Offload]" in ok, ok


def test_limits_are_settings_and_not_first_relaxes_them(proposal: Path) -> None:
    (proposal / "series.yaml").write_text(SERIES_YAML + "propose:\n  max_lines: 3\n  max_files: 1\n")
    out = run_series("propose", "offload-note", "--dry-run", "--offline", "--json", cwd=proposal).stdout
    levels = {f["rule"]: f["level"] for f in json.loads(out)["grade"]["findings"]}
    assert levels["size"] == "ok" and levels["files"] == "ok", levels  # 1 line, 1 file
    out = run_series(
        "propose", "serving-fix", "--dry-run", "--offline", "--json", "--despite", "50001", cwd=proposal
    ).stdout
    findings = {f["rule"]: f for f in json.loads(out)["grade"]["findings"]}
    assert findings["size"]["level"] == "flag" and "first-PR limit 3" in findings["size"]["what"], findings
    assert findings["files"]["level"] == "flag" and "propose.max_files" in findings["files"]["fix"], findings
    out = run_series(
        "propose", "serving-fix", "--dry-run", "--offline", "--json", "--despite", "50001", "--not-first", cwd=proposal
    ).stdout
    levels = {f["rule"]: f["level"] for f in json.loads(out)["grade"]["findings"]}
    assert levels["size"] == "ok" and "files" not in levels, levels
    (proposal / "series.yaml").write_text(SERIES_YAML + "propose:\n  max_lines: many\n")
    bad = run_series("propose", "serving-fix", "--dry-run", "--offline", cwd=proposal, expect=1)
    assert bad.stderr.startswith("series: error: series.yaml:12: propose.max_lines: expected a positive"), bad.stderr


def test_evidence_fills_the_results(proposal: Path, tmp_path: Path) -> None:
    evidence = {
        "with_series": [
            {
                "step": "entrypoints",
                "label": "Entrypoints tests",
                "status": "passed",
                "commands": [
                    {
                        "command": "pytest",
                        "status": "passed",
                        "detail": "",
                        "tests": {"t::a": "passed", "t::b": "passed"},
                    }
                ],
            }
        ],
        "failed": False,
        "without": {
            "topic": "serving-fix",
            "steps": [],
            "evidence": [{"step": "entrypoints", "test": "tests/x.py::test_order"}],
        },
    }
    path = tmp_path / "ev.json"
    path.write_text(json.dumps(evidence))
    out = run_series(
        "propose",
        "serving-fix",
        "--dry-run",
        "--offline",
        "--despite",
        "50001",
        "--json",
        "--evidence",
        str(path),
        cwd=proposal,
    ).stdout
    body = json.loads(out)["description"]["body"]
    assert "| Entrypoints tests | passed | 2 | 0 | 0 |" in body, body
    assert "- `tests/x.py::test_order` (entrypoints)" in body, body
    # the per-tree shape: base release, series, without the topic
    path.write_text(
        json.dumps(
            {
                "build": "vllm 0.31.0",
                "summary": {
                    n: {"passed": p, "failed": f, "error": 0, "skipped": 0, "files_from_cache": 0}
                    for n, p, f in (("base", 3, 2), ("series", 5, 1), ("without:serving-fix", 4, 2))
                },
                "tests": {},
                "needed": {"serving-fix": ["tests/x.py::test_order"]},
                "worse": {},
                "machine": ["tests/x.py::test_gpu"],
            }
        )
    )
    out = run_series(
        "propose",
        "serving-fix",
        "--dry-run",
        "--offline",
        "--despite",
        "50001",
        "--json",
        "--evidence",
        str(path),
        cwd=proposal,
    ).stdout
    body = json.loads(out)["description"]["body"]
    assert "| passed | 3 | 5 | 4 |" in body and "Without `serving-fix`, 1 tests fail" in body, body
    assert "1 tests fail on the base release too" in body, body
    bad = run_series("propose", "serving-fix", "--dry-run", "--offline", "--branch", "pr/a..b", cwd=proposal, expect=1)
    assert "--branch 'pr/a..b' is not a valid git branch name" in bad.stderr, bad.stderr
    path.write_text("[]")
    bad = run_series(
        "propose", "serving-fix", "--dry-run", "--offline", "--evidence", str(path), cwd=proposal, expect=1
    )
    assert "not the output of 'series test --run --json'" in bad.stderr, bad.stderr
    assert len(bad.stderr.splitlines()) == 1, bad.stderr


def test_a_topic_that_does_not_apply_to_main_is_a_conflict(proposal: Path) -> None:
    sh(
        "git checkout -q topic/offload-note && printf 'class LRU:\\n    x = 2\\n' > vllm/v1/kv_offload/lru.py && "
        "git commit -qam 'conflicting' && git checkout -q --detach v0.30.0",
        proposal,
    )
    proc = run_series("propose", "offload-note", "--dry-run", "--offline", cwd=proposal, expect=3)
    assert "does not apply to upstream/main" in proc.stderr and "lru.py" in proc.stderr, proc.stderr


def test_a_refused_pr_says_the_branch_is_pushed(proposal: Path, httpserver: HTTPServer) -> None:
    httpserver.expect_request(f"{SLUG}/pulls", method="GET").respond_with_json([])
    httpserver.expect_request(f"{SLUG}/pulls", method="POST").respond_with_json(
        {
            "message": "Validation Failed",
            "errors": [
                {
                    "resource": "PullRequest",
                    "code": "custom",
                    "message": "A pull request already exists for forkdev:pr/offload-note.",
                }
            ],
        },
        status=422,
    )
    proc = run_series(
        "propose",
        "offload-note",
        "--offline",
        "--owner",
        "forkdev",
        cwd=proposal,
        expect=1,
        env={"SERIES_GITHUB_API": httpserver.url_for("").rstrip("/"), "GITHUB_TOKEN": TOKEN},
    )
    assert "opening the draft PR needs the GitHub API" in proc.stderr, "offline never opens a PR"
    proc = run_series(
        "propose",
        "offload-note",
        "--owner",
        "forkdev",
        cwd=proposal,
        expect=1,
        env={"SERIES_GITHUB_API": httpserver.url_for("").rstrip("/"), "GITHUB_TOKEN": TOKEN},
    )
    assert (
        "GitHub refused a new pull request from forkdev:pr/offload-note (422): A pull request already "
        "exists" in proc.stderr
    ), proc.stderr
    assert "pr/offload-note is pushed to origin" in proc.stderr.splitlines()[0], proc.stderr
    assert proc.stderr.splitlines()[1:] == [
        "hint: fix the cause and open it from that branch, or run again with --branch NAME"
    ], proc.stderr
    assert "upstream_pr" not in (proposal / "series.yaml").read_text()


def test_a_pr_head_fetched_at_githubs_sha_is_compared_from_git(proposal: Path, httpserver: HTTPServer) -> None:
    sh("git fetch -q upstream '+refs/pull/*/head:refs/remotes/upstream/pr/*'", proposal)
    head = git(proposal, "rev-parse", "refs/remotes/upstream/pr/50001").strip()
    _serve(httpserver, proposal, [], head_50001=head)
    proc = run_series("propose", "serving-fix", "--dry-run", "--json", cwd=proposal, expect=1, env=_api(httpserver))
    data = json.loads(proc.stdout)
    assert [c["number"] for c in data["duplicates"]["candidates"]] == [50001], data["duplicates"]
    calls = _calls(httpserver)
    assert "GET /pulls/50001/files" not in calls and "GET /pulls/50002/files" in calls, calls
    assert any("1 of 2 open PRs compared from their heads fetched into git refs" in n for n in data["notes"])


def test_signoff_on_a_commit_in_an_unknown_encoding_reads_it_as_its_bytes(
    proposal: Path, httpserver: HTTPServer
) -> None:
    """A topic commit whose header says 'encoding bogus-charset' (anyone can write one with
    git hash-object) is signed off as git shows it, its bytes as UTF-8, not a crash (exit 4)."""
    raw = git(proposal, "cat-file", "commit", "topic/serving-fix")
    head, body = raw.split("\n\n", 1)
    crafted = proposal.parent / "crafted"
    crafted.write_bytes(f"{head}\nencoding bogus-charset\n\n{body}".encode())
    sha = git(proposal, "hash-object", "-t", "commit", "-w", "--literally", str(crafted)).strip()
    git(proposal, "update-ref", "refs/heads/topic/serving-fix", sha)
    _serve(httpserver, proposal, [])
    dry = run_series(
        "propose", "serving-fix", "--dry-run", "--despite", "50001", "--signoff", cwd=proposal, env=_api(httpserver)
    ).stdout
    assert "OK    dco: all 1 commit(s) carry Signed-off-by" in dry, dry


def test_a_main_with_no_ci_map_skips_the_test_plan_and_runs_the_other_steps(proposal: Path) -> None:
    """An older upstream (no test_areas, no test-pipeline.yaml): the test plan is reported as
    skipped with its reason; the grade, the reviewers and the duplicate search still run."""
    git(proposal, "checkout", "-q", "--detach", "upstream/main")
    git(proposal, "rm", "-rq", ".buildkite")
    commit_all(proposal, "[CI] no CI map on this main", "2026-02-03T00:00:00Z")
    git(proposal, "update-ref", "refs/remotes/upstream/main", "HEAD")
    out = json.loads(run_series("propose", "offload-note", "--dry-run", "--offline", "--json", cwd=proposal).stdout)
    assert out["steps"] == ["replay", "grade", "reviewers", "description", "duplicates"], out["steps"]
    assert [s["step"] for s in out["skipped"]] == ["test plan"], out["skipped"]
    assert "no .buildkite/test_areas/ nor .buildkite/test-pipeline.yaml" in out["skipped"][0]["reason"]
    assert out["grade"]["findings"] and out["reviewers"] is not None
    assert out["duplicates"]["source"] == "git refs"
    assert "not selected (no CI map could be read)" in out["description"]["body"]
    text = run_series("propose", "offload-note", "--dry-run", "--offline", cwd=proposal).stdout
    assert "   test plan: skipped: no .buildkite/test_areas/ nor" in text, text
    assert "2. grade" in text and "5. duplicates" in text, text


def test_offline_with_no_pr_head_fetched_says_the_search_was_not_made(proposal: Path) -> None:
    """As on the HabanaAI fork: no PR head under refs/remotes/upstream/pr/. 'none share a
    file' would be a negative never proven; the search is reported as not made."""
    sh("git for-each-ref --format='delete %(refname)' refs/remotes/upstream/pr/ | git update-ref --stdin", proposal)
    proc = run_series("propose", "offload-note", "--dry-run", "--offline", "--json", cwd=proposal)
    found = json.loads(proc.stdout)["duplicates"]
    assert found["searched"] is False and found["candidates"] == [], found
    text = run_series("propose", "offload-note", "--dry-run", "--offline", cwd=proposal).stdout
    assert (
        "5. duplicates: not searched: no PR heads under refs/remotes/upstream/pr/ to search: "
        "--fetch fetches them (or run online)"
    ) in text, text
    assert "none share a file" not in text, text


def test_the_forks_squash_number_leaves_the_title(proposal: Path) -> None:
    """A commit squash-merged in the fork ends '(#184)' (HabanaAI/vllm-fork's PR): upstream
    that names vLLM's #184, and GitHub appends the new PR's number itself."""
    sh(
        "git checkout -q topic/offload-note && git commit -q --amend -m '[KV Offload] a note (#184)' && "
        "git checkout -q --detach v0.30.0",
        proposal,
    )
    out = json.loads(run_series("propose", "offload-note", "--dry-run", "--offline", "--json", cwd=proposal).stdout)
    assert out["title"] == "[KV Offload] a note", out["title"]
