'''The demo's measurement: a tiny CPU workload over its offload policy, and the predictions
written before it runs (issue 23: predict, measure, explain, comment).

The trace is an eviction trace over `CPUOffloadingManager` of the demo's upstream: requests
share prefixes of KV chunks; a request that reuses a prefix loads (touches) the cached chunks
in order, then stores the ones missing. The eviction-order bug both fixes address makes a
touched request's chunk 0 the first to go; the metrics are what that changes. One prediction
fails on purpose, the way it failed for real: both fixes order *touches*, but `store()` still
inserts a fresh prefix's chunk 0 first, so it is still lost first.
'''

from __future__ import annotations

from pathlib import Path

EVICT_TRACE = '''\
"""An eviction trace over the CPU offload policy of the tree it runs in (series measure)."""
import json
import os
import random
import sys

sys.path.insert(0, os.getcwd())  # the tree's checkout, as `series measure` lays it out
from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager  # noqa: E402

TOKENS_PER_CHUNK = 16
rng = random.Random(61050)
manager = CPUOffloadingManager(num_blocks=48)
cached = set()
hits = evictions = chunk0_lost = 0
prefixes = [[p * 100 + c for c in range(rng.randint(3, 8))] for p in range(24)]
for _ in range(400):
    keys = prefixes[rng.randrange(len(prefixes))][: rng.randint(2, 8)]
    present = [k for k in keys if k in cached]
    hits += len(present)
    manager.load(present)
    missing = [k for k in keys if k not in cached]
    before = set(manager.policy.blocks)
    manager.store(missing)
    for key in sorted(before - set(manager.policy.blocks)):
        evictions += 1
        cached.discard(key)
        # chunk 0 gone while a later chunk of its prefix stays: the next reuse misses it all
        if key % 100 == 0 and any(k in manager.policy.blocks for k in range(key + 1, key + 8)):
            chunk0_lost += 1
    cached.update(missing)

with open(os.environ["SERIES_METRICS"], "w") as out:
    json.dump({"tokens_sum": hits * TOKENS_PER_CHUNK, "evictions": evictions,
               "chunk0_lost": chunk0_lost}, out)
'''

PREDICTIONS = '''\
# Written before the run and frozen with `series predict`: a claim that fails stays here,
# and its reason goes in the journal (`series predict FILE --explain ID "why"`).
predictions:
  - id: same-sum
    tree: theirs
    metric: tokens_sum
    same_as: ours
    why: "both fixes touch a request's chunks in reverse order, so the same chunks stay cached"
  - id: more-hits
    tree: theirs
    metric: tokens_sum
    at_least: 9700
    why: "keeping a touched request's chunk 0 serves more prefix tokens than the release (9632)"
  - id: no-chunk0
    tree: theirs
    metric: chunk0_lost
    equals: 0
    why: "with the fix no request loses its chunk 0 while its later chunks stay cached"
'''

WHY_NO_CHUNK0_FAILED = (
    "store() still inserts a fresh prefix's chunk 0 first, so it is evicted first: both fixes order touches only"
)


def write(directory: Path) -> Path:
    """The workload and the predictions in DIRECTORY/measure (outside the fork: a
    maintainer keeps them beside it, not in a topic)."""
    where = directory / "measure"
    where.mkdir(parents=True, exist_ok=True)
    (where / "evict_trace.py").write_text(EVICT_TRACE)
    (where / "predictions.yaml").write_text(PREDICTIONS)
    return where
