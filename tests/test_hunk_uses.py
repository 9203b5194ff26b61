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
    kind = rng.randrange(9)
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
