"""A proposed upstream PR graded against what gets a first vLLM PR merged.

The rules, each a `GradeFinding` that says what it saw, why it matters and how to fix it:
size (changed lines, files: the first-PR limits of `propose:` in series.yaml, relaxed by
`not_first`), one concern (one area of the tree; code mixed with docs or with a refactor
is flagged), DCO (Signed-off-by on every commit), the title's tags (vLLM's well-known
list, read from upstream's own contributing guide), tests touched when code is, hot paths
(scheduler, attention kernels, CUDA graphs, samplers), and a performance claim without a
script under benchmarks/. And the description (`describe`): the sections vLLM's PR template
asks to fill (purpose, test plan, test results, a linked issue) and what its AGENTS.md requires
of an AI-assisted PR; each of those findings names the file its rule comes from (`source`).
Pure: the verb hands in the facts, nothing here reads git.
"""

from __future__ import annotations

import enum
import fnmatch
import re
from dataclasses import dataclass
from typing import Sequence

from series.git.repo import FileStat
from series.model import ProposeSettings

# vLLM's docs/contributing/README.md ("PR Title and Classification"), for an upstream
# tree that does not carry the guide; `tags_from_guide` reads the real list when it does.
WELL_KNOWN_TAGS = (
    "Bugfix",
    "Feature",
    "Perf",
    "Refactor",
    "CI",
    "CI/Build",
    "Test",
    "Doc",
    "Docs",
    "Misc",
    "Model",
    "Frontend",
    "Rust Frontend",
    "Core",
    "Kernel",
    "Model Runner V2",
    "MRV2",
    "Attention",
    "Multimodal",
    "Quantization",
    "MoE",
    "Spec Decode",
    "LoRA",
    "KV Connector",
    "KV Offload",
    "ROCm",
    "XPU",
    "CPU",
    "Hardware",
)
GUIDE = "docs/contributing/README.md"
RFC_LINES = 500  # the guide's "Notes for Large Changes": more wants an RFC issue first

_TITLE_TAGS = re.compile(r"^((?:\[[^\[\]]+\])+)\s*(.*)$")
_SIGNOFF = re.compile(r"^Signed-off-by:\s*\S.*<[^>]+>\s*$", re.MULTILINE)
_PERF = re.compile(
    r"\b(speed-?ups?|faster|throughput|latency|perf|performance|optimi[sz]e[ds]?|"
    r"\d+(?:\.\d+)?\s*x\b|\d+(?:\.\d+)?\s*%)",
    re.IGNORECASE,
)
_REFACTOR = re.compile(r"^(?:\[[^\]]+\])*\s*(?:\[refactor\]|refactor|rename|move|clean ?up)", re.IGNORECASE)

# The scope tag that fits an area of vLLM's tree (suggested when a title has none).
_SCOPE_TAGS = (
    ("vllm/v1/kv_offload", "KV Offload"),
    ("vllm/distributed/kv_transfer", "KV Connector"),
    ("vllm/v1/attention", "Attention"),
    ("vllm/attention", "Attention"),
    ("vllm/model_executor/layers/quantization", "Quantization"),
    ("vllm/model_executor/layers/fused_moe", "MoE"),
    ("vllm/lora", "LoRA"),
    ("vllm/multimodal", "Multimodal"),
    ("vllm/v1/spec_decode", "Spec Decode"),
    ("vllm/model_executor/models", "Model"),
    ("vllm/entrypoints", "Frontend"),
    ("vllm/v1/core", "Core"),
    ("vllm/v1/engine", "Core"),
    ("csrc", "Kernel"),
    ("rust", "Rust Frontend"),
)


class Level(str, enum.Enum):
    OK = "ok"
    NOTE = "note"  # worth knowing, not in the way of a merge
    FLAG = "flag"  # what the guide asks against; fix it before asking for review


@dataclass(frozen=True)
class GradeFinding:
    rule: str  # size | files | concern | dco | title | tests | hot-path | benchmark
    level: Level
    what: str
    why: str = ""
    fix: str = ""
    source: str = ""  # the upstream file the rule is read from, when it is one


@dataclass(frozen=True)
class Commit:
    sha: str
    message: str

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0].strip()


@dataclass(frozen=True)
class Grade:
    first_pr: bool
    lines: int
    files: int
    findings: tuple[GradeFinding, ...]

    @property
    def flags(self) -> tuple[GradeFinding, ...]:
        return tuple(f for f in self.findings if f.level is Level.FLAG)


def kind(path: str) -> str:
    """tests | docs | ci | benchmarks | examples | code: what a path is to a reviewer."""
    name = path.rsplit("/", 1)[-1]
    if path.startswith("tests/") or name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
        return "tests"
    if path.startswith("docs/") or (name.endswith((".md", ".rst")) and not path.startswith("vllm/")):
        return "docs"
    if path.startswith((".buildkite/", ".github/", "docker/", "requirements/", "cmake/", "tools/")) or name in (
        "setup.py",
        "pyproject.toml",
        "CMakeLists.txt",
        "Dockerfile",
        ".pre-commit-config.yaml",
    ):
        return "ci"
    if path.startswith("benchmarks/"):
        return "benchmarks"
    if path.startswith("examples/"):
        return "examples"
    return "code"


def area(path: str) -> str:
    """The part of the tree a code path belongs to: vllm/v1/<x>, vllm/<x>, csrc/<x>."""
    parts = path.split("/")
    depth = 3 if parts[:2] == ["vllm", "v1"] else 2
    return "/".join(parts[: min(depth, len(parts) - 1)]) or parts[0]


def signed_off(message: str) -> bool:
    return bool(_SIGNOFF.search(message))


def hot(path: str, patterns: Sequence[str]) -> str | None:
    """The hot-path pattern `path` falls under: "dir/" is a prefix, else an fnmatch pattern."""
    for pattern in patterns:
        if pattern.endswith("/") and path.startswith(pattern):
            return pattern
        if not pattern.endswith("/") and (fnmatch.fnmatchcase(path, pattern) or path == pattern):
            return pattern
    return None


def tags_from_guide(text: str) -> tuple[str, ...]:
    """The bracketed tags the guide's "PR Title" section lists (`[Bugfix]`, ...)."""
    match = re.search(r"^#+ *PR Title.*?$(.*?)(?=^#+ )", text, re.MULTILINE | re.DOTALL | re.IGNORECASE)
    section = match.group(1) if match else ""
    found = re.findall(r"`((?:\[[^\[\]`]+\])+)`", section)
    tags: list[str] = []
    for group in found:
        for tag in re.findall(r"\[([^\[\]]+)\]", group):
            if tag not in tags and tag != "Vendor":
                tags.append(tag)
    return tuple(tags)


def title_tags(title: str) -> tuple[list[str], str]:
    m = _TITLE_TAGS.match(title.strip())
    if not m:
        return [], title.strip()
    return re.findall(r"\[([^\[\]]+)\]", m.group(1)), m.group(2).strip()


def suggest_tags(files: Sequence[FileStat], commits: Sequence[Commit], known: Sequence[str]) -> str:
    kinds = {kind(f.path) for f in files}
    words = " ".join(c.message for c in commits).lower()
    if kinds == {"docs"}:
        kind_tag = "Doc"
    elif kinds == {"tests"}:
        kind_tag = "Test"
    elif kinds <= {"ci"}:
        kind_tag = "CI/Build"
    elif re.search(r"\b(fix|fixes|fixed|bug|crash|wrong|regression)\b", words):
        kind_tag = "Bugfix"
    elif _PERF.search(words):
        kind_tag = "Perf"
    else:
        kind_tag = "Feature"
    tags = [kind_tag]
    for f in files:
        for prefix, tag in _SCOPE_TAGS:
            if (f.path == prefix or f.path.startswith(prefix + "/")) and tag in known and tag not in tags:
                tags.append(tag)
                break
        if len(tags) > 1:
            break
    return "".join(f"[{t}]" for t in tags if t in known or t == kind_tag)


def grade(
    title: str,
    files: Sequence[FileStat],
    commits: Sequence[Commit],
    settings: ProposeSettings,
    *,
    first_pr: bool = True,
    known_tags: Sequence[str] = WELL_KNOWN_TAGS,
) -> Grade:
    lines = sum(f.added + f.deleted for f in files)
    out = [
        *_size(files, lines, settings, first_pr),
        _concern(files, commits),
        _dco(commits),
        _title(title, files, commits, known_tags),
        _tests(files),
        *_hot_paths(files, settings, first_pr),
        _benchmark(title, files, commits),
    ]
    return Grade(first_pr, lines, len(files), tuple(out))


def _size(files: Sequence[FileStat], lines: int, settings: ProposeSettings, first_pr: bool) -> list[GradeFinding]:
    if not first_pr:
        weighty = sum(f.added + f.deleted for f in files if kind(f.path) == "code" and not f.path.startswith("csrc/"))
        if weighty > RFC_LINES:
            return [
                GradeFinding(
                    "size",
                    Level.FLAG,
                    f"{weighty} changed lines of code (tests, kernels, CI not counted)",
                    f"vLLM's guide expects a GitHub issue (RFC) for changes over {RFC_LINES} lines "
                    "before a PR; without one it is tagged rfc-required",
                    "open an RFC issue first and link it in the description, or split the change",
                )
            ]
        return [
            GradeFinding(
                "size",
                Level.OK,
                f"{lines} changed lines in {len(files)} files "
                f"(not a first PR: the first-PR limits of {settings.max_lines} lines, "
                f"{settings.max_files} files do not apply)",
            )
        ]
    out = []
    if lines > settings.max_lines:
        out.append(
            GradeFinding(
                "size",
                Level.FLAG,
                f"{lines} changed lines (first-PR limit {settings.max_lines})",
                "a first PR under the limit is reviewed and merged; a large one from a new contributor waits",
                "split the topic into smaller PRs (one concern each), or pass --not-first "
                "if you have merged PRs upstream (limit: propose.max_lines in series.yaml)",
            )
        )
    else:
        out.append(GradeFinding("size", Level.OK, f"{lines} changed lines (limit {settings.max_lines})"))
    if len(files) > settings.max_files:
        out.append(
            GradeFinding(
                "files",
                Level.FLAG,
                f"{len(files)} files changed (first-PR limit {settings.max_files})",
                "each file is another owner to convince; a first PR stays within a few files",
                "drop what the fix does not need (formatting, drive-by edits) or split the PR "
                "(limit: propose.max_files in series.yaml)",
            )
        )
    else:
        out.append(
            GradeFinding(
                "files",
                Level.OK,
                f"{len(files)} file{'s' if len(files) != 1 else ''} changed (limit {settings.max_files})",
            )
        )
    return out


def _concern(files: Sequence[FileStat], commits: Sequence[Commit]) -> GradeFinding:
    kinds = {kind(f.path) for f in files}
    areas = sorted({area(f.path) for f in files if kind(f.path) == "code"})
    problems = []
    if len(areas) > 1:
        problems.append(f"code in {len(areas)} areas ({', '.join(areas)})")
    if "code" in kinds and "docs" in kinds:
        problems.append("code and docs together")
    refactors = [c for c in commits if _REFACTOR.match(c.subject)]
    if refactors and len(refactors) < len(commits):
        problems.append(f"a refactor mixed with the change ({refactors[0].subject!r})")
    if not problems:
        where = areas[0] if areas else ", ".join(sorted(kinds))
        return GradeFinding("concern", Level.OK, f"one concern ({where})")
    return GradeFinding(
        "concern",
        Level.FLAG,
        "; ".join(problems),
        "one concern per PR: reviewers of one area can approve it, and it can be reverted alone",
        "split it: the fix in one PR, the refactor or the docs in their own (docs that only "
        "describe this change's user-visible behaviour may stay)",
    )


def _dco(commits: Sequence[Commit]) -> GradeFinding:
    unsigned = [c for c in commits if not signed_off(c.message)]
    if not unsigned:
        return GradeFinding("dco", Level.OK, f"all {len(commits)} commit(s) carry Signed-off-by")
    listed = ", ".join(f"{c.sha[:12]} {c.subject!r}" for c in unsigned[:3]) + (" ..." if len(unsigned) > 3 else "")
    return GradeFinding(
        "dco",
        Level.FLAG,
        f"{len(unsigned)} of {len(commits)} commit(s) lack Signed-off-by: {listed}",
        "vLLM's DCO check fails a PR whose commits are not signed off; the sign-off is your "
        "statement that you may contribute the change, so series never adds it silently",
        "read the DCO (upstream's DCO file), then run 'series propose' again with --signoff",
    )


def _title(title: str, files: Sequence[FileStat], commits: Sequence[Commit], known: Sequence[str]) -> GradeFinding:
    tags, rest = title_tags(title)
    suggestion = suggest_tags(files, commits, known)
    if not tags:
        return GradeFinding(
            "title",
            Level.FLAG,
            f"the title {title!r} has no [Tag]",
            "vLLM's guide: PR titles start with one or more bracketed tags, e.g. [Bugfix][KV Offload]",
            f"pass --title \"{suggestion} {rest}\" (or reword the first commit's subject)",
        )
    if not rest:
        return GradeFinding(
            "title",
            Level.FLAG,
            f"the title {title!r} is only tags",
            "the tags say the kind and area; the rest says what changes",
            f"pass --title \"{''.join(f'[{t}]' for t in tags)} <what it changes>\"",
        )
    lowered = {k.lower(): k for k in known}
    odd = [t for t in tags if t not in known]
    if odd:
        near = [f"[{lowered[t.lower()]}]" for t in odd if t.lower() in lowered]
        fix = (
            f"write {', '.join(near)} as the guide spells it"
            if near
            else f"use a well-known tag where one fits ({suggestion})"
        )
        return GradeFinding(
            "title",
            Level.NOTE,
            f"tag(s) {', '.join(f'[{t}]' for t in odd)} not among the guide's well-known tags",
            "any descriptive tag is accepted, but the well-known ones route the PR to the right reviewers",
            fix,
        )
    return GradeFinding("title", Level.OK, f"title tags {''.join(f'[{t}]' for t in tags)}")


def _tests(files: Sequence[FileStat]) -> GradeFinding:
    code = [f.path for f in files if kind(f.path) == "code"]
    tests = [f.path for f in files if kind(f.path) == "tests"]
    if not code:
        return GradeFinding("tests", Level.OK, "no code changed")
    if tests:
        return GradeFinding("tests", Level.OK, f"tests touched ({', '.join(tests)})")
    return GradeFinding(
        "tests",
        Level.FLAG,
        f"code changed ({len(code)} file(s)) but no test",
        "the guide asks for tests with every change; reviewers merge what a test proves",
        f"add or extend a test under tests/ for {area(code[0])} (one that fails without the change)",
    )


def _hot_paths(files: Sequence[FileStat], settings: ProposeSettings, first_pr: bool) -> list[GradeFinding]:
    hits = [(f.path, p) for f in files for p in [hot(f.path, settings.hot_paths)] if p is not None]
    if not hits:
        return [GradeFinding("hot-path", Level.OK, "no hot path (scheduler, attention, CUDA graphs, samplers)")]
    paths = ", ".join(path for path, _ in hits)
    if not first_pr:
        return [
            GradeFinding(
                "hot-path",
                Level.NOTE,
                f"touches a hot path: {paths}",
                "changes to the scheduler, attention kernels, CUDA graphs or samplers get a "
                "deeper review and a performance check",
                "state the performance impact, measured",
            )
        ]
    return [
        GradeFinding(
            "hot-path",
            Level.FLAG,
            f"touches a hot path: {paths}",
            "the first-PR guide keeps scheduler, attention-kernel, CUDA-graph and sampler "
            "changes out of a first PR: they need maintainers' time and benchmarks",
            "propose something outside the hot path first, or pass --not-first if you have "
            "merged PRs upstream (paths: propose.hot_paths in series.yaml)",
        )
    ]


def _benchmark(title: str, files: Sequence[FileStat], commits: Sequence[Commit]) -> GradeFinding:
    text = "\n".join([title, *(c.message for c in commits)])
    claim = _PERF.search(text)
    scripts = [f.path for f in files if f.path.startswith("benchmarks/")]
    if claim is None:
        return GradeFinding("benchmark", Level.OK, "no performance claim")
    if scripts:
        return GradeFinding("benchmark", Level.OK, f"performance claim with a benchmark ({', '.join(scripts)})")
    return GradeFinding(
        "benchmark",
        Level.FLAG,
        f"performance claim ({claim.group(0)!r}) without a benchmarks/ script",
        "a speed claim is believed when a reviewer can rerun it: a script and a released "
        "vLLM version to compare against",
        "add the script you measured with under benchmarks/ and name the released version "
        "(e.g. vllm==0.31.0) and the numbers in the description; or drop the claim",
    )


# vllm-project/vllm@83d80a83f89f4546008c06260568ebd1a31f6d88:.github/PULL_REQUEST_TEMPLATE.md, its
# "Essential Elements of an Effective PR Description Checklist": purpose (with the issues it
# resolves), test plan, test results. Newer templates name them Summary / Validation.
TEMPLATE_RULE = ".github/PULL_REQUEST_TEMPLATE.md"
# vllm-project/vllm@07d8be77b5d7034cf091ea87c604dd56c518ee04:AGENTS.md, "Accountability": a PR
# description for AI-assisted work must say why it does not duplicate an existing PR, the test
# commands and results, and that AI assistance was used; attribution is a commit trailer
# (Co-authored-by: Agent Name, or Assisted-by: / Generated-by:).
AGENTS_RULE = "AGENTS.md"
_SECTIONS = {
    "purpose": ("purpose", "summary", "overview"),
    "test-plan": ("test plan", "validation"),
    "test-result": ("test result", "test results", "validation"),
}
_ASKS = {
    "purpose": "the purpose of the PR, such as \"Fix some issue (link existing issues this PR will resolve)\"",
    "test-plan": "the test plan, such as providing test command",
    "test-result": "the test results, such as pasting the results comparison before and after, or e2e results",
}
_FIXES = {
    "purpose": "say what the change fixes or adds and why (the first commit's body fills it)",
    "test-plan": "name the test commands (propose fills it from the upstream CI steps covering the change)",
    "test-result": "run the tests ('series test --run --json > evidence.json') and pass --evidence "
    "evidence.json, or paste the results",
}
_AI_TRAILER = re.compile(r"^(?:(?:Assisted|Generated)-by:\s*\S.*|Co-authored-by:\s*[^<>\n]+)$", re.MULTILINE)
_AI_SAID = re.compile(
    r"\b(AI|LLM|assisted by|generated (?:by|with)|with the help of|co-?authored by an? (?:AI|agent))\b", re.IGNORECASE
)
_NOT_DUPLICATE = re.compile(r"duplicat", re.IGNORECASE)
_ISSUE = re.compile(r"(?:^|[\s(])#\d+\b|/issues/\d+")


def sections(body: str) -> dict[str, str]:
    """A description's `#` headings (lowercased) and their text, comments left out; a section
    ends at the next heading, a `---` rule or the template's <details> checklist."""
    found: dict[str, str] = {}
    heading: str | None = None
    for line in re.sub(r"<!--.*?-->", "", body, flags=re.DOTALL).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            heading = m.group(1).strip().lower()
            found.setdefault(heading, "")
        elif line.strip() == "---" or line.lstrip().startswith("<details"):
            heading = None
        elif heading is not None:
            found[heading] = (found[heading] + "\n" + line).strip()
    return found


def describe(body: str, commits: Sequence[Commit]) -> tuple[GradeFinding, ...]:
    """The description against vLLM's PR template checklist and AGENTS.md."""
    parts = sections(body)
    out = []
    for rule, names in _SECTIONS.items():
        filled = [n for n in names if parts.get(n)]
        if filled:
            out.append(GradeFinding(rule, Level.OK, f"'{filled[0]}' filled", source=TEMPLATE_RULE))
            continue
        heading = next((n for n in names if n in parts), names[0])
        out.append(
            GradeFinding(
                rule,
                Level.FLAG,
                f"the description's '{heading}' section is empty",
                f"vLLM's PR checklist asks for {_ASKS[rule]}",
                _FIXES[rule],
                TEMPLATE_RULE,
            )
        )
    text = "\n".join(parts.values())
    if _ISSUE.search(text):
        out.append(GradeFinding("issue-link", Level.OK, "links an issue or PR", source=TEMPLATE_RULE))
    else:
        out.append(
            GradeFinding(
                "issue-link",
                Level.NOTE,
                "no issue linked (#N)",
                "the checklist's purpose item: link existing issues this PR will resolve",
                "add 'Fixes #N' to the purpose when an issue exists",
                TEMPLATE_RULE,
            )
        )
    trailers = sorted({m.group(0).strip() for c in commits for m in _AI_TRAILER.finditer(c.message)})
    if not trailers:
        out.append(
            GradeFinding(
                "ai-assisted",
                Level.OK,
                "no AI-attribution trailer in the commits (AGENTS.md's rules for AI-assisted PRs apply to those)",
                source=AGENTS_RULE,
            )
        )
        return tuple(out)
    missing = []
    if not _AI_SAID.search(text):
        missing.append("a clear statement that AI assistance was used")
    if not _NOT_DUPLICATE.search(text):
        missing.append("why this is not duplicating an existing PR")
    if not missing:
        out.append(
            GradeFinding(
                "ai-assisted",
                Level.OK,
                f"AI-assisted ({trailers[0]}): the description says so and why it is no duplicate",
                source=AGENTS_RULE,
            )
        )
    else:
        out.append(
            GradeFinding(
                "ai-assisted",
                Level.FLAG,
                f"AI-assisted ({trailers[0]}) but the description lacks " + " and ".join(missing),
                "vLLM's AGENTS.md: PR descriptions for AI-assisted work must include these (with "
                "the test commands and results); breaching it can get the author banned",
                "add them to the description ('series preflight' lists the PRs it could duplicate)",
                AGENTS_RULE,
            )
        )
    return tuple(out)
