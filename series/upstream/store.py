"""The last fetch of `series upstream`, kept for offline use: .git/series/upstream/fetched.json.

Written only through the transaction (the verb hands its operation to `stage`; the entry
is a journal *record*, which `series undo` passes over: undoing a fetch would undo
nothing of the user's). What is stored is the typed Conversation of each PR (its
to_json), with the time of the fetch, and it is read back field by field
(Conversation.from_json): a damaged or foreign file is a one-line error, never a guess.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pygit2

from series.errors import SeriesError
from series.forge.conversation import Conversation
from series.ops.fs import state_dir
from series.ops.journal import RECORD
from series.persisted import Json, read_int, read_list, read_object, read_str

FORMAT = 1


class Writes(Protocol):
    """What `stage` needs of the transaction (series.workspace.Transaction)."""

    @property
    def extra(self) -> dict[str, Json]: ...

    def write(self, path: Path, data: str | bytes) -> None: ...


@dataclass(frozen=True)
class Fetched:
    at: str  # ISO 8601, UTC: when it was fetched
    pulls: tuple[Conversation, ...]

    def find(self, number: int) -> Conversation | None:
        return next((c for c in self.pulls if int(c.pull.number) == number), None)

    def to_json(self) -> dict[str, Json]:
        return {"format": FORMAT, "fetched_at": self.at, "pulls": [c.to_json() for c in self.pulls]}


def path(repo: pygit2.Repository) -> Path:
    return state_dir(repo) / "upstream" / "fetched.json"


def stage(tx: Writes, repo: pygit2.Repository, fetched: Fetched) -> None:
    """The fetch, written when `tx` commits; its journal entry is a record (not undone)."""
    tx.extra[RECORD] = True
    tx.write(path(repo), json.dumps(fetched.to_json(), indent=1, sort_keys=True) + "\n")


def load(repo: pygit2.Repository) -> Fetched | None:
    """The last fetch stored, None when there is none; a damaged file is an error."""
    where = path(repo)
    try:
        text = where.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise SeriesError(
            f"cannot read the stored fetch {where} ({exc})", "run 'series upstream' online to fetch again"
        ) from None
    try:
        data = read_object(json.loads(text), "the stored fetch")
        if read_int(data, "format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}, not {FORMAT}")
        at = read_str(data, "fetched_at")
        datetime.datetime.fromisoformat(at.replace("Z", "+00:00"))
        pulls = tuple(Conversation.from_json(read_object(item, "pulls")) for item in read_list(data, "pulls"))
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise SeriesError(
            f"the stored fetch {where} cannot be read back ({exc})",
            "remove it and run 'series upstream' online to fetch again",
        ) from None
    return Fetched(at, pulls)
