"""The semantic check's shortcut on a file both the topic and upstream changed
(series.semantic.breaks._merged_may_break, issue 34): the breaks are those of the full
reading of the three versions. Differential: random topic edits of real Python (this
package's modules) and random upstream edits on top (a top-level def renamed, an import
removed, lines deleted or copied), judged by a checker whose verdicts are arbitrary but,
like the real one's, depend on a use's key (an override's also on the topic's def)."""

from __future__ import annotations

import random
import re
import zlib
from pathlib import Path

import pytest

from series.semantic import breaks
from series.semantic.upstream_api import Found
from series.semantic.uses import BUILTINS, Use, UseKind, parse, top_names
from tests.test_hunk_uses import SOURCES, _aliases, _mutant


class _OldFile:
    def __init__(self, names: frozenset[str]):
        self.names = names


class _Old:
    def __init__(self, names: frozenset[str]):
        self.file = _OldFile(names)

    def api_at(self, path: str) -> _OldFile:
        return self.file

    def find(self, dotted: str) -> Found | None:
        return None


class _Checker(breaks.BreakChecker):
    """Breaks a fifth of the keys (an override only when the topic's def is not `(self)`),
    and a LOCAL name as BreakChecker.local does, against the old file's names."""

    def __init__(self, old_names: frozenset[str]):  # no repository: nothing is looked up
        self.old = _Old(old_names)  # type: ignore[assignment]

    def _broken(self, use: Use, file: str) -> breaks.Break:
        return breaks.Break(file, use.line, use.target, breaks.BreakKind.REMOVED, use.kind.value, None, "fix")

    def judge(self, use: Use, file: str) -> breaks.Break | None:
        if zlib.crc32(f"{use.kind.value} {use.target} {use.extra}".encode()) % 5:
            return None
        if use.kind == UseKind.OVERRIDE and use.method is not None and use.method.params == ("self",):
            return None
        return self._broken(use, file)

    def local(self, use: Use, file: str, rebased_names: set[str], imported: bool = False) -> breaks.Break | None:
        if use.target in rebased_names or use.target in BUILTINS or use.target not in self.old.file.names:
            return None
        return self._broken(use, file)


def _upstream(rng: random.Random, lines: list[str], used: str | None) -> list[str]:
    """An upstream change: the def, class or import of a name the topic now reads taken
    away (renamed, removed), the topic's override given another signature, or a topic-like
    edit."""
    out = list(lines)
    kind = rng.randrange(4)
    if kind == 0 and used is not None:
        defs = [i for i, x in enumerate(out) if re.match(rf"(def|class) {used}\b", x)]
        if defs:
            out[defs[0]] = re.sub(r"^(def|class) (\w+)", r"\1 \2_upstream", out[defs[0]])
            return out
    if kind == 1 and used is not None:
        imports = [i for i, x in enumerate(out) if re.match(rf"(import {used}|from \S+ import {used})\s*$", x)]
        if imports:
            del out[imports[0]]
            return out
    if kind == 2:
        overrides = [i for i, x in enumerate(out) if re.match(r"\s+def fork_\d+\(self\):", x)]
        if overrides:
            i = overrides[0]
            out[i] = out[i].replace("(self):", "(self, upstream):")
            return out
    return _mutant(rng, out, [])


def _topic(rng: random.Random, lines: list[str], aliases: list[str], tops: list[str]) -> tuple[list[str], str | None]:
    """A topic edit: the hunk test's, or a call of a module-level name of the file (and that name)."""
    if tops and rng.randrange(3) == 0:
        out = list(lines)
        used = rng.choice(tops + aliases)
        at = next((i for i, x in enumerate(out) if x.startswith(("def ", "class ", "@"))), len(out))
        at = rng.randrange(at, len(out) + 1)
        out[at:at] = ["", f"fork_value = {used}()", ""]
        return out, used
    return _mutant(rng, lines, aliases), None


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")  # mutants' escapes
def test_the_merged_shortcut_gives_the_full_readings_breaks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERIES_BREAKS_CACHE", str(tmp_path))
    rng = random.Random(34)
    shortcut = full_breaks = 0
    kinds: set[str] = set()
    small = [s for s in SOURCES if 1500 < s.stat().st_size < 6000]
    for source in rng.sample(small, min(len(small), 40)):
        text = source.read_text()
        tree = parse(text.encode())
        assert tree is not None
        aliases, tops = _aliases(text), sorted(top_names(tree))
        checker = _Checker(frozenset(tops) | frozenset(aliases))
        path = str(source.relative_to(source.parent.parent))
        for _ in range(16):
            mine_lines, used = _topic(rng, text.splitlines(), aliases, tops)
            rebased_lines = _upstream(rng, mine_lines, used)
            base, mine = text.encode(), ("\n".join(mine_lines) + "\n").encode()
            rebased = ("\n".join(rebased_lines) + "\n").encode()
            if parse(mine) is None or parse(rebased) is None or rebased == mine:
                continue
            checker.fast_path = False
            expected = breaks._file(checker, path, base, mine, rebased)
            checker.fast_path = True
            assert breaks._file(checker, path, base, mine, rebased) == expected, (path, mine_lines, rebased_lines)
            full_breaks += bool(expected)
            kinds.update(b.detail for b in expected)
            near = breaks.hunk_uses.near_changes(path, base, mine)
            shortcut += (
                near is not None
                and not any(checker.judge(u, path) for u in near)
                and not breaks._merged_may_break(checker, path, near, rebased)
            )
    # both must have been exercised: files answered by the shortcut, and files with breaks
    assert shortcut > 40 and full_breaks > 8, (shortcut, full_breaks)
    assert {"local", "override"} <= kinds, (kinds, shortcut, full_breaks)
