#!/usr/bin/env python3
"""The semantic check's readings, this checkout's against another revision's, on every
Python file of a real vLLM release: 0 differences expected (issue 34: one walk per file).

    .venv/bin/python tools/check_reading.py [--upstream /tmp/bench/upstream4] [--tag v0.33.0]
                                            [--old REV] [--under vllm/]

For each .py file of TAG (--under narrows it), each side computes in its own process, from
its own code: the file's reading (series.semantic.file_reading: uses, names bound and
read, imports, first lines) and what the module offers upstream (upstream_api.ModuleApi),
both as their disk caches encode them. The old side is REV's `series` package (default:
the merge-base with main), extracted to a temporary directory. Prints each side's CPU time
and every file whose answers differ (the first few in full); exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _files(upstream: Path, tag: str, under: str) -> list[tuple[str, bytes]]:
    import pygit2

    repo = pygit2.Repository(str(upstream))
    out: list[tuple[str, bytes]] = []

    def walk(tree: pygit2.Tree, prefix: str) -> None:
        for entry in tree:
            path = f"{prefix}{entry.name}"
            if entry.type_str == "tree":
                walk(repo[entry.id].peel(pygit2.Tree), f"{path}/")
            elif path.endswith(".py") and path.startswith(under):
                out.append((path, repo[entry.id].peel(pygit2.Blob).data))

    walk(repo.revparse_single(tag).peel(pygit2.Commit).tree, "")
    return out


def _answers(path: str, source: bytes) -> object:
    from series.semantic import file_reading, upstream_api

    reading = file_reading._encode(file_reading._compute(path, source, frozenset()))
    api = upstream_api._encode(upstream_api.ModuleApi.of(source, upstream_api.module_name(path)[1]))
    return {"reading": reading, "api": api}


def worker(upstream: Path, tag: str, under: str, full: set[str]) -> None:
    """One side: {path: digest of its answers} (and the answers of `full`), its CPU time."""
    files = _files(upstream, tag, under)
    digests, answers = {}, {}
    start = time.process_time()
    for path, source in files:
        found = _answers(path, source)
        text = json.dumps(found, sort_keys=True)
        digests[path] = hashlib.sha256(text.encode()).hexdigest()
        if path in full:
            answers[path] = found
    json.dump({"cpu": time.process_time() - start, "digests": digests, "answers": answers}, sys.stdout)


def side(code: Path, args: argparse.Namespace, full: set[str] = frozenset()) -> dict[str, object]:  # type: ignore[assignment]
    env = dict(os.environ, PYTHONPATH=str(code))
    proc = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            "--upstream",
            str(args.upstream),
            "--tag",
            args.tag,
            "--under",
            args.under,
            "--full",
            json.dumps(sorted(full)),
        ],
        env=env,
        cwd=str(code),
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, object] = json.loads(proc.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", type=Path, default=Path("/tmp/bench/upstream4"))
    parser.add_argument("--tag", default="v0.33.0")
    parser.add_argument("--under", default="")
    parser.add_argument("--old", default=None, help="the revision to compare with (default: merge-base with main)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--full", default="[]", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.upstream, args.tag, args.under, set(json.loads(args.full)))
        return
    old_rev = (
        args.old
        or subprocess.run(
            ["git", "merge-base", "HEAD", "main"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    with tempfile.TemporaryDirectory(prefix="check-reading-") as tmp:
        archive = subprocess.run(["git", "archive", old_rev, "series"], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        old = side(Path(tmp), args)
        new = side(ROOT, args)
        old_d, new_d = old["digests"], new["digests"]
        assert isinstance(old_d, dict) and isinstance(new_d, dict)
        differ = sorted(p for p in old_d.keys() | new_d.keys() if old_d.get(p) != new_d.get(p))
        print(
            f"{args.tag} {args.under or '(all)'}: {len(new_d)} files; old {old_rev[:12]} {old['cpu']:.2f} s CPU, "
            f"new {new['cpu']:.2f} s CPU; {len(differ)} differ"
        )
        if differ:
            shown = set(differ[:3])
            a, b = side(Path(tmp), args, shown)["answers"], side(ROOT, args, shown)["answers"]
            assert isinstance(a, dict) and isinstance(b, dict)
            for path in sorted(shown):
                print(f"--- {path}\nold: {json.dumps(a.get(path))[:2000]}\nnew: {json.dumps(b.get(path))[:2000]}")
            for path in differ[3:]:
                print(f"differs: {path}")
            sys.exit(1)


if __name__ == "__main__":
    main()
