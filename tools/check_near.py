#!/usr/bin/env python3
"""The semantic check's shortcut on a fresh import (series.semantic.hunk_uses), against the full
reading, on the Python files of a real vLLM release: 0 missing expected (issue 34).

    .venv/bin/python tools/check_near.py [--upstream /tmp/bench/upstream4] [--tag v0.33.0]
                                         [--under vllm/] [--files 1500] [--seed 34]

For --files of TAG's .py files (a seeded sample; --under narrows it), topics are planted as
a fork writes them: an import added (a fresh name from a package the file reaches, one from
a package it does not, one inside a def, a name the file already binds, a star import) with
uses of it on other added lines. For each that parses, near_changes must hold every use the
full reading (series.semantic.uses of both versions) says the topic introduced, wherever it
answers (not None). Prints how many it answered, how many it declined, and every miss; exits
1 on any miss. tests/test_hunk_uses.py is the same property on this package's own files.
"""

from __future__ import annotations

import argparse
import ast
import random
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from series.semantic import hunk_uses  # noqa: E402
from series.semantic.uses import UseKind, parse, uses  # noqa: E402
from tools.check_reading import _files  # noqa: E402

JUDGED = (UseKind.NAME, UseKind.KEYWORD, UseKind.OVERRIDE, UseKind.QUALNAME)
KINDS = ("fresh", "new package", "in a def", "already bound", "star")
_TOP = re.compile(r"(def|class|import|from|if|try|@|[A-Za-z_]\w* =)")


def _plants(rng: random.Random, lines: list[str], bound: list[str]) -> list[tuple[str, list[str]]]:
    """Versions of the file with an import added and used (module docstring)."""
    tops = [i for i, x in enumerate(lines) if _TOP.match(x)] or [0]
    defs = [i for i, x in enumerate(lines) if re.match(r"\s*def .*:\s*$", x)]
    out = []
    for kind in range(5):
        new = f"Fork{rng.randrange(10000)}"
        name = {0: new, 1: "fork_ns", 2: new, 3: rng.choice(bound) if bound else "os", 4: new}[kind]
        statement = {
            0: f"from vllm.fork_{new.lower()} import {name}",
            1: f"import forkpkg.sub as {name}",
            2: f"from vllm.fork_{new.lower()} import {name}",
            3: f"from vllm.fork_{new.lower()} import {name}",
            4: "from vllm.fork_star import *",
        }[kind]
        mine = list(lines)
        if kind == 2 and defs:  # inside a def, first in its body
            at = rng.choice(defs)
            mine.insert(at + 1, lines[at][: len(lines[at]) - len(lines[at].lstrip())] + "    " + statement)
        else:
            mine.insert(rng.choice(tops), statement)
        for _ in range(rng.randint(1, 2)):
            at = rng.randrange(len(mine))
            pad = mine[at][: len(mine[at]) - len(mine[at].lstrip())]
            mine.insert(at, f"{pad}{name}.fork_{rng.randrange(100)}(k{rng.randrange(9)}=1)")
        out.append((KINDS[kind], mine))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", type=Path, default=Path("/tmp/bench/upstream4"))
    parser.add_argument("--tag", default="v0.33.0")
    parser.add_argument("--under", default="")
    parser.add_argument("--files", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=34)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # planted lines in old files: their escapes' warnings
    rng = random.Random(args.seed)
    files = [(p, s) for p, s in _files(args.upstream, args.tag, args.under) if 0 < len(s) < 80_000]
    files = sorted(rng.sample(files, min(args.files, len(files))))
    answered = declined = planted = introduced = 0
    missing: list[str] = []
    per_kind: dict[str, list[int]] = {}
    start = time.process_time()
    with tempfile.TemporaryDirectory(prefix="check-near-") as cache:
        for path, base in files:
            before = parse(base)
            if before is None:
                continue
            theirs = {u.key for u in uses(before, path)}
            try:
                text = base.decode("utf-8")
            except UnicodeDecodeError:
                continue
            imports = [n for n in before.body if isinstance(n, (ast.Import, ast.ImportFrom))]
            bound = sorted({(a.asname or a.name).split(".")[0] for n in imports for a in n.names if a.name != "*"})
            for kind, lines in _plants(rng, text.splitlines(), bound):
                mine = ("\n".join(lines) + "\n").encode()
                after = parse(mine)
                if after is None:
                    continue
                planted += 1
                near = hunk_uses.near_changes(path, base, mine, Path(cache))
                tally = per_kind.setdefault(kind, [0, 0])
                tally[near is None] += 1
                if near is None:
                    declined += 1
                    continue
                answered += 1
                ours = {u.key for u in uses(after, path) if u.kind in JUDGED} - theirs
                introduced += len(ours)
                lost = ours - {u.key for u in near}
                if lost:
                    missing.append(f"{path}: {sorted(lost)[:3]}")
    print(
        f"{args.tag} {args.under or '(all)'}: {len(files)} files, {planted} planted imports that parse; "
        f"answered {answered} ({introduced} introduced uses), declined {declined}; "
        f"{len(missing)} missing; {time.process_time() - start:.1f} s CPU"
    )
    print("  answered / declined: " + ", ".join(f"{k} {a} / {d}" for k, (a, d) in per_kind.items()))
    for line in missing[:20]:
        print(f"missing: {line}")
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
