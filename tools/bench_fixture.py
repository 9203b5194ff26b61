"""The shared benchmark fixture: real vLLM v0.30.0 -> v0.31.0 and a 23-topic fork over it.

    python tools/bench_fixture.py [/tmp/bench]

Runs ../shared/bench/vllm_upstream.py and fork_fixture.py (the release sdists come through
pip's configured index, cached in ~/.cache/vllm-sdists) unless DIR/fork already exists.
The benchmarks take --fork DIR/fork (default /tmp/bench/fork) and call require() first.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "bench"


def require(fork: Path) -> None:
    if not (fork / ".git" / "series-fixture.txt").is_file():
        sys.exit(
            f"{fork} is not the shared bench fork: build it with 'python tools/bench_fixture.py "
            f"{fork.parent}' (needs ../shared/bench and pip's index), or pass --fork"
        )


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/bench")
    if (root / "fork" / ".git" / "series-fixture.txt").is_file():
        print(f"{root}/fork exists")
        return
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "upstream").exists():
        subprocess.run(
            [sys.executable, str(SHARED / "vllm_upstream.py"), str(root / "upstream"), "0.30.0", "0.31.0"], check=True
        )
    subprocess.run(
        [sys.executable, str(SHARED / "fork_fixture.py"), str(root / "upstream"), str(root / "fork")], check=True
    )


if __name__ == "__main__":
    main()
