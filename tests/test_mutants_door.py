"""Tests that fail when the write door is wrong in small, realistic ways (issue 37: each
one kills a mutant that survived the whole suite; tools/mutate.py finds more)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_series, sh
from tests.test_rebase_faults import SKIP, killed


def test_an_edit_made_to_series_yaml_after_a_kill_survives_the_finish(fork: Path) -> None:
    """Killed after the refs moved, before series.yaml was replaced; the user then edits
    series.yaml. Finishing re-applies the operation's own key edits to the file as it is:
    writing the text the operation computed would drop the user's edit."""
    killed(fork, "after-refs", "--onto", "v0.31.0", *SKIP)
    config = fork / "series.yaml"
    config.write_text("# kept: written while the rebase was interrupted\n" + config.read_text())
    run_series("rebase", "--continue", cwd=fork)
    text = config.read_text()
    assert text.startswith("# kept: written while the rebase was interrupted\n"), text
    assert "base: v0.31.0" in text and "merged_in: v0.31.0" in text, text


def _numbers(journal: Path, pattern: str) -> list[int]:
    return [int(p.name.split("-", 1)[0]) for p in journal.glob(pattern)]


def test_an_operation_rolled_back_keeps_its_number(fork: Path) -> None:
    """An entry set aside in journal/rolled-back/ still holds its number: the next operation
    takes a new one, so no two journal entries (kept or set aside) share an id."""
    sh("git branch topic/late v0.30.0", fork)
    proc = run_series("add", "topic/late", cwd=fork, expect=None, env={"SERIES_FAULT": "after-journal"})
    assert proc.returncode == 99, proc.stderr
    run_series("add", "topic/late", cwd=fork)  # the door rolls the killed one back first
    journal = fork / ".git/series/journal"
    aside, kept = _numbers(journal, "rolled-back/*.json"), _numbers(journal, "*.json")
    assert len(aside) == 1 and len(kept) >= 1, (aside, kept)
    assert max(kept) > max(aside), (aside, kept)
    rows = json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"]
    assert [r["command"] for r in rows][-1:] == ["add"], rows


def test_series_log_shows_when_each_operation_ran(fork: Path) -> None:
    """The journal's time is written and read back: `series log` is how a user tells which
    operation `undo` would take back."""
    import datetime

    sh("git branch topic/late v0.30.0", fork)
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    run_series("add", "topic/late", cwd=fork)
    row = json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"][0]
    ran = datetime.datetime.fromisoformat(row["time"])
    assert row["command"] == "add" and before <= ran <= before + datetime.timedelta(minutes=5), row


def test_a_files_only_operation_killed_halfway_is_finished_by_the_next_command(fork: Path) -> None:
    """resolutions --prune moves no ref and leaves series.yaml alone: only its files say it
    started. Killed after the first of two removals, the next command finishes it (both
    gone, the operation in the log, undo-able), never sets it aside half done."""
    from series.resolutions import ResolutionStore

    conflicted = b"a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> 0123abc (x)\nd\n"
    store = ResolutionStore(fork / "resolutions")
    store.record("gone-topic", "x.py", conflicted, b"a\nbc\nd\n")
    store.record("gone-topic", "y.py", conflicted, b"a\ncb\nd\n")
    recorded = sorted((fork / "resolutions").rglob("*.txt"))
    assert len(recorded) == 2, recorded
    proc = run_series("resolutions", "--prune", cwd=fork, expect=None, env={"SERIES_FAULT": "after-first-file"})
    assert proc.returncode == 99, proc.stderr
    assert sum(p.exists() for p in recorded) == 1
    rows = json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"]
    assert not any(p.exists() for p in recorded), "the operation was not finished"
    assert rows[0]["command"] == "resolutions" and rows[0]["state"] == "done", rows[0]
    run_series("undo", cwd=fork)
    assert all(p.exists() for p in recorded)


def test_a_clean_checkout_is_updated_when_the_next_command_finishes_a_killed_rebase(fork: Path, tmp_path: Path) -> None:
    """Killed after the refs moved: whichever command comes next finishes the operation,
    and a clean checkout of a moved branch follows it (else it shows the rebase undone as
    uncommitted changes)."""
    checkout = tmp_path / "checkout"
    sh(f"git worktree add -q {checkout} topic/api-hello", fork)
    killed(fork, "after-refs", "--onto", "v0.31.0", *SKIP)
    run_series("log", cwd=fork)  # any command repairs first
    assert sh("git rev-parse HEAD", checkout) == sh("git rev-parse topic/api-hello", fork)
    assert sh("git status --porcelain --untracked-files=no", checkout).strip() == ""


def _prune_one(fork: Path) -> tuple[Path, str]:
    from series.resolutions import ResolutionStore

    conflicted = b"a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> 0123abc (x)\nd\n"
    ResolutionStore(fork / "resolutions").record("gone-topic", "x.py", conflicted, "a\nbç\nd\n".encode())
    (recorded,) = (fork / "resolutions").rglob("*.txt")
    text = recorded.read_text(encoding="utf-8")
    run_series("resolutions", "--prune", cwd=fork)
    assert not recorded.exists()
    return recorded, text


def test_a_prune_journaled_by_an_older_series_is_undone(fork: Path) -> None:
    """An older series kept what `resolutions --prune` removed in the entry's
    extra["removed"] (path -> text, UTF-8); undo puts the file back from it."""
    recorded, text = _prune_one(fork)
    (entry,) = (fork / ".git/series/journal").glob("*.json")
    data = json.loads(entry.read_text())
    (change,) = data.pop("files")
    data["extra"]["removed"] = {change["path"]: text}
    entry.write_text(json.dumps(data))
    run_series("undo", cwd=fork)
    assert recorded.read_text(encoding="utf-8") == text and "bç" in text


@pytest.mark.parametrize("ref", ["refs/heads/not a ref", "heads/topic/late"])
def test_a_journal_entry_edited_into_a_bad_ref_is_named_not_followed(fork: Path, ref: str) -> None:
    """undo would move what the entry names: one edited (by hand, another tool) into
    something that is not a full ref name is refused, naming the file."""
    sh("git branch topic/late v0.30.0", fork)
    run_series("rebase", "--onto", "v0.31.0", "--skip-topic", "offload-evict-fix", cwd=fork)
    (entry,) = (fork / ".git/series/journal").glob("*.json")
    data = json.loads(entry.read_text())
    data["moves"][0]["ref"] = ref
    entry.write_text(json.dumps(data))
    proc = run_series("undo", cwd=fork, expect=1)
    assert "unreadable journal entry" in proc.stderr and entry.name in proc.stderr, proc.stderr


def test_a_ref_set_twice_in_one_transaction_moves_once_to_the_last_value(fork: Path) -> None:
    """A caller may change its mind about a ref before committing (set() documents the
    last word wins): one move, to the last value, from the ref's value at the start."""
    import pygit2

    from series.ops.fs import Lock
    from series.ops.changeset import Changeset

    repo = pygit2.Repository(str(fork))
    start = sh("git rev-parse topic/api-hello", fork).strip()
    first, last = sh("git rev-parse v0.30.0 v0.31.0", fork).split()
    with Lock(repo, "test"):
        txn = Changeset(repo, "test", "set twice")
        txn.set("refs/heads/topic/api-hello", first)
        txn.set("refs/heads/topic/api-hello", last, expect=start)
        op = txn.commit()
    assert [(m.old, m.new) for m in op.moves] == [(start, last)], op.moves
    assert sh("git rev-parse topic/api-hello", fork).strip() == last
