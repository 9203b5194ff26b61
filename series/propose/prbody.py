"""A PR description rendered from upstream's own pull request template, filled from a topic.

The template is read from upstream main's tree where GitHub looks for it. Its `## `
sections are filled by what their heading asks for: the purpose (Purpose, Overview,
Summary) from the commit messages; the claims from the commit subjects; the test plan
(Test Plan, Validation) from the upstream CI steps that cover the change (what `series
test` selects) and the change's own test files; the results (Test Result, and Validation)
from `series test --run --json` evidence when there is some; the details from the commit
bodies. Sections it cannot fill keep the template's text. A "Release notes:" line to edit
goes above the template's footer (GitHub strips what follows its "BEFORE SUBMITTING" line).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pygit2

from series.propose import mentions
from series.errors import SeriesError
from series.validate import one_line
from series.propose.grade import Commit, kind, title_tags
from series.evidence.testmap import TEST_AREAS, StepSelection, unescape

TEMPLATE_PATHS = (
    ".github/pull_request_template.md",
    ".github/PULL_REQUEST_TEMPLATE.md",
    "pull_request_template.md",
    "PULL_REQUEST_TEMPLATE.md",
    "docs/pull_request_template.md",
    "docs/PULL_REQUEST_TEMPLATE.md",
)
# vLLM's template before it was reworded: used when upstream's tree has none.
FALLBACK = "## Purpose\n\n## Test Plan\n\n## Test Result\n"
_TRAILER = re.compile(r"^[A-Za-z][A-Za-z0-9-]*: .+$|^\(cherry picked from commit [0-9a-f]+\)$")
MAX_STEPS = 8  # a description lists the closest steps; broad ones (on `vllm/`) run anyway
_COMMENT = re.compile(r"<!--.*?-->\s*", re.DOTALL)


@dataclass(frozen=True)
class Description:
    template: str | None  # the template's path in upstream's tree; None: the fallback
    body: str
    filled: tuple[str, ...]  # the headings filled in
    results: bool  # evidence from `series test --run` went in


def read_template(repo: pygit2.Repository, tree: pygit2.Tree) -> tuple[str | None, str]:
    for path in TEMPLATE_PATHS:
        try:
            blob = tree[path].peel(pygit2.Blob)
        except (KeyError, ValueError):
            continue
        return path, blob.data.decode("utf-8", "replace")
    return None, FALLBACK


def _body(message: str) -> str:
    """A commit message without its subject and trailer block."""
    paragraphs = message.strip().split("\n\n")[1:]
    if paragraphs and all(_TRAILER.match(l) for l in paragraphs[-1].splitlines()):
        paragraphs = paragraphs[:-1]
    return "\n\n".join(p.strip() for p in paragraphs if p.strip())


def purpose(title: str, commits: Sequence[Commit]) -> str:
    first_body = next((_body(c.message) for c in commits if _body(c.message)), "")
    what = (title_tags(title)[1] or title).rstrip(".")
    text = what[:1].upper() + what[1:] + "."
    if first_body:
        text += "\n\n" + first_body
    if len(commits) > 1:
        text += "\n\nCommits:\n" + "\n".join(f"- {c.subject}" for c in commits)
    return text


def claims(commits: Sequence[Commit]) -> str:
    return "\n".join(f"- {title_tags(c.subject)[1] or c.subject}" for c in commits)


def details(commits: Sequence[Commit]) -> str:
    bodies = [(c.subject, _body(c.message)) for c in commits]
    bodies = [(s, b) for s, b in bodies if b]
    if len(bodies) <= 1:
        return ""
    return "\n\n".join(f"**{s}**\n\n{b}" for s, b in bodies)


def test_plan(selected: Sequence[StepSelection] | None, paths: Sequence[str]) -> str:
    """`selected` None: the CI map could not be read, so no step is claimed either way."""
    own = [p for p in paths if kind(p) == "tests" and p.endswith(".py")]
    out = []
    if own:
        out.append("This change's own tests:\n\n```bash\n" + "\n".join(f"pytest -v {p}" for p in own) + "\n```")
    if selected:
        ranked = sorted(selected, key=lambda s: -_specificity(s))
        shown = ranked[:MAX_STEPS]
        source = shown[0].step.file
        source = source if not source.startswith(TEST_AREAS + "/") else TEST_AREAS
        text = f"Upstream CI steps that cover the changed paths (`{source}`):\n\n" + "\n".join(
            f"- {s.step.label} (`{s.step.ident}`, {s.step.device or 'GPU'}): "
            + "; ".join(f"`{unescape(c)}`" for c in s.step.commands)
            for s in shown
        )
        if len(ranked) > len(shown):
            text += (
                f"\n- ... and {len(ranked) - len(shown)} more steps whose dependencies are broader "
                "(`series test` lists them all)"
            )
        out.append(text)
    if selected is None:
        out.append(
            "Upstream CI steps covering the changed paths: not selected (no CI map could be read); "
            "describe how you checked the change."
        )
    elif not out:
        out.append("No upstream CI step covers the changed paths; describe how you checked the change.")
    return "\n\n".join(out)


def _specificity(selection: StepSelection) -> int:
    """How closely a step is tied to the paths: its longest dependency that selects one.
    A step on `vllm/v1/kv_offload` says more about a change there than one on `vllm/`."""
    best = 0
    for dep in selection.step.dependencies:
        if not dep.startswith("!") and any(p.startswith(dep) for p in selection.paths):
            best = max(best, len(dep))
    return best


def read_evidence(path: Path, option: str = "--evidence") -> dict[str, Any]:
    """The JSON of `series test --run --json` in `path`, checked (`check_evidence`); a file
    that is not one is a one-line SeriesError naming it (propose and comment take it)."""
    how = "write it with 'series test TOPIC --run --json > FILE'"
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise SeriesError(f"{option} {path}: cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise SeriesError(f"{option} {path}: not UTF-8 (byte {exc.start}); {how}") from None
    try:
        return check_evidence(json.loads(text))
    except (json.JSONDecodeError, RecursionError) as exc:
        detail = f" ({exc.msg}, line {exc.lineno})" if isinstance(exc, json.JSONDecodeError) else " (nested too deeply)"
        raise SeriesError(f"{option} {path}: not JSON{detail}; {how}") from None
    except ValueError as exc:
        raise SeriesError(
            f"{option} {path}: not the output of 'series test --run --json': {one_line(str(exc))[:300]}; {how}"
        ) from None


def check_evidence(data: object) -> dict[str, Any]:
    """The JSON of `series test --run --json`, every field `results()` reads checked for its
    type: per-tree results against the base release (`summary`, `tests`), or the older
    per-step shape (`with_series`). A wrong one is a ValueError naming the field."""
    if not isinstance(data, dict):
        raise ValueError("not an object")
    if _per_tree(data):
        for tree, counts in _object(data["summary"], "summary").items():
            for outcome in _object(counts, f"summary.{tree}"):
                _int(counts, outcome, f"summary.{tree}.{outcome}")
        _str(data, "build", "build", optional=True)
        for key in ("needed", "worse"):
            for name, tests in _object(data.get(key) or {}, key).items():
                _strs(tests, f"{key}.{name}")
        _strs(data.get("machine") or [], "machine")
        return data
    if "with_series" not in data:
        raise ValueError("no per-test results in it (neither 'summary' and 'tests' nor 'with_series')")
    for i, step in enumerate(_list(data["with_series"], "with_series")):
        where = f"with_series[{i}]"
        for key in ("label", "step", "status"):
            _str(_object(step, where), key, f"{where}.{key}", optional=True)
        for j, command in enumerate(_list(step.get("commands", []), f"{where}.commands")):
            tests = _object(
                _object(command, f"{where}.commands[{j}]").get("tests") or {}, f"{where}.commands[{j}].tests"
            )
            for test in tests:
                _str(tests, test, f"{where}.commands[{j}].tests.{test}")
    without = data.get("without")
    if without is not None:
        for i, proof in enumerate(_list(_object(without, "without").get("evidence") or [], "without.evidence")):
            for key in ("test", "step"):
                _str(_object(proof, f"without.evidence[{i}]"), key, f"without.evidence[{i}].{key}")
    return data


def _object(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"'{where}' is not an object")
    return value


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"'{where}' is not a list")
    return value


def _str(d: dict[str, Any], key: str, where: str, optional: bool = False) -> None:
    if not isinstance(d.get(key), str) and not (optional and d.get(key) is None):
        raise ValueError(f"'{where}' is not a string")


def _int(d: dict[str, Any], key: str, where: str) -> None:
    if not isinstance(d.get(key), int) or isinstance(d.get(key), bool):
        raise ValueError(f"'{where}' is not a number")


def _strs(value: object, where: str) -> None:
    if not all(isinstance(v, str) for v in _list(value, where)):
        raise ValueError(f"'{where}' is not a list of strings")


def _per_tree(evidence: dict[str, Any]) -> bool:
    """Which of the two shapes: the check and the rendering ask this one question."""
    return "summary" in evidence and "tests" in evidence


def results(evidence: dict[str, Any]) -> str:
    if _per_tree(evidence):
        return _matrix_results(evidence)
    return _step_results(evidence)


def _matrix_results(evidence: dict[str, Any]) -> str:
    """Per-tree counts (base, series, without:TOPIC, ...), what the change is needed for,
    what got worse, and the machine's own failures kept apart. Names and test ids are the
    evidence file's: each goes in as code nothing in it can close (series.propose.mentions)."""
    summary: dict[str, dict[str, int]] = evidence["summary"]
    names = list(summary)
    outcomes = [k for k in next(iter(summary.values()), {}) if k != "files_from_cache"]
    out = [
        f"`series test --run` over {mentions.code(evidence.get('build') or 'the release build')}:",
        "",
        "| | " + " | ".join(mentions.code(n, cell=True) for n in names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    out += [
        f"| {mentions.inline(o)} | " + " | ".join(str(summary[n].get(o, 0)) for n in names) + " |" for o in outcomes
    ]
    for topic, tests in (evidence.get("needed") or {}).items():
        out += [
            "",
            f"Without {mentions.code(topic)}, {len(tests)} tests fail that pass with it" + (":" if tests else "."),
        ]
        out += [f"- {mentions.code(t)}" for t in tests]
    # a tree on upstream's trunk (pr:TOPIC) is judged against main, not the release
    trees = evidence.get("trees")
    against = {
        t.get("name"): t.get("against") for t in (trees if isinstance(trees, list) else []) if isinstance(t, dict)
    }
    for tree, tests in (evidence.get("worse") or {}).items():
        yardstick = (
            f"upstream's {mentions.code(str(against[tree]))}"
            if against.get(tree) not in (None, "base")
            else "the base release"
        )
        out += ["", f"Worse than {yardstick} in {mentions.code(tree)}: " + ", ".join(mentions.code(t) for t in tests)]
    machine = evidence.get("machine") or []
    if machine:
        out += [
            "",
            f"{len(machine)} tests fail on the base release too (this machine: CPU only, offline); "
            "not counted against the change.",
        ]
    return "\n".join(out)


def _step_results(evidence: dict[str, Any]) -> str:
    """The per-step shape: step, outcome, counts; and the tests that fail without the change."""
    rows = ["| step | outcome | passed | failed | skipped |", "|---|---|---|---|---|"]
    for step in evidence.get("with_series", []):
        tests: dict[str, str] = {}
        for command in step.get("commands", []):
            tests.update(command.get("tests") or {})
        count = {k: sum(1 for v in tests.values() if v == k) for k in ("passed", "failed", "skipped")}
        rows.append(
            f"| {mentions.inline(step.get('label') or step.get('step') or '?')} | "
            f"{mentions.inline(step.get('status') or '?')} | "
            f"{count['passed']} | {count['failed']} | {count['skipped']} |"
        )
    out = ["With this change (`series test --run`):", "", *rows]
    without = evidence.get("without")
    if isinstance(without, dict):
        proof = without.get("evidence") or []
        if proof:
            out += ["", "Without this change these tests fail, and pass with it:", ""]
            out += [f"- {mentions.code(e.get('test'))} ({mentions.inline(e.get('step'))})" for e in proof]
        else:
            out += ["", "Without this change no selected test fails."]
    return "\n".join(out)


def _heading_kind(heading: str) -> str | None:
    h = heading.lower()
    if re.search(r"result", h):
        return "results"
    if re.search(r"test plan|validation|testing|how.*test", h):
        return "plan"
    if re.search(r"purpose|overview|summary|description|what", h):
        return "purpose"
    if "claim" in h:
        return "claims"
    if re.search(r"detail|motivation|design", h):
        return "details"
    return None


def render(
    template_path: str | None,
    template: str,
    title: str,
    commits: Sequence[Commit],
    selected: Sequence[StepSelection] | None,
    paths: Sequence[str],
    release_note: str,
    evidence: dict[str, Any] | None = None,
    mentionable: Sequence[str] = (),
) -> Description:
    """The template filled; what the fills say mentions only `mentionable` and hides nothing
    (series.propose.mentions); the template's own text is upstream's and stays as it is."""
    lines = template.splitlines()
    out: list[str] = []
    filled: list[str] = []
    i = 0
    fills = {
        "purpose": purpose(title, commits),
        "claims": claims(commits),
        "plan": test_plan(selected, paths),
        "results": results(evidence) if evidence else "",
        "details": details(commits),
    }
    kinds_here = {_heading_kind(l[3:]) for l in lines if l.startswith("## ")}
    if "results" not in kinds_here and evidence:
        fills["plan"] += "\n\n" + fills["results"]  # one Validation section: plan and results
    fills = {what: mentions.neutralise(text, mentionable) for what, text in fills.items()}
    while i < len(lines):
        line = lines[i]
        if not line.startswith("## "):
            out.append(line)
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("## ") and lines[j].strip() != "---":
            j += 1
        section = "\n".join(lines[i + 1 : j])
        what = _heading_kind(line[3:])
        text = fills.get(what or "", "")
        out.append(line)
        if text:
            filled.append(line[3:].strip())
            out += ["", *text.splitlines(), ""]
        else:
            out.append(section.rstrip("\n") if section.strip() else "")
        i = j
    body = "\n".join(out)
    note = f"Release notes: {mentions.neutralise(release_note, mentionable)}"
    footer = re.search(r"^(---\s*$|\*\*BEFORE SUBMITTING)", body, re.MULTILINE)
    if footer:
        body = body[: footer.start()].rstrip("\n") + f"\n\n{note}\n\n" + body[footer.start() :]
    else:
        body = body.rstrip("\n") + f"\n\n{note}\n"
    body = re.sub(r"\n{3,}", "\n\n", body)
    return Description(template_path, body.rstrip("\n") + "\n", tuple(filled), bool(evidence))


def strip_comments(text: str) -> str:
    """The template's HTML comments out (for a terminal, where they would be noise)."""
    return _COMMENT.sub("", text)
