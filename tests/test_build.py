"""`series build`: integration branch, patched wheel proven by a real installer, manifest,
refusal of compiled inputs, --from-source's command, the pip wheel cache."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pygit2
import pytest

from series.wheel import fetch
from series.verbs import build as build_cmd
from series.workspace import open_workspace
from tests.conftest import run_series, sh
from tests.fakewheel import build_wheel, install_wheel, tree_files


@pytest.fixture
def release_wheel(upstream: Path, tmp_path: Path) -> Path:
    return build_wheel(tmp_path / "wheels", tree_files(upstream, "v0.30.0"), version="0.30.0")


def integration_files(fork: Path, prefix: str = "vllm/") -> dict[str, bytes]:
    return tree_files(fork, "series/integration", prefix)


def test_build_writes_branch_wheel_and_manifest(fork: Path, release_wheel: Path, tmp_path: Path) -> None:
    proc = run_series("build", "--wheel", str(release_wheel), "--out", str(tmp_path / "dist"), cwd=fork)
    last = proc.stdout.strip().splitlines()[-1]
    wheel = Path(last)
    assert wheel.is_file() and wheel.parent == tmp_path / "dist", proc.stdout

    repo = pygit2.Repository(str(fork))
    tip = repo.references["refs/heads/series/integration"].peel(pygit2.Commit)
    assert wheel.name == f"vllm-0.30.0+series.g{str(tip.id)[:7]}-cp38-abi3-manylinux_2_28_x86_64.whl"

    site = install_wheel(wheel, tmp_path / "target")  # RECORD verified
    expected = integration_files(fork)
    for path, data in expected.items():
        assert (site / path).read_bytes() == data, f"{path} differs from the integration branch"
    installed = {str(p.relative_to(site)) for p in (site / "vllm").rglob("*") if p.is_file()}
    assert installed - set(expected) == {"vllm/_version.py", "vllm/_C.abi3.so"}, installed - set(expected)
    assert "return 'hi'" in (site / "vllm/entrypoints/openai/api_server.py").read_text()
    assert "keep request order" in (site / "vllm/v1/kv_offload/cpu/policies/lru.py").read_text()

    manifest = json.loads(wheel.with_name(wheel.name[:-4] + ".manifest.json").read_text())
    assert manifest["upstream"]["base"] == "v0.30.0"
    assert manifest["upstream"]["sha"] == str(repo.revparse_single("v0.30.0").peel(pygit2.Commit).id)
    assert manifest["integration"] == {"branch": "series/integration", "sha": str(tip.id)}
    heads = {t["name"]: t["head"] for t in manifest["topics"]}
    assert heads["api-hello"] == str(repo.references["refs/heads/topic/api-hello"].target), heads
    import hashlib

    assert manifest["wheel"]["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert manifest["tool"] == "series" and manifest["tool_version"]
    assert "tests/v1/kv_offload/test_lru.py" in manifest["changes"]["ignored"], manifest["changes"]


def test_rebuild_is_byte_identical(fork: Path, release_wheel: Path, tmp_path: Path) -> None:
    first = json.loads(
        run_series("build", "--wheel", str(release_wheel), "--out", str(tmp_path / "a"), "--json", cwd=fork).stdout
    )
    # a later run: whatever date the chain's commits would get now, the wheel is the same
    later = {"GIT_COMMITTER_DATE": "2026-03-01T00:00:00Z"}
    second = json.loads(
        run_series(
            "build", "--wheel", str(release_wheel), "--out", str(tmp_path / "b"), "--json", cwd=fork, env=later
        ).stdout
    )
    assert first["integration"]["moved"] and not second["integration"]["moved"], (first, second)
    assert Path(first["wheel"]).read_bytes() == Path(second["wheel"]).read_bytes()
    assert Path(first["manifest"]).read_text() == Path(second["manifest"]).read_text()


def test_build_without_wheel_only_moves_the_branch_and_dry_run_moves_nothing(fork: Path) -> None:
    dry = run_series("build", "--dry-run", cwd=fork).stdout
    assert "would update" in dry, dry
    assert sh("git branch --list series/integration", fork).strip() == ""
    run_series("build", cwd=fork)
    log = sh("git log --format=%s series/integration", fork)
    for topic in ("sched-note", "offload-evict-fix", "ipc-backport", "api-hello"):
        assert topic in log, log
    assert sh("git merge-base --is-ancestor v0.30.0 series/integration && echo yes", fork).strip() == "yes"
    assert "def hello" in sh("git show series/integration:vllm/entrypoints/openai/api_server.py", fork)
    assert "integration series/integration" in sh(
        "ls .git/series/journal | head -1 >/dev/null; cat .git/series/journal/*.json", fork
    )


def test_a_series_touching_csrc_is_refused_for_overlay(fork: Path, release_wheel: Path) -> None:
    sh(
        "git checkout -q -b topic/kernel v0.30.0 && mkdir -p csrc && echo '// k' > csrc/attn.cu && "
        "git add csrc && git commit -qm kernel && git checkout -q --detach v0.30.0",
        fork,
    )
    with open(fork / "series.yaml", "a") as f:
        f.write("  - name: kernel-tweak\n    branch: topic/kernel\n")
    proc = run_series("build", "--wheel", str(release_wheel), cwd=fork, expect=1)
    assert "kernel-tweak: csrc/attn.cu" in proc.stderr and "--from-source" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (fork / "dist").exists()

    dry = run_series("build", "--wheel", str(release_wheel), "--from-source", "--dry-run", cwd=fork).stdout
    assert "pip wheel --no-build-isolation --no-deps" in dry, dry
    assert "VLLM_VERSION_OVERRIDE=0.30.0+series.g" in dry and "kernels are rebuilt" in dry, dry
    assert "VLLM_USE_PRECOMPILED" not in dry, "a csrc change must not use precompiled kernels"


def test_from_source_runs_the_precompiled_build_in_a_worktree(fork: Path, release_wheel: Path, tmp_path: Path) -> None:
    seen: dict[str, object] = {}

    def runner(argv: list[str], cwd: Path, env: dict[str, str], **_: object) -> subprocess.CompletedProcess:
        seen.update(
            argv=argv, cwd=cwd, env=env, tracked=(Path(cwd) / "vllm/entrypoints/openai/api_server.py").read_text()
        )
        out = Path(argv[argv.index("--wheel-dir") + 1])
        out.mkdir(parents=True, exist_ok=True)
        (out / f"vllm-{env['VLLM_VERSION_OVERRIDE']}-cp38-abi3-linux_x86_64.whl").write_bytes(b"PK")
        return subprocess.CompletedProcess(argv, 0, "", "")

    ws = open_workspace(None, fork)
    result = build_cmd.run(ws, wheel=str(release_wheel), out=tmp_path / "dist", from_source=True, runner=runner)
    assert seen["argv"][1:7] == ["-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--wheel-dir"]
    env = seen["env"]
    assert env["VLLM_USE_PRECOMPILED"] == "1" and env["VLLM_PRECOMPILED_WHEEL_LOCATION"] == str(release_wheel)
    assert env["VLLM_VERSION_OVERRIDE"] == result.version
    assert "def hello" in seen["tracked"], "the worktree must hold the integration tree"
    assert not Path(seen["cwd"]).exists(), "the temporary worktree is removed"
    assert result.wheel is not None and result.wheel.parent == tmp_path / "dist"
    assert result.manifest is not None and result.manifest.exists()
    assert "series-build-" not in sh("git worktree list", fork)


def test_pip_download_into_the_cache_once(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def runner(cmd: list[str]) -> subprocess.CompletedProcess:
        calls.append(cmd)
        dest = Path(cmd[cmd.index("--dest") + 1])
        (dest / "vllm-0.31.0-cp38-abi3-manylinux_2_28_x86_64.whl").write_bytes(b"PK")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    cache = tmp_path / "cache"
    path, fetched = fetch.resolve_wheel("vllm==0.31.0", cache, runner=runner)
    again, fetched_again = fetch.resolve_wheel("vllm==0.31.0", cache, runner=runner)
    assert (fetched, fetched_again) == (True, False) and path == again
    assert len(calls) == 1, calls
    assert calls[0][1:] == [
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--dest",
        str(cache),
        "vllm==0.31.0",
    ], calls


def test_pip_failure_and_bad_spec_are_one_line_errors(fork: Path, tmp_path: Path) -> None:
    def failing(cmd: list[str]) -> subprocess.CompletedProcess:
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution found for vllm==9.9\n")

    from series.errors import SeriesError

    with pytest.raises(SeriesError, match="No matching distribution"):
        fetch.resolve_wheel("vllm==9.9", tmp_path / "c", runner=failing)
    proc = run_series("build", "--wheel", "vllm", cwd=fork, expect=1)
    assert "expected a .whl path or NAME==VERSION" in proc.stderr, proc.stderr


def test_dry_run_never_downloads(fork: Path) -> None:
    proc = run_series("build", "--wheel", "vllm==0.30.0", "--dry-run", cwd=fork)
    assert "would fetch vllm==0.30.0 with pip" in proc.stderr, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("would write ") and "vllm-0.30.0+series.g" in last, proc.stdout
    assert "-PY-ABI-PLATFORM.whl" in last, "tags are unknown until pip picks the wheel"
    assert sh("git branch --list series/integration", fork).strip() == ""


def test_a_wheel_of_another_release_is_refused(fork: Path, upstream: Path, tmp_path: Path) -> None:
    other = build_wheel(tmp_path / "w31", tree_files(upstream, "v0.31.0"), version="0.31.0")
    proc = run_series("build", "--wheel", str(other), cwd=fork, expect=1)
    assert "the wheel is vllm 0.31.0 but the series is based on v0.30.0" in proc.stderr, proc.stderr
    assert "--wheel vllm==0.30.0" in proc.stderr


def test_a_wheel_not_built_from_the_base_tree_is_flagged(fork: Path, upstream: Path, tmp_path: Path) -> None:
    files = tree_files(upstream, "v0.30.0")
    files["vllm/multimodal/ipc.py"] = b"VERSION = 'patched by someone'\n"
    odd = build_wheel(tmp_path / "odd", files, version="0.30.0")
    data = json.loads(run_series("build", "--wheel", str(odd), "--out", str(tmp_path / "d"), "--json", cwd=fork).stdout)
    assert any("vllm/multimodal/ipc.py" in n for n in data["notes"]), data["notes"]


def test_build_waits_for_a_halted_rebase(fork: Path, release_wheel: Path) -> None:
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)  # offload-evict-fix conflicts
    proc = run_series("build", cwd=fork, expect=1)
    assert "a series rebase is in progress" in proc.stderr and "--abort" in proc.stderr, proc.stderr
    run_series("build", "--dry-run", cwd=fork)  # looking is fine
    run_series("rebase", "--abort", cwd=fork)
    run_series("build", cwd=fork)


def test_nothing_moves_when_the_wheel_is_refused(fork: Path, upstream: Path, tmp_path: Path) -> None:
    other = build_wheel(tmp_path / "w31", tree_files(upstream, "v0.31.0"), version="0.31.0")
    run_series("build", "--wheel", str(other), "--from-source", cwd=fork, expect=1)
    assert sh("git branch --list series/integration", fork).strip() == "", "refused, yet the branch moved"


def test_renamed_added_and_deleted_files_reach_the_installed_tree(
    fork: Path, release_wheel: Path, tmp_path: Path
) -> None:
    sh(
        "git checkout -q -b topic/move v0.30.0 && git mv vllm/multimodal/ipc.py vllm/multimodal/ipc_v1.py && "
        "mkdir -p vllm/v1/kv_offload/cpu/policies && printf 'class ARC:\\n    pass\\n' > "
        "vllm/v1/kv_offload/cpu/policies/arc.py && git rm -q vllm/v1/core/sched/scheduler.py && "
        "git add vllm && git commit -qm move && git checkout -q --detach v0.30.0",
        fork,
    )
    (fork / "series.yaml").write_text(
        "upstream:\n  remote: upstream\n  base: v0.30.0\nintegration: series/integration\n"
        "topics:\n  - name: move\n    branch: topic/move\n"
    )
    data = json.loads(
        run_series("build", "--wheel", str(release_wheel), "--out", str(tmp_path / "d"), "--json", cwd=fork).stdout
    )
    assert data["changes"]["deleted"] == ["vllm/multimodal/ipc.py", "vllm/v1/core/sched/scheduler.py"], data
    assert data["changes"]["added"] == ["vllm/multimodal/ipc_v1.py", "vllm/v1/kv_offload/cpu/policies/arc.py"]
    site = install_wheel(Path(data["wheel"]), tmp_path / "t")
    assert (site / "vllm/multimodal/ipc_v1.py").read_text() == "VERSION = 1\n"
    assert not (site / "vllm/multimodal/ipc.py").exists()
    assert not (site / "vllm/v1/core/sched/scheduler.py").exists()
    assert (site / "vllm/v1/kv_offload/cpu/policies/arc.py").read_text().startswith("class ARC")


def test_the_release_wheel_is_read_once(
    fork: Path, release_wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stale-file check and the overlay share one reading of the wheel's directory and
    RECORD (issue 34: vLLM's 5,000+ members cost ~20 ms a reading)."""
    from series.wheel import ziparchive

    reads: list[Path] = []
    real = ziparchive.read_members

    def counted(path: Path) -> tuple[list[ziparchive.Member], int]:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(ziparchive, "read_members", counted)
    result = build_cmd.run(open_workspace(None, fork), wheel=str(release_wheel), out=tmp_path / "dist")
    assert result.wheel is not None and result.wheel.is_file()
    assert reads.count(release_wheel) == 1, reads
