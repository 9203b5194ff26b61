"""Whether an upstream class has a member, its bases included (series.semantic.breaks judges
a field or method a topic reads on an upstream class).

    owner(tree, found, name)  the class (`found` or one of its bases) that defines `name`;
                              False: none of them does, and each of them is known whole;
                              None: it cannot be told

Only False reports a break, so it is given only when the whole chain of bases is read from
the tree itself: every base resolves to a class of the tree (or is one that adds no
attributes: object, ABC, Generic, Protocol), and no class in it reaches attributes by name
(`__getattr__`, `setattr`, `__dict__`, torch's `register_buffer`: series.semantic.upstream_api
marks those `open`). A base from outside the tree (torch.nn.Module, an Enum) makes it None.
"""

from __future__ import annotations

from typing import Literal

from series.semantic.class_reading import adds_nothing
from series.semantic.module_api import module_name
from series.semantic.upstream_api import Found, UpstreamTree


def owner(tree: UpstreamTree, found: Found, name: str, depth: int = 8) -> Found | Literal[False] | None:
    """The module docstring's answer for the class `found` names."""
    cls = found.cls
    if cls is None:
        return None
    if cls.has(name):
        return found
    if cls.open or depth == 0:
        return None
    answer: Literal[False] | None = False
    for written in cls.bases:
        if adds_nothing(written):
            continue
        base = tree.base_class(module_name(found.path)[0], written)
        inherited = owner(tree, base, name, depth - 1) if base is not None else None
        if inherited:
            return inherited
        if inherited is None:
            answer = None  # a later base may still have it: go on, but never say False
    return answer
