"""series comment (issue 23): a measurement said on the upstream PR.

The comment is rendered from report fixtures shaped as MEASURE_CONTRACT's `series measure
--json`, and read back with a CommonMark renderer (markdown-it-py, GitHub's table and
strikethrough rules on): what a hostile name or explanation holds must come out as text,
never as an HTML comment, a tag, a fence or a mention. Posting goes to a local HTTP server
playing GitHub; the URL lands on the adopted topic through the transaction (status shows
it, undo reverts it)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import markdown_it
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from series.seriesfile import config
from series.measure import comment_body
from series.measure.measurement_report import parse_report
from tests.conftest import run_series
from tests.repos import github_fixture


TOKEN = "ghp_COMMENTsecret99887766554433"
SLUG = "/repos/vllm-project/vllm"
URL = "https://github.com/vllm-project/vllm/pull/61050#issuecomment-4242"
OURS, THEIRS = "a" * 40, "b" * 40

REPORT: dict[str, Any] = {
    "schema": 1,
    "trees": [
        {"name": "ours", "spec": "without:pr-61050", "commit": OURS},
        {"name": "theirs", "spec": "only:pr-61050", "commit": THEIRS},
    ],
    "metrics": {
        "ours": {"tokens_sum": 100064, "victims": 120, "chunk0_victims": 0},
        "theirs": {"tokens_sum": 100064, "victims": 120, "chunk0_victims": 3},
    },
    "runs": {
        "ours": [{"tokens_sum": 100064, "victims": 120, "chunk0_victims": 0}],
        "theirs": [{"tokens_sum": 100064, "victims": 120, "chunk0_victims": 3}],
    },
    "environment": {
        t: {
            "vllm": "0.31.0",
            "torch": "2.13.0",
            "device": None,
            "cpu": "x86_64",
            "python": "3.11.7",
            "platform": "Linux-6.1",
        }
        for t in ("ours", "theirs")
    },
    "predictions_file": "predictions.yaml",
    "predictions_sha256": "c" * 64,
    "predictions": [
        {
            "id": "same-sum",
            "tree": "theirs",
            "metric": "tokens_sum",
            "claim": "tokens_sum on theirs equals 100064",
            "observed": 100064,
            "held": True,
            "why": "their ranking keeps the same victims",
            "explanation": None,
        },
        {
            "id": "no-chunk-0",
            "tree": "theirs",
            "metric": "chunk0_victims",
            "claim": "chunk0_victims on theirs equals 0",
            "observed": 3,
            "held": False,
            "why": "chunk 0 is touched last",
            "explanation": "their touch() re-inserts chunk 0 before the scan",
        },
    ],
    "command": ["python", "workload.py"],
    "repeat": 1,
    "reproduce": [
        "series predict predictions.yaml",
        "series measure --predictions predictions.yaml --tree ours=without:pr-61050 "
        "--tree theirs=only:pr-61050 -- python workload.py",
    ],
}


def hostile() -> dict[str, Any]:
    """Every string a workload, a predictions file or a colleague controls, made to hide
    the text after it or to notify someone."""
    r = copy.deepcopy(REPORT)
    r["metrics"]["theirs"]["<!-- m1 HIDDEN"] = "```"
    r["metrics"]["ours"]["<details><summary>m2</summary>"] = "@evil `x` </details>"
    r["metrics"]["ours"]["[ref]: https://evil.example m3"] = 1
    r["metrics"]["ours"]["```python m4"] = "a|b"
    r["metrics"]["ours"]["x` <!-- m13"] = "y` @evil m14 `"
    p = r["predictions"][1]
    p["claim"] = "chunk0 ~~ends here~~ @org/team <!-- m5"
    p["why"] = "cc @someone and @a@b, <div hidden>m6</div>"
    p["explanation"] = "~~~\n@evil m7 `` ` ``` <!--"
    r["command"] = ["python", "-c", "print('```') # @evil m8"]
    r["reproduce"] = ["echo ``` m9", "````", "<!-- m10", "@evil m11"]
    return r


def _md() -> Any:
    return markdown_it.MarkdownIt("commonmark").enable("table").enable("strikethrough")


def _tokens(text: str) -> list[Any]:
    out = []
    for token in _md().parse(text):
        out.append(token)
        out += token.children or []
    return out


def _visible_text(text: str) -> str:
    """Text GitHub's mention filter reads: text nodes only (not code, not fences)."""
    return "\n".join(t.content for t in _tokens(text) if t.type == "text")


def _mentions(text: str) -> list[str]:
    """What GitHub would notify: '@name' at the start of a text node or after a non-word."""
    found = []
    for t in _tokens(text):
        if t.type == "text":
            found += re.findall(r"(?:^|(?<=[^A-Za-z0-9_]))@[A-Za-z0-9][A-Za-z0-9-]*", t.content)
    return found


def _shown(text: str) -> str:
    """Everything a reader sees: text, code spans and fenced blocks."""
    return "\n".join(t.content for t in _tokens(text) if t.type in ("text", "code_inline", "fence"))


def render(report: dict[str, Any], **kw: Any) -> str:
    return comment_body.render(61050, parse_report(report), **kw).text


# --- rendered from fixtures ------------------------------------------------------------------


def test_the_comment_says_what_why_where_the_numbers_and_how_to_reproduce() -> None:
    text = render(REPORT, invited="The eviction order is unmeasured on real workloads.")
    assert text.startswith("### A measurement of #61050\n"), text
    assert "> The eviction order is unmeasured on real workloads." in text, text
    assert "`python workload.py` ran once per tree" in text and "2 predictions were written first" in text, text
    assert "1 held, 1 did not." in text, text
    assert f"- `theirs`: `only:pr-61050` at `{THEIRS[:12]}`" in text, text
    assert "Environment (the same for every tree): vLLM `0.31.0`, Torch `2.13.0`, Device none, CPU `x86_64`" in text
    assert "| metric | `ours` | `theirs` |" in text and "| `chunk0_victims` | 0 | 3 |" in text, text
    assert (
        "- **held** `same-sum`: tokens\\_sum on theirs equals 100064 (`tokens_sum` on `theirs`; "
        "observed 100064). Expected because: their ranking keeps the same victims."
    ) in text, text
    assert (
        "- **failed** `no-chunk-0`: ~~chunk0\\_victims on theirs equals 0~~ (`chunk0_victims` on `theirs`; "
        "observed 3). Expected because: chunk 0 is touched last. Why it failed: their touch() re-inserts "
        "chunk 0 before the scan."
    ) in text, text
    assert "```sh\nseries predict predictions.yaml\nseries measure --predictions" in text, text
    html = _md().render(text)
    assert "<s>chunk0_victims on theirs equals 0</s>" in html, html
    assert "<s>tokens_sum" not in html, "a held claim is not struck"
    assert _mentions(text) == []


def test_what_series_measure_writes_besides_the_contract_is_read() -> None:
    """measure's report also carries describe, python, held (a count), compared_to, and
    held: null for a claim whose metric was not measured."""
    r = copy.deepcopy(REPORT)
    r.update(held=1, python="/venv/bin/python")
    r["trees"][0]["describe"] = "the series without pr-61050"
    r["predictions"].append(
        {
            "id": "same-victims",
            "tree": "theirs",
            "metric": "victims",
            "claim": "victims on theirs same as on ours",
            "observed": 120,
            "held": True,
            "why": "same ranking",
            "explanation": None,
            "compared_to": 120,
        }
    )
    r["predictions"].append(
        {
            "id": "latency",
            "tree": "ours",
            "metric": "p99_ms",
            "claim": "p99_ms on ours at most 5",
            "observed": None,
            "held": None,
            "why": "a cheap touch",
            "explanation": None,
            "compared_to": None,
        }
    )
    text = render(r)
    assert "(`victims` on `theirs`; observed 120, the other tree 120)." in text, text
    assert "- **not measured** `latency`: ~~p99\\_ms on ours at most 5~~ (`p99_ms` on `ours`; not measured)." in text, (
        text
    )
    assert "#### Predictions: 2 of 4 held" in text


def test_hostile_names_claims_and_commands_notify_nobody_and_hide_nothing() -> None:
    text = render(hostile(), invited="untested <!-- m12 hidden @evil")
    kinds = {t.type for t in _tokens(text)}
    assert not kinds & {"html_block", "html_inline"}, "no HTML comment or tag reached the renderer"
    assert _mentions(text) == [], _mentions(text)
    shown = _shown(text)
    for marker in [f"m{i}" for i in range(1, 15)]:
        assert marker in shown, f"{marker} is hidden:\n{text}"
    # the parts after every hostile string are still parts: no fence swallowed them
    headings = [
        t.content
        for t in _tokens(text)
        if t.type == "inline" and t.map and text.splitlines()[t.map[0]].startswith("####")
    ]
    assert headings == ["Metrics", "Predictions: 1 of 2 held", "Reproduce"], headings
    html = _md().render(text)  # the claim's own ~~ neither closes the strike nor starts one
    assert html.count("<s>") == 1 and "<s>chunk0 ~~ends here~~ <code>@org/team</code> &lt;!-- m5</s>" in html, html
    assert "`@org/team`" in text and "`@a@b`" in text, "a mention is code, shown as written"


# what hides text or notifies in Markdown, and what a string may hold around it
_PIECES = st.sampled_from(
    [
        "<!--",
        "-->",
        "<details>",
        "</details>",
        "<div hidden>",
        "```",
        "~~~",
        "`",
        "``",
        "~~",
        "|",
        "\\",
        "@evil",
        "@org/team",
        "x@y.com",
        "[a]: ",
        "](",
        "*",
        "_",
        "$",
        "&lt;",
        "\n",
        "\t",
        "\u202e",
        "é",
        "a",
        " ",
        "-",
        "#",
        ">",
        ":",
        "!",
        "[",
        "]",
    ]
)
_HOSTILE = st.lists(_PIECES, max_size=12).map("".join)


def _said(text: str) -> str:
    """The characters a reader sees, in order, whitespace folded: every text and code token."""
    shown = []
    for t in _tokens(text):
        if t.type in ("text", "code_inline", "fence"):
            shown.append(t.content)
        elif t.type in ("softbreak", "hardbreak"):
            shown.append(" ")
    return " ".join("".join(shown).split())


@settings(max_examples=80, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(metric=_HOSTILE, claim=_HOSTILE, why=_HOSTILE, explanation=_HOSTILE, command=_HOSTILE)
def test_any_string_anywhere_is_shown_as_written_and_notifies_nobody(
    metric: str, claim: str, why: str, explanation: str, command: str
) -> None:
    r = copy.deepcopy(REPORT)
    r["metrics"]["ours"][metric] = claim
    p = r["predictions"][1]
    p.update(claim=claim, why=why, explanation=explanation)
    r["reproduce"] = [command, "after"]
    text = render(r, invited=why)
    assert not {t.type for t in _tokens(text)} & {"html_block", "html_inline"}, text
    assert _mentions(text) == [], text
    said = _said(text)
    for value in (metric, claim, why, explanation, command):
        flat = " ".join(value.replace("\u202e", " ").split())
        assert flat in said, (value, text)
    headings = [line for line in text.splitlines() if line.startswith("#### ")]
    assert [h.split(":")[0] for h in headings] == ["#### Metrics", "#### Predictions", "#### Reproduce"], text


def test_mentions_inline_and_code_escape_exactly() -> None:
    from series.propose.mentions import code, fenced, inline

    assert inline("cc @evil, x@y.com and x@a-@b") == "cc `@evil`, x@y.com and x@a-`@b`"
    assert (
        inline("<!-- [a]: b | *c* _d_ ~e~ $f$ & \\") == "\\<!-- \\[a\\]: b \\| \\*c\\* \\_d\\_ \\~e\\~ \\$f\\$ \\& \\\\"
    )
    assert code("a``b") == "```a``b```" and code("`x") == "`` `x ``" and code("a|b", cell=True) == "a\\|b"
    assert code("line\nbreak\u202eflip") == "`line break flip`"
    assert fenced(["echo ````"]) == "`````\necho ````\n`````"


def test_the_evidence_table_goes_in_when_given() -> None:
    evidence = {
        "build": "vllm-0.31.0+series",
        "summary": {
            "base": {"passed": 10, "failed": 1, "files_from_cache": 0},
            "series": {"passed": 11, "failed": 0, "files_from_cache": 0},
            "<!-- x": {"passed": 11, "failed": 0, "files_from_cache": 0},
        },
        "tests": {},
        "needed": {"pr-61050": ["tests/v1/kv_offload/test_lru.py::test_order[`@evil`]"]},
        "worse": {},
        "machine": [],
    }
    text = render(REPORT, evidence=evidence)
    assert "#### Upstream tests" in text and "| passed | 10 | 11 | 11 |" in text, text
    assert "Without `pr-61050`, 1 tests fail that pass with it" in text, text
    assert not {t.type for t in _tokens(text)} & {"html_block", "html_inline"}
    assert _mentions(text) == []
    assert text.index("#### Upstream tests") < text.index("#### Metrics"), "tests before metrics"


def test_a_huge_report_is_cut_to_githubs_limit_with_a_note() -> None:
    r = copy.deepcopy(REPORT)
    r["metrics"]["ours"].update({f"metric_{i:05d}_" + "x" * 80: i for i in range(5000)})
    r["predictions"] += [dict(r["predictions"][0], id=f"p{i}") for i in range(3000)]
    r["reproduce"] += [f"echo {i} " + "y" * 100 for i in range(2000)]
    body = comment_body.render(61050, parse_report(r))
    assert comment_body.utf16_length(body.text) <= 65536, len(body.text)
    assert body.cut and any(c.startswith("metrics:") for c in body.cut), body.cut
    assert "more metrics not shown: GitHub takes at most 65536 characters" in body.text
    assert body.text.rstrip().endswith("with the reason it failed._"), "the footer stays"
    assert body.text.count("\n`````") + body.text.count("\n```") >= 2, "the reproduce fence is closed"
    assert not {t.type for t in _tokens(body.text)} & {"html_block", "html_inline"}


@pytest.mark.parametrize(
    "description, line",
    [
        (
            "## Purpose\n\nFix it.\n\n## Test Plan\n\n- Unmeasured on real workloads; CI only.\n",
            "Unmeasured on real workloads; CI only.",
        ),
        ("<!-- Tell us if it is untested -->\n\nPerf: not benchmarked yet.", "Perf: not benchmarked yet."),
        ("All measured and tested.", None),
        (None, None),
    ],
)
def test_the_invitation_is_the_prs_own_line(description: str | None, line: str | None) -> None:
    assert comment_body.invitation(description) == line


# --- the report at the trust boundary ---------------------------------------------------------


@pytest.mark.parametrize(
    "change, named",
    [
        (lambda r: r.update(schema=2), "'schema'"),
        (lambda r: r["trees"][1].update(commit="zz"), "trees[1].commit"),
        (lambda r: r["trees"][0].pop("spec"), "trees[0].spec"),
        (lambda r: r["metrics"]["ours"].update(victims={"a": 1}), "metrics.ours.victims"),
        (lambda r: r["metrics"].update(ghost={}), "metrics.ghost"),
        (lambda r: r["environment"]["ours"].update(cpu=None), "environment.ours.cpu"),
        (lambda r: r["predictions"][0].update(held="yes"), "predictions[0].held"),
        (lambda r: r["predictions"][1].update(tree="nowhere"), "predictions[1].tree"),
        (lambda r: r["predictions"][1].update(explanation=7), "predictions[1].explanation"),
        (lambda r: r.update(repeat=True), "'repeat'"),
        (lambda r: r.update(reproduce="series measure"), "'reproduce'"),
        (lambda r: r.update(predictions_sha256="abc"), "predictions_sha256"),
    ],
)
def test_a_report_of_the_wrong_shape_is_exit_1_naming_file_and_key(
    fork: Path, tmp_path: Path, change: Any, named: str
) -> None:
    r = copy.deepcopy(REPORT)
    change(r)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(r))
    proc = run_series("comment", "61050", "--measurement", str(path), "--dry-run", "--offline", cwd=fork, expect=1)
    err = proc.stderr
    assert (
        err.startswith(f"series: error: --measurement {path}: not a 'series measure --json' report")
        and named in err
        and len(err.strip().splitlines()) == 1
        and "Traceback" not in err
    ), err


@pytest.mark.parametrize(
    "data, said",
    [
        (b"\xff\xfe{", "not UTF-8"),
        (b"{\"schema\": 1,", "not JSON"),
        (b"[" * 100000, "nested too deeply"),
        (b"[]", "'the document' is not an object"),
        (b"{\"schema\": 1, \"n\": " + b"9" * 5000 + b"}", "too long"),
    ],
)
def test_a_garbled_report_file_is_exit_1(fork: Path, tmp_path: Path, data: bytes, said: str) -> None:
    path = tmp_path / "report.json"
    path.write_bytes(data)
    proc = run_series("comment", "61050", "--measurement", str(path), "--dry-run", "--offline", cwd=fork, expect=1)
    assert said in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_evidence_of_the_wrong_shape_is_exit_1(fork: Path, tmp_path: Path) -> None:
    report, evidence = tmp_path / "report.json", tmp_path / "ev.json"
    report.write_text(json.dumps(REPORT))
    evidence.write_text(json.dumps({"summary": {"base": {"passed": "many"}}, "tests": {}}))
    proc = run_series(
        "comment",
        "61050",
        "--measurement",
        str(report),
        "--evidence",
        str(evidence),
        "--dry-run",
        "--offline",
        cwd=fork,
        expect=1,
    )
    assert f"--evidence {evidence}: not the output of 'series test --run --json'" in proc.stderr, proc.stderr
    assert "summary.base.passed" in proc.stderr


# --- posted to GitHub (a local server), recorded on the topic -------------------------------

DESCRIPTION = "## Purpose\n\nFix eviction order.\n\n## Test Plan\n\nUnit tests only; unmeasured on real traffic.\n"


def _serve(
    server: HTTPServer, posted: list[dict[str, Any]], status: int = 201, answer: dict[str, Any] | None = None
) -> None:
    pull = github_fixture("pull-61050", API=server.url_for("").rstrip("/"), HEAD_SHA="1" * 40, BASE_SHA="2" * 40)
    assert isinstance(pull, dict)
    server.expect_request(f"{SLUG}/pulls/61050").respond_with_json({**pull, "body": DESCRIPTION})

    def post(request: Request) -> Response:
        posted.append(request.get_json())
        data = answer if answer is not None else {"id": 4242, "html_url": URL, "body": request.get_json()["body"]}
        return Response(json.dumps(data), status=status, content_type="application/json")

    server.expect_request(f"{SLUG}/issues/61050/comments", method="POST").respond_with_handler(post)


def _env(server: HTTPServer) -> dict[str, str]:
    return {"SERIES_GITHUB_API": server.url_for("").rstrip("/"), "GITHUB_TOKEN": TOKEN, "SERIES_HTTP_CACHE": "off"}


@pytest.fixture
def adopted(served: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The served fork with PR #61050 adopted (topic pr-61050), and a report file."""
    run_series("adopt-upstream", "61050", "--replaces", "offload-evict-fix", "--offline", cwd=served)
    report = tmp_path / "report.json"
    report.write_text(json.dumps(REPORT))
    return served, report


def test_posted_once_with_the_token_recorded_shown_by_status_and_undone(
    adopted: tuple[Path, Path], httpserver: HTTPServer, tmp_path: Path
) -> None:
    fork, report = adopted
    posted: list[dict[str, Any]] = []
    _serve(httpserver, posted)
    before = (fork / "series.yaml").read_text()
    dry = run_series("comment", "61050", "--measurement", str(report), "--dry-run", cwd=fork, env=_env(httpserver))
    assert dry.stdout.startswith("### A measurement of #61050\n") and posted == [], dry.stdout
    assert "> Unit tests only; unmeasured on real traffic." in dry.stdout, "the PR's own line, fetched"
    assert "would post these" in dry.stdout and "record measured: on 'pr-61050'" in dry.stdout, dry.stdout
    assert (fork / "series.yaml").read_text() == before, "--dry-run writes nothing"

    proc = run_series("comment", "61050", "--measurement", str(report), "--json", cwd=fork, env=_env(httpserver))
    data = json.loads(proc.stdout)
    assert len(posted) == 1 and posted[0]["body"] == data["body"] == dry.stdout.split("\n\n--dry-run:")[0] + "\n"
    assert data["comment"] == {"id": 4242, "url": URL} and data["topic"] == "pr-61050" and data["recorded"], data
    assert [r.method for r, _ in httpserver.log] == ["GET", "GET", "POST"], "one read a run, one POST"
    assert {r.headers.get("Authorization") for r, _ in httpserver.log} == {f"Bearer {TOKEN}"}
    assert TOKEN not in proc.stdout + proc.stderr + dry.stdout + dry.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.stat().st_size < 1_000_000:
            assert TOKEN.encode() not in path.read_bytes(), f"token written to {path}"

    text = (fork / "series.yaml").read_text()
    line = f"    measured: '{URL}'\n"  # quoted by the editor: a '#' in a plain scalar reads badly
    assert line in text and text.replace(line, "") == before, text
    assert config.load(fork / "series.yaml").topic("pr-61050").measured == URL
    status = run_series("status", cwd=fork).stdout
    assert re.search(rf"^  pr-61050 .*PR #61050; measured: {re.escape(URL)}$", status, re.M), status
    rows = {t["name"]: t for t in json.loads(run_series("status", "--json", cwd=fork).stdout)["topics"]}
    assert rows["pr-61050"]["measured"] == URL and rows["sched-note"]["measured"] is None
    assert "comment" in run_series("log", cwd=fork).stdout

    run_series("undo", cwd=fork)
    assert (fork / "series.yaml").read_text() == before, "undo reverts the record byte for byte"
    assert json.loads(run_series("status", "--json", cwd=fork).stdout)["topics"][-1]["measured"] is None


PREDICTIONS = """\
predictions:
  - id: same-sum
    tree: theirs
    metric: tokens_sum
    equals: 100064
    why: their ranking keeps the same victims
  - id: no-chunk-0
    tree: theirs
    metric: chunk0_victims
    equals: 0
    why: chunk 0 is touched last
"""


def test_the_freeze_on_record_is_dated_and_a_later_explanation_goes_in(
    adopted: tuple[Path, Path], httpserver: HTTPServer
) -> None:
    import hashlib

    fork, report = adopted
    (fork / "predictions.yaml").write_text(PREDICTIONS)
    r = copy.deepcopy(REPORT)
    r["predictions_sha256"] = hashlib.sha256(PREDICTIONS.encode()).hexdigest()
    r["predictions"][1]["explanation"] = None
    report.write_text(json.dumps(r))
    args = ("comment", "61050", "--measurement", str(report), "--dry-run", "--offline")
    never = run_series(*args, cwd=fork).stdout
    assert "note: predictions.yaml was never frozen in this repository's journal" in never, never
    assert "note: prediction 'no-chunk-0' failed with no reason recorded" in never and "_not explained yet_" in never
    run_series("predict", "predictions.yaml", cwd=fork)
    when = json.loads(run_series("predict", "predictions.yaml", "--show", "--json", cwd=fork).stdout)["frozen"]["time"]
    run_series("predict", "predictions.yaml", "--explain", "no-chunk-0", "touch() re-inserts chunk 0", cwd=fork)
    out = run_series(*args, cwd=fork).stdout
    assert f"frozen before the run (sha256 `{r['predictions_sha256'][:16]}`…, {when}): 1 held" in out, out
    assert "Why it failed: touch() re-inserts chunk 0." in out and "never frozen" not in out, out
    r["predictions_sha256"] = "d" * 64
    report.write_text(json.dumps(r))
    other = run_series(*args, cwd=fork).stdout
    assert "is no freeze on record here" in other and "touch() re-inserts" not in other, other


def test_a_server_error_on_the_post_is_not_retried_and_records_nothing(
    adopted: tuple[Path, Path], httpserver: HTTPServer
) -> None:
    fork, report = adopted
    posted: list[dict[str, Any]] = []
    _serve(httpserver, posted, status=502, answer={"message": "Server Error"})
    before = (fork / "series.yaml").read_text()
    proc = run_series(
        "comment",
        "61050",
        "--measurement",
        str(report),
        cwd=fork,
        expect=1,
        env={**_env(httpserver), "SERIES_HTTP_RETRIES": "3", "SERIES_HTTP_BACKOFF": "0"},
    )
    assert len(posted) == 1, "a POST is sent once: a retry could post the comment twice"
    assert "502" in proc.stderr and "may have been posted anyway" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and TOKEN not in proc.stderr
    assert (fork / "series.yaml").read_text() == before


def test_a_redirected_post_is_refused_and_the_token_never_leaves(
    adopted: tuple[Path, Path], httpserver: HTTPServer
) -> None:
    fork, report = adopted
    other = HTTPServer(host="127.0.0.1", port=0)
    other.start()
    try:
        stolen: list[str | None] = []
        other.expect_request(f"{SLUG}/issues/61050/comments").respond_with_handler(
            lambda request: (stolen.append(request.headers.get("Authorization")), Response("{}"))[1]
        )
        _serve(httpserver, [])
        httpserver.handlers.pop()  # the POST handler: this one redirects instead
        httpserver.expect_request(f"{SLUG}/issues/61050/comments", method="POST").respond_with_data(
            "", status=307, headers={"Location": other.url_for(f"{SLUG}/issues/61050/comments")}
        )
        before = (fork / "series.yaml").read_text()
        proc = run_series("comment", "61050", "--measurement", str(report), cwd=fork, expect=1, env=_env(httpserver))
        assert "redirected" in proc.stderr and "refusing" in proc.stderr, proc.stderr
        assert stolen == [] and other.log == [], "nothing, and no token, went to the other host"
        assert (fork / "series.yaml").read_text() == before
    finally:
        other.clear()
        other.stop()


@pytest.mark.parametrize(
    "answer",
    [
        {"id": 4242, "html_url": "https://evil.example/vllm-project/vllm/pull/61050#issuecomment-4242"},
        {"id": 4242, "html_url": "http://github.com/vllm-project/vllm/pull/61050#issuecomment-4242"},
        {"id": 4242, "html_url": "https://github.com/vllm-project/vllm/pull/61051#issuecomment-4242"},
        {"id": 4242, "html_url": "https://github.com/vllm-project/vllm/pull/61050#issuecomment-1"},
        {"id": "4242", "html_url": URL},
        {"id": True, "html_url": URL},
    ],
)
def test_an_answer_that_is_not_this_prs_comment_is_refused_and_not_recorded(
    adopted: tuple[Path, Path], httpserver: HTTPServer, answer: dict[str, Any]
) -> None:
    fork, report = adopted
    _serve(httpserver, [], answer=answer)
    before = (fork / "series.yaml").read_text()
    proc = run_series("comment", "61050", "--measurement", str(report), cwd=fork, expect=1, env=_env(httpserver))
    assert "it was probably posted: check the PR's conversation" in proc.stderr, proc.stderr
    assert (fork / "series.yaml").read_text() == before


def test_no_topic_carries_the_pr_refused_before_sending_unless_no_record(
    fork: Path, httpserver: HTTPServer, tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    report.write_text(json.dumps(REPORT))
    posted: list[dict[str, Any]] = []
    _serve(httpserver, posted)
    before = (fork / "series.yaml").read_text()
    for extra in ((), ("--dry-run",)):
        proc = run_series(
            "comment", "61050", "--measurement", str(report), *extra, cwd=fork, expect=1, env=_env(httpserver)
        )
        assert "no topic in series.yaml carries PR #61050" in proc.stderr and "--no-record" in proc.stderr
    assert posted == [] and httpserver.log == [], "refused before any request"
    proc = run_series("comment", "61050", "--measurement", str(report), "--no-record", cwd=fork, env=_env(httpserver))
    assert len(posted) == 1 and f"posted the measurement on PR #61050: {URL}" in proc.stdout, proc.stdout
    assert "recorded nothing (--no-record)" in proc.stdout
    assert (fork / "series.yaml").read_text() == before


def test_offline_renders_with_dry_run_and_refuses_to_post(adopted: tuple[Path, Path]) -> None:
    fork, report = adopted
    dry = run_series("comment", "61050", "--measurement", str(report), "--dry-run", "--offline", cwd=fork)
    assert "### A measurement of #61050" in dry.stdout and "note: from git refs alone" in dry.stdout, dry.stdout
    proc = run_series("comment", "61050", "--measurement", str(report), "--offline", cwd=fork, expect=1)
    assert "needs the GitHub API" in proc.stderr, proc.stderr


def test_measured_in_series_yaml_must_be_an_https_url(fork: Path) -> None:
    text = (fork / "series.yaml").read_text()
    (fork / "series.yaml").write_text(
        text.replace("    branch: topic/sched-note\n", "    branch: topic/sched-note\n    measured: http://x/y\n")
    )
    proc = run_series("status", cwd=fork, expect=1)
    assert "measured" in proc.stderr and "https://" in proc.stderr, proc.stderr
