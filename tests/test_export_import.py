"""series export / series import on real repositories, through the real CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pygit2

from tests.conftest import run_series, sh

TOPICS = ("sched-note", "offload-evict-fix", "ipc-backport", "api-hello")


def _commits(repo_path: Path, branch: str, base: str = "v0.30.0") -> list[tuple[str, ...]]:
    out = sh(f"git log --reverse --format='%T%x00%an%x00%ae%x00%ad%x00%B%x01' --date=raw {base}..{branch}", repo_path)
    return [tuple(c.strip("\n").split("\0")) for c in out.split("\x01") if c.strip("\n")]


def _fresh_clone(upstream: Path, target: Path, files: dict[str, Path]) -> Path:
    subprocess.run(["git", "clone", "-q", "-o", "upstream", str(upstream), str(target)], check=True)
    for name, source in files.items():
        if source.is_dir():
            shutil.copytree(source, target / name)
        else:
            shutil.copyfile(source, target / name)
    return target


def test_export_writes_order_series_yaml_and_stable_patch_files(fork: Path) -> None:
    out = run_series("export", cwd=fork).stdout
    patches = fork / "patches"
    assert (patches / "order").read_text().splitlines()[1:] == list(TOPICS), out
    assert (patches / "series.yaml").read_text() == (fork / "series.yaml").read_text()
    names = sorted(p.name for p in (patches / "offload-evict-fix").iterdir())
    assert names == ["0001-Bugfix-KV-offload-keep-request-order-on-touch.patch", "0002-Test-cover-touch-order.patch"], (
        names
    )
    text = (patches / "offload-evict-fix" / names[0]).read_text()
    assert text.startswith("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n")
    assert "Subject: [PATCH 1/2] [Bugfix][KV offload] keep request order on touch\n" in text
    assert "\n-- \n" not in text, "no volatile version trailer"
    assert "index 9c8a329d9e14c9101234727545f8c6f8cd09ea06..76d3f76592c999402442e9f41eedc6b3acba32a6 100644" in text, (
        text
    )


def test_reexport_of_an_unchanged_series_changes_nothing(fork: Path, tmp_path: Path) -> None:
    target = tmp_path / "series-repo"
    run_series("export", str(target), cwd=fork)
    sh("git init -q && git add -A && git commit -qm export", target)
    # new committer dates and commit ids (a no-op rebase by hand) must not show
    sh(
        "git checkout -q topic/api-hello && GIT_COMMITTER_DATE=2026-03-03T00:00:00Z "
        "git commit -q --amend --no-edit && git checkout -q --detach v0.30.0",
        fork,
    )
    out = run_series("export", str(target), cwd=fork).stdout
    assert "nothing changed" in out, out
    assert sh("git status --porcelain", target) == ""


def test_reexport_removes_stale_files(fork: Path) -> None:
    run_series("export", cwd=fork)
    # drop the test commit of offload-evict-fix, and retire api-hello
    sh("git branch -f topic/offload-evict-fix topic/offload-evict-fix~1", fork)
    (fork / "series.yaml").write_text(
        (fork / "series.yaml")
        .read_text()
        .replace("    branch: topic/api-hello\n", "    branch: topic/api-hello\n    status: dropped\n")
    )
    out = run_series("export", "--json", cwd=fork).stdout
    result = json.loads(out)
    assert sorted(result["removed"]) == [
        "api-hello/0001-Fork-hello-endpoint.patch",
        "offload-evict-fix/0002-Test-cover-touch-order.patch",
    ], out
    assert not (fork / "patches" / "api-hello").exists()
    assert "api-hello" not in (fork / "patches" / "order").read_text()


def test_export_refuses_a_directory_that_is_not_an_export(fork: Path) -> None:
    proc = run_series("export", "vllm", cwd=fork, expect=1)
    assert "not empty" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_round_trip_export_import_keeps_trees_authors_dates_messages(
    fork: Path, upstream: Path, tmp_path: Path
) -> None:
    # a commit with an unusual author, time zone and message: it must survive exactly
    sh(
        "git checkout -q topic/api-hello && echo '# more' >> vllm/entrypoints/openai/api_server.py && "
        "GIT_AUTHOR_NAME='Doe, Zoë' GIT_AUTHOR_DATE='2026-01-20T08:00:00+05:30' "
        "git commit -qa -F - <<'EOF'\n[Fork] second\n\nBody with a line:\n---\nand more.\nEOF\n"
        "git checkout -q --detach v0.30.0",
        fork,
    )
    run_series("export", cwd=fork)
    fresh = _fresh_clone(upstream, tmp_path / "fresh", {"patches": fork / "patches"})
    dry = run_series("import", "patches", "--dry-run", cwd=fresh).stdout
    assert "would create" in dry and not (fresh / "series.yaml").exists(), "a dry run writes nothing"
    assert "topic/" not in sh("git branch", fresh)
    out = run_series("import", "patches", cwd=fresh).stdout
    assert "copied series.yaml" in out, out
    for topic in TOPICS:
        branch = f"topic/{topic}"
        assert _commits(fresh, branch) == _commits(fork, branch), topic
    assert sh("git log -1 --format=%ad --date=iso topic/api-hello", fresh).strip() == "2026-01-20 08:00:00 +0530"


def test_import_is_journaled_idempotent_and_undoable(fork: Path, upstream: Path, tmp_path: Path) -> None:
    run_series("export", cwd=fork)
    fresh = _fresh_clone(
        upstream, tmp_path / "fresh", {"patches": fork / "patches", "series.yaml": fork / "series.yaml"}
    )
    run_series("import", cwd=fresh)
    again = run_series("import", "--json", cwd=fresh).stdout
    assert {t["action"] for t in json.loads(again)["topics"]} == {"unchanged"}, again
    log = sh("ls .git/series/journal", fresh).split()
    assert len(log) == 1, log
    from series.verbs import undo

    undo.run(pygit2.Repository(str(fresh)))  # what 'series undo' runs
    assert "topic/" not in sh("git branch", fresh), "undo removes the imported branches"


def test_import_refuses_to_overwrite_a_different_branch_unless_forced(
    fork: Path, upstream: Path, tmp_path: Path
) -> None:
    run_series("export", cwd=fork)
    fresh = _fresh_clone(
        upstream, tmp_path / "fresh", {"patches": fork / "patches", "series.yaml": fork / "series.yaml"}
    )
    sh("git branch topic/api-hello v0.31.0", fresh)
    before = sh("git for-each-ref", fresh)
    proc = run_series("import", cwd=fresh, expect=1)
    assert "topic/api-hello" in proc.stderr and "--force" in proc.stderr, proc.stderr
    assert sh("git for-each-ref", fresh) == before, "nothing may move when one branch is refused"
    dry = run_series("import", "--dry-run", "--force", cwd=fresh).stdout
    assert "would update" in dry and sh("git for-each-ref", fresh) == before, dry
    sh("git checkout -q topic/api-hello", fresh)
    busy = run_series("import", "--force", cwd=fresh, expect=1)
    assert "checked out" in busy.stderr and sh("git for-each-ref", fresh) == before, busy.stderr
    sh("git checkout -q --detach v0.30.0", fresh)
    run_series("import", "--force", cwd=fresh)
    assert _commits(fresh, "topic/api-hello") == _commits(fork, "topic/api-hello")
    backups = sh("git for-each-ref --format='%(refname)' refs/series/backup", fresh)
    assert "topic/api-hello" in backups, backups


def _hostile_export(fork: Path, tmp_path: Path, path: str) -> Path:
    run_series("export", cwd=fork)
    target = tmp_path / "hostile"
    shutil.copytree(fork / "patches", target)
    patch = next((target / "api-hello").iterdir())
    patch.write_text(patch.read_text().replace("vllm/entrypoints/openai/api_server.py", path))
    return target


def test_import_refuses_patch_paths_that_escape_the_repository(fork: Path, upstream: Path, tmp_path: Path) -> None:
    for number, hostile in enumerate(["../../outside.py", "/etc/passwd", ".git/hooks/post-checkout"]):
        directory = _hostile_export(fork, tmp_path / str(number), hostile)
        fresh = _fresh_clone(upstream, tmp_path / str(number) / "fresh", {"series.yaml": fork / "series.yaml"})
        proc = run_series("import", str(directory), cwd=fresh, expect=1)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "refusing" in lines[0] and "Traceback" not in proc.stderr, proc.stderr
        assert "topic/" not in sh("git branch", fresh), "no branch may be created"


def test_import_refuses_an_order_entry_that_is_a_path(fork: Path, tmp_path: Path) -> None:
    run_series("export", cwd=fork)
    (fork / "patches" / "order").write_text("../../etc\n")
    proc = run_series("import", cwd=fork, expect=1)
    assert "not a topic name" in proc.stderr, proc.stderr


def test_import_reports_a_patch_that_does_not_apply(fork: Path, upstream: Path, tmp_path: Path) -> None:
    run_series("export", cwd=fork)
    (fork / "series.yaml").write_text((fork / "series.yaml").read_text().replace("base: v0.30.0", "base: v0.31.0"))
    fresh = _fresh_clone(
        upstream, tmp_path / "fresh", {"patches": fork / "patches", "series.yaml": fork / "series.yaml"}
    )
    proc = run_series("import", cwd=fresh, expect=1)
    assert "does not apply" in proc.stderr and "lru.py" in proc.stderr, proc.stderr


def test_resolutions_travel_with_the_export(fork: Path, upstream: Path, tmp_path: Path) -> None:
    from series.resolutions import ResolutionStore

    store = ResolutionStore(fork / "resolutions")
    conflicted = b"a\n<<<<<<< ours\nb\n=======\nc\n>>>>>>> theirs\n"
    kept = store.record("offload-evict-fix", "vllm/x.py", conflicted, b"a\nbc\n")
    gone = store.record("sched-note", "vllm/y.py", conflicted, b"a\ncb\n")
    assert kept is not None and gone is not None
    run_series("export", cwd=fork)
    copied = sorted(p.relative_to(fork / "patches") for p in (fork / "patches").rglob("*.txt"))
    assert [str(p) for p in copied] == [
        f"resolutions/offload-evict-fix/{kept.file.name}",
        f"resolutions/sched-note/{gone.file.name}",
    ], copied
    gone.file.unlink()
    out = json.loads(run_series("export", "--json", cwd=fork).stdout)
    assert out["removed"] == [f"resolutions/sched-note/{gone.file.name}"], out
    fresh = _fresh_clone(upstream, tmp_path / "fresh", {"patches": fork / "patches"})
    run_series("import", "patches", cwd=fresh)
    assert (fresh / "resolutions" / "offload-evict-fix" / kept.file.name).read_bytes() == kept.file.read_bytes()


def test_a_stacked_topic_round_trips_on_its_dependency(fork: Path, upstream: Path, tmp_path: Path) -> None:
    sh(
        "git checkout -q -b topic/evict-metrics topic/offload-evict-fix && "
        "echo 'METRICS = True' > vllm/v1/kv_offload/metrics.py && git add vllm && "
        "git commit -qm '[Feature] eviction metrics' && git checkout -q --detach v0.30.0",
        fork,
    )
    (fork / "series.yaml").write_text(
        (fork / "series.yaml").read_text() + "  - name: evict-metrics\n    branch: topic/evict-metrics\n"
        "    depends_on: [offload-evict-fix]\n"
    )
    run_series("export", cwd=fork)
    assert len(list((fork / "patches" / "evict-metrics").iterdir())) == 1, "only its own commit"
    fresh = _fresh_clone(upstream, tmp_path / "fresh", {"patches": fork / "patches"})
    run_series("import", "patches", cwd=fresh)
    assert _commits(fresh, "topic/evict-metrics") == _commits(fork, "topic/evict-metrics")
    assert sh("git rev-parse topic/evict-metrics~1", fresh) == sh("git rev-parse topic/offload-evict-fix", fresh)


def test_import_into_a_bare_clone_is_one_operation_one_undo_reverts_all(
    fork: Path, upstream: Path, tmp_path: Path
) -> None:
    """Issue 25: the export's series.yaml, its resolutions and every branch are one journal
    entry; one 'series undo' removes all of them (before, the copy was an operation of its
    own, and the resolutions were copied beside the transaction, undone by nothing)."""
    from series.resolutions import ResolutionStore

    conflicted = b"a\n<<<<<<< ours\nb\n=======\nc\n>>>>>>> theirs\n"
    kept = ResolutionStore(fork / "resolutions").record("offload-evict-fix", "vllm/x.py", conflicted, b"a\nbc\n")
    assert kept is not None
    run_series("export", cwd=fork)
    fresh = _fresh_clone(upstream, tmp_path / "fresh", {"patches": fork / "patches"})
    run_series("import", "patches", cwd=fresh)
    log = json.loads(run_series("log", "--json", cwd=fresh).stdout)["operations"]
    assert [op["command"] for op in log] == ["import"], log
    assert (fresh / "series.yaml").is_file() and (fresh / "resolutions" / "offload-evict-fix").is_dir()
    run_series("undo", cwd=fresh)
    assert not (fresh / "series.yaml").exists(), "undo removes the copied series.yaml"
    assert not (fresh / "resolutions").exists(), "undo removes the copied resolutions"
    assert "topic/" not in sh("git branch", fresh), "undo removes the imported branches"
    assert sh("git status --porcelain", fresh).split() == ["??", "patches/"]
    run_series("undo", cwd=fresh, expect=1)  # nothing else to undo: the import was one operation


def test_import_refused_for_a_branch_writes_no_series_yaml(fork: Path, upstream: Path, tmp_path: Path) -> None:
    run_series("export", cwd=fork)
    fresh = _fresh_clone(upstream, tmp_path / "fresh", {"patches": fork / "patches"})
    sh(
        "git branch topic/api-hello v0.30.0 && git commit -q --allow-empty -m other && "
        "git branch -f topic/api-hello HEAD",
        fresh,
    )
    run_series("import", "patches", cwd=fresh, expect=1)
    assert not (fresh / "series.yaml").exists(), "nothing is written when the import is refused"
    assert list((fresh / ".git/series/journal").glob("*.json")) == []
