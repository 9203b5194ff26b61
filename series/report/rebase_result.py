"""A rebase's result as one typed value, from the engine's report to what reads it back.

The engine's report (series.engine.report) says what each topic's replay did; the rebase
verb adds what it found about it: upstream's history of each conflict and merged topic
(series.verbs.rebase.reach), each clean topic's breaks against the new base
(series.verbs.rebase.semantic), how far the base is behind, and what --strict, a refused
recorded resolution or --as-far-as-possible changed. `RebaseResult` holds all of it; the
verb words it (series.verbs.rebase.text), prints `to_json()` for --json, saves the same
document under .git/series/reports/<id>.json, and `series status` reads it back with
`from_json` (series.report.read_first). Nothing edits the JSON in place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from series import persisted
from series.history.attribution import Behind, Culprit
from series.git.upstream_commit import UpstreamCommit
from series.semantic.breaks import Break
from series.engine.bisect import Breaking, Reach
from series.engine.report import RebaseReport, ReportStatus
from series.persisted import Json


@dataclass(frozen=True)
class FileCulprits:
    """A conflicting file's upstream commits: the likeliest listed, the rest counted."""

    culprits: tuple[Culprit, ...]
    more: int

    def to_json(self) -> dict[str, Json]:
        return {"culprits": [c.to_json() for c in self.culprits], "more": self.more}

    @classmethod
    def from_json(cls, data: Json) -> "FileCulprits":
        d = persisted.read_object(data, "upstream[]")
        return cls(
            tuple(Culprit.from_json(c) for c in persisted.read_list(d, "culprits")), persisted.read_int(d, "more")
        )


@dataclass(frozen=True)
class TopicHistory:
    """What upstream's history says about one topic's outcome (series.verbs.rebase.reach)."""

    upstream: Mapping[str, FileCulprits] | None = None  # a conflict: per conflicting file
    evidence: tuple[UpstreamCommit, ...] | None = None  # merged: the commits that landed it
    first_breaking: Breaking | None = None  # --bisect, a conflict


@dataclass(frozen=True)
class TopicFindings:
    """What the verb adds to one topic's line of the report."""

    start: str  # the old commit its own commits sat on
    history: TopicHistory = TopicHistory()
    breaks: tuple[Break, ...] = ()  # empty when none, or not checked

    def to_json(self) -> dict[str, Json]:
        row: dict[str, Json] = {}
        h = self.history
        if h.upstream is not None:
            row["upstream"] = {path: found.to_json() for path, found in h.upstream.items()}
        if h.evidence is not None:
            row["evidence"] = [c.to_json() for c in h.evidence]
        if h.first_breaking is not None:
            row["first_breaking"] = h.first_breaking.to_json()
        row["breaks"] = [b.to_json() for b in self.breaks]
        row["start"] = self.start
        return row

    @classmethod
    def from_json(cls, d: persisted.JsonObject) -> "TopicFindings":
        upstream = d.get("upstream")
        evidence = d.get("evidence")
        first = d.get("first_breaking")
        files = persisted.read_object(upstream, "upstream") if upstream is not None else None
        history = TopicHistory(
            upstream=None if files is None else {path: FileCulprits.from_json(v) for path, v in files.items()},
            evidence=None
            if evidence is None
            else tuple(UpstreamCommit.from_json(c, "evidence[]") for c in persisted.read_list(d, "evidence")),
            first_breaking=None if first is None else Breaking.from_json(first),
        )
        return cls(
            persisted.read_str(d, "start"), history, tuple(Break.from_json(b) for b in persisted.read_list(d, "breaks"))
        )


@dataclass(frozen=True)
class RefusedResolution:
    """A recorded resolution the rebase did not replay (series.resolutions.Refusal), its
    file named from the work tree's root."""

    topic: str
    path: str
    file: str
    reason: str

    def sentence(self) -> str:
        return (
            f"{self.topic}: the recorded resolution {self.file} of {self.path} was not replayed: "
            f"{self.reason}; resolve it by hand (--continue records the new one in its place)"
        )

    def to_json(self) -> dict[str, Json]:
        return {"topic": self.topic, "path": self.path, "file": self.file, "reason": self.reason}

    @classmethod
    def from_json(cls, data: Json | persisted.JsonObject) -> "RefusedResolution":
        d = persisted.read_object(data, "resolutions_refused[]")
        return cls(
            persisted.read_str(d, "topic"),
            persisted.read_str(d, "path"),
            persisted.read_str(d, "file"),
            persisted.read_str(d, "reason"),
        )


@dataclass(frozen=True)
class RebaseResult:
    """One step of `series rebase`, everything it says (module docstring)."""

    report: RebaseReport
    findings: Mapping[str, TopicFindings]  # by topic name, one per topic of the report
    behind: Behind | None  # how far the base trails upstream's main
    strict: bool = False
    held: bool = False  # --strict counted breaks as conflicts: nothing moved
    refused: tuple[RefusedResolution, ...] = ()
    reach: Reach | None = None  # --as-far-as-possible: how far it got
    saved: str | None = None  # the report's text file, once written

    @property
    def status(self) -> ReportStatus:
        return ReportStatus.CONFLICT if self.held else self.report.status

    def topic(self, name: str) -> TopicFindings | None:
        return self.findings.get(name)

    def to_json(self) -> dict[str, Json]:
        """The --json document; saved without "report" (where it is saved)."""
        data = self.report.to_json()
        data["status"] = self.status.value
        rows = data["topics"]
        assert isinstance(rows, list)
        for row, t in zip(rows, self.report.topics):
            assert isinstance(row, dict)
            found = self.findings.get(t.name)
            if found is not None:
                row.update(found.to_json())
        data["behind"] = None if self.behind is None else self.behind.to_json()
        data["strict"] = self.strict
        if self.refused:
            data["resolutions_refused"] = [r.to_json() for r in self.refused]
        if self.reach is not None:
            data["as_far_as_possible"] = self.reach.to_json()
        if self.saved is not None:
            data["report"] = self.saved
        return data

    @classmethod
    def from_json(cls, data: Json) -> "RebaseResult":
        """A saved report read back, every field checked (a ValueError names the wrong one)."""
        d = persisted.read_object(data, "report")
        report = RebaseReport.from_json(d)
        # the status saved is the one --strict may have made "conflict": read back as the
        # report's, it gives the same document again
        rows = [persisted.read_object(r, "topics[]") for r in persisted.read_list(d, "topics")]
        findings = {t.name: TopicFindings.from_json(row) for t, row in zip(report.topics, rows)}
        behind = d.get("behind")
        reach = d.get("as_far_as_possible")
        strict = persisted.read_bool(d, "strict")
        return cls(
            report,
            findings,
            None if behind is None else Behind.from_json(behind),
            strict=strict,
            held=strict and any(f.breaks for f in findings.values()),
            refused=tuple(RefusedResolution.from_json(r) for r in persisted.read_list(d, "resolutions_refused", [])),
            reach=None if reach is None else Reach.from_json(reach),
            saved=persisted.read_opt_str(d, "report"),
        )
