"""Every workflow this project ships or shows lints clean under actionlint and zizmor.

Checked: ci/github/*.yml (what `series ci init github` writes, version-pinned as it
writes it), .github/workflows/*.yml (the reusable nightly and the release), and every
```yaml block of README.md, ci/README.md and docs/*.md that is a workflow (has `jobs:`);
the other blocks must at least parse. The linters come with the test extras (zizmor; actionlint
from a wheel that carries its binary); a test skips only when its tool is not installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from series import distribution
from series.verbs import ci
from tests.conftest import run_series

ROOT = Path(__file__).resolve().parent.parent
DOCS = (ROOT / "README.md", ROOT / "ci" / "README.md")  # the two that say how to install series
SNIPPET_DOCS = (*DOCS, *sorted((ROOT / "docs").glob("*.md")))


def tool(name: str) -> str | None:
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() else shutil.which(name)


def snippets() -> list[tuple[str, str]]:
    out = []
    for doc in SNIPPET_DOCS:
        for n, block in enumerate(re.findall(r"```yaml\n(.*?)```", doc.read_text(), re.S)):
            out.append((f"{doc.relative_to(ROOT)}#{n}", block))
    return out


def workflows(tmp_path: Path) -> list[Path]:
    files = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    fork = tmp_path / "fork"
    (fork / ".git").mkdir(parents=True)
    ci.init("github", fork)
    files.append(fork / ".github" / "workflows" / "series-nightly.yml")
    for name, block in snippets():
        if "jobs" in (YAML(typ="safe").load(block) or {}):
            target = tmp_path / "snippets" / ".github" / "workflows" / (re.sub(r"\W", "-", name) + ".yml")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block)
            files.append(target)
    return files


def test_every_yaml_block_of_the_docs_parses() -> None:
    found = snippets()
    assert len(found) >= 3, found
    for name, block in found:
        YAML(typ="safe").load(block)  # raises on invalid YAML, naming the line


def test_workflows_are_clean_under_actionlint(tmp_path: Path) -> None:
    actionlint = tool("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not installed (pip install -e '.[test]')")
    files = workflows(tmp_path)
    assert len(files) >= 4, files
    proc = subprocess.run([actionlint, "-no-color", *map(str, files)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_workflows_are_clean_under_zizmor(tmp_path: Path) -> None:
    zizmor = tool("zizmor")
    if zizmor is None:
        pytest.skip("zizmor is not installed (pip install -e '.[test]')")
    files = workflows(tmp_path)
    proc = subprocess.run([zizmor, "--offline", "--no-progress", *map(str, files)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_would_catch_what_the_issue_found(tmp_path: Path) -> None:
    """The lint is not vacuous: the old workflow's faults are findings."""
    zizmor = tool("zizmor")
    if zizmor is None:
        pytest.skip("zizmor is not installed (pip install -e '.[test]')")
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "on: push\npermissions:\n  issues: write\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - uses: actions/checkout@v4\n"
        "      - run: pip install \"${{ vars.SPEC }}\"\n"
    )
    proc = subprocess.run([zizmor, "--offline", "--no-progress", str(bad)], capture_output=True, text=True)
    assert proc.returncode != 0
    for audit in ("artipacked", "template-injection", "unpinned-uses"):
        assert audit in proc.stdout, proc.stdout


def test_the_reusable_workflow_runs_the_same_jobs_as_the_template() -> None:
    load = YAML(typ="safe").load
    template = load((ROOT / "ci" / "github" / "nightly.yml").read_text())
    reusable = load((ROOT / ".github" / "workflows" / "series-nightly.yml").read_text())
    assert reusable["jobs"] == template["jobs"]
    assert "workflow_call" in reusable["on"] and "schedule" in template["on"]


def test_ci_init_pins_the_version_and_keeps_local_edits(tmp_path: Path) -> None:
    from series import __version__
    from series.errors import SeriesError

    (tmp_path / ".git").mkdir()
    assert [w.state for w in ci.init("github", tmp_path)] == ["created"]
    written = tmp_path / ".github" / "workflows" / "series-nightly.yml"
    assert f"'{distribution.pip_spec()}'" in written.read_text() and __version__ in distribution.pip_spec()
    written.write_text(written.read_text() + "# ours\n")
    with pytest.raises(SeriesError, match="--force"):
        ci.init("github", tmp_path)
    assert written.read_text().endswith("# ours\n")
    assert [w.state for w in ci.init("github", tmp_path, force=True, dry_run=True)] == [ci.TemplateState.UPDATED]
    assert [w.label for w in ci.init("github", tmp_path, force=True, dry_run=True)] == ["would update"]
    assert [w.state for w in ci.init("github", tmp_path, force=True)] == ["updated"]
    assert [w.state for w in ci.init("buildkite", tmp_path)] == ["created"]
    pipeline = YAML(typ="safe").load((tmp_path / ".buildkite" / "series-nightly.yml").read_text())
    assert pipeline["steps"] and pipeline["env"]["SERIES_PIP_SPEC"] == distribution.pip_spec()


SPEC_IN_TEMPLATE = re.compile(r"SERIES_PIP_SPEC: (?:\$\{\{ vars\.SERIES_PIP_SPEC \|\| )?['\"]([^'\"]+)['\"]")


def test_every_template_and_the_readmes_install_series_by_the_one_spec() -> None:
    """Until the package is on the index, `pip install vllm-series` finds nothing: the
    templates as written (copied, called as the reusable workflow, or written by ci init)
    and the README's install line all install this version by the same spec."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    from series import __version__

    spec = distribution.pip_spec()
    assert spec == (
        f"vllm-series=={__version__}"
        if distribution.ON_INDEX
        else f"git+https://github.com/vllm-series/vllm-series@v{__version__}"
    )
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    assert urls["Source"] == distribution.REPOSITORY
    for template in (
        ROOT / "ci" / "github" / "nightly.yml",
        ROOT / "ci" / "buildkite" / "nightly.yml",
        ROOT / ".github" / "workflows" / "series-nightly.yml",
    ):
        assert SPEC_IN_TEMPLATE.findall(template.read_text()) == [spec], template
    for doc in DOCS:
        assert f"pipx install {spec}" in doc.read_text(), doc
        assert "pipx install vllm-series" in doc.read_text(), doc  # the way once it is published


def test_a_refused_ci_init_names_a_diff_command_that_shows_the_difference(tmp_path: Path) -> None:
    """The refusal's hint is a command that works as written (--dry-run prints no diff)."""
    (tmp_path / ".git").mkdir()
    run_series("ci", "init", "github", cwd=tmp_path)
    written = tmp_path / ".github" / "workflows" / "series-nightly.yml"
    written.write_text(written.read_text() + "# ours\n")
    proc = run_series("ci", "init", "github", cwd=tmp_path, expect=1)
    hint = re.search(r"see the difference: (diff .*)\)$", proc.stderr.strip())
    assert hint, proc.stderr
    series = f"{sys.executable} -m series"
    shown = subprocess.run(
        ["bash", "-c", hint[1].replace("$(series ", f"$({series} ")], cwd=tmp_path, capture_output=True, text=True
    )
    assert shown.returncode == 1 and "> # ours" not in shown.stdout and "< # ours" in shown.stdout, shown
