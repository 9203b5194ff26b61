"""The comment `series comment` posts on an upstream PR: a measurement, in words (issue 23).

In the order a reader on the PR wants it: what was measured and why (the PR's own
"unmeasured" line quoted: it is the invitation), the environment, the upstream tests
when a `series test --run --compare` evidence file is given, the metrics (trees x
metrics), every prediction (a failed one struck, with why it was expected and why it
failed), and the exact commands to reproduce.

Everything in it that series did not write (metric and tree names, claims, explanations,
commands, the PR's own line) comes from files and servers, so it goes in only through
series.propose.mentions' `inline`, `code` and `fenced`: it notifies nobody and hides
nothing. GitHub refuses a comment over 65536 characters: the long parts (tables, lists,
the commands) are cut to fit, each with a note saying how much is left out.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Sequence

from series.propose import mentions, prbody
from series.measure.measurement_report import ENVIRONMENT_KEYS, MeasurementReport, Value

MAX_CHARS = 65536  # GitHub's limit on an issue comment's body
MAX_TREES = 12  # columns of the metrics table: more do not read on a PR page
SHORT, LONG = 200, 1000  # characters kept of a name or a claim, of a why or a command
_UNMEASURED = re.compile(
    r"\b(?:un-?measured|not\s+(?:yet\s+)?(?:been\s+)?(?:measured|benchmarked|tested)|un-?benchmarked|un-?tested|"
    r"no\s+benchmarks?|haven'?t\s+(?:measured|benchmarked|tested)|did\s+not\s+(?:measure|benchmark|test))\b",
    re.I,
)


@dataclass(frozen=True)
class CommentBody:
    text: str
    cut: tuple[str, ...] = ()  # what was left out to fit GitHub's limit, in words


def invitation(description: str | None) -> str | None:
    """The PR description's own line saying it is unmeasured or untested (its template's
    HTML comments left out: those are the template's words, not the author's)."""
    if not description:
        return None
    for line in prbody.strip_comments(description).splitlines():
        if _UNMEASURED.search(line):
            return re.sub(r"^\s*(?:[-*+]|\d+[.)]|>|#+)\s*", "", line).strip() or None
    return None


def utf16_length(text: str) -> int:
    """What GitHub counts toward its limit, at most: a character outside the BMP counts twice."""
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _value(value: Value | None, cell: bool = True) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return mentions.code(_cap(value, SHORT), cell=cell)


@dataclass
class _Part:
    """A part of the comment; `rows` are what may be cut to fit, `what` names them."""

    head: list[str]
    rows: list[str] = field(default_factory=list)
    what: str = ""
    tail: list[str] = field(default_factory=list)
    shown: int = -1  # rows shown; -1: all

    def lines(self) -> list[str]:
        if self.shown < 0 or self.shown >= len(self.rows):
            return [*self.head, *self.rows, *self.tail]
        left = len(self.rows) - self.shown
        note = (
            f"_… and {left} more {self.what} not shown: GitHub takes at most {MAX_CHARS} characters in a "
            "comment (the full report is the file it was made from)._"
        )
        return [*self.head, *self.rows[: self.shown], *self.tail, "", note]

    def rows_size(self) -> int:
        shown = self.rows if self.shown < 0 else self.rows[: self.shown]
        return sum(len(r) + 1 for r in shown)


def render(
    number: int,
    report: MeasurementReport,
    evidence: dict[str, Any] | None = None,
    invited: str | None = None,
    limit: int = MAX_CHARS,
    frozen_at: str | None = None,
) -> CommentBody:
    """`frozen_at`: when the predictions were frozen, when the caller found the freeze on record."""
    parts = [_what(number, report, invited, frozen_at), *_environment(report)]
    if evidence is not None:
        parts.append(
            _Part(["", "#### Upstream tests", ""], prbody.results(evidence).splitlines(), "lines of test results")
        )
    parts += [
        _metrics(report),
        _predictions(report),
        _reproduce(report),
        _Part(
            [
                "",
                "---",
                "_Posted with `series comment`. The predictions were written and frozen before the "
                "run; a failed one stays in place, struck, with the reason it failed._",
            ]
        ),
    ]
    text = _join(parts)
    while utf16_length(text) > limit:
        part = max(parts, key=lambda p: p.rows_size())
        if part.rows_size() == 0:
            raise AssertionError("the parts that are never cut are over GitHub's limit")  # capped: cannot be
        part.shown = (len(part.rows) if part.shown < 0 else part.shown) // 2
        text = _join(parts)
    cut = tuple(f"{p.what}: {p.shown} of {len(p.rows)} shown" for p in parts if 0 <= p.shown < len(p.rows))
    return CommentBody(text, cut)


def _join(parts: Sequence[_Part]) -> str:
    text = "\n".join(line for part in parts for line in part.lines())
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"


def _what(number: int, report: MeasurementReport, invited: str | None, frozen_at: str | None) -> _Part:
    head = [f"### A measurement of #{number}", ""]
    if invited:
        head += [
            "The description says:",
            "",
            f"> {mentions.inline(_cap(invited, LONG))}",
            "",
            "Here are numbers for it, from a run on the workload our fork serves.",
        ]
    else:
        head += ["Numbers from a run of this PR on the workload our fork serves."]
    runs = f", {report.repeat} times each (medians)" if report.repeat > 1 else ""
    held = sum(1 for p in report.predictions if p.held)
    head += [
        "",
        f"{mentions.code(_cap(shlex.join(report.command), LONG))} ran once per tree{runs}. "
        f"{len(report.predictions)} predictions were written first, in "
        f"{mentions.code(_cap(report.predictions_file, SHORT))}, and frozen before the run "
        f"(sha256 {mentions.code(report.predictions_sha256[:16])}…"
        + (f", {mentions.inline(_cap(frozen_at, 40))}" if frozen_at else "")
        + f"): {held} held, {len(report.predictions) - held} did not.",
        "",
    ]
    rows = [
        f"- {mentions.code(_cap(t.name, SHORT))}: {mentions.code(_cap(t.spec, SHORT))}"
        + (f" at {mentions.code(t.commit[:12])}" if t.commit else "")
        for t in report.trees
    ]
    return _Part(head + ["Trees:", ""], rows, "trees")


def _environment(report: MeasurementReport) -> list[_Part]:
    envs = [(t.name, report.environment[t.name]) for t in report.trees if t.name in report.environment]
    if not envs:
        return [_Part(["", "The environment was not recorded."])]

    def words(env: dict[str, str | None]) -> str:
        out = []
        for key in ENVIRONMENT_KEYS:
            value = env.get(key)
            shown = mentions.code(_cap(value, SHORT)) if value else ("none" if key == "device" else "not installed")
            out.append(f"{'vLLM' if key == 'vllm' else key.capitalize() if key != 'cpu' else 'CPU'} {shown}")
        return ", ".join(out)

    if all(env == envs[0][1] for _, env in envs):
        same = " (the same for every tree)" if len(envs) > 1 else ""
        return [_Part(["", f"Environment{same}: {words(envs[0][1])}."])]
    head = [
        "",
        "Environment:",
        "",
        "| tree | " + " | ".join(ENVIRONMENT_KEYS) + " |",
        "|---|" + "---|" * len(ENVIRONMENT_KEYS),
    ]
    rows = [
        f"| {mentions.code(_cap(name, SHORT), cell=True)} | "
        + " | ".join(_value(env.get(k)) for k in ENVIRONMENT_KEYS)
        + " |"
        for name, env in envs
    ]
    return [_Part(head, rows, "trees' environments")]


def _metrics(report: MeasurementReport) -> _Part:
    trees = [t.name for t in report.trees][:MAX_TREES]
    names: dict[str, None] = {}
    for tree in trees:
        names.update(dict.fromkeys(report.metrics.get(tree, {})))
    head = ["", "#### Metrics", ""]
    if not names:
        return _Part(head + ["No tree reported a metric."])
    head += [
        "| metric | " + " | ".join(mentions.code(_cap(t, SHORT), cell=True) for t in trees) + " |",
        "|---|" + "---:|" * len(trees),
    ]
    rows = [
        f"| {mentions.code(_cap(m, SHORT), cell=True)} | "
        + " | ".join(_value(report.metrics.get(t, {}).get(m)) for t in trees)
        + " |"
        for m in names
    ]
    tail = []
    if len(report.trees) > len(trees):
        tail = ["", f"_{len(report.trees) - len(trees)} more trees are in the report, not in this table._"]
    return _Part(head, rows, "metrics", tail)


def _predictions(report: MeasurementReport) -> _Part:
    held = [p for p in report.predictions if p.held]
    head = ["", f"#### Predictions: {len(held)} of {len(report.predictions)} held", ""]
    rows = []
    for p in report.predictions:
        claim = mentions.inline(_cap(p.claim, SHORT)) or "(no claim text)"
        where = f"{mentions.code(_cap(p.metric, SHORT))} on {mentions.code(_cap(p.tree, SHORT))}"
        seen = f"observed {_value(p.observed, cell=False)}" if p.held is not None else "not measured"
        if p.compared_to is not None:
            seen += f", the other tree {_value(p.compared_to, cell=False)}"
        why = f" Expected because: {mentions.inline(_cap(p.why, LONG)).rstrip('.')}." if p.why else ""
        if p.held:
            rows.append(f"- **held** {mentions.code(_cap(p.id, SHORT))}: {claim} ({where}; {seen}).{why}")
        else:
            reason = (
                mentions.inline(_cap(p.explanation, LONG)).rstrip(".") + "." if p.explanation else "_not explained yet_"
            )
            verdict = "failed" if p.held is False else "not measured"
            rows.append(
                f"- **{verdict}** {mentions.code(_cap(p.id, SHORT))}: ~~{claim}~~ ({where}; {seen}).{why} "
                f"Why it failed: {reason}"
            )
    if not rows:
        rows = ["- (the predictions file held none)"]
    return _Part(head, rows, "predictions")


def _reproduce(report: MeasurementReport) -> _Part:
    head = ["", "#### Reproduce", ""]
    if not report.reproduce:
        return _Part(head + ["The report names no commands."])
    # the block's lines are cut as rows; fenced() sizes its fence on every line, so the
    # fence is made from all of them and the cut keeps it whole
    block = mentions.fenced([_cap(c, LONG) for c in report.reproduce], "sh").split("\n")
    return _Part(head + block[:1], block[1:-1], "commands", block[-1:])
