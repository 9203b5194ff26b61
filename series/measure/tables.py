"""A measurement as text for the terminal: the metrics by tree, every prediction held or
failed with what was observed (a failed one struck, its claim kept as written, with the
reason `series predict --explain` recorded), and the environment.

The markdown of the same report is `series comment`'s alone (series.measure.comment_body,
`series comment PR --measurement REPORT.json --dry-run` prints it): one renderer, whose
escaping neither hides text nor notifies anyone.
"""

from __future__ import annotations

from series.measure.measurement import MachineInfo, Measurement, PredictionResult, show


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
    lines.append(
        f"predictions ({m.predictions_file}, frozen sha256:{m.predictions_sha256}): "
        f"{m.held()} of {len(m.predictions)} held"
    )
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
