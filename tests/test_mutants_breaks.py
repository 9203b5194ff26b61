"""Tests that fail when the semantic check is wrong in small ways (issue 37: each kills a
mutant that survived; tools/mutate.py finds more)."""
from __future__ import annotations

from pathlib import Path

from tests.repos import git
from tests.test_breaks import FILES_V030, TOPICS, UTIL_V031, _pr, fork_of, rebase_breaks


def test_the_pr_that_removed_a_keyword_is_blamed_not_a_later_one_touching_the_file(tmp_path: Path) -> None:
    """#101 renames scale's factor and drops old_helper; #113, later, only adds a line to
    the same file. The culprit is the commit after which the name stops being accepted,
    not the newest one touching the file."""
    up = tmp_path / "upstream"
    up.mkdir()
    git(up, "init", "-q", "-b", "main")
    _pr(up, FILES_V030, "v0.30.0", "2026-01-01T00:00:00Z")
    git(up, "tag", "v0.30.0")
    _pr(up, {"vllm/utils.py": UTIL_V031}, "[Core] drop old_helper, rename scale's factor (#101)",
        "2026-01-05T00:00:00Z")
    _pr(up, {"vllm/utils.py": UTIL_V031 + "\n\nLATER = 1\n"}, "[Core] a later constant (#113)", "2026-01-06T00:00:00Z")
    git(up, "tag", "v0.31.0")
    fork = fork_of(tmp_path, up, {name: TOPICS[name] for name in ("kw-renamed", "uses-removed")})
    found = rebase_breaks(fork, "--dry-run")
    (kw,) = found["kw-renamed"]
    (removed,) = found["uses-removed"]
    assert kw["upstream"]["pr"] == 101 and "renamed in #101" in str(kw["fix"]), kw  # type: ignore[index]
    assert removed["upstream"]["pr"] == 101, removed  # type: ignore[index]
