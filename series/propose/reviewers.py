"""Who may be asked to review a proposed PR: the owners in CODEOWNERS, the authors of the lines.

vLLM's guide allows @-mentions of two kinds of people only: those who own a path in
CODEOWNERS, and those who touched the lines (git blame). Both are read from upstream's
main line: CODEOWNERS as GitHub reads it (the first of .github/, the root, docs/; matched
as GitHub documents it, in series.propose.codeowners), and
blame of the old side of every hunk the PR changes. A blamed author is mentionable only
with a GitHub login: from a users.noreply.github.com address, or asked of the forge
(`login_of`); without one the person is named, not @-mentioned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

import pygit2

from series.propose import codeowners
from series.propose.codeowners import OwnerRule
from series.forge.base import PullFile
from series.git.repo import person

CODEOWNERS_PATHS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")
_NOREPLY = re.compile(r"^(?:\d+\+)?([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)@users\.noreply\.github\.com$")
MAX_LOOKUPS = 8  # forge questions for blamed authors' logins, most lines first


@dataclass(frozen=True)
class Owned:
    path: str
    owners: tuple[str, ...]
    rule: str | None = None  # the pattern that decided, with its line: "/vllm/lora (line 7)"


@dataclass(frozen=True)
class Author:
    name: str
    email: str
    lines: int
    files: tuple[str, ...]
    login: str | None = None
    commit: str = ""  # one commit of theirs among the blamed lines


@dataclass(frozen=True)
class Reviewers:
    codeowners: str | None  # the file read, or None
    owned: tuple[Owned, ...]
    authors: tuple[Author, ...]
    mentionable: tuple[str, ...]  # "@login" / "@org/team", owners first
    unmentionable: tuple[str, ...] = field(default=())  # blamed authors with no known login

    def to_json(self) -> dict[str, object]:
        return {
            "codeowners": self.codeowners,
            "owned": [{"path": o.path, "owners": list(o.owners), "rule": o.rule} for o in self.owned],
            "authors": [
                {"name": a.name, "email": a.email, "login": a.login, "lines": a.lines, "files": list(a.files)}
                for a in self.authors
            ],
            "mentionable": list(self.mentionable),
            "not_mentionable": list(self.unmentionable),
        }


def parse_codeowners(text: str) -> list[OwnerRule]:
    return codeowners.parse(text)


def owners_of(rules: Sequence[OwnerRule], path: str) -> Owned:
    rule = codeowners.decide(rules, path)  # the last matching pattern takes precedence
    return Owned(path, rule.owners, f"{rule.pattern} (line {rule.line})") if rule else Owned(path, ())


def read_codeowners(repo: pygit2.Repository, tree: pygit2.Tree) -> tuple[str | None, list[OwnerRule]]:
    for path in CODEOWNERS_PATHS:
        try:
            blob = tree[path].peel(pygit2.Blob)
        except (KeyError, ValueError):
            continue
        return path, parse_codeowners(blob.data.decode("utf-8", "replace"))
    return None, []


def _blame_lines(hunks: Sequence[tuple[int, int]], total: int) -> list[tuple[int, int]]:
    """1-based inclusive line spans to blame: a deletion's own lines; an insertion, the
    lines around the point it goes in."""
    spans = []
    for start, count in hunks:
        first, last = (start, start + count - 1) if count else (start, start + 1)
        first, last = max(first, 1), min(last, total)
        if first <= last:
            spans.append((first, last))
    return spans


@dataclass
class _Tally:
    name: str
    email: str
    commit: str
    lines: int = 0
    files: list[str] = field(default_factory=list)


def blame_authors(repo: pygit2.Repository, main: pygit2.Commit, files: Sequence[PullFile]) -> list[Author]:
    """Authors of the upstream lines the PR changes, most lines first."""
    seen: dict[str, _Tally] = {}
    for f in files:
        try:
            blob = main.tree[f.path].peel(pygit2.Blob)
        except (KeyError, ValueError):
            continue  # a new file: nobody wrote its old lines
        if not f.hunks or b"\0" in blob.data[:8000]:
            continue
        total = blob.data.count(b"\n") + (0 if blob.data.endswith(b"\n") else 1)
        for first, last in _blame_lines(f.hunks, total):
            for hunk in repo.blame(f.path, newest_commit=main.id, min_line=first, max_line=last):
                commit = repo[hunk.final_commit_id].peel(pygit2.Commit)
                name, email = person(commit, commit.author)
                tally = seen.setdefault(email.lower(), _Tally(name, email, str(commit.id)))
                tally.lines += hunk.lines_in_hunk
                if f.path not in tally.files:
                    tally.files.append(f.path)
    authors = [Author(t.name, t.email, t.lines, tuple(t.files), commit=t.commit) for t in seen.values()]
    authors.sort(key=lambda a: (-a.lines, a.email))
    return authors


def suggest(
    repo: pygit2.Repository,
    main: pygit2.Commit,
    files: Sequence[PullFile],
    *,
    login_of: Callable[[str], str | None] | None = None,
    me: Sequence[str] = (),
) -> Reviewers:
    """CODEOWNERS owners of `files`, and the blamed authors of their changed lines.

    `login_of(commit sha)` asks the forge for a commit author's login; `me` holds the
    proposer's own emails and login, who is never suggested.
    """
    mine = {m.lower() for m in me}
    source, rules = read_codeowners(repo, main.tree)
    owned = tuple(owners_of(rules, f.path) for f in files) if rules else ()
    authors: list[Author] = []
    lookups = 0
    for author in blame_authors(repo, main, files):
        if author.email.lower() in mine:
            continue
        m = _NOREPLY.match(author.email)
        login = m.group(1) if m else None
        if login is None and login_of is not None and lookups < MAX_LOOKUPS:
            lookups += 1
            login = login_of(author.commit)
        authors.append(Author(author.name, author.email, author.lines, author.files, login, author.commit))
    mentionable: list[str] = []
    for o in owned:
        for owner in o.owners:
            if owner.lstrip("@").lower() not in mine and owner not in mentionable:
                mentionable.append(owner)
    for a in authors:
        if a.login and a.login.lower() not in mine and f"@{a.login}" not in mentionable:
            mentionable.append(f"@{a.login}")
    unmentionable = tuple(f"{a.name} <{a.email}>" for a in authors if not a.login)
    return Reviewers(source, owned, tuple(authors), tuple(mentionable), unmentionable)


def render(r: Reviewers) -> list[str]:
    out = ["reviewers (vLLM's guide: @-mention only CODEOWNERS owners and the authors of the lines you change):"]
    if r.codeowners is None:
        out.append("  CODEOWNERS: none in upstream main's tree")
    else:
        out.append(f"  CODEOWNERS ({r.codeowners} on upstream main):")
        for o in r.owned:
            who = " ".join(o.owners) if o.owners else "no owner"
            out.append(f"    {o.path}: {who}" + (f"  [{o.rule}]" if o.rule else ""))
    if r.authors:
        out.append("  authors of the changed lines (git blame on upstream main):")
        for a in r.authors:
            handle = f"@{a.login}" if a.login else "no GitHub login known"
            out.append(f"    {a.name} <{a.email}> ({handle}): {a.lines} line(s) in {', '.join(a.files)}")
    else:
        out.append("  authors of the changed lines: none (only new files or new lines at the ends)")
    if r.mentionable:
        out.append(f"  may be @-mentioned: {' '.join(r.mentionable)}")
    else:
        out.append("  may be @-mentioned: nobody")
    if r.unmentionable:
        out.append(f"  named, not @-mentioned (no login known; do not guess a handle): {'; '.join(r.unmentionable)}")
    out.append("  anyone else: do not @-mention; ask in #pr-reviews on vLLM's Slack")
    return out
