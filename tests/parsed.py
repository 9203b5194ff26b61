"""Python sources parsed once per session: the layout and one-answer tests read the whole
package again and again (about 0.45 s a pass). Keyed by the text, so a file that changed
(or a test's own file in tmp_path) is parsed anew. The trees are shared: read, never edit."""

from __future__ import annotations

import ast
import functools
from pathlib import Path


def parsed(path: Path, source: str | None = None) -> ast.Module:
    """ast.parse of `source` (default: the file's text), named `path`."""
    return _parse(path.read_text() if source is None else source, str(path))


@functools.lru_cache(maxsize=None)
def _parse(text: str, name: str) -> ast.Module:
    return ast.parse(text, name)
