"""A series.yaml together with the repository that holds its branches."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pygit2

from series import config
from series.errors import SeriesError
from series.git.repo import branch_commit, open_repo, resolve_commit
from series.model import Series, Topic


@dataclass(frozen=True)
class Workspace:
    series: Series
    repo: pygit2.Repository

    @property
    def config_path(self) -> Path:
        return self.series.path

    def base_commit(self) -> pygit2.Commit:
        try:
            return resolve_commit(self.repo, self.series.upstream.base, "ref")
        except SeriesError as exc:
            # name the file and line, like every other series.yaml error
            line = self.series.lines.get("upstream.base", 1)
            raise SeriesError(f"{self.config_path.name}:{line}: upstream.base: {exc}") from None

    def head(self, topic: Topic) -> pygit2.Commit:
        commit = branch_commit(self.repo, topic.branch)
        if commit is None:
            raise SeriesError(
                f"{self.config_path.name}:{self.series.lines.get(f'topics.{topic.name}.branch', topic.line)}: "
                f"topics ({topic.name}).branch: "
                f"branch '{topic.branch}' does not exist (create it, or fix the name)"
            )
        return commit

    def reload(self) -> "Workspace":
        return Workspace(config.load(self.config_path), self.repo)


def open_workspace(config_file: Path | None, directory: Path | None,
                   check_branches: bool = True) -> Workspace:
    start = directory or Path.cwd()
    path = config.find(start, config_file)
    series = config.load(path)
    repo = open_repo(path.parent)
    ws = Workspace(series, repo)
    if check_branches:
        for topic in series.topics:
            if topic.active:
                ws.head(topic)
    _complete_clone(ws)
    return ws


def _complete_clone(ws: Workspace) -> None:
    """A partial clone gets the blobs the topics need; a shallow one is checked (partial.py)."""
    from series.git import partial

    if not (ws.repo.is_shallow or partial.is_partial(ws.repo)):
        return
    try:
        base = ws.base_commit()
    except SeriesError:
        return  # the command says what is wrong with the base in its own words
    heads = [ws.head(t) for t in ws.series.topics
             if t.active and ws.repo.references.get(f"refs/heads/{t.branch}") is not None]
    partial.check_shallow(ws.repo, base, heads, ws.series.upstream.base, ws.series.upstream.remote)
    partial.ensure_blobs(ws.repo, base, heads)
