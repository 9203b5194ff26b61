"""Release names, one resolver (series.git.releases) for every verb and the nightly:
PEP 440 order through packaging.version, post and four-part releases, rc's only by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_series, sh
from tests.fakewheel import build_wheel, tree_files

# vLLM's own kinds of tag: a post release, a four-part release, a release candidate; a
# fork's own tags that are no version (a local part, a non-normalized form)
TAGS = ("v0.6.5", "v0.6.6", "v0.6.6.post1", "v0.10.1", "v0.10.1.1", "v0.11.0rc1", "v0.10.1.1+fork.2", "v0.10.2-1")


@pytest.fixture
def tagged(tmp_path: Path) -> Path:
    repo = tmp_path / "tagged"
    repo.mkdir()
    script = "git init -q && "
    for i, tag in enumerate(TAGS):
        script += f"git commit -q --allow-empty -m c{i} && git tag '{tag}' && "
    sh(script + "git branch -q topic/x", repo)
    return repo


@pytest.mark.parametrize(
    "spec, tag",
    [
        ("v0.6", "v0.6.6.post1"),  # PEP 440: the post release is newer than v0.6.6
        ("0.6", "v0.6.6.post1"),
        ("v0.10", "v0.10.1.1"),  # a four-part release is a release
        ("v0.10.1", "v0.10.1"),  # an existing tag is always itself
        ("v0.6.6", "v0.6.6"),
        ("v0.11.0rc1", "v0.11.0rc1"),  # an rc by its exact name
        ("latest", "v0.10.1.1"),  # not the rc, not the fork's tags
    ],
)
def test_release_names_resolve_as_pep_440_orders_them(tagged: Path, spec: str, tag: str) -> None:
    assert run_series("release", spec, cwd=tagged).stdout.strip() == tag


def test_release_lists_releases_newest_first_and_says_what_it_resolved(tagged: Path) -> None:
    listed = run_series("release", cwd=tagged).stdout.split()
    assert listed == ["v0.10.1.1", "v0.10.1", "v0.6.6.post1", "v0.6.6", "v0.6.5"], listed
    data = json.loads(run_series("release", "v0.6", "--json", cwd=tagged).stdout)
    assert (data["name"], data["version"], data["release"]) == ("v0.6.6.post1", "0.6.6.post1", True), data
    data = json.loads(run_series("release", "v0.11.0rc1", "--json", cwd=tagged).stdout)
    assert data["release"] is False, data
    assert json.loads(run_series("release", "topic/x", "--json", cwd=tagged).stdout)["version"] is None


def test_an_unknown_release_is_a_clean_error_naming_the_closest_tags(tagged: Path) -> None:
    proc = run_series("release", "v0.11", cwd=tagged, expect=1)
    assert "no release tag matches 'v0.11' (nearest: v0.10.1.1, v0.10.1, v0.6.6.post1" in proc.stderr, proc.stderr
    assert "v0.11.0rc1 is a pre-release: name it exactly" in proc.stderr, proc.stderr
    proc = run_series("release", "v0.7", cwd=tagged, expect=1)
    assert "(nearest: v0.6.6.post1, v0.6.6, v0.6.5)" in proc.stderr, proc.stderr
    proc = run_series("release", "no-such-thing", cwd=tagged, expect=1)
    assert "unknown ref 'no-such-thing'" in proc.stderr and "v0.10.1.1" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_rebase_and_init_resolve_through_the_same_rules(fork: Path) -> None:
    sh("git tag v0.31.0.post1 v0.31.0 && git tag v0.32.0rc1 v0.31.0 && git tag v0.30.0.1 v0.30.0", fork)
    report = json.loads(
        run_series(
            "rebase", "--onto", "latest", "--dry-run", "--json", "--skip-topic", "offload-evict-fix", cwd=fork
        ).stdout
    )
    assert report["onto"]["name"] == "v0.31.0.post1", report["onto"]
    report = json.loads(run_series("rebase", "--onto", "v0.30", "--dry-run", "--json", cwd=fork).stdout)
    assert report["onto"]["name"] == "v0.30.0.1", report["onto"]
    (fork / "series.yaml").unlink()
    assert " over v0.30.0.1 (" in run_series("init", "--base", "v0.30", cwd=fork).stdout


def test_a_non_normalized_version_tag_is_the_forks_own(fork: Path) -> None:
    # v0.30.0-1 reads as 0.30.0.post1 to PEP 440, but upstream never spells it so: it is a
    # fork's tag, and on a topic it must not make the topic's commits upstream history
    sh("git tag v0.30.0-1 topic/api-hello", fork)
    rows = {t["name"]: t for t in json.loads(run_series("status", "--json", cwd=fork).stdout)["topics"]}
    assert rows["api-hello"]["commits"] == 1, rows["api-hello"]


def test_build_compares_a_four_part_base_with_the_wheel_as_pep_440_does(
    fork: Path, upstream: Path, tmp_path: Path
) -> None:
    sh("git tag v0.30.0.1 v0.30.0", fork)
    text = (fork / "series.yaml").read_text()
    (fork / "series.yaml").write_text(text.replace("base: v0.30.0 ", "base: v0.30.0.1 "))
    wheel = build_wheel(tmp_path / "w", tree_files(upstream, "v0.30.0"), version="0.30.0")
    proc = run_series("build", "--wheel", str(wheel), cwd=fork, expect=1)
    assert "based on v0.30.0.1\nhint: pass --wheel vllm==0.30.0.1" in proc.stderr, proc.stderr
