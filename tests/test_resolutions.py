"""Shared conflict memory: normalization, exact matching, the store's files, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from series.errors import SeriesError
from series.resolutions import ResolutionStore, normalize, parse
from tests.conftest import run_series, sh

BASE = "".join(f"line {i}\n" for i in range(1, 21))


def merge(
    tmp_path: Path,
    ours: str,
    theirs: str,
    base: str = BASE,
    *,
    diff3: bool = False,
    labels: tuple[str, str] = ("ours", "theirs"),
) -> bytes:
    """A real conflicted file, as git writes one."""
    for name, text in (("o", ours), ("b", base), ("t", theirs)):
        (tmp_path / name).write_text(text)
    style = "--diff3 " if diff3 else ""
    out = sh(f"git merge-file -p {style}-L '{labels[0]}' -L base -L '{labels[1]}' o b t || true", tmp_path)
    assert "<<<<<<<" in out, out
    return out.encode()


def ours_theirs(old: str = "line 5\n") -> tuple[str, str]:
    return BASE.replace(old, f"ours {old[5:]}"), BASE.replace(old, f"theirs {old[5:]}")


def test_normalize_drops_labels_and_base_and_sorts_sides(tmp_path: Path) -> None:
    ours, theirs = ours_theirs()
    plain = normalize(merge(tmp_path, ours, theirs, labels=("HEAD", "abc123 (topic)")))
    swapped = normalize(merge(tmp_path, theirs, ours, labels=("v0.31.0", "fix")))
    with_base = normalize(merge(tmp_path, ours, theirs, diff3=True))
    assert plain is not None and swapped is not None and with_base is not None
    assert plain.conflict_id == swapped.conflict_id == with_base.conflict_id
    assert plain.preimage == swapped.preimage == with_base.preimage
    assert b"<<<<<<<\nours 5\n=======\ntheirs 5\n>>>>>>>\n" in plain.preimage, plain.preimage
    assert b"HEAD" not in plain.preimage and b"line 5" not in with_base.preimage


def test_a_different_conflict_has_a_different_id(tmp_path: Path) -> None:
    one = normalize(merge(tmp_path, *ours_theirs("line 5\n")))
    other = normalize(merge(tmp_path, *ours_theirs("line 15\n")))
    assert one is not None and other is not None and one.conflict_id != other.conflict_id


@pytest.mark.parametrize(
    "text",
    [
        b"no conflict here\n",
        b"<<<<<<< a\nx\n=======\ny\n",  # unterminated
        b"<<<<<<< a\n<<<<<<< b\nx\n=======\ny\n>>>>>>> b\n>>>>>>> a\n",  # nested
        b"=======\nan rst heading underline outside a conflict\n",
        b"bin\0ary <<<<<<< a\n",
    ],
)
def test_normalize_refuses_what_it_cannot_key_on(text: bytes) -> None:
    assert normalize(text) is None


def test_record_then_lookup_returns_the_resolution(tmp_path: Path) -> None:
    store = ResolutionStore(tmp_path / "resolutions")
    ours, theirs = ours_theirs()
    conflicted = merge(tmp_path, ours, theirs)
    resolved = BASE.replace("line 5\n", "ours and theirs 5\n").encode()
    recorded = store.record("offload-evict-fix", "vllm/lru.py", conflicted, resolved, commit="[Fix] x")
    assert recorded is not None
    assert store.lookup("offload-evict-fix", "vllm/lru.py", conflicted) == resolved
    # the same clash with the sides swapped and other labels (another rebase direction)
    assert (
        store.lookup("offload-evict-fix", "vllm/lru.py", merge(tmp_path, theirs, ours, labels=("x", "y"))) == resolved
    )
    # keyed by topic and path too
    assert store.lookup("other-topic", "vllm/lru.py", conflicted) is None
    assert store.lookup("offload-evict-fix", "vllm/other.py", conflicted) is None


def test_a_different_conflict_in_the_same_file_is_not_applied(tmp_path: Path) -> None:
    store = ResolutionStore(tmp_path / "resolutions")
    conflicted = merge(tmp_path, *ours_theirs("line 5\n"))
    store.record("t", "f.py", conflicted, BASE.encode())
    assert store.lookup("t", "f.py", merge(tmp_path, *ours_theirs("line 15\n"))) is None


def _around(tmp_path: Path, old: str, new: str) -> bytes:
    """The same clash (line 5), with `old` changed to `new` on both sides and the base."""
    return merge(tmp_path, *(s.replace(old, new) for s in ours_theirs()), base=BASE.replace(old, new))


def test_the_same_clash_applies_where_its_context_is_unchanged(tmp_path: Path) -> None:
    """Issue 33: the hunks and their 3 lines of context are the resolution; the rest of the
    file may change (upstream moves on), the lines next to the clash may not."""
    store = ResolutionStore(tmp_path / "resolutions")
    conflicted = merge(tmp_path, *ours_theirs())
    store.record("t", "f.py", conflicted, BASE.replace("line 5\n", "merged 5\n").encode())
    far = _around(tmp_path, "line 18\n", "line eighteen\n")
    assert normalize(far).conflict_id == normalize(conflicted).conflict_id  # type: ignore[union-attr]
    assert (
        store.lookup("t", "f.py", far)
        == BASE.replace("line 5\n", "merged 5\n").replace("line 18\n", "line eighteen\n").encode()
    )
    shifted = merge(tmp_path, *("line 0\n" + s for s in ours_theirs()), base="line 0\n" + BASE)
    assert store.lookup("t", "f.py", shifted) == ("line 0\n" + BASE.replace("line 5\n", "merged 5\n")).encode()
    with pytest.raises(SeriesError, match="no longer applies: the lines around the conflict changed"):
        store.lookup("t", "f.py", _around(tmp_path, "line 7\n", "line seven\n"))


def test_the_file_is_readable_and_round_trips(tmp_path: Path) -> None:
    store = ResolutionStore(tmp_path / "resolutions")
    conflicted = merge(tmp_path, *ours_theirs())
    resolved = BASE.replace("line 5\n", "merged 5\n").encode()
    recorded = store.record("t", "vllm/v1/lru.py", conflicted, resolved, commit="[Fix] touch order")
    assert recorded is not None
    assert recorded.file.parent == tmp_path / "resolutions" / "t"
    text = recorded.file.read_text()
    for needle in (
        "topic: t\n",
        "path: vllm/v1/lru.py\n",
        "commit: [Fix] touch order\n",
        "-<<<<<<<\n-ours 5\n-=======\n-theirs 5\n->>>>>>>\n",
        "+merged 5\n",
        " line 8\n",
    ):
        assert needle in text, (needle, text)
    assert "line 9" not in text, "only the conflict's hunk and its context are stored"
    again = parse(recorded.file.read_bytes(), recorded.file)
    assert again == recorded
    assert again.resolve(normalize(conflicted).preimage) == resolved  # type: ignore[union-attr]


def test_a_preimage_without_final_newline_round_trips(tmp_path: Path) -> None:
    store = ResolutionStore(tmp_path / "r")
    conflicted = b"a\n<<<<<<< x\nb\n=======\nc\n>>>>>>> y\nend"
    store.record("t", "f", conflicted, b"a\nbc\nend")
    assert store.lookup("t", "f", conflicted) == b"a\nbc\nend"


def test_a_resolution_still_holding_markers_is_not_recorded(tmp_path: Path) -> None:
    store = ResolutionStore(tmp_path / "r")
    conflicted = merge(tmp_path, *ours_theirs())
    assert store.record("t", "f", conflicted, conflicted) is None
    assert store.all() == []


def test_a_hand_edited_resolution_is_refused_not_misapplied(tmp_path: Path) -> None:
    store = ResolutionStore(tmp_path / "r")
    conflicted = merge(tmp_path, *ours_theirs())
    recorded = store.record("t", "f", conflicted, BASE.replace("line 5\n", "merged\n").encode())
    assert recorded is not None
    recorded.file.write_text(recorded.file.read_text().replace("+merged", "+tampered"))
    with pytest.raises(SeriesError, match="edited by hand"):
        store.lookup("t", "f", conflicted)


def _record_in_fork(fork: Path, topic: str, path: str) -> None:
    store = ResolutionStore(fork / "resolutions")
    (fork / "m").mkdir(exist_ok=True)
    store.record(topic, path, merge(fork / "m", *ours_theirs()), BASE.encode())


def test_cli_lists_and_prunes(fork: Path) -> None:
    _record_in_fork(fork, "offload-evict-fix", "vllm/v1/kv_offload/cpu/policies/lru.py")
    _record_in_fork(fork, "offload-evict-fix", "vllm/not/touched.py")  # the topic does not change it
    _record_in_fork(fork, "gone-topic", "vllm/multimodal/ipc.py")  # no such topic
    listing = json.loads(run_series("resolutions", "--json", cwd=fork).stdout)
    assert len(listing["resolutions"]) == 3, listing
    text = run_series("resolutions", cwd=fork).stdout
    assert "offload-evict-fix" in text and "lru.py" in text, text
    dry = run_series("resolutions", "--prune", "--dry-run", cwd=fork).stdout
    assert dry.count("would drop") == 2 and len(list((fork / "resolutions").glob("*/*.txt"))) == 3, dry
    pruned = json.loads(run_series("resolutions", "--prune", "--json", cwd=fork).stdout)
    assert sorted(r["path"] for r in pruned["pruned"]) == ["vllm/multimodal/ipc.py", "vllm/not/touched.py"]
    assert [r["path"] for r in pruned["resolutions"]] == ["vllm/v1/kv_offload/cpu/policies/lru.py"]
    assert not (fork / "resolutions" / "gone-topic").exists()
    run_series("undo", cwd=fork)  # the journal kept each file's text: nothing pruned is lost
    assert len(list((fork / "resolutions").glob("*/*.txt"))) == 3
    assert (fork / "resolutions" / "gone-topic").is_dir()


def test_cli_honours_the_resolutions_key(fork: Path) -> None:
    (fork / "series.yaml").write_text("resolutions: ci/conflicts\n" + (fork / "series.yaml").read_text())
    store = ResolutionStore(fork / "ci" / "conflicts")
    store.record("offload-evict-fix", "x.py", merge(fork, *ours_theirs()), BASE.encode())
    out = run_series("resolutions", cwd=fork).stdout
    assert "ci/conflicts" in out and "x.py" in out, out


# -- with the rebase engine: recorded by --continue, replayed in a fresh clone ---------------

LRU = "vllm/v1/kv_offload/cpu/policies/lru.py"


def _resolve_in_worktree(worktree: Path, comment: str) -> None:
    """Take upstream's loop and keep our comment: what a maintainer would do."""
    path = worktree / LRU
    text = path.read_text()
    start = text.index("<<<<<<< ")
    end = text.index("\n", text.index(">>>>>>> ")) + 1
    resolved = (
        f"        # {comment}\n        for key in keys[::-1]:\n"
        "            if key in self.blocks:\n                self.blocks.move_to_end(key)\n"
    )
    path.write_text(text[:start] + resolved + text[end:])
    sh("git add -A .", worktree)


def _worktree(output: str) -> Path:
    import re

    m = re.search(r" in (/\S+?):? ", output)
    assert m, output
    return Path(m.group(1))


def _series_files_clone(upstream: Path, target: Path, export: Path, resolutions: Path) -> Path:
    import shutil
    import subprocess

    subprocess.run(["git", "clone", "-q", "-o", "upstream", str(upstream), str(target)], check=True)
    shutil.copytree(export, target / "patches")
    shutil.copytree(resolutions, target / "resolutions")
    shutil.copyfile(export / "series.yaml", target / "series.yaml")
    run_series("import", cwd=target)
    return target


def test_a_resolved_conflict_is_replayed_in_a_fresh_clone(fork: Path, upstream: Path, tmp_path: Path) -> None:
    run_series("export", str(tmp_path / "export"), cwd=fork)
    first = run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    worktree = _worktree(first.stdout + first.stderr)
    _resolve_in_worktree(worktree, "keep request order: the first key is evicted last")
    run_series("rebase", "--continue", cwd=fork)
    files = list((fork / "resolutions" / "offload-evict-fix").glob("*.txt"))
    assert len(files) == 1, files
    text = files[0].read_text()
    assert f"path: {LRU}\n" in text and "commit: [Bugfix][KV offload] keep request order on touch" in text, text

    # CI: a fresh clone of upstream holding only the series files
    ci = _series_files_clone(upstream, tmp_path / "ci", tmp_path / "export", fork / "resolutions")
    out = run_series("rebase", "--onto", "v0.31.0", cwd=ci).stdout
    assert "resolved from memory" in out and LRU in out, out
    ours = sh(f"git show topic/offload-evict-fix~1:{LRU}", fork)
    assert sh(f"git show topic/offload-evict-fix~1:{LRU}", ci) == ours
    assert "evicted last" in ours and "if key in self.blocks" in ours


def test_a_different_conflict_in_the_same_file_stops_for_a_human(fork: Path, upstream: Path, tmp_path: Path) -> None:
    run_series("export", str(tmp_path / "export"), cwd=fork)
    first = run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    worktree = _worktree(first.stdout + first.stderr)
    _resolve_in_worktree(worktree, "keep request order: the first key is evicted last")
    run_series("rebase", "--continue", cwd=fork)

    ci = _series_files_clone(upstream, tmp_path / "ci", tmp_path / "export", fork / "resolutions")
    # the topic now words its comment differently: the clash is not the recorded one
    sh(
        "git checkout -q --detach topic/offload-evict-fix~1 && "
        f"sed -i 's/the first key is evicted last/evict the first key last/' {LRU} && "
        "git commit -qa --amend --no-edit && git cherry-pick topic/offload-evict-fix >/dev/null && "
        "git branch -f topic/offload-evict-fix HEAD && git checkout -q --detach v0.30.0",
        ci,
    )
    out = run_series("rebase", "--onto", "v0.31.0", cwd=ci, expect=3).stdout
    assert "CONFLICT" in out and "resolved from memory" not in out, out


def test_a_recorded_resolution_is_journaled_with_the_rebase_and_undone_with_it(fork: Path) -> None:
    """Issue 25: the recorder writes through the rebase's transaction, so the file is part of
    the operation that moved the branches, and one 'series undo' takes both back."""
    before = sh("git for-each-ref --format='%(refname) %(objectname)' refs/heads", fork)
    first = run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    _resolve_in_worktree(_worktree(first.stdout + first.stderr), "keep request order")
    run_series("rebase", "--continue", cwd=fork)
    files = list((fork / "resolutions").glob("*/*.txt"))
    assert len(files) == 1, files
    log = json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"]
    assert [op["command"] for op in log] == ["rebase"], log
    run_series("undo", cwd=fork)
    assert not files[0].exists(), "undo removes what the rebase recorded"
    assert sh("git for-each-ref --format='%(refname) %(objectname)' refs/heads", fork) == before


def test_undo_of_a_prune_refuses_over_a_file_written_since(fork: Path) -> None:
    """As it refuses a ref moved since, undo names a file changed since the operation
    removed it, and changes nothing (before, it skipped that file in silence)."""
    _record_in_fork(fork, "gone-topic", "vllm/multimodal/ipc.py")
    run_series("resolutions", "--prune", cwd=fork)
    (gone,) = [p for p in json.loads(sh("cat .git/series/journal/*.json", fork))["files"]]
    where = fork / gone["path"]
    where.parent.mkdir(parents=True)
    where.write_text("mine now\n")
    proc = run_series("undo", cwd=fork, expect=1)
    assert str(where) in proc.stderr and "changed since" in proc.stderr, proc.stderr
    assert where.read_text() == "mine now\n"
    where.unlink()
    run_series("undo", cwd=fork)
    assert where.read_bytes().startswith(b"# series resolution")
