"""Merges sent to git ahead of their need (series.engine.merge.prefetch / Mergers): each
answer is the one its own merge gets, whatever order the replay asks in, and the merges
the replay needs now never wait behind the queue sent ahead."""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path
from types import SimpleNamespace

import pygit2
import pytest

from series.engine import merge
from series.engine.odb import MemOdb
from series.git.command import git_many
from tests.conftest import sh


def _repo(tmp_path: Path, topics: int) -> tuple[pygit2.Repository, list[merge.Triple]]:
    """A base with one file per topic, an upstream editing the top of each, and topics
    editing the bottom (clean merges) or the top (conflicts) of theirs: every first commit
    needs git."""
    root = tmp_path / "repo"
    root.mkdir()
    script = [
        "git init -q",
        "for i in $(seq 0 %d); do seq 1 40 > f$i.txt; done" % (topics - 1),
        "git add . && git commit -qm base && git tag base",
        "for i in $(seq 0 %d); do sed -i '1s/.*/upstream $i/' f$i.txt; done" % (topics - 1),
        "git commit -qam upstream && git tag onto",
    ]
    for i in range(topics):
        line = 2 if i % 3 == 0 else 40  # every third one conflicts (adjacent to upstream's line)
        script += [
            f"git checkout -q -b t{i} base",
            f"sed -i '{line}s/.*/topic {i}/' f{i}.txt",
            f"git commit -qam 'topic {i}'",
        ]
    sh("\n".join(script), root)
    repo = pygit2.Repository(str(root))
    onto = repo.revparse_single("onto").peel(pygit2.Commit).tree_id
    triples = []
    for i in range(topics):
        commit = repo.revparse_single(f"t{i}").peel(pygit2.Commit)
        triples.append((commit.parents[0].tree_id, onto, commit.tree_id))
    return repo, triples


def _ahead(triples: list[merge.Triple]) -> dict[int, merge.Chain]:
    """Each triple as a chain of one commit, as the rebase hands them to prefetch."""
    return {i: (ours, [(base, theirs)]) for i, (base, ours, theirs) in enumerate(triples)}


def _answer(result: merge.TreeMerge) -> tuple[object, ...]:
    return (
        result.tree,
        tuple((c.path, c.kind, tuple(sorted(c.stages.items()))) for c in result.conflicts),
        result.labels,
    )


def test_answers_sent_ahead_match_their_own_merge_in_any_order(tmp_path: Path) -> None:
    repo, triples = _repo(tmp_path, 7)
    alone = [_answer(merge.merge_trees(MemOdb(repo), *t)) for t in triples]
    assert any(a[1] for a in alone) and any(not a[1] for a in alone)  # both kinds are in it
    store = MemOdb(repo)
    merge.prefetch(store, _ahead(triples))
    order = [3, 0, 6, 1, 5, 2, 4]
    got = {i: _answer(merge.merge_trees(store, *triples[i])) for i in order}
    assert [got[i] for i in range(len(triples))] == alone


def test_a_merge_needed_now_does_not_wait_behind_the_queue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, triples = _repo(tmp_path, 6)
    store = MemOdb(repo)
    mergers = merge._mergers(store)
    monkeypatch.setattr(mergers, "_parallel", True)  # two processes even on one core
    merge.prefetch(store, _ahead(triples[:5]))
    ahead = mergers._ahead
    assert ahead is not None and len(ahead.pending) == 5
    merge.merge_trees(store, *triples[5])  # not sent ahead: answered by the other process
    assert len(ahead.pending) == 5
    assert _answer(merge.merge_trees(store, *triples[2])) == _answer(merge.merge_trees(MemOdb(repo), *triples[2]))


def test_fast_path_merges_are_not_sent_to_git(tmp_path: Path) -> None:
    repo, triples = _repo(tmp_path, 2)
    store = MemOdb(repo)
    base, _, theirs = triples[0]
    merge.prefetch(store, _ahead([(base, base, theirs)]))  # our side unchanged: the commit itself
    mergers = merge._mergers(store)
    assert mergers._ahead is None and mergers._now is None and not mergers._slow


def test_git_many_runs_side_by_side_and_keeps_order(tmp_path: Path) -> None:
    repo, _ = _repo(tmp_path, 3)
    root = Path(repo.workdir)
    out = git_many(root, [("rev-parse", f"t{i}") for i in range(3)] + [("rev-parse", "no-such-ref")], width=2)
    assert [p.stdout.strip() for p in out[:3]] == [str(repo.revparse_single(f"t{i}").id) for i in range(3)]
    assert out[3].returncode != 0
    with pytest.raises(AssertionError):
        git_many(root, [("fetch", "origin")])


def test_a_tree_git_merged_around_one_of_ours_is_read_through_the_store(tmp_path: Path) -> None:
    """git keeps our side's new a/ tree whole in its answer; that tree reached git only (the
    packs flush writes for it), so reading into the answer goes through the store, not
    libgit2."""
    repo, triples = _repo(tmp_path, 2)
    store = MemOdb(repo)
    base, onto, theirs = triples[1]  # a clean merge git must answer (f1.txt, both sides)
    blob = repo.create_blob(b"new file\n")
    ours = store.edit(onto, {"a/new.py": (0o100644, blob)})
    assert ours is not None
    answer = merge.merge_trees(store, base, ours, theirs)
    assert not answer.fast and answer.clean
    assert store.lookup(answer.tree, "a/new.py") == (0o100644, blob)


def test_answers_never_asked_for_do_not_hold_up_the_exit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, triples = _repo(tmp_path, 6)
    store = MemOdb(repo)
    mergers = merge._mergers(store)
    monkeypatch.setattr(mergers, "_parallel", True)
    merge.prefetch(store, _ahead(triples))
    ahead = mergers._ahead
    assert ahead is not None and ahead.pending
    ahead._reap()  # at exit: stopped, not waited for through merges nobody will read
    assert ahead._proc.returncode == -9


def test_a_chain_is_worked_out_in_memory_up_to_the_merge_git_must_answer(tmp_path: Path) -> None:
    """Two topics, each a commit git need not merge (a file upstream left alone) and then
    one it must (the file upstream edited): prefetch finds the second merge before the
    replay, sends it, and its answer is the one that merge gets alone."""
    root = tmp_path / "repo"
    root.mkdir()
    sh(
        "git init -q && seq 1 40 > f0.txt && seq 1 40 > f1.txt && seq 1 9 > g0.txt && seq 1 9 > g1.txt"
        " && git add . && git commit -qm base && git tag base"
        " && sed -i '1s/.*/upstream/' f0.txt f1.txt && git commit -qam upstream && git tag onto"
        " && for i in 0 1; do git checkout -q -b t$i base && echo mine >> g$i.txt && git commit -qam g$i"
        " && sed -i '40s/.*/topic/' f$i.txt && git commit -qam f$i; done",
        root,
    )
    repo = pygit2.Repository(str(root))
    onto = repo.revparse_single("onto").peel(pygit2.Commit).tree_id
    chains, second, alone = {}, {}, {}
    for i in range(2):
        tip = repo.revparse_single(f"t{i}").peel(pygit2.Commit)
        first = tip.parents[0]
        chains[i] = (onto, [(first.parents[0].tree_id, first.tree_id), (first.tree_id, tip.tree_id)])
        own = MemOdb(repo)  # the replay's way: one merge after the other
        fast = merge.merge_trees(own, first.parents[0].tree_id, onto, first.tree_id)
        assert fast.fast
        second[i] = (first.tree_id, fast.tree, tip.tree_id)
        alone[i] = _answer(merge.merge_trees(own, *second[i]))
    store = MemOdb(repo)
    assert merge.prefetch(store, chains) == [0, 1]
    mergers = merge._mergers(store)
    assert all(mergers.knows(t) for t in second.values()), "the second merges were sent before the replay"
    for i in range(2):
        got = merge.merge_trees(store, *second[i])
        assert not got.fast and _answer(got)[:2] == alone[i][:2]


def test_a_merge_that_looks_for_renames_goes_apart_and_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit editing a file upstream deleted makes merge-ort search every added file for
    a rename: that merge goes to a process of its own, the quick ones are not queued
    behind it, and its topic is named last."""
    repo, triples = _repo(tmp_path, 4)
    root = Path(repo.workdir)
    sh("git checkout -q --detach onto && git rm -q f0.txt && git commit -qm 'delete f0' && git tag gone", root)
    gone = repo.revparse_single("gone").peel(pygit2.Commit).tree_id
    triples = [(base, gone, theirs) for base, _, theirs in triples]
    store = MemOdb(repo)
    mergers = merge._mergers(store)
    monkeypatch.setattr(mergers, "_parallel", True)
    assert merge.prefetch(store, _ahead(triples)) == [1, 2, 3, 0]
    assert len(mergers._slow) == 1 and [t for t, _ in mergers._slow[0].pending] == [triples[0]]
    assert mergers._ahead is not None and [t for t, _ in mergers._ahead.pending] == triples[1:]
    alone = [_answer(merge.merge_trees(MemOdb(repo), *t)) for t in triples]
    assert alone[0][1] and alone[0][1][0][1] == "modify/delete"
    assert [_answer(merge.merge_trees(store, *t)) for t in triples] == alone


def test_abbreviations_are_gits_own_asked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The conflict labels name commits with git's own abbreviation: one git call for all
    the run's commits; an id git cannot read spoils the batch and is asked alone."""
    from series.git import repo as git_repo

    repo, _ = _repo(tmp_path, 3)
    root = Path(repo.workdir)
    sh("git config core.abbrev 11", root)  # not libgit2's default: git's answer is asked for
    ids = [repo.revparse_single(f"t{i}").id for i in range(3)]
    calls: list[tuple[str, ...]] = []
    real = git_repo.git

    def counted(cwd: Path, *args: str, **kw: object) -> object:
        calls.append(args)
        return real(cwd, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(git_repo, "git", counted)
    abbreviate = git_repo.Abbreviations(repo, ids)
    assert [abbreviate(i) for i in reversed(ids)] == [
        sh(f"git rev-parse --short {i}", root).strip() for i in reversed(ids)
    ]
    assert len(calls) == 1 and all(len(a) == 11 for a in map(abbreviate, ids))
    missing = pygit2.Oid(hex="1" * 40)
    spoilt = git_repo.Abbreviations(repo, [missing, ids[0]])
    assert spoilt(ids[0]) == sh(f"git rev-parse --short {ids[0]}", root).strip() and len(calls) == 3


def test_work_handed_in_runs_only_while_git_has_nothing_to_say() -> None:
    """MemOdb.when_waiting: while a merge's answer is not there yet, the tasks handed in run,
    in order; once the answer can be read, no more of them (the replay goes on first). A
    task that raises is dropped: its caller does the work again at the end."""
    read_end, write_end = os.pipe()
    merger = merge.Merger.__new__(merge.Merger)  # git's side of the pipe is played below
    merger.store = SimpleNamespace(meanwhile=deque())  # type: ignore[assignment]
    merger._proc = SimpleNamespace(stdout=os.fdopen(read_end, "rb"))  # type: ignore[assignment]
    merger._buffer = b""
    ran: list[str] = []

    def fails() -> None:
        ran.append("fails")
        raise RuntimeError("a bug in a check")

    def git_answers() -> None:
        ran.append("git answers")
        os.write(write_end, b"1\0")

    def later() -> None:
        ran.append("later")

    merger.store.meanwhile.extend([fails, git_answers, later])
    try:
        assert merger._field() == b"1"
        assert ran == ["fails", "git answers"]
        assert list(merger.store.meanwhile) == [later]  # left for the next wait, or for the end
    finally:
        os.close(write_end)
        merger._proc.stdout.close()
