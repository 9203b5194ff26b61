"""Is a resolved file fit to be taken (issue 33)? No conflict markers left, and a Python file
parses. One answer for the two places a resolution enters a rebase: what a human resolved
in the conflict worktree (`series rebase --continue`, through the engine's `check` hook)
and what the conflict memory would replay (series.resolutions).

A problem the commit being replayed already had is not the resolution's: a topic's file that
never parsed (a fixture, or code for a newer Python than this one) is not refused for it.
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Iterable

from series.engine.resolve import ResolvedFile

PYTHON = (".py", ".pyi")
# git's markers, as rerere and series.resolutions read them: seven of a kind, then a label or
# the end of the line ("=======" alone is an rst heading as often as a separator)
_MARKER = re.compile(rb"^(<{7}|>{7})(?: |\r?$)", re.MULTILINE)


def marker_line(data: bytes) -> int | None:
    """The line of the first conflict marker, None when there is none."""
    found = _MARKER.search(data)
    return data.count(b"\n", 0, found.start()) + 1 if found is not None else None


def syntax_error(path: str, data: bytes) -> str | None:
    """`line: message` of the parser's first complaint about a Python file, None when it
    parses (or is not Python)."""
    if not path.endswith(PYTHON):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like are not errors
            ast.parse(data, filename=path)
    except SyntaxError as exc:  # IndentationError and TabError too
        return f"{exc.lineno or 0}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        return f"0: {exc}"
    return None


def problem(path: str, data: bytes, original: bytes | None) -> str | None:
    """What is wrong with `data` as the resolution of `path` ("path:line: message"); None
    when nothing is. `original`: the replayed commit's own version (None: it has none)."""
    line = marker_line(data)
    if line is not None and (original is None or marker_line(original) is None):
        return f"{path}:{line}: conflict markers left in the file"
    error = syntax_error(path, data)
    if error is not None and (original is None or syntax_error(path, original) is None):
        return f"{path}:{error}"
    return None


def problems(topic: str, files: Iterable[ResolvedFile]) -> list[str]:
    """The engine's `check` hook (series.engine.resolve): one line per refused file."""
    return [p for f in files if (p := problem(f.path, f.data, f.original)) is not None]
