"""The upstream uses a topic's own hunks can have introduced, without reading the base's
version of the file: what makes the semantic check (series.semantic.breaks) cheap on the
files upstream left alone.

    near_changes(path, base, mine)  every Use (names, keywords, overrides) of `mine` whose
                                    node spans a line the topic added or a place where it
                                    deleted lines; None when the diff is one this cannot
                                    reason about (the caller reads both versions instead)

Why that is enough: a use counts as the topic's when `mine` has it and `base` does not.
A node of `mine` that spans no changed line is text `base` has too, and it means the same
there unless what surrounds it changed meaning: the imports (which decide what `m.f` is),
or a string that swallowed it (`base` had it inside a triple-quoted string whose quotes
the topic removed). So a change that touches an import (but for a fresh import, below), or
removes a line holding `import`, triple quotes or a trailing backslash, gets None; a change
to a def's signature (what its annotated parameters are) puts its whole body near the
change, and a change in a class whose `self` reads as its upstream base the whole class. Decorators sit above
their def's line: a def's span starts at its first decorator. Only the imports and the statements that
span a changed line are visited, so the cost follows the topic's hunks, not the file.
The visit applies the imports first, and the full reading each again where it meets it: a
name two imports give two meanings (vLLM's layers import `ops` again inside a def) can read
otherwise near the hunks, so such a file gets None too.

A fresh import (issue 34: on a real fork, most of the hunks that touch an import): an import
statement every line of which the topic added, binding only names (`import a.b` binds `a`,
`as` the alias) that `base` does not spell anywhere but after a dot (`x.name`, an attribute),
and reaching only packages another import of the file reaches already. What it changes is
what its own names mean, and those appear only on lines the topic added (a line `mine`
kept is in `base`, which has none of them), so the uses near the changes hold every use of
them: its keywords and overrides, the parameters it annotates and the locals it aliases
(the rules above put their whole def or class near). The other imports are `base`'s, so
every other name means what it did; a string reads as an upstream name by the packages the
imports reach (uses.visit_Constant), and those are the same. Anything else gets None: a
star import (what it binds is not written), a name `base` spells anywhere else (bound by a
def, a loop, `global`, another import, or read as a builtin), a package no other import
reaches, an import the topic edited rather than added, a `base` whose encoding is not
UTF-8 (Python reads identifiers NFKC-normalized: a non-ASCII `base` is searched so).

What this answers for a pair of blobs never changes, so it is kept on disk per (package,
base blob, topic blob) under the user's cache (series.cache), keyed by this code's own
source too: a cache written by another version of the check is never read.
"""

from __future__ import annotations

import ast
import bisect
import codecs
import re
import unicodedata
from collections import deque
from pathlib import Path
from typing import Iterator, NamedTuple

import pygit2

from series.semantic import blob_cache
from series.semantic.module_api import module_name
from series.semantic.uses import Use, UseCollector, parse, uses_from_json, uses_to_json

_IMPORT = re.compile(rb"\bimport\b")
_HAZARD = re.compile(rb"\bimport\b|\"\"\"|'''|\\\s*$")
# an added blank or comment line changes how no other line reads (an encoding cookie, in
# the first two lines, could: those always count)
_QUIET = re.compile(rb"\s*(#.*)?$", re.DOTALL)
# PEP 263's encoding declaration, on the first or second line
_COOKIE = re.compile(rb"[ \t\f]*#[^\r\n]*?coding[:=][ \t]*([-\w.]+)")
# an escape that can give a letter, digit or underscore: \x68, \u0068, \N{...}, \150
_CODED = re.compile(rb"\\[xuUN0-7]")
# a top-level def or class line, and the name it binds
_HEADER = re.compile(rb"(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)")


class HunkLines(NamedTuple):
    touched: list[int]  # sorted: lines the topic added (not blank or comment), and the two around a deletion
    added: set[int]  # every line the topic added (blank and comment lines too)
    deleted_at: list[int]  # sorted: the lines of `mine` around each place it deleted code


def hunk_lines(base: bytes, mine: bytes) -> HunkLines | None:
    """What the topic's diff of one file touches, read in one pass. None when a deleted
    line could change how unchanged lines read: one holding `import`, triple quotes or a
    trailing backslash, or module-level code (not indented: what it bound or began reaches
    the whole module), but for a def or class line the same hunk adds again (a changed
    signature or base: the def or class is then near whole). `deleted_at` holds, for each
    hunk that deleted code, the lines that replaced it, or the two between which it was."""
    touched: set[int] = set()
    added: set[int] = set()
    deleted_at: set[int] = set()
    for hunk in pygit2.Patch.create_from(base, mine, context_lines=0).hunks:
        if hunk.new_lines == 0:
            touched.update((hunk.new_start, hunk.new_start + 1))
        deleted: list[bytes] = []
        headers: set[bytes] = set()
        for line in hunk.lines:
            if line.origin == "+":
                added.add(line.new_lineno)
                if line.new_lineno <= 2 or not _QUIET.match(line.raw_content):
                    touched.add(line.new_lineno)
                if header := _HEADER.match(line.raw_content):
                    headers.add(header[1])
            elif line.origin == "-":
                if _HAZARD.search(line.raw_content):
                    return None  # a comment's too: it may be a line of a string
                if not _QUIET.match(line.raw_content):
                    deleted.append(line.raw_content)
        for raw in deleted:
            header = _HEADER.match(raw)
            if not raw[:1].isspace() and (header is None or header[1] not in headers):
                return None  # module-level code, but for a def or class the hunk defines again
        if deleted:
            if hunk.new_lines == 0:
                deleted_at.update((hunk.new_start, hunk.new_start + 1))
            else:
                deleted_at.update(range(hunk.new_start, hunk.new_start + hunk.new_lines))
    return HunkLines(sorted(touched), added, sorted(deleted_at))


def _binds(node: ast.Import | ast.ImportFrom) -> list[str] | None:
    """The names an import binds; None for a star import (what it binds is not written)."""
    out = []
    for alias in node.names:
        if alias.name == "*":
            return None
        out.append(alias.asname or (alias.name.split(".")[0] if isinstance(node, ast.Import) else alias.name))
    return out


def _utf8(source: bytes) -> bool:
    """Whether Python reads `source` as UTF-8 (PEP 263: no other encoding declared; after a
    UTF-8 byte order mark, any other is an error)."""
    cookie = _COOKIE.match(source) or _COOKIE.match(source, source.find(b"\n") + 1)
    try:
        return cookie is None or codecs.lookup(cookie.group(1).decode("ascii")).name in ("utf-8", "ascii")
    except (LookupError, UnicodeDecodeError):
        return False


def _as_read(source: bytes) -> bytes | None:
    """`source` as Python reads its identifiers: UTF-8, NFKC-normalized (ASCII as it is);
    None when another encoding is declared or it is not UTF-8."""
    if not _utf8(source):
        return None
    if source.isascii():
        return source
    try:
        return unicodedata.normalize("NFKC", source.decode("utf-8")).encode("utf-8")
    except UnicodeDecodeError:
        return None


def _unspelled(base: bytes, names: set[str]) -> bool:
    """Whether `base` spells none of `names` but after a dot (`x.name`: an attribute or a
    module of a dotted path, never a name of its own): a line holding one of them elsewhere
    is not a line of `base`."""
    text = _as_read(base)
    if text is None or not all(n.isascii() and n.isidentifier() for n in names):
        return False
    pattern = re.compile(rb"(\.[ \t]*)?\b(?:" + b"|".join(n.encode() for n in sorted(names)) + rb")\b")
    return all(m.group(1) is not None for m in pattern.finditer(text))


def _fresh(fresh: list[ast.Import | ast.ImportFrom], aliases: dict[str, str], base: bytes) -> bool:
    """Whether the imports the topic added change only what their own names mean (module
    docstring): names `base` does not spell, packages the file's other imports reach."""
    names: set[str] = set()
    for node in fresh:
        bound = _binds(node)
        if bound is None:
            return False
        names.update(bound)
    reached = {v.split(".")[0] for k, v in aliases.items() if k not in names}
    new = {aliases[n].split(".")[0] for n in names} - reached
    return _unspelled(base, names) and (not new or _no_string_starts(base, new))


def _no_string_starts(base: bytes, roots: set[str]) -> bool:
    """Whether no string of `base` can read as `root.x` (a QUALNAME use once an import reaches
    `root`). A string's value is its literal text but for escapes, which give no character of
    a dotted name (`\\x68` and the like aside: then False), and where it is cut and joined
    again: implicit concatenation (`"ha" "bana.x"`) and a backslash-newline. So a value that
    starts with `root` starts where a literal part starts (after a quote, an f-string's `}`
    or `:`, a line break: never after a letter, digit, underscore or dot), with all of `root`
    or with a part of it the literal ends on (a quote or a backslash next)."""
    if not _utf8(base) or not all(r.isascii() and r.isidentifier() for r in roots) or _CODED.search(base):
        return False
    starts = [re.escape(r.encode()) for r in roots]
    starts += [re.escape(r[:n].encode()) + rb"[\"'\\]" for r in roots for n in range(1, len(r))]
    return re.search(rb"(?<![A-Za-z0-9_.])(?:" + b"|".join(starts) + rb")", base) is None


def _span(node: ast.AST) -> tuple[int, int] | None:
    """The lines a node covers (a def or class from its first decorator); None: no position."""
    first = getattr(node, "lineno", None)
    if first is None:
        return None
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        first = min(first, *(d.lineno for d in decorators))
    return first, getattr(node, "end_lineno", None) or first


def _crosses(span: tuple[int, int], lines: list[int]) -> bool:
    at = bisect.bisect_left(lines, span[0])
    return at < len(lines) and lines[at] <= span[1]


def import_nodes(tree: ast.Module, source: bytes) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, in ast.walk's order, visiting only the statements that span
    a line with the word `import` on it (an import's node spans that line)."""
    lines: list[int] = []
    last, count = 0, 1
    for match in _IMPORT.finditer(source):
        count += source.count(b"\n", last, match.start())
        last = match.start()
        if not lines or lines[-1] != count:
            lines.append(count)
    queue: deque[ast.AST] = deque([tree])
    while queue:
        node = queue.popleft()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        for child in ast.iter_child_nodes(node):
            span = _span(child)
            if span is None or _crosses(span, lines):
                queue.append(child)


class _NearCollector(UseCollector):
    """UseCollector visiting only the nodes that span a touched line (module docstring)."""

    def __init__(self, package: str, lines: list[int]):
        super().__init__(package, set())  # no top names: LOCAL uses are not judged here
        self.lines = lines

    def visit(self, node: ast.AST) -> None:
        span = _span(node)
        if span is None or _crosses(span, self.lines):
            super().visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """A changed signature changes what the body's parameters are (an annotation): then
        the whole body is near the change. A change anywhere in a function with local
        aliases may change what they are (a second binding undoes one, a deleted one makes
        one): then every use through them is near too, wherever it is."""
        header = _span(node)
        if header is None or not node.body:
            super().visit_FunctionDef(node)
            return
        whole = list(range(header[0], (node.end_lineno or header[0]) + 1))
        if _crosses((header[0], node.body[0].lineno - 1), self.lines):
            lines, self.lines = self.lines, whole
            super().visit_FunctionDef(node)
            self.lines = lines
            return
        super().visit_FunctionDef(node)
        local = self.local_aliases(node)
        if local:
            start, lines, self.lines = len(self.found), self.lines, whole
            super().visit_FunctionDef(node)
            through = tuple(f"{v}." for v in set(local.values()))
            self.found[start:] = [u for u in self.found[start:] if u.target.startswith(through)]
            self.lines = lines

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        """In a class whose `self` reads as its upstream base, what `self.x` means depends on
        the whole class (what it binds itself, its base): a change in it puts all of it near."""
        span = _span(node)
        if span is not None and self.self_base(node) is not None:
            lines, self.lines = self.lines, list(range(span[0], span[1] + 1))
            super().visit_ClassDef(node)
            self.lines = lines
        else:
            super().visit_ClassDef(node)


def _widened(tree: ast.Module, lines: list[int], points: list[int]) -> list[int] | None:
    """`lines` with the whole top-level def or class around each deletion point: a deleted
    line can change what the lines after it mean anywhere in its scope (a deleted `def`
    line merges its body into the function above it, where a name may be an annotated
    parameter; a deleted binding uncovers another). None when a point is not in a
    top-level def or class (module-level code: what it binds reaches the whole module)."""
    if not points:
        return lines
    spans = [(span, node) for node in tree.body if (span := _span(node)) is not None]
    wide = set(lines)
    for point in points:
        holder = next((node for span, node in spans if span[0] <= point <= span[1]), None)
        if not isinstance(holder, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return None
        span = _span(holder)
        assert span is not None
        wide.update(range(span[0], span[1] + 1))
    return sorted(wide)


def _compute(path: str, base: bytes, mine: bytes) -> list[Use] | None:
    diff = hunk_lines(base, mine)
    tree = parse(mine) if diff is not None else None
    if diff is None or tree is None:
        return None
    lines = _widened(tree, diff.touched, diff.deleted_at)
    if lines is None:
        return None
    collector = _NearCollector(module_name(path)[1], lines)
    fresh: list[ast.Import | ast.ImportFrom] = []
    for node in import_nodes(tree, mine):
        span = _span(node)
        if span is not None and _crosses(span, lines):
            if not all(line in diff.added for line in range(span[0], span[1] + 1)):
                return None  # the topic changed an import: what its names mean may differ
            fresh.append(node)
        had = {name: collector.aliases.get(name) for name in _binds(node) or ()}
        collector.add_import(node)
        if any(was is not None and was != collector.aliases[name] for name, was in had.items()):
            # the full reading applies each import again where its visit meets it (a use
            # above a def's own import of a name reads the module's): a name that means two
            # things may read otherwise near the hunks, which meet only the changed imports
            return None
    if fresh and not _fresh(fresh, collector.aliases, base):
        return None  # an added import may change what names of unchanged lines mean
    collector.visit(tree)
    return collector.found


# -- the disk cache ---------------------------------------------------------------------------


def _encode(found: list[Use] | None) -> object:
    return None if found is None else uses_to_json(found)


def _decode(raw: object) -> list[Use] | None:
    """The cached answer; a ValueError (or TypeError, KeyError) when it is not one."""
    return None if raw is None else uses_from_json(raw)


def near_changes(path: str, base: bytes, mine: bytes, cache: Path | None = None) -> list[Use] | None:
    """The module docstring's answer, from the disk cache when it has it (`cache`: its
    directory, default the user's: series.semantic.blob_cache)."""
    from series.semantic import class_reading, one_pass, uses

    code = blob_cache.version(__file__, uses.__file__, class_reading.__file__, one_pass.__file__)
    key = ("near", code, module_name(path)[1], str(pygit2.hash(base)), str(pygit2.hash(mine)))
    return blob_cache.cached(key, lambda: _encode(_compute(path, base, mine)), _decode, cache)
