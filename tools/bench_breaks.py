#!/usr/bin/env python3
"""Measure the semantic check (series.semantic.breaks) on real vLLM release trees.

    .venv/bin/python tools/bench_breaks.py [--upstream /tmp/bench/upstream4] [--fork /tmp/bench/fork]

1. Caught: on a scratch clone of UPSTREAM (../shared/bench/vllm_upstream.py), topics written
   here against APIs that really changed between v0.30.0 -> v0.31.0 and v0.31.0 -> v0.32.0
   (a removed function, a removed keyword, an override whose base signature changed, a
   removed envs.VLLM_* variable, a config field read through VllmConfig, a model registry
   entry whose module went, a name moved to another module, `self.x` of an upstream base
   whose __init__ no longer sets x, `self.vllm_config.<config>.<field>` in a Worker subclass, a torch.ops._C op csrc no longer registers, a plugin
   entry point naming a removed function), each checked; every one must be reported.
2. False positives on upstream's own code: the uses of every file upstream left unchanged
   between two releases, judged as if a topic had written them: none may break.
3. False positives and cost: the shared 23-topic fork (../shared/bench/fork_fixture.py),
   `series rebase --onto v0.31.0 --dry-run` (the conflicting topic skipped: a dry run that
   halts on a conflict has nothing to check), whole process: no topic may report a break;
   the check's own time in-process, and the whole dry run of this tree against one with
   the check stubbed out (medians of 3).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pygit2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from series.semantic import breaks  # noqa: E402
from series.semantic.upstream_api import UpstreamTree  # noqa: E402
from tools.bench_rebase import series_yaml  # noqa: E402

SIG = pygit2.Signature("Fork", "fork@example.com", 1767225600, 0)


def _params(tree: UpstreamTree, module: str, cls: str, method: str) -> str:
    found = tree.find(f"{module}.{cls}.{method}")
    assert found is not None and found.function is not None, (module, cls, method)
    return ", ".join(found.function.params)


def topics_for(tree: UpstreamTree, old: str) -> dict[str, str]:
    if old == "v0.30.0":
        return {
            "removed-fn": "from vllm._custom_ops import allspark_repack_weight\n\n\n"
            "def f(w):\n    return allspark_repack_weight(w)\n",
            "removed-kw": "from vllm.distributed.parallel_state import graph_capture\n\n\n"
            "def g(device):\n    return graph_capture(device, graph_capture_context=None)\n",
            "override": "from vllm.distributed.eplb.eplb_communicator import EplbCommunicator\n\n\n"
            "class Mine(EplbCommunicator):\n"
            f"    def set_stream({_params(tree, 'vllm.distributed.eplb.eplb_communicator', 'EplbCommunicator', 'set_stream')}):\n"
            "        return None\n",
            "env": "import vllm.envs as envs\n\n\ndef h():\n    return envs.VLLM_PLE_CPU_OFFLOAD\n",
            "config-field": "from vllm.config import VllmConfig\n\n\ndef c(vllm_config: VllmConfig):\n"
            "    return vllm_config.cache_config.enable_mamba_fine_grained_prefix_cache\n",
            "moved-name": "from vllm.model_executor.layers.quantization.utils.humming_utils import "
            "apply_humming_linear\n\n\ndef m(x):\n    return apply_humming_linear(x)\n",
            "self-attr": "from vllm.v1.core.sched.scheduler import Scheduler\n\n\nclass Mine(Scheduler):\n"
            "    def skipped(self):\n        return len(self.skipped_waiting)\n",
            "self-config": "from vllm.v1.worker.gpu_worker import Worker\n\n\nclass Mine(Worker):\n"
            "    def fine(self):\n"
            "        return self.vllm_config.cache_config.enable_mamba_fine_grained_prefix_cache\n",
            "custom-op": "import torch\n\n\ndef a(x, w):\n    return torch.ops._C.allspark_w8a16_gemm(x, w)\n",
            "entry-point": "[project]\nname = \"fork-plugin\"\n\n[project.entry-points.\"vllm.general_plugins\"]\n"
            "fork = \"vllm._custom_ops:allspark_repack_weight\"\n",
        }
    return {
        "removed-fn": "from vllm.distributed.kv_transfer.kv_connector.utils import "
        "kv_postprocess_layout_on_receive\n\n\ndef f(x):\n"
        "    return kv_postprocess_layout_on_receive(x)\n",
        "removed-kw": "from vllm import _custom_ops as ops\n\n\n"
        "def g(x):\n    return ops.causal_conv1d_fwd_cpu(x, is_vnni=True)\n",
        "override": "from vllm.engine.protocol import EngineClient\n\n\nclass Mine(EngineClient):\n"
        f"    async def start_profile({_params(tree, 'vllm.engine.protocol', 'EngineClient', 'start_profile')}):\n"
        "        return None\n",
        "env": "from vllm import envs\n\n\ndef h():\n    return envs.VLLM_ENGINE_ITERATION_TIMEOUT_S\n",
        "config-field": "from vllm.config import VllmConfig\n\n\ndef c(vllm_config: VllmConfig):\n"
        "    return vllm_config.kv_transfer_config.kv_buffer_size\n",
        "model-registry": "_FORK_MODELS = {\n    \"ArceeForCausalLM\": (\"arcee\", \"ArceeForCausalLM\"),\n}\n",
        "moved-name": "from vllm.entrypoints.chat_utils import AsyncMultiModalItemTracker\n\n\n"
        "def t(*a):\n    return AsyncMultiModalItemTracker(*a)\n",
        "self-attr": "from vllm.v1.attention.backend import AttentionMetadataBuilder\n\n\n"
        "class Mine(AttentionMetadataBuilder):\n    def block(self):\n        return self.kernel_block_size\n",
        # gpu_worker.Worker sets attributes by name in v0.32.0 (setattr(self, config_name, ...)):
        # its self.vllm_config is unknown there, so a platform's WorkerBase subclass
        "self-config": "from vllm.v1.worker.worker_base import WorkerBase\n\n\nclass Mine(WorkerBase):\n"
        "    def size(self):\n        return self.vllm_config.kv_transfer_config.kv_buffer_size\n",
        "entry-point": "[project]\nname = \"fork-plugin\"\n\n[project.scripts]\n"
        "fork = \"vllm.distributed.kv_transfer.kv_connector.utils:kv_postprocess_layout_on_receive\"\n",
    }


def caught(upstream: Path) -> bool:
    ok, planted, hit = True, 0, 0
    repo = pygit2.Repository(str(upstream))
    for old, new in (("v0.30.0", "v0.31.0"), ("v0.31.0", "v0.32.0")):
        base = repo.revparse_single(old).peel(pygit2.Commit)
        onto = repo.revparse_single(new).peel(pygit2.Commit)
        spans, heads = [], {}
        for name, text in topics_for(UpstreamTree(repo, base.id), old).items():
            folder = "vllm/model_executor/models" if name == "model-registry" else "vllm"
            path = (
                "plugins/fork/pyproject.toml" if name == "entry-point" else f"{folder}/fork_{name.replace('-', '_')}.py"
            )
            blob = repo.create_blob(text.encode())
            for parent in (base, onto):  # the topic, and the same topic "rebased" (adds a file: clean)
                builder = pygit2.IndexEntry(path, blob, pygit2.enums.FileMode.BLOB)
                index = pygit2.Index()
                index.read_tree(parent.tree)
                index.add(builder)
                tree = index.write_tree(repo)
                heads[(name, parent.id)] = str(repo.create_commit(None, SIG, SIG, f"[Fork] {name}", tree, [parent.id]))
            spans.append(breaks.TopicSpan(name, str(base.id), heads[(name, base.id)], heads[(name, onto.id)]))

        def read(commit: str, path: str) -> bytes | None:
            try:
                return repo[repo[commit].peel(pygit2.Commit).tree[path].id].peel(pygit2.Blob).data
            except KeyError:
                return None

        t = time.perf_counter()
        found = breaks.check(repo, str(base.id), str(onto.id), spans, read)
        took = time.perf_counter() - t
        print(f"{old} -> {new}: check {took * 1000:.0f} ms")
        for span in spans:
            got = found[span.name]
            ok &= len(got) == 1
            planted, hit = planted + 1, hit + bool(got)
            if not got:
                print(f"  {span.name:<14} NOT CAUGHT")
            for b in got:
                print(f"  {span.name:<14} {b.file}:{b.line} {b.name}: {b.kind.value}, {b.detail}")
    print(f"planted breaks caught: {hit} of {planted}")
    return ok


def unchanged_files(upstream: Path) -> bool:
    """An oracle for false positives: every file upstream ships unchanged from one release
    to the next works against the next (upstream tests it), so every use it makes, judged
    as if a topic had written it, must hold."""
    from series.history.attribution import PathHistory
    from series.evidence.imports import flatten
    from series.semantic.uses import UseKind, parse, uses

    repo = pygit2.Repository(str(upstream))
    ok = True
    for old, new in (("v0.30.0", "v0.31.0"), ("v0.31.0", "v0.32.0")):
        a, b = (repo.revparse_single(x).peel(pygit2.Commit) for x in (old, new))
        before, after = flatten(repo, a.tree), flatten(repo, b.tree)
        same = [p for p, oid in before.items() if p.startswith("vllm/") and p.endswith(".py") and after.get(p) == oid]
        checker = breaks.BreakChecker(repo, a.id, b.id, PathHistory(repo, a.id, b.id))
        judged, found = 0, []
        for path in same:
            tree = parse(repo[before[path]].peel(pygit2.Blob).data)
            for use in {u.key: u for u in uses(tree, path) if u.kind != UseKind.LOCAL}.values() if tree else ():
                judged += 1
                hit = checker.judge(use, path)
                if hit is not None:
                    found.append(hit)
        print(
            f"{old} -> {new}: {len(same)} files upstream left unchanged, {judged} uses judged: "
            f"{len(found)} breaks (must be 0)"
        )
        for hit in found[:10]:
            print(f"  FALSE POSITIVE {hit.sentence()}")
        ok &= not found
    return ok


STUB = "import series.semantic.breaks as b; b.check = lambda repo, o, n, t, r: {x.name: [] for x in t}; "


def dry_run(fork: Path, stub: bool, cache: Path) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, stdout) of one whole-process dry run; `cache`: the check's
    disk cache (series.semantic.hunk_uses)."""
    code = (STUB if stub else "") + "from series.cli import main; main()"
    args = [
        sys.executable,
        "-c",
        code,
        "rebase",
        "--onto",
        "v0.31.0",
        "--dry-run",
        "--json",
        "--skip-topic",
        "offload-evict-fix",
    ]
    env = {**os.environ, "SERIES_BREAKS_CACHE": str(cache)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(args, cwd=fork, capture_output=True, text=True, env=env)
    took = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return took, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, proc.stdout


def fork_cost(fork: Path, repeat: int) -> bool:
    """The whole dry run with the check stubbed out, with it and an empty disk cache (cold:
    the first run on a machine), and with the cache the run before left (warm: every later
    run over the same topics and base)."""
    import json

    scratch = Path(tempfile.mkdtemp())
    work = scratch / "fork"
    shutil.copytree(fork, work, symlinks=True)
    branches = (work / ".git" / "series-fixture.txt").read_text().split()
    (work / "series.yaml").write_text(series_yaml(branches, "v0.30.0"))
    cache = scratch / "cache"
    dry_run(work, False, cache)  # warm the bytecode cache
    runs: dict[str, list[tuple[float, float]]] = {"stubbed": [], "cold": [], "warm": []}
    out = ""
    for _ in range(repeat):
        runs["stubbed"].append(dry_run(work, True, cache)[:2])
        shutil.rmtree(cache, ignore_errors=True)
        wall, cpu, _ = dry_run(work, False, cache)
        runs["cold"].append((wall, cpu))
        wall, cpu, out = dry_run(work, False, cache)
        runs["warm"].append((wall, cpu))
    data = json.loads(out)
    noisy = {t["name"]: t["breaks"] for t in data["topics"] if t.get("breaks")}
    clean = sum(t["outcome"] == "clean" for t in data["topics"])
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
    print(
        f"fork dry run onto v0.31.0, whole process ({clean} clean topics checked; median of {repeat}; "
        f"load {os.getloadavg()[0]:.1f}):"
    )
    for key in ("stubbed", "cold", "warm"):
        wall, cpu = med[key]
        added = (
            ""
            if key == "stubbed"
            else (f"   check adds {wall - med['stubbed'][0]:+.3f} s wall, {cpu - med['stubbed'][1]:+.3f} s CPU")
        )
        print(
            f"  {'check ' + key if key != 'stubbed' else 'check stubbed':<14} wall {wall:.3f} s  CPU {cpu:.3f} s{added}"
        )
    print(f"  breaks on ordinary topics: {sum(len(v) for v in noisy.values())}")
    for name, found in noisy.items():
        print(f"  FALSE POSITIVE {name}: {found}")
    shutil.rmtree(scratch, ignore_errors=True)
    return not noisy


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", type=Path, default=Path("/tmp/bench/upstream4"))
    parser.add_argument("--fork", type=Path, default=Path("/tmp/bench/fork"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-caught", action="store_true", help="only the fork's cost")
    args = parser.parse_args()
    ok = True
    if not args.no_caught:
        scratch = Path(tempfile.mkdtemp()) / "upstream"
        subprocess.run(["git", "clone", "-q", "--bare", str(args.upstream), str(scratch)], check=True)
        ok = caught(scratch)
        ok &= unchanged_files(scratch)
    if args.fork.is_dir():
        ok &= fork_cost(args.fork, args.repeat)
    else:
        print(f"{args.fork}: no such fork (../shared/bench/fork_fixture.py makes it): its cost not measured")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
