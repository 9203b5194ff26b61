"""A measurement as text (the terminal) and as markdown (a PR comment).

Both show the same three things in the same order: the metrics by tree, every prediction
held or failed with what was observed (a failed one struck, its claim kept as written,
with the reason `series predict --explain` recorded), and the environment. The markdown
escapes what a workload or a predictions file wrote, so a metric name or a reason cannot
open an HTML comment, a link or a table cell and hide the text after it.
"""
from __future__ import annotations

import re

from series.analysis.measurement import MachineInfo, Measurement, PredictionResult, show


def _verdict(p: PredictionResult) -> str:
    return "held" if p.held else "FAILED" if p.held is False else "NOT MEASURED"


def _observed(p: PredictionResult) -> str:
    if p.held is None and p.observed is None:
        return f"{p.metric} was not measured on {p.tree}"
    seen = f"observed {show(p.observed)}"
    if p.compared_to is not None:
        seen += f", {show(p.compared_to)} on the other tree"
    elif p.held is None:
        seen += ", the other tree's was not measured"
    return seen


def _environments(m: Measurement) -> list[tuple[str, MachineInfo]]:
    """One line when every tree ran on the same machine, else one per tree."""
    found = [(t.name, m.environment[t.name]) for t in m.trees if t.name in m.environment]
    if found and all(e == found[0][1] for _, e in found):
        return [("", found[0][1])]
    return found


def render_text(m: Measurement) -> str:
    runs = f"{m.repeat} runs each, the median of numbers" if m.repeat > 1 else "1 run each"
    lines = [f"measured {len(m.trees)} trees ({runs}): {' '.join(m.command)}"]
    pad = max(len(t.name) for t in m.trees) + 2
    spec_pad = max(len(t.spec) for t in m.trees) + 2
    for t in m.trees:
        lines.append(f"  {t.name:<{pad}}{t.spec:<{spec_pad}}{(t.commit or '-')[:12]}  {t.describe}".rstrip())
    names = [t.name for t in m.trees]
    metrics = _metric_names(m)
    cells = {(n, k): show(m.metrics.get(n, {}).get(k)) for n in names for k in metrics}
    first = max([len(k) for k in metrics] + [6])
    widths = {n: max([len(n)] + [len(cells[n, k]) for k in metrics]) for n in names}
    lines.append(f"  {'metric':<{first}}" + "".join(f"  {n:>{widths[n]}}" for n in names))
    for k in metrics:
        lines.append(f"  {k:<{first}}" + "".join(f"  {cells[n, k]:>{widths[n]}}" for n in names))
    lines.append(f"predictions ({m.predictions_file}, frozen sha256:{m.predictions_sha256}): "
                 f"{m.held()} of {len(m.predictions)} held")
    for p in m.predictions:
        claim = p.claim if p.held else f"~~{p.claim}~~"
        lines.append(f"  {_verdict(p):<7} {p.id}: {claim} ({_observed(p)})")
        lines.append(f"          predicted because: {p.why}")
        if p.explanation:
            lines.append(f"          why it failed: {p.explanation}")
        elif not p.held:
            lines.append(f"          not explained yet: series predict {m.predictions_file} --explain {p.id} \"WHY\"")
    for name, env in _environments(m):
        lines.append(f"environment{' of ' + name if name else ''}: {env.line()}")
    return "\n".join(lines)


def _metric_names(m: Measurement) -> list[str]:
    out: list[str] = []
    for t in m.trees:
        out.extend(k for k in m.metrics.get(t.name, {}) if k not in out)
    return out


_MARKDOWN = re.compile(r"([\\`*_{}\[\]<>()#+!|~])")


def escape(text: str) -> str:
    """Text a workload or a file wrote, as markdown that shows it and nothing else: every
    character markdown or HTML would act on is backslash-escaped (`<!--` cannot hide what
    follows, `|` cannot end a cell), and newlines become spaces."""
    return _MARKDOWN.sub(r"\\\1", " ".join(text.splitlines()))


def render_markdown(m: Measurement) -> str:
    """The metrics table, the predictions (failures struck, reasons kept), the environment
    and the commands to reproduce: the body a PR comment is made of (each part is its own
    function, for a comment that puts other things between them)."""
    runs = f", {m.repeat} runs each (numbers: the median)" if m.repeat > 1 else ""
    parts = [["### Measured", "", f"Workload: `{_code(' '.join(m.command))}`{runs}."], markdown_metrics(m),
             markdown_predictions(m), markdown_environment(m), markdown_reproduce(m)]
    return "\n\n".join("\n".join(part) for part in parts) + "\n"


def markdown_metrics(m: Measurement) -> list[str]:
    """The trees (spec, commit), then the metrics by tree."""
    names = [t.name for t in m.trees]
    out = ["| tree | spec | commit |", "|---|---|---|"]
    for t in m.trees:
        out.append(f"| {escape(t.name)} | `{_code(t.spec)}` | {'`' + t.commit[:12] + '`' if t.commit else '-'} |")
    out += ["", "| metric | " + " | ".join(escape(n) for n in names) + " |", "|---|" + "---:|" * len(names)]
    for k in _metric_names(m):
        out.append(f"| {escape(k)} | " + " | ".join(escape(show(m.metrics.get(n, {}).get(k))) for n in names) + " |")
    return out


def markdown_predictions(m: Measurement) -> list[str]:
    """Every prediction: held, or failed and struck with the reason recorded after the run."""
    out = [f"**Predictions**, frozen before the run (`{_code(m.predictions_file)}`, "
           f"sha256 `{m.predictions_sha256[:16]}`): {m.held()} of {len(m.predictions)} held.", ""]
    for p in m.predictions:
        claim = escape(p.claim)
        text = f"{claim}" if p.held else f"~~{claim}~~"
        out.append(f"- **{_verdict(p).lower()}** `{_code(p.id)}`: {text} ({escape(_observed(p))}). "
                   f"Predicted because: {escape(p.why)}")
        if p.explanation:
            out.append(f"  - Why it failed: {escape(p.explanation)}")
    return out


def markdown_environment(m: Measurement) -> list[str]:
    return ["**Environment**", ""] + [f"- {escape(name + ': ') if name else ''}{escape(env.line())}"
                                      for name, env in _environments(m)]


def markdown_reproduce(m: Measurement) -> list[str]:
    return (["<details><summary>Reproduce</summary>", "", "```sh"]
            + [line.replace("```", "'''") for line in m.reproduce()] + ["```", "", "</details>"])


def _code(text: str) -> str:
    """Text inside a `code span`: a backtick would end it, a newline break it."""
    return " ".join(text.splitlines()).replace("`", "'")
