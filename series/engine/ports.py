"""What the engine needs from the side that calls it, as Protocols, so that the engine never
imports the workspace (series.workspace imports the halt record, series.ops.halted; neither
the engine nor the workspace imports the other).

    SeriesRepo       a series in its repository: what the engine reads (series.workspace.Workspace
                     is one); it cannot open a transaction: the verb opens it and hands it in
    TransactionPort  the transaction a step writes through (series.workspace.Transaction is one):
                     ref moves, series.yaml edits, files (what the hooks record), commit, revert;
                     and the journal a resumed step reads: the operation it began (find), its
                     repair (finish), the checkouts it leaves (settle_checkouts)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import pygit2

from series.git.refs import RefMove
from series.ops.journal import FileChange, Operation
from series.model import Series, Topic
from series.persisted import Json
from series.seriesfile.edit import Edit, KeyPath, Plain
from series.topics import OwnWork


class TransactionPort(Protocol):
    summary: str
    edits: list[Edit]
    notes: list[str]

    @property
    def moves(self) -> list[RefMove]: ...

    @property
    def extra(self) -> dict[str, Json]: ...

    def reserve_id(self) -> str: ...

    def move(self, ref: str, new: str | None, *, expect: str | None | object = ...) -> None: ...

    def verify(self, ref: str, value: str) -> None: ...

    def seen(self, text: str | None = None) -> Plain: ...

    def edit(self, path: KeyPath, new: Any) -> None: ...

    def set_topic(self, name: str, **fields: Any) -> None: ...

    def revert(self, target: Operation) -> None: ...

    def commit(self, fault: str | None = None) -> Operation: ...

    @property
    def files(self) -> list[FileChange]: ...

    def write(self, path: Path, data: str | bytes) -> None: ...

    def write_recorded(self, change: FileChange) -> None: ...

    def find(self, op_id: str) -> Operation | None: ...

    def finish(self, op: Operation) -> Operation: ...

    def settle_checkouts(self, op: Operation) -> list[str]: ...


class SeriesRepo(Protocol):
    @property
    def repo(self) -> pygit2.Repository: ...

    @property
    def series(self) -> Series: ...

    @property
    def text(self) -> str | None: ...

    @property
    def config_path(self) -> Path: ...

    def base_commit(self) -> pygit2.Commit: ...

    def head(self, topic: Topic) -> pygit2.Commit: ...

    def require_own(self, topic: Topic) -> OwnWork: ...

    def built_on(self, topic: Topic) -> Topic | None: ...

    def reload(self) -> "SeriesRepo": ...
