"""The documentation holds together: the README stays a short way in (the commands CI and
the tour run, no machine figures: those live in docs/performance.md), and every link
between the docs names a file and a heading that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
REPOSITORY_BLOB = "https://github.com/vllm-series/vllm-series/blob/main/"
PAGES = (README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md")))
LINK = re.compile(r"\]\(([^)\s]+)\)")
# a duration, a load average, a speed-up ratio: what a benchmark prints
FIGURE = re.compile(r"\b\d[\d.,]* ?(?:ms|s wall|s CPU)\b|\bload \d|\b1/\d+\.\d\b|\b\d+\.\d+x\b")


def test_the_readme_is_short_and_shows_the_commands_ci_and_the_tour_run() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    # .ci/run runs exactly this command; tools/check_install.py the tour's
    assert "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && pytest -q -n auto" in text
    assert "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && series demo" in text
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -q -e '.[test]'" in ci and ci.rstrip().endswith("pytest -q -n auto")


def test_the_readme_carries_no_machine_figures() -> None:
    found = [line for line in README.read_text(encoding="utf-8").splitlines() if FIGURE.search(line)]
    assert not found, found  # a measurement goes to docs/performance.md, dated, with its command


def test_the_figure_pattern_sees_a_benchmark_line() -> None:
    assert FIGURE.search("git loop 10,198 ms; series dry run 390 ms (1/26.2; CPU 1/22.5)")
    assert FIGURE.search("at load 3.2") and FIGURE.search("dry 1.47x")
    assert not FIGURE.search("series rebase --onto v0.31 --dry-run")


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, spaces to dashes, other punctuation dropped."""
    out = set()
    for heading in re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M):
        out.add("".join(c for c in heading.lower().replace(" ", "-") if c.isalnum() or c in "-_"))
    return out


def test_every_link_between_the_docs_names_a_file_and_heading_that_exist() -> None:
    checked = 0
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if target.startswith(REPOSITORY_BLOB):
                target = target[len(REPOSITORY_BLOB) :]  # the README is the index page too: absolute links
                base = ROOT
            elif "://" in target or target.startswith("mailto:"):
                continue
            else:
                base = page.parent
            path, _, anchor = target.partition("#")
            dest = (base / path).resolve() if path else page
            assert dest.exists(), f"{page.relative_to(ROOT)}: {target}"
            if anchor and dest.suffix == ".md":
                assert anchor in anchors(dest), f"{page.relative_to(ROOT)}: {target}"
            checked += 1
    assert checked > 30


def test_the_readme_links_to_this_repository_absolutely() -> None:
    """On the package index a relative link leads nowhere."""
    relative = [t for t in LINK.findall(README.read_text(encoding="utf-8")) if "://" not in t]
    assert not relative, relative
