"""`series ci`: the nightly pipeline's templates, written into a fork; whom a conflict concerns.

The templates are ci/ in a source checkout and ship inside the wheel as series._ci, so a
`pipx install vllm-series` has them too. `init` writes the workflow (GitHub) or pipeline
(Buildkite) into the fork and never overwrites a file that differs without --force;
the workflow runs the installed copy of nightly.sh (`series ci path nightly.sh`), so a
new release of series brings its fixes without a new copy in the fork.

Owners: a topic's `owner:` in series.yaml (e.g. "@alice"), else the GitHub logins of its
commits' authors where their address is GitHub's no-reply one, else their names.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from series import __version__
from series.errors import SeriesError

TARGETS = {
    "github": (("github/nightly.yml", ".github/workflows/series-nightly.yml"),),
    "buildkite": (("buildkite/nightly.yml", ".buildkite/series-nightly.yml"),),
}
DISTRIBUTION = "vllm-series"
_NOREPLY = re.compile(r"^(?:\d+\+)?(?P<login>[A-Za-z0-9-]+)@users\.noreply\.github\.com$")


def templates() -> Path:
    """ci/ in a source checkout, or series/_ci in an installed wheel."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here.parent / "ci", here / "_ci"):
        if (candidate / "nightly.sh").is_file():
            return candidate
    raise SeriesError("the CI templates (ci/) are not installed with this copy of series: "
                      f"reinstall it ('pipx install {DISTRIBUTION}' or 'pip install -e .')")


def path(name: str) -> Path:
    found = templates() / name
    if not found.is_file() or ".." in Path(name).parts:
        known = sorted(str(p.relative_to(templates())) for p in templates().rglob("*") if p.is_file())
        raise SeriesError(f"no CI template {name!r} (there are: {', '.join(known)})")
    return found


def _pinned(text: str) -> str:
    """The workflow installs the series that wrote it, unless vars.SERIES_PIP_SPEC says otherwise."""
    return text.replace(f"|| '{DISTRIBUTION}' }}}}", f"|| '{DISTRIBUTION}=={__version__}' }}}}")


@dataclass(frozen=True)
class Written:
    path: str            # relative to the fork's root
    state: str           # created | updated | unchanged | would create | would update


def init(target: str, root: Path, force: bool = False, dry_run: bool = False) -> list[Written]:
    from series.config import write_text_atomically

    if target not in TARGETS:
        raise SeriesError(f"unknown CI {target!r}: choose one of {', '.join(TARGETS)}")
    out = []
    for source, dest in TARGETS[target]:
        text = _pinned(path(source).read_text())
        where = root / dest
        if where.is_file():
            if where.read_text() == text:
                out.append(Written(dest, "unchanged"))
                continue
            if not force:
                raise SeriesError(f"{dest} exists and differs from the template: keep your edits, or "
                                  "pass --force to replace it (see the difference with --dry-run --force)")
            state = "updated"
        else:
            state = "created"
        if dry_run:
            out.append(Written(dest, f"would {state[:-1]}"))
            continue
        where.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(where, text)
        out.append(Written(dest, state))
    return out


def owners_of(ws: object, names: list[str]) -> list[str]:
    """@handles (or names) for these topics, one per person, in topic order."""
    from series.analysis import pipeline

    series = ws.series  # type: ignore[attr-defined]
    declared = pipeline.load_settings(series.path).owners
    out: list[str] = []
    for name in names:
        if name in declared:
            handles = [h if h.startswith("@") else f"@{h}" for h in declared[name].split()]
        else:
            handles = []
            for commit in ws.require_own(series.topic(name)).commits:  # type: ignore[attr-defined]
                m = _NOREPLY.match(commit.author.email or "")
                handles.append(f"@{m['login']}" if m else commit.author.name)
        out.extend(h for h in handles if h and h not in out)
    return out


def conflicting_topics(report: Path) -> list[str]:
    """The topics a `series rebase --dry-run --json` report names as conflicting."""
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError) as exc:
        raise SeriesError(f"{report}: not a series rebase --json report ({exc})") from None
    rows = data.get("topics") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise SeriesError(f"{report}: not a series rebase --json report (no 'topics')")
    return [str(r["name"]) for r in rows if isinstance(r, dict) and r.get("conflict") and r.get("name")]
