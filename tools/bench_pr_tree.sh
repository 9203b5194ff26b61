#!/usr/bin/env bash
# The PR's own tree on the real install (issue 36): `series test --run` and `series measure`
# on `pr:TOPIC` (the topic replayed onto upstream's main) and `main`, laid over the
# installed vLLM 0.31.0 (CPU) as "main's Python over the release's compiled parts", next
# to the release tree (`base`) and the series.
#
#   tools/bench_pr_tree.sh VENV [FORK] [WORK]
#     VENV  an environment built by ../shared/bench/vllm_env.sh VENV 0.31.0
#     FORK  the 23-topic fork over v0.30.0 with remote `upstream` (default /tmp/bench/fork;
#           copied, never changed); its upstream/main is v0.33.0 on ../shared/bench's
#           one-commit-per-release repo, the last release on the realistic history
#     WORK  scratch directory (default: a new temporary one)
#
# Steps: as tools/bench_evidence.sh (init, drop the topic lru.py's rewrite conflicts with,
# rebase onto v0.31.0), then a topic adding LRUCachePolicy.num_evictable() and its test,
# written to apply to main too (insert() gained a req_context on the way to v0.33.0; the
# test passes one when the policy takes it). Then, timed: `series test --run` with
# `--tree pr:TOPIC` (main is added beside it), and `series measure` of the trees release,
# main and pr over a workload that reads the policy and imports vLLM's custom ops. Prints
# each tree's commit, what it ran, its pass/fail counts, and wall and CPU times.
set -euo pipefail
venv=$1; fork=${2:-/tmp/bench/fork}; work=${3:-$(mktemp -d)}
mkdir -p "$work"
here=$(cd "$(dirname "$0")/.." && pwd)
series() { PYTHONPATH="$here" "${SERIES_PYTHON:-python3}" -m series "$@"; }
export XDG_CACHE_HOME="$work/cache"
rm -rf "$work/fork" "$work/cache"; cp -a "$fork" "$work/fork"; cd "$work/fork"
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
import inspect

from vllm.v1.kv_offload.base import make_offload_key
from vllm.v1.kv_offload.cpu.policies.base import ChunkStatus
from vllm.v1.kv_offload.cpu.policies.lru import LRUCachePolicy


def _insert(policy, key, chunk):
    if "req_context" in inspect.signature(policy.insert).parameters:  # main's policy
        from vllm.v1.kv_offload.base import ReqContext

        policy.insert(key, chunk, ReqContext(req_id="bench"))
    else:
        policy.insert(key, chunk)


def test_num_evictable_follows_pinning():
    policy = LRUCachePolicy(cache_capacity=4)
    keys = [make_offload_key(bytes([i]) * 8, 0) for i in range(3)]
    for i, key in enumerate(keys):
        chunk = ChunkStatus(i)
        chunk.ref_cnt = 0
        _insert(policy, key, chunk)
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
echo "upstream/main: $(git log -1 --format='%h %s' upstream/main)"
TIMEFORMAT="%R %U %S"  # wall, user, system seconds (children included): the machine may be shared

# 1. series test --run: base, series, main, pr:TOPIC (main joins any pr: tree by itself)
for run in cold warm; do
  code=0
  { time series test lru-evictable-count --run --python "$venv/bin/python" \
      --tree pr:lru-evictable-count ${JOBS:+--jobs "$JOBS"} --json > "$work/test-$run.json" \
      2> "$work/test-$run.err" || code=$?; } 2> "$work/test-$run.time"
  python3 - "$work/test-$run.json" "$run" "$(cat "$work/test-$run.time")" "$code" "$(cut -d' ' -f1 /proc/loadavg)" <<'EOF'
import json, sys
path, run, times, code, load = sys.argv[1:]
wall, user, system = (float(x) for x in times.split())
try:
    data = json.load(open(path))
except ValueError:
    sys.exit(f"test {run}: exit {code}, no JSON report (see {path[:-5]}.err)")
sel = data["selection"]
print(f"test {run}: {wall:.1f} s wall, {user + system:.1f} s CPU (load average {load}), exit {code}; "
      f"{len(sel['files'])} test files of {sel['candidate_files']} in {len(sel['steps'])} covering steps")
if run == "cold":
    print("  files: " + ", ".join(sel["files"]))
for tree in data["trees"]:
    print(f"  {tree['name']}: {data['summary'].get(tree['name'])}; {tree['describe']}"
          + (f" (against {tree['against']})" if tree["against"] else ""))
print(f"  verdicts: {data['verdicts']}; worse: {data['worse']}")
EOF
done

# 2. series measure: the release tree, main and the PR's tree over the same install
cat > "$work/workload.py" <<'EOF'
"""What a tree is over the install: the policy's API, an eviction trace, and vLLM's custom ops."""
import hashlib, inspect, json, os, time
start = time.perf_counter()
from vllm.v1.kv_offload.base import make_offload_key
from vllm.v1.kv_offload.cpu.policies.base import ChunkStatus
from vllm.v1.kv_offload.cpu.policies.lru import LRUCachePolicy
imported = time.perf_counter()
metrics = {"has_num_evictable": hasattr(LRUCachePolicy, "num_evictable"),
           "insert_takes_context": "req_context" in inspect.signature(LRUCachePolicy.insert).parameters}
policy = LRUCachePolicy(cache_capacity=4096)
extra = ()
if metrics["insert_takes_context"]:
    from vllm.v1.kv_offload.base import ReqContext
    extra = (ReqContext(req_id="bench"),)
keys = [make_offload_key(hashlib.sha256(str(i).encode()).digest(), 0) for i in range(4096)]
for i, key in enumerate(keys):
    chunk = ChunkStatus(i)
    chunk.ref_cnt = 0
    policy.insert(key, chunk, *extra)
victims = policy.evict(512, protected=set())
metrics["victims"] = len(victims)
metrics["trace_ms"] = round((time.perf_counter() - imported) * 1000, 3)
metrics["import_ms"] = round((imported - start) * 1000, 3)
try:  # main's Python calling the release's compiled ops: does it even import?
    import vllm._custom_ops  # noqa: F401
    metrics["custom_ops"] = "imported"
except Exception as e:  # the reason is the measurement
    metrics["custom_ops"] = f"{type(e).__name__}: {e}"[:200]
json.dump(metrics, open(os.environ["SERIES_METRICS"], "w"))
EOF
cat > predictions.yaml <<'EOF'
predictions:
  - id: pr-counts
    tree: pr
    metric: has_num_evictable
    equals: true
    why: "the PR adds num_evictable() to main's policy"
  - id: main-has-none
    tree: main
    metric: has_num_evictable
    equals: false
    why: "main has no num_evictable() yet"
  - id: pr-on-main
    tree: pr
    metric: insert_takes_context
    same_as: main
    why: "the PR stands on main: insert() as main has it"
  - id: release-is-release
    tree: release
    metric: insert_takes_context
    equals: false
    why: "v0.31.0's insert() takes no request context"
  - id: same-victims
    tree: pr
    metric: victims
    same_as: release
    why: "every chunk is evictable: both evict what was asked"
EOF
series predict predictions.yaml >/dev/null
code=0
{ time series measure --predictions predictions.yaml --tree release=base --tree main \
    --tree pr=pr:lru-evictable-count --python "$venv/bin/python" -- python "$work/workload.py" \
    > "$work/measure.txt" 2> "$work/measure.err" || code=$?; } 2> "$work/measure.time"
python3 -c "import sys; w, u, s = map(float, sys.argv[1].split()); print(f'measure, three trees: {w:.1f} s wall, {u + s:.1f} s CPU (load average {sys.argv[3]}), exit {sys.argv[2]}')" \
  "$(cat "$work/measure.time")" "$code" "$(cut -d' ' -f1 /proc/loadavg)"
cat "$work/measure.txt"; [ "$code" = 0 ] || tail -5 "$work/measure.err"
anchor=$( { time (cd "$work" && SERIES_METRICS="$work/anchor.json" "$venv/bin/python" "$work/workload.py" 2> "$work/anchor.err"); } 2>&1 )
echo "one plain run of the workload on the release (the anchor): $anchor s (wall user sys); $(cat "$work/anchor.json")"
echo "work: $work"
uptime
