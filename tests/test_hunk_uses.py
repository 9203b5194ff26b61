"""The semantic check's shortcut (series.semantic.hunk_uses): on a file upstream left alone,
the uses near the topic's hunks must include every use the topic introduced, which the
full reading finds by parsing the base's version too. Differential: random edits of real
Python (this package's own modules) against that full reading."""

from __future__ import annotations

import ast
import json
import random
import re
from pathlib import Path

import pytest

from series.semantic import hunk_uses
from series.semantic.uses import UseKind, parse, uses

SOURCES = sorted((Path(__file__).resolve().parent.parent / "series").rglob("*.py"))
JUDGED = (UseKind.NAME, UseKind.KEYWORD, UseKind.OVERRIDE, UseKind.QUALNAME)


def _introduced(path: str, base: bytes, mine: bytes) -> set[tuple[UseKind, str, str]]:
    after = parse(mine)
    assert after is not None
    return {u.key for u in uses(after, path) if u.kind in JUDGED} - _base_uses(path, base)


_BASE_USES: dict[tuple[str, bytes], set[tuple[UseKind, str, str]]] = {}


def _base_uses(path: str, base: bytes) -> set[tuple[UseKind, str, str]]:
    """The full reading of the base's version, once per file (every mutant of it shares it)."""
    if (path, base) not in _BASE_USES:
        before = parse(base)
        assert before is not None
        _BASE_USES[path, base] = {u.key for u in uses(before, path)}
    return _BASE_USES[path, base]


def _aliases(text: str) -> list[str]:
    """Names the file's imports bind (what a topic's new code would call)."""
    tree = parse(text.encode())
    assert tree is not None
    return sorted(
        {
            (a.asname or a.name).split(".")[0]
            for n in ast.walk(tree)
            if isinstance(n, (ast.Import, ast.ImportFrom))
            for a in n.names
            if a.name != "*"
        }
    )


def _mutant(rng: random.Random, lines: list[str], aliases: list[str]) -> list[str]:
    """One edit a topic could make, most of them using one of the file's imported names in
    a new way: a call with a keyword, a keyword added to an open call, a decorator, a
    subclass with a method, a method added to a class; or lines deleted or copied."""
    out = list(lines)
    at = rng.randrange(len(out))
    indent = out[at][: len(out[at]) - len(out[at].lstrip())]
    name = rng.choice(aliases) if aliases else "functools"
    new = f"fork_{rng.randrange(1000)}"
    kind = rng.randrange(11)
    if kind == 0:
        out.insert(at, f"{indent}{name}.{new}({new}=1)")
    elif kind == 1:
        del out[at : at + rng.randint(1, 3)]
    elif kind == 2:
        out[at] = indent + rng.choice(lines).strip()
    elif kind == 3:
        opens = [i for i, x in enumerate(out) if x.rstrip().endswith("(")]
        if opens:
            i = rng.choice(opens)
            out.insert(i + 1, " " * (len(out[i]) - len(out[i].lstrip()) + 4) + f"{new}=1,")
    elif kind == 4:
        defs = [i for i, x in enumerate(out) if x.lstrip().startswith(("def ", "class "))]
        if defs:
            i = rng.choice(defs)
            pad = out[i][: len(out[i]) - len(out[i].lstrip())]
            out.insert(i, f"{pad}@{name}.{new}({new}=1)")
    elif kind == 5:
        out[at:at] = ["", f"class Fork({name}.{new}):", f"    def {new}(self):", "        return 1", ""]
    elif kind == 7:  # a parameter annotated with an imported class: its body reads it
        defs = [i for i, x in enumerate(out) if re.match(r"\s*def \w+\((self, )?\w+[,)]", x)]
        if defs:
            i = rng.choice(defs)
            out[i] = re.sub(r"(def \w+\((?:self, )?)(\w+)([,)])", rf"\1\2: {name}.{new}\3", out[i], count=1)
    elif kind == 8:
        out.insert(at, f'{indent}fork = "{name}.{new}:{new.title()}"')
    elif kind in (9, 10):  # an import added (of a fresh name or one the file has) and a use of it
        bound = rng.choice([new.title(), new.title(), name, "os", "self"])
        module = rng.choice([f"{name}.sub", "forkpkg.sub", "series.semantic.uses"])
        use = rng.randrange(len(out))
        pad = out[use][: len(out[use]) - len(out[use].lstrip())]
        out.insert(use, f"{pad}{bound}.{new}({new}=1)")
        statement = f"from {module} import {bound}" if kind == 9 else f"import {module} as {bound}"
        tops = [i for i, x in enumerate(out) if re.match(r"(def|class|import|from|if|try|[A-Za-z_]\w* =) ", x)]
        if tops and rng.random() < 0.8:
            out.insert(rng.choice(tops), statement)
        else:
            out.insert(at, f"{indent}{statement}")
    else:
        classes = [i for i, x in enumerate(out) if x.lstrip().startswith("class ")]
        if classes:
            i = rng.choice(classes)
            pad = out[i][: len(out[i]) - len(out[i].lstrip())] + "    "
            out[i + 1 : i + 1] = [f"{pad}def {new}(self, fork):", f"{pad}    return {name}.{new}(fork)", ""]
    return out


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")  # mutants' escapes
def test_near_changes_holds_every_introduced_use(tmp_path: Path) -> None:
    rng = random.Random(24)
    checked = hazards = caught = 0
    small = [s for s in SOURCES if 1500 < s.stat().st_size < 6000]
    for source in rng.sample(small, min(len(small), 40)):
        text = source.read_text()
        aliases = _aliases(text)
        path = str(source.relative_to(source.parent.parent))
        for _ in range(16):
            mutated = "\n".join(_mutant(rng, text.splitlines(), aliases)) + "\n"
            base, mine = text.encode(), mutated.encode()
            if parse(mine) is None:
                continue
            near = hunk_uses.near_changes(path, base, mine, tmp_path)
            introduced = _introduced(path, base, mine)
            if near is None:
                hazards += 1
                continue
            checked += 1
            caught += bool(introduced)
            missing = introduced - {u.key for u in near}
            assert not missing, (path, missing, mutated)
    # the shortcut must be the common case, and the property must have been exercised
    assert checked > 2 * hazards and caught > checked / 3, (checked, hazards, caught)


@pytest.mark.parametrize(
    "base, mine, expect",
    [
        # a keyword on its own line of an unchanged call
        ("import m\n\nx = m.f(\n    a=1,\n)\n", "import m\n\nx = m.f(\n    a=1,\n    b=2,\n)\n", {"m.f b"}),
        # a decorator above an unchanged def
        (
            "import m\n\n\ndef g():\n    pass\n",
            "import m\n\n\n@m.deco(k=1)\ndef g():\n    pass\n",
            {"m.deco", "m.deco k"},
        ),
        # a method added to a subclass of an upstream class
        (
            "import m\n\n\nclass C(m.Base):\n    x = 1\n",
            "import m\n\n\nclass C(m.Base):\n    x = 1\n\n    def step(self):\n        pass\n",
            {"m.Base step"},
        ),
        # a parameter's annotation changed: the body's unchanged lines read another class
        (
            "import m\n\n\ndef f(cfg: m.A):\n    return cfg.size\n",
            "import m\n\n\ndef f(cfg: m.B):\n    return cfg.size\n",
            {"m.B.size"},
        ),
        # a method's def line deleted: its body joins the method above, whose parameter is
        # annotated (the property test found it on series' own semantic/custom_ops.py)
        (
            "import m\n\n\nclass C:\n    def f(self, cfg: m.A):\n        return 1\n\n"
            "    def g(self):\n        cfg = make()\n        return cfg.size\n",
            "import m\n\n\nclass C:\n    def f(self, cfg: m.A):\n        return 1\n\n"
            "        cfg = make()\n        return cfg.size\n",
            {"m.A.size"},
        ),
    ],
)
def test_near_changes_sees_across_lines(tmp_path: Path, base: str, mine: str, expect: set[str]) -> None:
    near = hunk_uses.near_changes("pkg/x.py", base.encode(), mine.encode(), tmp_path)
    assert near is not None
    assert {f"{u.target} {u.extra}".strip() for u in near} >= expect


@pytest.mark.parametrize(
    "base, mine",
    [
        ("import m\n", "import m\nimport m.n as m\n"),  # an import added
        ("from m import (\n    a,\n)\n", "from m import (\n    a,\n    b,\n)\n"),  # inside a paren import
        ('s = """\nm.gone()\n"""\n', "s = 1\nm.gone()\n"),  # code out of a string
        ("x = 'a\\\nm.f()'\n", "x = 'a'\nm.f()\n"),  # a continued string
        # module-level code deleted: what it bound or began reaches the whole module
        (  # a class line: its method now overrides one of the class above
            "import m\n\n\nclass C(m.Base):\n    x = 1\n\nclass D:\n    def step(self):\n        pass\n",
            "import m\n\n\nclass C(m.Base):\n    x = 1\n\n    def step(self):\n        pass\n",
        ),
        ("from m import g\n\ng = 1\n\n\ndef f():\n    return g.x\n", "from m import g\n\n\ndef f():\n    return g.x\n"),
    ],
)
def test_near_changes_gives_up_where_context_changed(tmp_path: Path, base: str, mine: str) -> None:
    assert hunk_uses.near_changes("pkg/x.py", base.encode(), mine.encode(), tmp_path) is None


def test_the_cache_is_read_back_and_a_damaged_one_ignored(tmp_path: Path) -> None:
    base, mine = b"import m\n", b"import m\n\nm.f(k=1)\n"
    first = hunk_uses.near_changes("pkg/x.py", base, mine, tmp_path)
    (cached,) = tmp_path.glob("*.json")
    assert hunk_uses.near_changes("pkg/x.py", base, mine, tmp_path) == first
    cached.write_text('[["name", "m.other", "", 3, null]]')
    assert [u.target for u in hunk_uses.near_changes("pkg/x.py", base, mine, tmp_path) or []] == ["m.other"]
    cached.write_text("{not json")
    assert hunk_uses.near_changes("pkg/x.py", base, mine, tmp_path) == first


def test_comment_and_blank_lines_touch_nothing(tmp_path: Path) -> None:
    """The bench fork's topics add notes inside upstream subclasses: no use to judge."""
    base = b"import m\n\n\nclass C(m.Base):\n    def f(self):\n        return m.g(k=1)\n"
    mine = base.replace(b"    def f", b"# fork: a note\n\n    def f")
    assert hunk_uses.near_changes("pkg/x.py", base, mine, tmp_path) == []
    code = base.replace(b"    def f", b"    x = m.h(k=2)\n    def f")
    assert {u.target for u in hunk_uses.near_changes("pkg/x.py", base, code, tmp_path) or []} >= {"m.h", "m.Base"}


def test_an_upstream_module_read_back_from_the_cache_is_the_same(tmp_path: Path) -> None:
    """What series.semantic.upstream_api keeps on disk per blob reads back equal, for every
    module of this package (classes, fields, annotations, re-exports)."""
    from series.semantic import upstream_api

    for source in SOURCES:
        api = upstream_api.ModuleApi.of(source.read_bytes(), "series")
        raw = json.loads(json.dumps(upstream_api._encode(api)))
        assert upstream_api._decode(raw) == api, source


# -- a fresh import (issue 34): an import the topic added, binding names the base never spells


def _assert_holds(base: bytes, mine: bytes, tmp_path: Path, path: str = "pkg/x.py") -> list[str] | None:
    """near_changes' answer (targets, with keywords) after checking it holds every use the
    full reading says the topic introduced; None when it gave up."""
    near = hunk_uses.near_changes(path, base, mine, tmp_path)
    if near is None:
        return None
    missing = _introduced(path, base, mine) - {u.key for u in near}
    assert not missing, missing
    return sorted(f"{u.target} {u.extra}".strip() for u in near)


_UNCHANGED = "import m\n\n\ndef g(obj):\n    return obj.size\n"


@pytest.mark.parametrize(
    "mine, expect",
    [
        # `from` import, used on a line the topic added
        ("from m.sub import Fresh\n" + _UNCHANGED + "\nFresh.make(k=1)\n", {"m.sub.Fresh", "m.sub.Fresh.make k"}),
        # `import a.b` binds `a` (its package reached by `import m` already: `m.sub`)
        ("import m.sub\n" + _UNCHANGED + "\nm.sub.f(k=1)\n", None),  # `m` is spelled in base
        ("import m.sub as ms\n" + _UNCHANGED + "\nms.f(k=1)\n", {"m.sub", "m.sub.f", "m.sub.f k"}),
        # a fresh import in a function, and the function's local alias of it
        (
            "import m\n\n\ndef g(obj):\n    from m import Fresh\n    cfg = Fresh.config\n    return cfg.size\n",
            {"m.Fresh", "m.Fresh.config", "m.Fresh.config.size"},
        ),
        # a subclass of a fresh name: its methods override, `self` reads as the base
        (
            _UNCHANGED + "from m import Fresh\n\n\nclass C(Fresh):\n    def run(self):\n        return self.x\n",
            {"m.Fresh", "m.Fresh run", "m.Fresh.x"},
        ),
        # a parameter annotated with a fresh name: the whole body reads it
        (
            "import m\nfrom m import Fresh\n\n\ndef g(obj: Fresh):\n    return obj.size\n",
            {"m.Fresh", "m.Fresh.size"},
        ),
        # conditional imports: try/except ImportError and TYPE_CHECKING, all lines added
        (
            "try:\n    from m import Fresh\nexcept ImportError:\n    Fresh = None\n" + _UNCHANGED + "\nFresh.f(k=1)\n",
            {"m.Fresh", "m.Fresh.f k"},
        ),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from m import Fresh\n" + _UNCHANGED,
            {"m.Fresh"},
        ),
        # two fresh imports of one name, one meaning; two meanings give up (below)
        ("from m import Fresh\nfrom m import Fresh\n" + _UNCHANGED + "\nFresh.f()\n", {"m.Fresh.f"}),
        ("from m import Fresh\nfrom m.sub import Fresh\n" + _UNCHANGED + "\nFresh.f()\n", None),
        # the base spells the name only as an attribute: not a name of its own
        ("from m import size\n" + _UNCHANGED + "\nsize.f()\n", {"m.size", "m.size.f"}),
        # a package no other import reaches, and no string of the base could name it
        ("import other.sub as o\n" + _UNCHANGED + "\no.f(k=1)\n", {"other.sub", "other.sub.f k"}),
    ],
)
def test_a_fresh_import_is_answered_near_its_uses(tmp_path: Path, mine: str, expect: set[str] | None) -> None:
    found = _assert_holds(_UNCHANGED.encode(), mine.encode(), tmp_path)
    assert found is None if expect is None else found is not None and set(found) >= expect, found


def _unchanged_use(binding: str) -> tuple[bytes, bytes]:
    """A base binding `Fresh` (or reading it) and reading `Fresh.x(k=1)` on a line the topic
    keeps; the topic adds `from m import Fresh` above that line, so that it now reads
    `m.Fresh.x` (the base's binding comes after it: an import there would win above)."""
    base = f"import m\n\n\ndef use():\n    return Fresh.x(k=1)\n\n\n{binding}\n"
    return base.encode(), base.replace("import m\n", "import m\nfrom m import Fresh\n", 1).encode()


@pytest.mark.parametrize(
    "binding",
    [
        "",  # read but bound nowhere: a builtin, or nothing
        "def Fresh():\n    pass",
        "class Fresh:\n    pass",
        "Fresh = m.make()",
        "Fresh: int = 1",
        "for Fresh in m.items():\n    pass",
        "with m.ctx() as Fresh:\n    pass",
        "try:\n    pass\nexcept m.Error as Fresh:\n    pass",
        "if (Fresh := m.make()):\n    pass",
        "xs = [Fresh for Fresh in m.items()]",
        "match m.v:\n    case Fresh:\n        pass",
        "def f():\n    global Fresh\n    Fresh = 1",
        "class C:\n    Fresh = 1",
        "def f(Fresh):\n    pass",
        "from m import Other as Fresh",
        "import Fresh",
        "import Fresh.sub",
        "from m import *\nFresh.x()",  # a star import may bind it
    ],
)
def test_a_name_the_base_binds_or_reads_is_not_fresh(tmp_path: Path, binding: str) -> None:
    base, mine = _unchanged_use(binding)
    assert parse(base) is not None and parse(mine) is not None
    assert "m.Fresh.x" in {target for _, target, _ in _introduced("pkg/x.py", base, mine)}
    assert _assert_holds(base, mine, tmp_path) is None


@pytest.mark.parametrize(
    "mine, why",
    [
        ("from m import *\nfrom m import Fresh\n" + _UNCHANGED, "a star import: what it binds is not written"),
        ("from m import Fresh, obj\n" + _UNCHANGED, "one of its names is the base's"),
        ("from m import Fresh as obj\n" + _UNCHANGED, "an alias the base spells"),
    ],
)
def test_an_added_import_that_is_not_fresh_gives_up(tmp_path: Path, mine: str, why: str) -> None:
    assert _assert_holds(_UNCHANGED.encode(), mine.encode(), tmp_path) is None, why


@pytest.mark.parametrize(
    "string",
    [
        '"newpkg.Thing"',
        '"new" "pkg.Thing"',  # implicit concatenation
        '"new\\\npkg.Thing"',  # a backslash-newline inside the string
        '"\\x6eewpkg.Thing"',  # an escape
        'f"{obj}newpkg.Thing"',  # an f-string's literal part
        "'''newpkg.Thing'''",
    ],
)
def test_a_new_package_is_declined_where_a_base_string_may_name_it(tmp_path: Path, string: str) -> None:
    """A string reads as an upstream name by the packages the imports reach: a package the
    topic's import is the first to reach makes an unchanged string a use."""
    base = f"import m\n\nNAMES = [{string}]\n".encode()
    mine = f"import m\nimport newpkg.sub as ns\n\nNAMES = [{string}]\n".encode()
    assert ("qualname", "newpkg.Thing", "") in {(k.value, t, e) for k, t, e in _introduced("pkg/x.py", base, mine)}
    assert _assert_holds(base, mine, tmp_path) is None


def test_a_new_package_no_base_string_can_name_is_answered(tmp_path: Path) -> None:
    base = b'import m\n\nNAMES = ["m.Thing", "xnewpkg.y", "renewpkg.z", obj.newpkg, "pkg.newpkg"]\n'
    mine = base.replace(b"import m\n", b"import m\nimport newpkg.sub as ns\n") + b"\nns.f(k=1)\n"
    assert set(_assert_holds(base, mine, tmp_path) or ()) >= {"newpkg.sub", "newpkg.sub.f k"}


@pytest.mark.parametrize(
    "base, answered",
    [
        ("# -*- coding: latin-1 -*-\nimport m\n", False),  # another encoding: bytes are not names
        ("#!/usr/bin/env python\n# vim: set fileencoding=utf-7 :\nimport m\n", False),
        ("# -*- coding: utf-8 -*-\nimport m\n", True),
        ("# coding: ascii\nimport m\n", True),
        ("# coding: nonesuch\nimport m\n", False),  # no such codec: Python cannot read it
        ("\ufeffimport m\n", True),
    ],
)
def test_a_base_in_another_encoding_is_not_searched(tmp_path: Path, base: str, answered: bool) -> None:
    mine = base + "from m import Fresh\n\nFresh.f()\n"
    found = _assert_holds(base.encode(), mine.encode(), tmp_path)
    assert (found is not None) == answered


def test_a_name_spelled_in_another_unicode_form_is_the_same_name(tmp_path: Path) -> None:
    """Python reads identifiers NFKC-normalized: the base's `Ｆresh` is `Fresh`."""
    base = "import m\n\n\ndef use():\n    return \uff26resh.x(k=1)\n"
    mine = base.replace("import m\n", "import m\nfrom m import Fresh\n")
    assert ("m.Fresh.x") in {t for _, t, _ in _introduced("pkg/x.py", base.encode(), mine.encode())}
    assert _assert_holds(base.encode(), mine.encode(), tmp_path) is None
    plain = "import m\n\n\ndef use():\n    return \uff26oo.x(k=1)  # caf\u00e9\n"
    assert _assert_holds(plain.encode(), plain.replace("import m\n", mine[:30]).encode(), tmp_path) is not None


def test_an_import_replacing_a_removed_one_gives_up(tmp_path: Path) -> None:
    base = b"import m\nfrom m import Old\n\nOld.f()\n"
    mine = b"import m\nfrom m import Fresh\n\nFresh.f()\n"
    assert _assert_holds(base, mine, tmp_path) is None


@pytest.mark.parametrize("old, new", [(b"    Old,\n", b"    New,\n"), (b"    Old)\n", b"    New)\n")])
def test_an_import_the_topic_edited_is_not_fresh(tmp_path: Path, old: bytes, new: bytes) -> None:
    """Its names are fresh, but the base's version of it bound another: the name it no longer
    binds now reads as an earlier import's, on lines the topic kept."""
    base = b"import m\nfrom a import Old\nfrom m import (\n" + old + (b")\n" if old.endswith(b",\n") else b"")
    base += b"\n\ndef f():\n    return Old.x()\n"
    mine = base.replace(old, new)
    assert "a.Old.x" in {t for _, t, _ in _introduced("pkg/x.py", base, mine)}
    assert _assert_holds(base, mine, tmp_path) is None


def test_a_topic_version_that_does_not_parse_gives_up(tmp_path: Path) -> None:
    assert hunk_uses.near_changes("pkg/x.py", b"import m\n", b"import m\nfrom m import Fresh(\n", tmp_path) is None


def test_a_base_python_cannot_decode_is_not_searched(tmp_path: Path) -> None:
    """An encoding no codec has: Python reads no name of it (the topic drops the line)."""
    base = b"#!/usr/bin/env python\n# coding: nonesuch\n\nimport m\n\n\ndef use():\n    return 1\n"
    mine = b"#!/usr/bin/env python\n\nimport m\nfrom m import Fresh\n\n\ndef use():\n    return Fresh.x()\n"
    assert parse(base) is None and parse(mine) is not None
    assert hunk_uses.near_changes("pkg/x.py", base, mine, tmp_path) is None


def test_a_name_imported_twice_with_two_meanings_gives_up(tmp_path: Path) -> None:
    """The reading applies every import first, then each again where the visit meets it: a
    use above a def's own `from b import X` reads the module's `from a import X`. The uses
    near the hunks meet only the imports on changed lines: with two meanings for a name they
    could read the wrong one (vLLM's layers import `ops` again inside a def)."""
    base = b"from a import X\n\n\ndef f():\n    return 1\n\n\ndef g():\n    from b import X\n    return X\n"
    mine = base.replace(b"    return 1\n", b"    return X.y(k=1)\n")
    assert "a.X.y" in {t for _, t, _ in _introduced("pkg/x.py", base, mine)}
    assert _assert_holds(base, mine, tmp_path) is None
    same = base.replace(b"from b import X", b"from a import X")  # one meaning: answered
    assert _assert_holds(same, same.replace(b"    return 1\n", b"    return X.y(k=1)\n"), tmp_path) is not None
