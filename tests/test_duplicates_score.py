"""vLLM's duplicate-PR bot reproduced (series.propose.duplicates_score): the hash and the
vectors against sklearn's (recorded), the weights and the threshold at their edge."""

from __future__ import annotations

import json
from pathlib import Path

from series.propose import duplicates_score as bot

RECORDED = json.loads((Path(__file__).parent / "fixtures" / "duplicate_bot_sklearn.json").read_text())


def test_murmurhash_is_sklearns() -> None:
    # sklearn/utils/tests/test_murmurhash.py, and the reference vectors of MurmurHash3_x86_32
    assert bot.murmurhash3_32(b"foo") == -156908512 and bot.murmurhash3_32(b"foo", 42) == -1322301282
    assert [bot.murmurhash3_32(s) for s in (b"", b"a", b"abc", b"abcd")] == [0, 1009084850, -1277324294, 1139631978]


def test_vectors_and_cosines_are_sklearns_hashing_vectorizer() -> None:
    """Recorded from scikit-learn 1.9.1 (tokens, lowercasing, unicode, the hash's index, l2)."""
    vectors = [bot.vector(t) for t in RECORDED["texts"]]
    for mine, theirs in zip(vectors, RECORDED["vectors"]):
        assert sorted(mine) == sorted(int(k) for k in theirs)
        assert all(abs(mine[int(k)] - v) < 1e-12 for k, v in theirs.items())
    for i, a in enumerate(vectors):
        for j, b in enumerate(vectors):
            assert abs(bot.cosine(a, b) - RECORDED["cosines"][i][j]) < 1e-12, (i, j)


def _pull(number: int, title: str, files: tuple[str, ...], body: str = "## Purpose\n\nFix it.") -> bot.PullText:
    return bot.PullText(number, title, body, files)


def test_the_threshold_crosses_with_one_shared_file_and_stays_below_without() -> None:
    """Same text: cosine 1/(1 + 1e-10), so 0.75 * text falls short of 0.75 by 7.5e-11; one
    shared file of two (Jaccard 1/3) adds 0.0833: flagged."""
    mine = _pull(0, "[Bugfix] fix eviction order", ("a.py", "b.py"))
    scores = bot.score_all(
        mine, [_pull(1, "[Bugfix] fix eviction order", ("b.py",)), _pull(2, "[Bugfix] fix eviction order", ("c.py",))]
    )
    crossing, below = scores[1], scores[2]
    assert crossing.flagged and abs(crossing.score - (0.75 + 0.25 / 2)) < 1e-9, crossing
    assert below.files == 0.0 and below.score < bot.SIMILARITY_THRESHOLD and not below.flagged, below
    assert bot.SIMILARITY_THRESHOLD - below.score < 1e-9, "just below: by the bot's 1e-10 in the cosine"


def test_only_the_top_five_and_the_text_top_twenty_are_listed() -> None:
    mine = _pull(0, "[Bugfix] fix eviction order", ("a.py",))
    same = [_pull(n, "[Bugfix] fix eviction order", ("a.py",)) for n in range(1, 8)]
    scores = bot.score_all(mine, same)
    assert sum(s.flagged for s in scores.values()) == bot.TOP_K, scores
    assert all(s.score >= bot.SIMILARITY_THRESHOLD for s in scores.values())
    # 20 PRs closer in text push a file-identical PR out of stage 1: the bot never scores its files
    close = [_pull(n, "[Bugfix] fix eviction order", ()) for n in range(10, 30)]
    far = _pull(99, "[Bugfix] fix eviction order of the touched blocks in the LRU", ("a.py",))
    scores = bot.score_all(mine, [*close, far])
    assert scores[99].score >= bot.SIMILARITY_THRESHOLD, "alone, it would be flagged"
    assert scores[99].text_rank == 21 and not scores[99].flagged, scores[99]


def test_the_text_is_title_and_the_first_800_characters_of_the_body() -> None:
    assert bot.bot_text("T", "x" * 900) == "Title: T\nBody: " + "x" * 800
    assert bot.bot_text("T", None) == "Title: T\nBody: "
