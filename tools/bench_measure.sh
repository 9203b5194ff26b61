#!/usr/bin/env bash
# series measure on the real vLLM 0.31.0 (CPU): an eviction trace over the real offload LRU
# policy, in two trees laid over the installed release, predictions frozen first.
#
#   tools/bench_measure.sh VENV [UPSTREAM] [WORK]
#     VENV      an environment built by ../shared/bench/vllm_env.sh VENV 0.31.0
#     UPSTREAM  the one-commit-per-release vLLM repo (default /tmp/bench/upstream4; cloned, never changed)
#     WORK      scratch directory (default: a new temporary one)
#
# Two topics over v0.31.0 change vllm/v1/kv_offload/cpu/policies/lru.py: ours makes eviction
# FIFO (a touch no longer refreshes), theirs (an "upstream PR") only rebuilds the heap earlier.
# Four predictions are frozen; one fails (the victims' sum differs) and is explained after the
# run; `--collect` of the run's artifacts then shows it struck with its reason, without running
# again. Prints the report and the wall time of the measurement; the anchor is one plain run of
# the workload in VENV (most of either is `import vllm`).
set -euo pipefail
venv=$1; upstream=${2:-/tmp/bench/upstream4}; work=${3:-$(mktemp -d)}
here=$(cd "$(dirname "$0")/.." && pwd)
series() { PYTHONPATH="$here" "${SERIES_PYTHON:-python3}" -m series "$@"; }
rm -rf "$work/fork" "$work/artifacts"
git clone -q -o upstream "$upstream" "$work/fork" && cd "$work/fork"
git checkout -q --detach v0.31.0
export GIT_AUTHOR_NAME="Fork Maintainer" GIT_AUTHOR_EMAIL=fork@example.com
export GIT_COMMITTER_NAME="Fork Maintainer" GIT_COMMITTER_EMAIL=fork@example.com
edit() {  # edit BRANCH OLD NEW MESSAGE: one commit on lru.py over v0.31.0
  git checkout -q -B "$1" v0.31.0
  OLD=$2 NEW=$3 python3 - <<'EOF'
import os
p = "vllm/v1/kv_offload/cpu/policies/lru.py"
s = open(p).read()
assert os.environ["OLD"] in s
open(p, "w").write(s.replace(os.environ["OLD"], os.environ["NEW"]))
EOF
  git commit -qam "$4"
}
edit topic/offload-fifo "        self._update_recency(reversed(list(keys)))" \
  "        del keys, req_context  # a touch keeps insertion order (FIFO)" "offload: FIFO eviction"
edit topic/pr-70001 "len(updated_evictable) >= max(64, len(self._evictable) // 4)" \
  "len(updated_evictable) >= max(32, len(self._evictable) // 8)" "[KV offload] rebuild the heap earlier (#70001)"
git checkout -q --detach v0.31.0
cat > series.yaml <<'EOF'
upstream:
  remote: upstream
  base: v0.31.0
integration: series/integration
topics:
  - name: offload-fifo
    branch: topic/offload-fifo
  - name: pr-70001
    branch: topic/pr-70001
EOF
cat > "$work/workload.py" <<'EOF'
"""An eviction trace over vLLM's CPU offload LRU policy: what is evicted, and how fast."""
import hashlib, json, os, random, time
from vllm.v1.kv_offload.base import make_offload_key
from vllm.v1.kv_offload.cpu.policies.base import ChunkStatus
from vllm.v1.kv_offload.cpu.policies.lru import LRUCachePolicy

rng = random.Random(23)
policy = LRUCachePolicy(cache_capacity=4096)
keys = [make_offload_key(hashlib.sha256(str(i).encode()).digest(), 0) for i in range(4096)]
for i, key in enumerate(keys):
    chunk = ChunkStatus(i)
    chunk.ref_cnt = 0
    policy.insert(key, chunk)
touched = set()
start = time.perf_counter()
for _ in range(200):
    group = rng.sample(keys[:1024], 16)   # old blocks the workload keeps reusing
    touched.update(group)
    policy.touch(group, None)
victims = policy.evict(512, protected=set())
elapsed = time.perf_counter() - start
ids = [chunk.chunk_id for _, chunk in victims]
json.dump({"victims": len(ids), "victims_sum": sum(ids), "chunk0_evicted": 0 in ids,
           "touched_evicted": sum(1 for key, _ in victims if key in touched),
           "trace_ms": round(elapsed * 1000, 3)}, open(os.environ["SERIES_METRICS"], "w"))
EOF
cat > predictions.yaml <<'EOF'
predictions:
  - id: same-count
    tree: theirs
    metric: victims
    equals: 512
    why: "both evict exactly what was asked"
  - id: same-sum
    tree: theirs
    metric: victims_sum
    same_as: ours
    why: "both keep the blocks the trace reuses"
  - id: no-chunk0
    tree: theirs
    metric: chunk0_evicted
    equals: false
    why: "chunk 0 is among the old blocks the trace keeps touching"
  - id: ours-evicts-touched
    tree: ours
    metric: touched_evicted
    at_least: 1
    why: "FIFO ignores touches"
EOF
series predict predictions.yaml >/dev/null
trees=(--tree ours=only:offload-fifo --tree theirs=topic:pr-70001)
start=$(date +%s.%N)
series measure --predictions predictions.yaml "${trees[@]}" --python "$venv/bin/python" \
  --artifact "$work/artifacts" -- python "$work/workload.py" >/dev/null
end=$(date +%s.%N)
series predict predictions.yaml --explain same-sum \
  "ours is FIFO: a touch does not refresh, so the reused blocks go first" >/dev/null
series measure --collect "$work/artifacts" --predictions predictions.yaml
anchor_start=$(date +%s.%N)
(cd "$work" && SERIES_METRICS="$work/anchor.json" "$venv/bin/python" "$work/workload.py")
anchor_end=$(date +%s.%N)
python3 -c "import sys; a, b, c, d = map(float, sys.argv[1:]); print(f'measure, two trees: {b - a:.1f} s wall; one plain run of the workload (the anchor): {d - c:.1f} s')" \
  "$start" "$end" "$anchor_start" "$anchor_end"
uptime
