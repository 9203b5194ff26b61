"""ci/nightly.sh end to end on the test fork: fetch, rebase check, wheel, test selection, report.

The wheel step gets a local wheel path, so nothing touches the network (the fork's
'upstream' remote is a local path, so the fetch is real and offline)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path


from tests.conftest import run_series, sh
from tests.harness import series_command
from tests.test_breaks import broken_fork  # noqa: F401  (a fixture: a fork whose clean rebase breaks)
from tests.fakewheel import build_wheel, install_wheel, tree_files

SCRIPT = Path(__file__).resolve().parent.parent / "ci" / "nightly.sh"


def nightly(fork: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command, extra = series_command()  # `python -m series`, forked by the fork server
    env = dict(os.environ, SERIES=command, PYTHONPATH=str(SCRIPT.parent.parent), **extra)
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=fork, capture_output=True, text=True, env=env)


def test_nightly_on_the_current_base_builds_and_selects(fork: Path, upstream: Path, tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path / "w", tree_files(upstream, "v0.30.0"), version="0.30.0")
    out = tmp_path / "nightly"
    proc = nightly(fork, "--onto", "v0.30.0", "--wheel", str(wheel), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    built = Path(proc.stdout.strip().splitlines()[-1])
    assert built.parent == out and built.name.startswith("vllm-0.30.0+series.g"), proc.stdout
    install_wheel(built, tmp_path / "target")
    report = (out / "report.md").read_text()
    assert "already on v0.30.0" in report and built.name in report, report
    assert "KV offload tests" in report, report
    assert "| topic | status | commits | files | lines | rebase |" in report and "```mermaid" in report, report
    assert "<details><summary>offload-evict-fix:" in report, report
    steps = json.loads((out / "ci-steps.json").read_text())
    assert [s["key"] for s in steps["include"]] == ["kv-offload"], steps
    manifest = json.loads(next(out.glob("*.manifest.json")).read_text())
    assert manifest["upstream"]["base"] == "v0.30.0"


def test_nightly_rejects_unknown_arguments(fork: Path) -> None:
    proc = nightly(fork, "--bogus")
    assert proc.returncode == 2 and "unknown argument --bogus" in proc.stderr, proc.stderr


def test_nightly_stops_with_the_conflict_summary(fork: Path, tmp_path: Path) -> None:
    out = tmp_path / "nightly"
    proc = nightly(fork, "--wheel", "none", "--out", str(out))
    assert proc.returncode == 3, (proc.returncode, proc.stdout, proc.stderr)
    assert "no longer applies onto v0.31.0" in proc.stderr, proc.stderr
    assert "offload-evict-fix" in proc.stderr and "lru.py" in proc.stderr, proc.stderr
    assert "offload-evict-fix: first breaking upstream commit: #60001 " in proc.stderr, proc.stderr
    assert "- offload-evict-fix: first breaking upstream commit: #60001" in (out / "report.md").read_text()
    assert "no longer applies" in (out / "report.md").read_text()
    report = (out / "report.md").read_text()
    assert "| offload-evict-fix | active |" in report and "**conflict** at" in report, report
    assert "base: v0.30.0" in (fork / "series.yaml").read_text(), "a dry run must move nothing"
    # whom to mention: the topic's commit author (no owner: key in this series.yaml)
    assert (out / "owners.txt").read_text().strip() == "Fork Maintainer", (out / "owners.txt").read_text()


def test_nightly_rebases_builds_and_selects_when_clean(fork: Path, upstream: Path, tmp_path: Path) -> None:
    text = (fork / "series.yaml").read_text()
    start = text.index("  - name: offload-evict-fix")
    end = text.index("  - name: ipc-backport")
    (fork / "series.yaml").write_text(text[:start] + text[end:])
    wheel = build_wheel(tmp_path / "w", tree_files(upstream, "v0.31.0"), version="0.31.0")
    out = tmp_path / "nightly"
    proc = nightly(fork, "--wheel", str(wheel), "--out", str(out), "--format", "buildkite")
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert "base: v0.31.0" in (fork / "series.yaml").read_text()
    built = Path(proc.stdout.strip().splitlines()[-1])
    assert built.name.startswith("vllm-0.31.0+series.g"), built
    site = install_wheel(built, tmp_path / "target")
    assert "return 'hi'" in (site / "vllm/entrypoints/openai/api_server.py").read_text()
    assert (out / "ci-steps.yml").exists()
    assert "rebase: clean onto v0.31.0" in (out / "report.md").read_text()


def test_nightly_asks_series_which_release_is_latest(fork: Path, upstream: Path) -> None:
    # a post release is the newest release (PEP 440), a four-part one is a release, an rc is not
    sh("git tag v0.31.0.post1 v0.31.0 && git tag v0.32.0rc1 v0.31.0 && git tag v0.30.0.1 v0.30.0", upstream)
    proc = nightly(fork, "--print-target")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "v0.31.0.post1", proc.stdout
    assert nightly(fork, "--onto", "v0.30", "--print-target", "--no-fetch").stdout.strip() == "v0.30.0.1"
    assert nightly(fork, "--onto", "v0.32.0rc1", "--print-target").stdout.strip() == "v0.32.0rc1"
    proc = nightly(fork, "--onto", "v0.29", "--print-target", "--no-fetch")
    assert proc.returncode == 1 and "no release tag matches 'v0.29'" in proc.stderr, proc.stderr


def test_nightly_with_ci_breaks_fail_stops_on_a_break(broken_fork: Path, tmp_path: Path) -> None:
    """ci.breaks: fail makes the nightly's rebase --strict: a clean replay that breaks what a
    topic uses exits 3, moves nothing, and report.md (the issue body) names the break and PR."""
    yaml = broken_fork / "series.yaml"
    yaml.write_text(yaml.read_text() + "ci:\n  breaks: fail\n")
    out = tmp_path / "nightly"
    proc = nightly(broken_fork, "--wheel", "none", "--out", str(out))
    assert proc.returncode == 3, (proc.returncode, proc.stdout, proc.stderr)
    assert "a clean rebase breaks what the topics use" in proc.stderr, proc.stderr
    report = (out / "report.md").read_text()
    assert "break vllm/fork_a.py:1 vllm.utils.old_helper: removed from vllm/utils.py by #101" in report, report
    assert "| uses-removed | active | 1 |" in report and "clean, **1 break**" in report, report
    assert "they hold the rebase (--strict)" in report, report
    assert "base: v0.30.0" in yaml.read_text(), "a held rebase moves nothing"
    assert (out / "owners.txt").read_text().strip() == "Fork Maintainer"


def test_nightly_breaks_warn_by_default_and_a_bad_setting_fails(broken_fork: Path, tmp_path: Path) -> None:
    out = tmp_path / "nightly"
    proc = nightly(broken_fork, "--wheel", "none", "--out", str(out))
    assert "base: v0.31.0" in (broken_fork / "series.yaml").read_text(), (proc.stdout, proc.stderr)
    report = (out / "report.md").read_text()
    assert "- rebase: clean onto v0.31.0, **10 break(s)** (warnings" in report, report
    report = run_series("ci", "report", "--rebase", str(out / "rebase.json"), cwd=broken_fork).stdout
    assert "warnings: the rebase moved" in report and "clean, **1 break**" in report, report
    assert "- **env-gone**: `vllm/fork_d.py:5` `vllm.envs.VLLM_OLD_FLAG`: " in report, report
    yaml = broken_fork / "series.yaml"
    yaml.write_text(yaml.read_text() + "ci:\n  breaks: sometimes\n")
    proc = nightly(broken_fork, "--wheel", "none", "--out", str(out))
    assert proc.returncode == 1 and "ci.breaks: 'sometimes' is not fail or warn" in proc.stderr, proc.stderr


def test_ci_report_names_a_malformed_break(fork: Path, tmp_path: Path) -> None:
    bad = tmp_path / "rebase.json"
    bad.write_text(
        json.dumps(
            {
                "schema": 1,
                "status": "clean",
                "topics": [{"name": "api-hello", "outcome": "clean", "breaks": [{"file": "x.py", "line": "one"}]}],
            }
        )
    )
    proc = run_series("ci", "report", "--rebase", str(bad), cwd=fork, expect=1)
    assert "topics[0]: 'line' is not a number" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
