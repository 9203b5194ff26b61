#!/usr/bin/env bash
# The evidence run on the real fork: upstream's tests over the installed vLLM 0.31.0 (CPU),
# with and without a topic that adds LRUCachePolicy.num_evictable() and its test.
#
#   [JOBS=N] tools/bench_evidence.sh VENV [FORK] [WORK]
#     VENV  an environment built by ../shared/bench/vllm_env.sh VENV 0.31.0
#     FORK  the 23-topic fork over v0.30.0 (default /tmp/bench/fork; copied, never changed)
#     WORK  scratch directory (default: a new temporary one)
#     JOBS  passed as --jobs N (default: series' own, every tree at once up to cores + 1);
#           JOBS=1 is the one-tree-at-a-time anchor
#
# Steps: copy the fork, `series init`, drop the topic that conflicts with v0.31.0's rewrite
# of lru.py, rebase onto v0.31.0, add the new topic, then time a cold run (empty caches)
# and a warm one. Prints the selection (files vs the covering steps), wall and CPU time; the
# anchor is the kv_offload step run whole (tests/v1/kv_offload: 658 tests, 273 s per tree
# on a 2-core machine, per ../shared/bench/README.md).
set -euo pipefail
venv=$1; fork=${2:-/tmp/bench/fork}; work=${3:-$(mktemp -d)}
mkdir -p "$work"
here=$(cd "$(dirname "$0")/.." && pwd)
series() { PYTHONPATH="$here" "${SERIES_PYTHON:-python3}" -m series "$@"; }
export XDG_CACHE_HOME="$work/cache"
rm -rf "$work/fork"; cp -a "$fork" "$work/fork"; cd "$work/fork"  # each its own step: set -e stops at the first that fails
series init --base v0.30.0 --topics 'topic/*' >/dev/null
series drop offload-evict-fix --reason "upstream rewrote lru.py in v0.31.0" >/dev/null
series rebase --onto v0.31.0 >/dev/null
git checkout -q -B topic/lru-evictable-count v0.31.0
python3 - <<'EOF'
p = "vllm/v1/kv_offload/cpu/policies/lru.py"
s = open(p).read()
s = s.replace("    @override\n    def get(self", "    def num_evictable(self) -> int:\n"
              '        """How many cached chunks eviction could take now (ref_cnt == 0)."""\n'
              "        return len(self._evictable)\n\n    @override\n    def get(self", 1)
open(p, "w").write(s)
EOF
cat > tests/v1/kv_offload/cpu/policies/test_lru_evictable.py <<'EOF'
from vllm.v1.kv_offload.base import make_offload_key
from vllm.v1.kv_offload.cpu.policies.base import ChunkStatus
from vllm.v1.kv_offload.cpu.policies.lru import LRUCachePolicy


def test_num_evictable_follows_pinning():
    policy = LRUCachePolicy(cache_capacity=4)
    keys = [make_offload_key(bytes([i]) * 8, 0) for i in range(3)]
    for i, key in enumerate(keys):
        chunk = ChunkStatus(i)
        chunk.ref_cnt = 0
        policy.insert(key, chunk)
    assert policy.num_evictable() == 3
    policy.mark_non_evictable(keys[0])
    assert policy.num_evictable() == 2
    assert policy.evict(2, protected=set()) is not None
    assert policy.num_evictable() == 0
EOF
git add -A vllm tests
git -c user.name="Fork Maintainer" -c user.email=fork@example.com commit -qm "[KV offload] LRUCachePolicy.num_evictable()"
git checkout -q --detach v0.31.0
series add topic/lru-evictable-count >/dev/null
TIMEFORMAT="%R %U %S"  # wall, user, system seconds (children included): the machine may be shared
for run in cold warm; do
  code=0
  { time series test lru-evictable-count --run --python "$venv/bin/python" --without lru-evictable-count \
      ${JOBS:+--jobs "$JOBS"} --json > "$work/$run.json" 2> "$work/$run.err" || code=$?; } 2> "$work/$run.time"
  python3 - "$work/$run.json" "$run" "$(cat "$work/$run.time")" "$code" "$(cut -d' ' -f1 /proc/loadavg)" "${JOBS:-}" <<'EOF'
import json, sys
data = json.load(open(sys.argv[1]))
sel = data["selection"]
wall, user, system = (float(x) for x in sys.argv[3].split())
print(f"{sys.argv[2]} (jobs {sys.argv[6] or 'default'}): {wall:.1f} s wall, {user + system:.1f} s CPU (load average {sys.argv[5]}), "
      f"exit {sys.argv[4]}; {len(sel['files'])} test files of {sel['candidate_files']} in "
      f"{len(sel['steps'])} covering steps; summary {data['summary']}; needed {data['needed']}")
EOF
done
echo "work: $work"
