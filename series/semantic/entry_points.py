"""The entry points a package declares (console scripts, vLLM's `vllm.general_plugins` and
other plugin groups), read from pyproject.toml, setup.cfg or setup.py without running them:
the semantic check (series.semantic.breaks) judges each `module:attr` a topic points at.

    targets(path, source)  {"module.attr": line} of the file's entry points; {} for a file
                           that is none of the three or does not parse

pyproject.toml: [project.scripts], [project.gui-scripts], [project.entry-points.<group>];
setup.cfg: the lines of [options.entry_points]; setup.py: every string literal shaped like
an entry point, `name = module:attr` (what `entry_points={...}` lists). A line is where
the value first appears in the file.
"""

from __future__ import annotations

import ast
import posixpath
import re
import tomllib

FILES = frozenset({"pyproject.toml", "setup.cfg", "setup.py"})
_SPEC = re.compile(r"\s*[\w.\-]+\s*=\s*([A-Za-z_][\w.]*(?::[A-Za-z_][\w.]*)?)\s*(\[[^\]]*\])?\s*\Z")
_VALUE = re.compile(r"\s*([A-Za-z_][\w.]*(?::[A-Za-z_][\w.]*)?)\s*(\[[^\]]*\])?\s*\Z")


def _line(text: str, value: str) -> int:
    at = text.find(value)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def _pyproject(text: str) -> list[str]:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []
    project = doc.get("project")
    if not isinstance(project, dict):
        return []
    tables = [project.get("scripts"), project.get("gui-scripts")]
    groups = project.get("entry-points")
    if isinstance(groups, dict):
        tables += list(groups.values())
    return [v for t in tables if isinstance(t, dict) for v in t.values() if isinstance(v, str)]


def _setup_cfg(text: str) -> list[str]:
    out, inside = [], False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            inside = line == "[options.entry_points]"
        elif inside and (m := _SPEC.match(line)):
            out.append(m.group(1))
    return out


def _setup_py(text: str) -> list[str]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    return [
        m.group(1)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and (m := _SPEC.match(n.value))
    ]


def targets(path: str, source: bytes) -> dict[str, int]:
    name = posixpath.basename(path)
    if name not in FILES:
        return {}
    text = source.decode("utf-8", "replace")
    if name == "pyproject.toml":
        values = [m.group(1) for v in _pyproject(text) if (m := _VALUE.match(v))]
    else:
        values = _setup_cfg(text) if name == "setup.cfg" else _setup_py(text)
    return {v.replace(":", "."): _line(text, v) for v in values}
