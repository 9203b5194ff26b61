"""CODEOWNERS read and matched the way GitHub documents it, in time linear in what it reads.

GitHub's rules ("About code owners"): gitignore's pattern format with exceptions.
- The last matching pattern wins; a pattern with no owners leaves its paths unowned.
- A pattern with a '/' at its start or in its middle is anchored at the root; one without
  ('*.js', 'apps/', 'logs') matches at any depth.
- '*' and '?' stay inside one path component; '**' crosses them only as a whole component
  ('**/logs', 'a/**/b', 'docs/**'); any other run of '*' is one '*'.
- A pattern matches a file, or a directory and everything below it ('/apps/github');
  a trailing '/' matches directories only ('apps/', '/docs/'); a trailing '/*' matches
  the files directly in a directory, not deeper ('docs/*' matches docs/getting-started.md,
  not docs/build-app/troubleshooting.md).
- '\\' escapes the next character ('path\\ with\\ spaces/').
- What does not work in CODEOWNERS, by the docs: '!' negation, '[ ]' ranges (both are
  plain characters here) and '\\#' to make a pattern of a comment line (still a comment).
- '#' starting a word begins a comment, at the line's start or after the owners.

Matching is the classic wildcard walk that backtracks to the last star only: O(n*m) per
component, and the same walk over components for '**'. Python's re on a translated
pattern can take exponential time ('************************x' against a long name ran
for minutes), and CODEOWNERS comes from upstream's tree: a pull request can write it.
The `codeowners` package on PyPI translates to re the same way, and keeps '[ ]' ranges.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar, Union

_STAR = object()  # '*' inside a component
_ONE = object()  # '?'
Token = Union[str, object]
Glob = tuple[Token, ...]
_DSTAR: Glob = (object(),)  # a whole-component '**': zero or more components (compared by identity)
_ANY: Glob = (_STAR,)  # one component, whatever it is
P = TypeVar("P")
S = TypeVar("S")


@dataclass(frozen=True)
class OwnerRule:
    pattern: str
    owners: tuple[str, ...]
    line: int
    segments: tuple[Glob, ...]

    def matches(self, path: str) -> bool:
        return _match_components(self.segments, tuple(path.strip("/").split("/")))


def _words(line: str) -> list[str]:
    """The line's words, split at unescaped whitespace, up to a word starting a comment."""
    words: list[str] = []
    word = ""
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line):
            word += line[i : i + 2]  # kept escaped: the pattern compiler reads the escape
            i += 2
            continue
        if c.isspace():
            if word:
                words.append(word)
            word = ""
        elif c == "#" and not word:
            break
        else:
            word += c
        i += 1
    if word:
        words.append(word)
    return words


def _component(text: str) -> Glob:
    out: list[Token] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
            continue
        if c == "*":
            if not out or out[-1] is not _STAR:  # '***' is '*'
                out.append(_STAR)
        elif c == "?":
            out.append(_ONE)
        else:
            out.append(c)
        i += 1
    return tuple(out)


def compile_pattern(pattern: str) -> tuple[Glob, ...]:
    """The pattern as a list of component globs, '**' components as _DSTAR."""
    directory = pattern.endswith("/") and not pattern.endswith("\\/")
    body = pattern[1:] if pattern.startswith("/") else pattern
    body = body.rstrip("/") if directory else body
    anchored = pattern.startswith("/") or "/" in body
    parts = [p for p in body.split("/") if p]  # '//' reads as '/', as in git
    segments: list[Glob] = [] if anchored else [_DSTAR]
    for part in parts:
        glob = _DSTAR if part == "**" else _component(part)
        if not (glob is _DSTAR and segments and segments[-1] is _DSTAR):
            segments.append(glob)
    if segments and segments[-1] is _DSTAR:
        segments[-1:] = [_ANY, _DSTAR]  # 'docs/**', '**': what is inside
    elif directory:
        segments += [_ANY, _DSTAR]  # 'apps/': below a directory of that name
    elif not (parts and parts[-1] == "*" and len(parts) > 1):
        segments.append(_DSTAR)  # the file, or the directory and below it
    return tuple(segments)


def _wildcard(
    pattern: Sequence[P], subject: Sequence[S], star: Callable[[P], bool], one: Callable[[P, S], bool]
) -> bool:
    """The greedy wildcard walk: on a mismatch, back to the last star only, which then takes
    one more item. At most len(pattern) * len(subject) steps, never exponential."""
    p = s = 0
    star_p, star_s = -1, 0
    while s < len(subject):
        if p < len(pattern) and not star(pattern[p]) and one(pattern[p], subject[s]):
            p += 1
            s += 1
        elif p < len(pattern) and star(pattern[p]):
            star_p, star_s = p, s
            p += 1
        elif star_p >= 0:
            star_s += 1
            p, s = star_p + 1, star_s
        else:
            return False
    while p < len(pattern) and star(pattern[p]):
        p += 1
    return p == len(pattern)


def _match_glob(glob: Glob, name: str) -> bool:
    """One component against one glob: '*' the star, '?' any one character."""
    return _wildcard(glob, name, lambda t: t is _STAR, lambda t, c: t is _ONE or t == c)


def _match_components(segments: Sequence[Glob], parts: Sequence[str]) -> bool:
    """The path's components against the segments: '**' the star, a glob per component."""
    return _wildcard(segments, parts, lambda g: g is _DSTAR, _match_glob)


def parse(text: str) -> list[OwnerRule]:
    rules = []
    for number, raw in enumerate(text.splitlines(), 1):
        if raw.lstrip().startswith("\\#"):
            continue  # the docs: escaping '#' does not work in CODEOWNERS; still a comment
        words = _words(raw)
        if not words:
            continue
        owners = tuple(w for w in words[1:] if "@" in w)
        rules.append(OwnerRule(words[0], owners, number, compile_pattern(words[0])))
    return rules


def decide(rules: Sequence[OwnerRule], path: str) -> OwnerRule | None:
    """The rule that decides `path`'s owners: the last one that matches."""
    for rule in reversed(rules):
        if rule.matches(path):
            return rule
    return None
