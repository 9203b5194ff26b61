from __future__ import annotations

import json
from pathlib import Path

import pytest

from series.history.touches import directory_of, parse_spec
from tests.conftest import run_series, sh


@pytest.mark.parametrize(
    "spec, path, expected",
    [
        ("vllm/v1", "vllm/v1/core/x.py", True),
        ("vllm/v1/", "vllm/v1/core/x.py", True),
        ("./vllm/v1", "vllm/v1/core/x.py", True),
        ("vllm/v1", "vllm/v10/x.py", False),  # a prefix only at a '/' boundary
        ("vllm/v1/core/x.py", "vllm/v1/core/x.py", True),
        ("vllm/v1/core/x.py", "vllm/v1/core/x.pyc", False),
        ("vllm/*/kv_offload", "vllm/v1/kv_offload/cpu/lru.py", True),  # a glob matches a directory above
        ("vllm/*.py", "vllm/v1/x.py", False),  # '*' stays inside one component
        ("vllm/**/lru.py", "vllm/v1/kv_offload/cpu/policies/lru.py", True),
        ("**/lru.py", "lru.py", True),
        ("vllm/**", "vllm/a/b.py", True),
        ("tests/test_?.py", "tests/test_a.py", True),
        ("tests/test_[!a].py", "tests/test_a.py", False),
        (".", "anything/at/all", True),
    ],
)
def test_path_spec_matching(spec: str, path: str, expected: bool) -> None:
    assert parse_spec(spec).matches(path) is expected, (spec, path)


def test_directory_of_cuts_at_depth_and_names_root_files() -> None:
    assert directory_of("vllm/v1/kv_offload/cpu/policies/lru.py", 3) == "vllm/v1/kv_offload"
    assert directory_of("vllm/multimodal/ipc.py", 3) == "vllm/multimodal"
    assert directory_of("README.md", 3) == "."


def test_touches_a_directory_lists_files_and_lines(fork: Path) -> None:
    out = run_series("touches", "vllm/v1/kv_offload", cwd=fork).stdout
    assert out == (
        "vllm/v1/kv_offload: touched by 1 of 4 active topics (base v0.30.0)\n"
        "  offload-evict-fix  1 file  +1 -0\n"
        "    +1 -0  vllm/v1/kv_offload/cpu/policies/lru.py\n"
    ), out


def test_touches_several_paths_file_and_glob(fork: Path) -> None:
    out = run_series("touches", "vllm/multimodal/ipc.py", "tests/**/test_*.py", cwd=fork).stdout
    assert out == (
        "vllm/multimodal/ipc.py, tests/**/test_*.py: touched by 2 of 4 active topics (base v0.30.0)\n"
        "  offload-evict-fix  1 file  +4 -0\n"
        "    +4 -0  tests/v1/kv_offload/test_lru.py\n"
        "  ipc-backport       1 file  +1 -1\n"
        "    +1 -1  vllm/multimodal/ipc.py\n"
    ), out


def test_touches_nothing_exits_1_with_a_sentence(fork: Path) -> None:
    proc = run_series("touches", "vllm/v1/kv", cwd=fork, expect=1)  # not a '/' boundary
    assert proc.stdout.startswith("No active topic touches vllm/v1/kv (4 active topics over v0.30.0 checked)."), (
        proc.stdout
    )
    assert "does not exist in v0.30.0 either" in proc.stdout, proc.stdout
    assert proc.stderr == "", proc.stderr
    # a real upstream directory that no topic changes: no spelling note
    proc = run_series("touches", ".buildkite", cwd=fork, expect=1)
    assert "No active topic touches .buildkite" in proc.stdout and "spelling" not in proc.stdout, proc.stdout


def test_touches_json(fork: Path) -> None:
    data = json.loads(run_series("touches", "--json", "vllm/v1", cwd=fork).stdout)
    assert data["paths"] == ["vllm/v1"]
    assert [t["name"] for t in data["topics"]] == ["sched-note", "offload-evict-fix"], data
    assert data["topics"][1]["files"] == [
        {"path": "vllm/v1/kv_offload/cpu/policies/lru.py", "added": 1, "deleted": 0, "status": "M"}
    ]
    proc = run_series("touches", "--json", "docs", cwd=fork, expect=1)
    assert json.loads(proc.stdout)["topics"] == []


def test_touches_all_adds_inactive_topics(fork: Path) -> None:
    yaml = fork / "series.yaml"
    yaml.write_text(
        yaml.read_text().replace(
            "    branch: topic/ipc-backport\n", "    branch: topic/ipc-backport\n    status: merged\n"
        )
    )
    proc = run_series("touches", "vllm/multimodal", cwd=fork, expect=1)
    assert "(--all adds the 1 inactive topic)" in proc.stdout, proc.stdout
    out = run_series("touches", "--all", "vllm/multimodal", cwd=fork).stdout
    assert "  ipc-backport  1 file  +1 -1  [merged]\n" in out, out


def _add_topic(fork: Path, branch: str, script: str, entry: str) -> None:
    sh(
        f"git checkout -q -B {branch} v0.30.0 && {script} && git commit -qam 'more' && "
        "git checkout -q --detach v0.30.0",
        fork,
    )
    with (fork / "series.yaml").open("a") as f:
        f.write(entry)


def test_matrix_and_collisions(fork: Path) -> None:
    _add_topic(
        fork,
        "topic/sched-two",
        "echo '# two' >> vllm/v1/core/sched/scheduler.py",
        "  - name: sched-two\n    branch: topic/sched-two\n",
    )
    out = run_series("touches", cwd=fork).stdout
    assert out == (
        "5 active topics over v0.30.0, files changed per directory (depth 3):\n"
        "   1  sched-note         1 file\n"
        "   2  offload-evict-fix  2 files\n"
        "   3  ipc-backport       1 file\n"
        "   4  api-hello          1 file\n"
        "   5  sched-two          1 file\n"
        "\n"
        "  directory                1 2 3 4 5\n"
        "  tests/v1/kv_offload      . 1 . . .\n"
        "  vllm/entrypoints/openai  . . . 1 .\n"
        "  vllm/multimodal          . . 1 . .\n"
        "  vllm/v1/core             1 . . . 1  <- 2 topics\n"
        "  vllm/v1/kv_offload       . 1 . . .\n"
        "\n"
        "Files changed by more than one topic (1): these topics meet when replayed\n"
        "  vllm/v1/core/sched/scheduler.py: sched-note +1 -0, sched-two +1 -0\n"
    ), out
    data = json.loads(run_series("touches", "--json", "--depth", "1", cwd=fork).stdout)
    assert data["directories"] == [
        {"path": "tests", "topics": {"offload-evict-fix": 1}},
        {
            "path": "vllm",
            "topics": {"sched-note": 1, "offload-evict-fix": 1, "ipc-backport": 1, "api-hello": 1, "sched-two": 1},
        },
    ], data
    assert [c["path"] for c in data["collisions"]] == ["vllm/v1/core/sched/scheduler.py"]


def test_matrix_without_collisions_says_so(fork: Path) -> None:
    out = run_series("touches", "--depth", "2", cwd=fork).stdout
    assert "  vllm/v1           1 1 . .  <- 2 topics\n" in out, out
    assert "No file is changed by more than one topic." in out, out


def test_stacked_topic_counts_only_its_own_commits(fork: Path) -> None:
    sh(
        "git checkout -q -B topic/offload-more topic/offload-evict-fix && "
        "echo '# more' >> vllm/v1/kv_offload/cpu/policies/lru.py && git commit -qam more && "
        "git checkout -q --detach v0.30.0",
        fork,
    )
    with (fork / "series.yaml").open("a") as f:
        f.write("  - name: offload-more\n    branch: topic/offload-more\n    depends_on: [offload-evict-fix]\n")
    data = json.loads(run_series("touches", "--json", "vllm/v1/kv_offload", "tests", cwd=fork).stdout)
    files = {t["name"]: [(f["path"], f["added"]) for f in t["files"]] for t in data["topics"]}
    assert files["offload-more"] == [("vllm/v1/kv_offload/cpu/policies/lru.py", 1)], files


def test_between_forecasts_where_the_rebase_hurts(fork: Path) -> None:
    out = run_series("touches", "--between", "v0.30.0..v0.31", cwd=fork).stdout
    assert out == (
        "Upstream v0.30.0..v0.31.0 also changes 3 files of 3 of our 4 active topics:\n"
        "  (upstream's lines changed, then ours)\n"
        "  sched-note         1 file\n"
        "    upstream +1 -1, ours +1 -0  vllm/v1/core/sched/scheduler.py\n"
        "  offload-evict-fix  1 file\n"
        "    upstream +3 -2, ours +1 -0  vllm/v1/kv_offload/cpu/policies/lru.py\n"
        "  ipc-backport       1 file\n"
        "    upstream +1 -1, ours +1 -1  vllm/multimodal/ipc.py  (ours is upstream's new version: already merged?)\n"
        "By upstream PR (1), the ones meeting most of our files first:\n"
        "  #60001   2026-02-10 vLLM Upstream    [KV offload] rewrite LRU touch\n"
        "      vllm/multimodal/ipc.py (ipc-backport), vllm/v1/core/sched/scheduler.py (sched-note), "
        "vllm/v1/kv_offload/cpu/policies/lru.py (offload-evict-fix)\n"
    ), out
    data = json.loads(
        run_series("touches", "--json", "--between", "v0.30.0..v0.31.0", "vllm/v1/kv_offload", cwd=fork).stdout
    )
    assert [t["name"] for t in data["topics"]] == ["offload-evict-fix"], data
    assert data["topics"][0]["files"][0]["upstream"]["added"] == 3, data
    assert [(u["pr"], u["author"], u["files"]) for u in data["upstream_pulls"]] == [
        (60001, "vLLM Upstream", [{"path": "vllm/v1/kv_offload/cpu/policies/lru.py", "topics": ["offload-evict-fix"]}])
    ], data["upstream_pulls"]


def test_between_without_overlap_exits_1(fork: Path) -> None:
    proc = run_series("touches", "--between", "v0.30.0..v0.31.0", "vllm/entrypoints", cwd=fork, expect=1)
    assert proc.stdout.startswith("Upstream v0.30.0..v0.31.0 changes no file under vllm/entrypoints"), proc.stdout
    # errors exit 2 (grep's convention), so they never read as "not touched"
    proc = run_series("touches", "--between", "v0.30.0", cwd=fork, expect=2)
    assert "expected OLD..NEW" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    proc = run_series("touches", "--between", "v0.30.0..v9.9.9", cwd=fork, expect=2)
    # a release name (series.git.releases): the nearest releases are named
    assert "no release tag matches 'v9.9.9' (nearest: v0.31.0, v0.30.0)" in proc.stderr, proc.stderr


def test_upstream_deleting_our_file_is_flagged(fork: Path, upstream: Path) -> None:
    sh("git rm -q vllm/multimodal/ipc.py && git commit -qm 'move ipc' && git tag v0.32.0", upstream)
    sh("git fetch -q upstream --tags", fork)
    out = run_series("touches", "--between", "v0.30.0..v0.32.0", "vllm/multimodal", cwd=fork).stdout
    assert "upstream +0 -1, ours +1 -1  vllm/multimodal/ipc.py  (upstream deletes or moves it)" in out, out


def test_all_notes_inactive_topics_whose_branch_is_gone(fork: Path) -> None:
    yaml = fork / "series.yaml"
    yaml.write_text(
        yaml.read_text().replace(
            "    branch: topic/ipc-backport\n", "    branch: topic/ipc-backport\n    status: dropped\n"
        )
    )
    sh("git branch -D -q topic/ipc-backport", fork)
    out = run_series("touches", "--all", "vllm", cwd=fork).stdout
    assert out.splitlines()[0] == "vllm: touched by 3 of 3 topics (base v0.30.0)", out
    assert out.splitlines()[-1] == "note: skipped ipc-backport: branch topic/ipc-backport does not exist", out


def test_shell_style_paths_are_relative_to_the_current_directory(fork: Path) -> None:
    sub = fork / "vllm" / "v1"
    expected = run_series("touches", "vllm/v1/kv_offload", cwd=fork).stdout
    assert run_series("touches", "./kv_offload", cwd=sub).stdout == expected
    assert run_series("touches", str(sub / "kv_offload"), cwd=fork).stdout == expected
    out = run_series("touches", "../multimodal", cwd=sub).stdout  # as in git (test_paths_relative)
    assert "ipc-backport" in out, out
    proc = run_series("touches", "../../..", cwd=sub, expect=2)
    assert "outside the repository" in proc.stderr, proc.stderr


# -- partial clones (issue 22, item 17) --------------------------------------------------------
# Which files a topic changes is a tree diff, and a blobless clone has every tree; the line
# counts read blobs. Opening the workspace fetches the active topics' blobs; what touches
# reads beyond them (--all's inactive topics, --between's upstream ends) it fetches itself.


def _drop_ipc(fork: Path) -> None:
    yaml = fork / "series.yaml"
    yaml.write_text(
        yaml.read_text().replace(
            "    branch: topic/ipc-backport\n", "    branch: topic/ipc-backport\n    status: dropped\n"
        )
    )


_QUESTIONS = [
    ("vllm",),
    ("--all", "vllm"),
    ("--all",),
    ("--json", "--all", "vllm/multimodal"),
    ("--between", "v0.30.0..v0.31.0"),
    ("--all", "--between", "v0.30.0..v0.31.0", "vllm"),
]


def test_a_blobless_clone_finds_what_a_full_clone_finds(fork: Path, tmp_path: Path) -> None:
    from tests.test_trust_cli import blobless

    _drop_ipc(fork)
    part = blobless(fork, tmp_path)
    assert "?" in sh("git rev-list --objects --missing=print --all", part), "blobs are missing"
    for args in _QUESTIONS:
        full = run_series("touches", *args, cwd=fork, expect=None)
        got = run_series("touches", *args, cwd=part, expect=None)
        assert (got.returncode, got.stdout, got.stderr) == (full.returncode, full.stdout, full.stderr), args
        assert full.returncode == 0, (args, full.stdout)


def test_a_blobless_clone_that_cannot_fetch_says_so_never_not_touched(fork: Path, tmp_path: Path) -> None:
    from tests.test_trust_cli import blobless

    _drop_ipc(fork)
    part = blobless(fork, tmp_path)
    run_series("touches", "vllm", cwd=part)  # the active topics' blobs are here now
    sh(f"git remote set-url upstream file://{tmp_path / 'gone.git'}", part)
    run_series("touches", "vllm", cwd=part)  # and need no fetch
    for args in (("--all", "vllm"), ("--between", "v0.30.0..v0.31.0")):
        proc = run_series("touches", *args, cwd=part, expect=2)  # 1 would say 'not touched'
        err = proc.stderr.strip()
        lines = err.splitlines()  # one error line, and its way out on a hint line
        assert err.startswith("series: error: this is a partial clone"), err
        assert len(lines) <= 2 and all(line.startswith("hint: ") for line in lines[1:]), err
        assert "git fetch --refetch upstream" in err and proc.stdout == "", err


def test_a_treeless_clone_is_an_error_not_untouched(fork: Path, tmp_path: Path) -> None:
    from tests.test_trust_cli import blobless

    part = blobless(fork, tmp_path, keep="tree:0")
    sh(f"git remote set-url upstream file://{tmp_path / 'gone.git'}", part)
    proc = run_series("touches", "vllm", cwd=part, expect=2)  # was exit 4, a bug; 1 is 'not touched'
    assert "partial clone" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
