"""Issue 33: a resolution is checked before it is taken or recorded (markers, Python that
parses), the conflict memory replays nothing that fails the same check, and what a
resolution brings in is read by the semantic check like a clean topic's code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from tests.conftest import run_series, sh
from tests.test_rebase import LRU, resolve_lru, snapshot

WORKTREE = Path(".git/series/rebase/worktree")


def _halt(fork: Path) -> Path:
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    return fork / WORKTREE


def _state(fork: Path) -> bytes:
    return (fork / ".git/series/rebase/state.json").read_bytes()


def test_a_resolution_that_does_not_parse_is_refused_until_fixed(fork: Path) -> None:
    before = snapshot(fork)
    worktree = _halt(fork)
    halted = _state(fork)
    resolve_lru(worktree)
    good = (worktree / LRU).read_text()
    broken = good.replace("move_to_end(key)\n", "move_to_end(key)\n          touched = True\n")
    (worktree / LRU).write_text(broken)
    sh(f"git add {LRU}", worktree)
    line = broken.splitlines().index("          touched = True") + 1
    proc = run_series("rebase", "--continue", cwd=fork, expect=1)
    assert f"{LRU}:{line}: unindent does not match any outer indentation level" in proc.stderr, proc.stderr
    assert "nothing moved" in proc.stderr and "Traceback" not in proc.stderr
    assert f"hint: fix it in {worktree}, 'git add' it, then 'series rebase --continue'" in proc.stderr, proc.stderr
    assert snapshot(fork) == before and _state(fork) == halted, "nothing moved, the halt is as it was"
    assert not (fork / "resolutions").exists(), "a refused resolution is not recorded"
    assert not json.loads(run_series("log", "--json", cwd=fork).stdout)["operations"]

    (worktree / LRU).write_text(good)
    sh(f"git add {LRU}", worktree)
    run_series("rebase", "--continue", cwd=fork)
    assert "base: v0.31.0" in (fork / "series.yaml").read_text()
    assert "# keep request order" in sh(f"git show topic/offload-evict-fix~1:{LRU}", fork)
    assert len(list((fork / "resolutions").glob("*/*.txt"))) == 1


def test_leftover_conflict_markers_are_refused(fork: Path) -> None:
    before = snapshot(fork)
    worktree = _halt(fork)
    text = (worktree / LRU).read_text()
    sh(f"git add {LRU}", worktree)  # marked resolved with git's markers still in it
    line = text.splitlines().index("<<<<<<< HEAD") + 1
    proc = run_series("rebase", "--continue", cwd=fork, expect=1)
    assert f"{LRU}:{line}: conflict markers left in the file" in proc.stderr, proc.stderr
    assert snapshot(fork) == before
    resolve_lru(worktree)
    run_series("rebase", "--continue", cwd=fork)


# -- the conflict memory: hunks, not files; the first format still read; nothing replayed unchecked --


def _first_format(topic: str, path: str, conflicted: bytes, resolved: bytes) -> bytes:
    """A resolution file as series wrote them before issue 33 (forks have them committed):
    the whole normalized file, then the hunks over it."""
    import pygit2

    from series.patches.format import unified_hunks
    from series.resolutions import normalize

    conflict = normalize(conflicted)
    assert conflict is not None
    head = (
        f"# series resolution\ntopic: {topic}\npath: {path}\nconflict: {conflict.conflict_id}\n"
        f"resolved-blob: {pygit2.hash(resolved)}\npreimage-bytes: {len(conflict.preimage)}\n"
        "=== preimage (conflict markers normalized: labels and base dropped, sides sorted)\n"
    )
    return (
        head.encode()
        + conflict.preimage
        + b"=== resolution (hunks turning the preimage into the resolved file)\n"
        + unified_hunks(conflict.preimage, resolved).encode()
    )


def _remember(fork: Path, resolved_text: Callable[[str], str]) -> tuple[Path, str]:
    """Halt on the LRU conflict, keep a first-format resolution of it, abort: the next rebase
    meets a conflict its memory knows."""
    from series.resolutions import ResolutionStore, normalize

    worktree = _halt(fork)
    conflicted = (worktree / LRU).read_bytes()
    resolve_lru(worktree)
    resolved = resolved_text((worktree / LRU).read_text())
    run_series("rebase", "--abort", cwd=fork)
    file = ResolutionStore(fork / "resolutions").file_for("offload-evict-fix", LRU, normalize(conflicted).conflict_id)  # type: ignore[union-attr]
    file.parent.mkdir(parents=True)
    file.write_bytes(_first_format("offload-evict-fix", LRU, conflicted, resolved.encode()))
    return file, resolved


def test_a_first_format_resolution_still_replays(fork: Path) -> None:
    file, resolved = _remember(fork, lambda text: text)
    out = run_series("rebase", "--onto", "v0.31.0", cwd=fork).stdout
    assert "resolved from memory" in out and "not replayed" not in out, out
    assert sh(f"git show topic/offload-evict-fix~1:{LRU}", fork) == resolved
    assert file.read_bytes().count(b"\n") > 20, "the file is read as it was, not rewritten"


def test_a_remembered_resolution_that_no_longer_parses_goes_to_a_human(fork: Path) -> None:
    """The fork's case: a resolution recorded with an IndentationError came back at every
    rebase as 'resolved from memory'. Now it is named, and the conflict halts."""
    file, broken = _remember(
        fork, lambda text: text.replace("move_to_end(key)\n", "move_to_end(key)\n          touched = True\n")
    )
    before = snapshot(fork)
    proc = run_series("rebase", "--onto", "v0.31.0", "--json", cwd=fork, expect=3)
    report = json.loads(proc.stdout)
    line = broken.splitlines().index("          touched = True") + 1
    (refused,) = report["resolutions_refused"]
    assert refused["file"] == str(file.relative_to(fork)) and refused["path"] == LRU, refused
    assert f"{LRU}:{line}: unindent does not match" in refused["reason"], refused
    assert snapshot(fork) == before
    assert "<<<<<<< HEAD" in (fork / WORKTREE / LRU).read_text(), "left for a human, not replayed"
    run_series("rebase", "--abort", cwd=fork)
    text = run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3).stdout
    assert f"the recorded resolution {file.relative_to(fork)} of {LRU} was not replayed" in text, text
    resolve_lru(fork / WORKTREE)
    run_series("rebase", "--continue", cwd=fork)
    assert b"touched = True" not in file.read_bytes() and b"preimage" not in file.read_bytes(), (
        "the human's resolution is recorded in its place"
    )


def test_a_big_files_resolution_stores_its_hunks_not_the_file(tmp_path: Path) -> None:
    from series.resolutions import ResolutionStore
    from tests.test_resolutions import merge

    base = "".join(f"line {i}\n" for i in range(1, 5001))
    ours, theirs = (base.replace("line 2500\n", f"{side} 2500\n") for side in ("ours", "theirs"))
    conflicted = merge(tmp_path, ours, theirs, base=base)
    resolved = base.replace("line 2500\n", "both 2500\n").encode()
    store = ResolutionStore(tmp_path / "resolutions")
    recorded = store.record("t", "big.py", conflicted, resolved)
    assert recorded is not None
    stored = recorded.file.read_text()
    assert stored.count("\n") < 30 and "\n line 2496\n" not in stored and "\n line 2497\n" in stored, stored
    assert store.lookup("t", "big.py", conflicted) == resolved


# -- the semantic check reads what a resolution brings in ----------------------------------

IFACE_V030 = 'import os\nfrom vllm.utils import is_tpu\n\n\ndef device():\n    return "tpu" if is_tpu() else os.name\n'
IFACE_V031 = (
    'import os\nfrom vllm.utils import platform_name\n\n\ndef device():\n    return platform_name() or os.name\n'
)
IFACE_TOPIC = IFACE_V030.replace(
    "from vllm.utils import is_tpu\n", "from vllm.utils import is_tpu\nfrom vllm.hpu import is_hpu\n"
)
IFACE = "vllm/platforms/interface.py"


def _platform_fork(tmp_path: Path) -> Path:
    """Upstream drops vllm.utils.is_tpu (and its import in interface.py) where the topic adds
    an import next to it: the import lines conflict."""
    from tests.repos import commit_all, git, write
    from tests.test_breaks import UPSTREAM, _pr, fork_of

    up = tmp_path / "upstream"
    up.mkdir()
    git(up, "init", "-q", "-b", "main")
    _pr(
        up,
        {
            "vllm/__init__.py": "",
            "vllm/utils.py": "def is_tpu():\n    return False\n",
            "vllm/hpu.py": "def is_hpu():\n    return True\n",
            IFACE: IFACE_V030,
        },
        "v0.30.0",
        "2026-01-01T00:00:00Z",
    )
    git(up, "tag", "v0.30.0")
    write(up, {"vllm/utils.py": "def platform_name():\n    return ''\n", IFACE: IFACE_V031})
    commit_all(up, "[Platform] drop is_tpu (#201)", "2026-01-05T00:00:00Z", env=UPSTREAM)
    git(up, "tag", "v0.31.0")
    return fork_of(tmp_path, up, {"hpu": {IFACE: IFACE_TOPIC}})


def test_an_import_a_resolution_brings_back_is_reported_as_a_break(tmp_path: Path) -> None:
    fork = _platform_fork(tmp_path)
    run_series("rebase", "--onto", "v0.31.0", cwd=fork, expect=3)
    worktree = fork / WORKTREE
    text = (worktree / IFACE).read_text()
    assert "<<<<<<< HEAD" in text, text
    # the conflict fix keeps both sides' imports: the removed is_tpu comes back
    conflict = text[text.index("<<<<<<< ") : text.index("\n", text.index(">>>>>>> ")) + 1]
    (worktree / IFACE).write_text(
        text.replace(
            conflict,
            "from vllm.utils import platform_name\nfrom vllm.utils import is_tpu\nfrom vllm.hpu import is_hpu\n",
        )
    )
    sh(f"git add {IFACE}", worktree)
    report = json.loads(run_series("rebase", "--continue", "--json", cwd=fork).stdout)
    (row,) = report["topics"]
    (found,) = row["breaks"]
    assert (found["file"], found["line"], found["name"], found["kind"]) == (IFACE, 3, "vllm.utils.is_tpu", "renamed")
    assert found["upstream"]["pr"] == 201, found

    # replayed from memory (undo takes back the rebase and what it recorded: keep a copy, as
    # one commits it), the same resolution is read the same way
    kept = {f: f.read_bytes() for f in (fork / "resolutions").glob("*/*.txt")}
    run_series("undo", cwd=fork)
    for f, data in kept.items():
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data)
    out = run_series("rebase", "--onto", "v0.31.0", cwd=fork).stdout
    assert "resolved from memory" in out and f"break {IFACE}:3 vllm.utils.is_tpu: renamed to platform_name" in out, out
