"""An upstream module's API read a run of top-level statements at a time
(series.semantic.top_chunks) is the API the whole file's parse gives, on the sources whose
column-0 lines are not statements' starts; and a run two versions share is parsed once."""

from __future__ import annotations

import ast

import pytest

from series.semantic import module_api, top_chunks
from series.semantic.module_api import ModuleApi

_TRICKY = [
    # a column-0 line inside a string, a bracket, a backslash continuation
    'X = """\ndef gone(a): pass\nclass Gone: pass\n"""\n\ndef kept(b):\n    return 1\n',
    "Y = f(\n1,\nz=2)\ndef after(c, **kw):\n    pass\n",
    "Z = 1 + \\\n2\nclass C:\n    def m(self, d):\n        self.e = d\n",
    "S = 'a\\\ndef gone(): pass'\ndef kept(): pass\n",
    # a statement going on at column 0: else, except, finally, a decorator
    "if A:\n    def f(x): pass\nelse:\n    def f(y): pass\n",
    "try:\n    import a as b\nexcept ImportError:\n    b = None\nfinally:\n    c = 1\n",
    "@dec\n\ndef g(q):\n    pass\n# a comment at column 0\nclass D(Base):\n    x: int = 1\n# inside?\n    def h(self): pass\n",
    # a future import after the docstring stays with it; one after a statement is an error
    '"""doc"""\nfrom __future__ import annotations\n\ndef f(a: "T"): pass\n',
    "x = 1\nfrom __future__ import annotations\n",
    # what the cut leaves to the whole parse
    "x = 1\rdef f(a): pass\ndef g(b): pass\n",  # a lone CR ends a line too
    "def f(a):\r\n    pass\r\ndef g(b): pass\r\n",
    "def __getattr__(name): pass\nMODULE_ATTRS = {'lazy': 1}\ndef later(): pass\nlater = 2\n",
    "def broken(:\n",
    "",
]


def _whole(source: bytes, monkeypatch: pytest.MonkeyPatch) -> ModuleApi | None:
    with monkeypatch.context() as m:
        m.setattr(top_chunks, "split", lambda source: None)
        return ModuleApi.of(source, "pkg")


# the file's own decoding: UTF-8 bytes that latin-1 reads otherwise
_COOKIE = b'# -*- coding: latin-1 -*-\ndef __getattr__(n): pass\nD = {"\xc3\xa9": 1}\n'


@pytest.mark.parametrize("source", [t.encode() for t in _TRICKY] + [_COOKIE, b"\xef\xbb\xbf" + _TRICKY[0].encode()])
def test_the_runs_read_as_the_whole_file(source: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    assert ModuleApi.of(source, "pkg") == _whole(source, monkeypatch)


def test_the_cut_texts_put_together_are_the_file() -> None:
    for text in _TRICKY:
        cut = top_chunks.split(text.encode())
        if cut is not None:
            assert "".join(t for _, t in cut) == text
            assert all(line == 1 + text[: text.index(t)].count("\n") for line, t in cut if t)


def test_a_run_two_versions_share_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The old and new base's version of a module differ in a class: the rest is read once."""
    shared = "".join(f"def f{i}(a, b):\n    return a\n\n" for i in range(50))
    old = (shared + "class C:\n    def m(self, x): pass\n").encode()
    new = ("# a line more\n" + shared + "class C:\n    def m(self, y): pass\n").encode()
    parsed: list[str] = []
    real = ast.parse

    def counting(source: str | bytes, *args: object, **kwargs: object) -> ast.Module:
        parsed.append(str(source))
        return real(source)

    monkeypatch.setattr(module_api, "_PARTS", {})
    monkeypatch.setattr(module_api.ast, "parse", counting)
    before, after = ModuleApi.of(old, "pkg"), ModuleApi.of(new, "pkg")
    assert len(parsed) == 51 + 2  # 50 defs and the old class, then f0 (the comment is its text now) and the new class
    assert before is not None and after is not None
    assert after.functions["f49"].line == before.functions["f49"].line + 1
    assert after.classes["C"].methods["m"].params == ("self", "y")
    monkeypatch.setattr(module_api.ast, "parse", real)
    assert after == _whole(new, monkeypatch) and before == _whole(old, monkeypatch)
