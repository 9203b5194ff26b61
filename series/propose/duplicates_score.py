"""vLLM's duplicate-PR bot, reproduced: the score it gives a pair of PRs and whether it flags it.

Read from vllm-project/vllm at commit f8d16cfacae808d4849a01805c0bd2d59d793ce2 (the one stored
version the search index holds; proposed in vllm-project/vllm#39695 with the same weights):
  .github/workflows/detect-duplicate-prs.yml  runs the script on every PR opened, reopened,
      synchronized, edited or made ready; sets no SIMILARITY_THRESHOLD, so the default holds
  .github/workflows/scripts/detect_duplicate_prs.py  the algorithm:
      text      "Title: {title}\\nBody: {body[:800]}" of each PR
      stage 1   the 500 most recently updated PRs (state "all"), ranked by the cosine of the
                two texts' vectors; only the top FILE_COMPARE_TOP_N = 20 go on
      stage 2   score = TEXT_WEIGHT 0.75 * cosine + FILE_WEIGHT 0.25 * Jaccard of the two
                PRs' file names (the first page, 100, of /pulls/N/files; renames by new name)
      flagged   the TOP_K = 5 best scores that are >= SIMILARITY_THRESHOLD 0.75, posted in one
                comment marked <!-- duplicate-pr-checker --> ("Potentially Related PRs")
      cosine    dot(a, b) / (|a| |b| + 1e-10)
The vectors: the bot uses sentence-transformers' all-MiniLM-L6-v2 when it imports (the
workflow installs it), else sklearn's HashingVectorizer(n_features=2048, alternate_sign=False,
norm="l2") with its defaults (lowercase, tokens `(?u)\\b\\w\\w+\\b`, MurmurHash3 x86_32 seed 0,
index |h| mod 2048, counts). MiniLM needs model weights this tool neither ships nor downloads,
so the text similarity here is the bot's own fallback, reproduced exactly and labelled as such
(TEXT_MODEL): the weights, the threshold, the Jaccard and the text are the bot's; the cosine
of MiniLM vectors can differ from the hashing one. Pure: nothing here reads git or the network.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

SOURCE = "vllm-project/vllm@f8d16cfacae808d4849a01805c0bd2d59d793ce2:.github/workflows/scripts/detect_duplicate_prs.py"
TEXT_WEIGHT = 0.75
FILE_WEIGHT = 0.25
SIMILARITY_THRESHOLD = 0.75
TOP_K = 5
FILE_COMPARE_TOP_N = 20
MAX_CANDIDATES = 500
BODY_CHARS = 800
FILES_PAGE = 100  # get_pr_files reads one page of per_page=100, never the next
N_FEATURES = 2048
TEXT_MODEL = "hashing-2048 (the bot's fallback; in CI it runs all-MiniLM-L6-v2, which may score text differently)"
COMMENT_MARKER = "<!-- duplicate-pr-checker -->"

_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # sklearn's default token_pattern
_MASK = 0xFFFFFFFF


def murmurhash3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86_32, signed, as sklearn.utils.murmurhash3_32 (the hashing trick's hash)."""

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & _MASK

    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = seed & _MASK
    whole = len(data) // 4 * 4
    for i in range(0, whole, 4):
        k = rotl(int.from_bytes(data[i : i + 4], "little") * c1 & _MASK, 15) * c2 & _MASK
        h = (rotl(h ^ k, 13) * 5 + 0xE6546B64) & _MASK
    tail = data[whole:]
    if tail:
        k = int.from_bytes(tail, "little")
        h ^= rotl(k * c1 & _MASK, 15) * c2 & _MASK
    h ^= len(data)
    h = (h ^ (h >> 16)) * 0x85EBCA6B & _MASK
    h = (h ^ (h >> 13)) * 0xC2B2AE35 & _MASK
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def bot_text(title: str, body: str | None) -> str:
    """build_pr_text: what the bot compares of a PR."""
    return f"Title: {title}\nBody: {(body or '')[:BODY_CHARS]}"


def vector(text: str) -> dict[int, float]:
    """HashingVectorizer(n_features=2048, alternate_sign=False, norm="l2").transform([text])[0],
    as a sparse {index: value}."""
    counts: Counter[int] = Counter()
    for token in _TOKEN.findall(text.lower()):
        h = murmurhash3_32(token.encode("utf-8"))
        # sklearn's _hashing_fast: abs(-2**31) overflows an int32, so it is spelled out
        counts[(2147483647 - (N_FEATURES - 1)) % N_FEATURES if h == -2147483648 else abs(h) % N_FEATURES] += 1
    norm = math.sqrt(sum(v * v for v in counts.values()))
    return {i: v / norm for i, v in counts.items()} if norm else {}


def cosine(a: dict[int, float], b: dict[int, float]) -> float:
    dot = sum(v * b.get(i, 0.0) for i, v in a.items())
    na = math.sqrt(sum(v * v for v in a.values()))
    nb = math.sqrt(sum(v * v for v in b.values()))
    return dot / (na * nb + 1e-10)


def jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    sa, sb = set(a), set(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


@dataclass(frozen=True)
class PullText:
    """One PR as the bot sees it: its number, title, body and changed file names."""

    number: int
    title: str
    body: str | None
    files: tuple[str, ...] | None = None  # None: not read (it shares no file: Jaccard 0)


@dataclass(frozen=True)
class BotScore:
    number: int
    score: float  # TEXT_WEIGHT * text + FILE_WEIGHT * files
    text: float  # cosine of the two texts (TEXT_MODEL)
    files: float  # Jaccard of the file names
    text_rank: int  # 1-based, by text similarity among the PRs read (stage 1)
    flagged: bool  # in stage 1's top 20, in the top 5 scores, and >= the threshold

    def to_json(self) -> dict[str, object]:
        return {
            "number": self.number,
            "score": round(self.score, 4),
            "text": round(self.text, 4),
            "files": round(self.files, 4),
            "text_rank": self.text_rank,
            "flagged": self.flagged,
            "threshold": SIMILARITY_THRESHOLD,
        }


def score_all(mine: PullText, pool: Sequence[PullText]) -> dict[int, BotScore]:
    """The bot's two stages over `pool` (the PRs read here; the bot reads the MAX_CANDIDATES most
    recently updated of any state): every PR's score, and which the bot would list."""
    own = vector(bot_text(mine.title, mine.body))
    my_files = (mine.files or ())[:FILES_PAGE]
    texts = [(cosine(own, vector(bot_text(p.title, p.body))), p) for p in pool if p.number != mine.number]
    texts.sort(key=lambda t: -t[0])  # stable, as the bot's list.sort: ties keep the API's order
    scored = []
    for rank, (text, pr) in enumerate(texts, 1):
        files = jaccard(my_files, (pr.files or ())[:FILES_PAGE])
        scored.append((TEXT_WEIGHT * text + FILE_WEIGHT * files, text, files, rank, pr.number))
    stage2 = sorted((s for s in scored if s[3] <= FILE_COMPARE_TOP_N), key=lambda s: -s[0])
    listed = {s[4] for s in stage2[:TOP_K] if s[0] >= SIMILARITY_THRESHOLD}
    return {n: BotScore(n, score, text, files, rank, n in listed) for score, text, files, rank, n in scored}


# -- what preflight and propose both say of a score ------------------------------------------


def line(score: BotScore) -> str:
    """A candidate's score, one line: flagged, over the threshold but not listed, or below."""
    numbers = f"{score.score:.0%} (text {score.text:.0%}, files {score.files:.0%})"
    if score.flagged:
        return (
            f"duplicate bot: {numbers} >= {SIMILARITY_THRESHOLD:.0%}: it would flag this PR as "
            f"a likely duplicate of #{score.number} (\"Potentially Related PRs\")"
        )
    if score.score >= SIMILARITY_THRESHOLD:
        return (
            f"duplicate bot: {numbers}: over {SIMILARITY_THRESHOLD:.0%} but not listed (text rank "
            f"{score.text_rank}; it lists the top {TOP_K} of its top {FILE_COMPARE_TOP_N} by text)"
        )
    return f"duplicate bot: {numbers}, below its {SIMILARITY_THRESHOLD:.0%} threshold: not flagged"


def note(title: str) -> str:
    """How the scores were made: the PR scored, the bot's weights, threshold and source."""
    return (
        f"duplicate bot: scored as {title!r} with the description propose would post; "
        f"score = {TEXT_WEIGHT} text + {FILE_WEIGHT} files (Jaccard), flagged at "
        f">= {SIMILARITY_THRESHOLD:.0%} among its top {FILE_COMPARE_TOP_N} by text and "
        f"top {TOP_K} by score ({SOURCE}); text: {TEXT_MODEL}"
    )


def summary_json(title: str, scores: dict[int, BotScore]) -> dict[str, object]:
    return {
        "title": title,
        "text_model": TEXT_MODEL,
        "source": SOURCE,
        "threshold": SIMILARITY_THRESHOLD,
        "weights": {"text": TEXT_WEIGHT, "files": FILE_WEIGHT},
        "flagged": [n for n, s in scores.items() if s.flagged],
    }
