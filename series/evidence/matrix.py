"""The evidence table: per-test outcomes in named trees, read against the base release.

Trees are named the way a maintainer says them: `base` (the release alone), `series`
(every active topic), `without:TOPIC` (the series less one topic) and `only:TOPIC` (one
topic alone on the base; `--compare A B` is only:A and only:B). What counts is the
difference from `base`: a test that fails on the base too is the machine's (no GPU, no
network, a setup step not run here), not the series'. A tree is *worse* when a test's
outcome drops below its base outcome (passed > skipped > failed = error; a test missing
from the tree counts as dropped, unless the run was stopped before that tree reached it:
then it is not run, and has no verdict). `without:` trees are counterfactuals: they show what a
topic is needed for, and never make a run fail.
Trees on upstream's trunk (`pr:TOPIC`, the PR's own tree) are read against `main` (the
trunk alone, run beside them) instead: their tests are main's, not the release's, so the
base is no yardstick for them; `main` itself, like `base`, is a yardstick and no verdict.

Results are cached per test file, keyed by the build, the tree's changes to the package
and the bytes of everything under tests/ the file loads, so a nightly run reruns only
what changed.
"""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from series.cache import user_cache
from series.ops.fs import write_atomically
from series.evidence.testrun import CaseOutcome

_RANK = {CaseOutcome.PASSED: 2, CaseOutcome.SKIPPED: 1, CaseOutcome.FAILED: 0, CaseOutcome.ERROR: 0}


class CaseVerdict(str, enum.Enum):
    SAME = "same"  # as on base, and not failing
    MACHINE = "machine"  # fails (or errors) on base too: this machine, not the tree
    WORSE = "worse"
    BETTER = "better"
    NEW = "new"  # not on base; passes or skips
    MISSING = "missing"  # on base, not in this tree (counts as worse)


def verdict(base: CaseOutcome | None, other: CaseOutcome | None) -> CaseVerdict:
    if other is None:
        return CaseVerdict.MISSING
    if base is None:
        return CaseVerdict.WORSE if other.bad else CaseVerdict.NEW
    if base.bad and other.bad:
        return CaseVerdict.MACHINE
    if _RANK[other] < _RANK[base]:
        return CaseVerdict.WORSE
    if _RANK[other] > _RANK[base]:
        return CaseVerdict.BETTER
    return CaseVerdict.SAME


@dataclass(frozen=True)
class TreeInfo:
    name: str
    commit: str
    describe: str  # "v0.31.0 + 3 topics", for the reader
    package_changes: int  # files of the package this tree changes over the build
    against: str = "base"  # the tree its outcomes are judged against; "" for a yardstick (base, main)

    @property
    def counterfactual(self) -> bool:
        return self.name.startswith("without:")


@dataclass
class ResultMatrix:
    trees: list[TreeInfo]
    results: dict[str, dict[str, CaseOutcome]] = field(default_factory=dict)
    from_cache: dict[str, int] = field(default_factory=dict)  # tree -> test files from cache
    selected: tuple[str, ...] = ()  # test files run
    candidates: int = 0  # test files of the covering steps
    steps: tuple[str, ...] = ()  # the covering steps (keys)
    build: str = ""  # "vllm 0.31.0 at ..."
    interrupted: str | None = None  # the signal's name
    incomplete: set[str] = field(default_factory=set)  # trees the signal stopped mid-run

    @property
    def base(self) -> dict[str, CaseOutcome]:
        return self.results.get("base", {})

    def names(self) -> list[str]:
        return [t.name for t in self.trees]

    def ids(self) -> list[str]:
        out: set[str] = set()
        for outcomes in self.results.values():
            out |= outcomes.keys()
        return sorted(out)

    def against(self, tree: str) -> str:
        """The tree `tree` is judged against ("": none, it is a yardstick)."""
        found = [t.against for t in self.trees if t.name == tree]
        return found[0] if found else ("" if tree == "base" else "base")

    def verdicts(self, tree: str) -> dict[str, CaseVerdict]:
        yardstick = self.against(tree)
        if not yardstick or tree not in self.results:
            return {}
        other, before = self.results[tree], self.results.get(yardstick, {})
        ids = set(before) & set(other)
        # a test one side lacks is judged only where that side finished: a tree stopped
        # mid-run has not reached it, which says nothing about the tree
        if tree not in self.incomplete:
            ids |= set(before)
        if yardstick not in self.incomplete:
            ids |= set(other)
        return {i: verdict(before.get(i), other.get(i)) for i in sorted(ids)}

    def worse(self) -> dict[str, list[str]]:
        """{tree: tests worse than its yardstick (base, or main)}, for the trees that decide the exit code."""
        out: dict[str, list[str]] = {}
        for info in self.trees:
            if not info.against or info.counterfactual:
                continue
            bad = [i for i, v in self.verdicts(info.name).items() if v in (CaseVerdict.WORSE, CaseVerdict.MISSING)]
            if bad:
                out[info.name] = bad
        return out

    def machine(self) -> list[str]:
        """Tests that fail on base and in every tree that ran them: this machine's, not a
        tree's (a test a topic makes pass fails on base for want of the fix, not here)."""
        others = [r for n, r in self.results.items() if n != "base"]
        return sorted(
            i for i, o in self.base.items() if o.bad and not any(r.get(i) is not None and not r[i].bad for r in others)
        )

    def needed(self, tree: str, full: str = "series") -> list[str]:
        """Tests that pass in `full` and fail in `tree`: what the left-out topic is needed for."""
        a, b = self.results.get(full, {}), self.results.get(tree, {})
        return sorted(i for i, o in a.items() if o is CaseOutcome.PASSED and (b.get(i) is None or b[i].bad))

    def differ(self, a: str, b: str) -> list[tuple[str, CaseOutcome | None, CaseOutcome | None]]:
        ra, rb = self.results.get(a, {}), self.results.get(b, {})
        return [(i, ra.get(i), rb.get(i)) for i in sorted(set(ra) | set(rb)) if ra.get(i) != rb.get(i)]


def counts(outcomes: Mapping[str, CaseOutcome]) -> dict[str, int]:
    return {o.value: sum(1 for v in outcomes.values() if v is o) for o in CaseOutcome}


# --- cache -----------------------------------------------------------------------------


def cache_root() -> Path:
    return user_cache("test-results", "SERIES_TEST_CACHE")


def file_key(build_key: str, package_digest: str, inputs: Iterable[tuple[str, str]], args: Iterable[str]) -> str:
    """Key of one test file's results: the build, the tree's package changes, the bytes
    (blob ids) of the file and of every tests/ file it loads, and the pytest arguments."""
    h = hashlib.sha256()
    for part in (build_key, package_digest, *(f"{p}\0{b}" for p, b in sorted(inputs)), *args):
        h.update(part.encode())
        h.update(b"\n")
    return h.hexdigest()[:32]


def package_digest(changes: Mapping[str, bytes | None]) -> str:
    if not changes:
        return "-"  # the installed build itself: what `base` is, run after run
    h = hashlib.sha256()
    for path in sorted(changes):
        data = changes[path]
        h.update(path.encode() + b"\0" + (hashlib.sha256(data).digest() if data is not None else b"-"))
    return h.hexdigest()[:32]


def cache_get(key: str) -> dict[str, CaseOutcome] | None:
    path = cache_root() / f"{key}.json"
    try:
        raw = json.loads(path.read_text())
        return {str(k): CaseOutcome(v) for k, v in raw.items()}
    except (OSError, ValueError):
        return None


def cache_put(key: str, outcomes: Mapping[str, CaseOutcome]) -> None:
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    write_atomically(root / f"{key}.json", json.dumps({k: v.value for k, v in sorted(outcomes.items())}))


# --- rendering -------------------------------------------------------------------------

_SHOW = 8  # ids listed per group before "and N more"


def _listing(ids: list[str], indent: str = "  ") -> list[str]:
    lines = [f"{indent}{i}" for i in ids[:_SHOW]]
    if len(ids) > _SHOW:
        lines.append(f"{indent}... and {len(ids) - _SHOW} more (--json lists every test)")
    return lines


def render_text(m: ResultMatrix) -> str:
    names = [n for n in m.names() if n in m.results]
    lines = []
    if m.interrupted:
        stopped = ", ".join(n for n in m.names() if n in m.incomplete) or "none"
        lines.append(
            f"INTERRUPTED ({m.interrupted}): partial results; stopped mid-run: {stopped} "
            "(a test such a tree did not reach is not counted)"
        )
    lines.append(f"build: {m.build}")
    pad = max(len(t.name) for t in m.trees) + 2
    lines.extend(f"  {t.name:<{pad}}{t.describe}" for t in m.trees)
    if m.selected:
        lines.append(
            f"{len(m.selected)} test files selected of {m.candidates} in {len(m.steps)} covering "
            f"steps (import graph + the topics' own tests)"
        )
    width = max([len(n) for n in names] + [7])
    lines.append(" " * 22 + "".join(f"{n:>{width + 2}}" for n in names))
    for outcome in CaseOutcome:
        lines.append(
            f"  {outcome.value:<20}" + "".join(f"{counts(m.results[n])[outcome.value]:>{width + 2}}" for n in names)
        )
    cached = [m.from_cache.get(n, 0) for n in names]
    if any(cached):
        lines.append(f"  {'files from cache':<20}" + "".join(f"{c:>{width + 2}}" for c in cached))
    machine = m.machine()
    if machine:
        lines.append(
            f"{len(machine)} tests fail on base too (this machine: no GPU, no network, ...), "
            "not counted against any tree:"
        )
        lines.extend(_listing(machine))
    for info in m.trees:
        if not info.against or info.name not in m.results:
            continue
        v = m.verdicts(info.name)
        better = [i for i, x in v.items() if x is CaseVerdict.BETTER]
        worse = [i for i, x in v.items() if x in (CaseVerdict.WORSE, CaseVerdict.MISSING)]
        if info.counterfactual:
            needed = m.needed(info.name)
            topic = info.name.split(":", 1)[1]
            if needed:
                lines.append(f"tests that fail without {topic} and pass with it:")
                lines.extend(_listing(needed))
            else:
                lines.append(f"no selected test fails without {topic} and passes with it")
            continue
        yardstick = m.results.get(info.against, {})
        if better:
            lines.append(f"{info.name}: {len(better)} tests pass that do not on {info.against}:")
            lines.extend(_listing(better))
        if worse:
            lines.append(f"{info.name}: {len(worse)} tests WORSE than on {info.against}:")
            lines.extend(f"  {i}  ({_o(yardstick.get(i))} -> {_o(m.results[info.name].get(i))})" for i in worse[:_SHOW])
            if len(worse) > _SHOW:
                lines.append(f"  ... and {len(worse) - _SHOW} more")
    only = [n for n in names if n.startswith("only:")]
    if len(only) == 2:
        diff = m.differ(*only)
        lines.append(f"{only[0]} vs {only[1]}: {len(diff)} tests differ" + (":" if diff else ""))
        lines.extend(f"  {i}  ({_o(a)} / {_o(b)})" for i, a, b in diff[:_SHOW])
    worse_all = m.worse()
    if not m.interrupted:
        yardsticks = " or ".join(dict.fromkeys(t.against for t in m.trees if t.against)) or "base"
        lines.append(
            f"no test is worse than on {yardsticks}"
            if not worse_all
            else f"WORSE than {yardsticks}: " + ", ".join(f"{t} ({len(ids)})" for t, ids in worse_all.items())
        )
    return "\n".join(lines)


def _o(outcome: CaseOutcome | None) -> str:
    return outcome.value if outcome is not None else "missing"


def render_markdown(m: ResultMatrix) -> str:
    """A PR comment: the summary table, then the tests that matter, machine failures folded."""
    names = [n for n in m.names() if n in m.results]
    out = [
        "### Upstream tests over the release build",
        "",
        f"Build: `{m.build}`"
        + (
            f"; {len(m.selected)} test files selected of {m.candidates} in {len(m.steps)} covering CI steps"
            if m.selected
            else ""
        ),
        "",
    ]
    out.append("| | " + " | ".join(f"`{n}`" for n in names) + " |")
    out.append("|---|" + "---:|" * len(names))
    for outcome in CaseOutcome:
        out.append(f"| {outcome.value} | " + " | ".join(str(counts(m.results[n])[outcome.value]) for n in names) + " |")
    out.append("")
    for info in m.trees:
        if not info.against or info.name not in m.results:
            continue
        if info.counterfactual:
            topic = info.name.split(":", 1)[1]
            needed = m.needed(info.name)
            out.append(f"**Without `{topic}`**, {len(needed)} tests fail that pass with it" + (":" if needed else "."))
            out.extend(f"- `{i}`" for i in needed)
            out.append("")
            continue
        v = m.verdicts(info.name)
        worse = [i for i, x in v.items() if x in (CaseVerdict.WORSE, CaseVerdict.MISSING)]
        better = [i for i, x in v.items() if x is CaseVerdict.BETTER]
        yardstick = m.results.get(info.against, {})
        out.append(f"**`{info.name}`** ({info.describe}): {len(worse)} worse than {info.against}, {len(better)} fixed.")
        out.extend(f"- worse: `{i}` ({_o(yardstick.get(i))} → {_o(m.results[info.name].get(i))})" for i in worse)
        out.extend(f"- fixed: `{i}`" for i in better)
        out.append("")
    machine = m.machine()
    if machine:
        out += [
            f"<details><summary>{len(machine)} tests fail on the base release too "
            "(this machine: CPU only, offline)</summary>",
            "",
        ]
        out.extend(f"- `{i}` ({m.base[i].value})" for i in machine)
        out += ["", "</details>"]
    if m.interrupted:
        out += ["", f"_Interrupted ({m.interrupted}): partial results._"]
    return "\n".join(out) + "\n"


def to_json(m: ResultMatrix) -> dict[str, Any]:
    names = [n for n in m.names() if n in m.results]
    return {
        "build": m.build,
        "interrupted": m.interrupted,
        "incomplete": [n for n in m.names() if n in m.incomplete],
        "trees": [
            {
                "name": t.name,
                "commit": t.commit,
                "describe": t.describe,
                "package_changes": t.package_changes,
                "against": t.against or None,
            }
            for t in m.trees
        ],
        "selection": {"steps": list(m.steps), "candidate_files": m.candidates, "files": list(m.selected)},
        "summary": {n: {**counts(m.results[n]), "files_from_cache": m.from_cache.get(n, 0)} for n in names},
        "tests": {i: {n: (m.results[n][i].value if i in m.results[n] else None) for n in names} for i in m.ids()},
        "verdicts": {
            n: {i: v.value for i, v in m.verdicts(n).items() if v is not CaseVerdict.SAME}
            for n in names
            if m.against(n)
        },
        "machine": m.machine(),
        "needed": {n.split(":", 1)[1]: m.needed(n) for n in names if n.startswith("without:")},
        "worse": m.worse(),
    }
