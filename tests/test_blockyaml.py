"""series.seriesfile.blockyaml answers only where it answers as ruamel does: the same data, the same
positions (which name the lines of errors and place the editor's splices), and so the
same Series or the same error from series.seriesfile.config. Checked on generated series.yaml files
and on random mutations of them; a file it declines goes to ruamel, which is always right."""

from __future__ import annotations

import io
import random
from pathlib import Path
from typing import Any

from series.seriesfile import blockyaml, config
from series.errors import SeriesError

WORDS = [
    "offload",
    "evict",
    "fix",
    "v0.31.0",
    "topic/kv-offload",
    "vllm-project/vllm",
    "a.b_c-d",
    "x+y",
    "it's",
    'say "hi"',
    "a:b",
    "https://api.github.com",
    "yes",
    "No",
    "TRUE",
    "null",
    "Null",
    "~",
    "0",
    "61050",
    "007",
    "1.5",
    "1e3",
    "2024-01-01",
    "0x1f",
    "-5",
    ".inf",
    "@who",
    "%d",
    "*star",
    "&anchor",
    "!tag",
    "|",
    ">",
    "[a, b]",
    "{a: 1}",
    "a #not",
    "a#b",
    "tail:",
    "k: v",
    "ü-unicode",
    "back\\slash",
    "two  spaces",
    "semi;colon",
    "q?",
    "<<",
    "=",
]


TAME = [
    "offload",
    "evict",
    "fix",
    "v0.31.0",
    "topic/kv-offload",
    "vllm-project/vllm",
    "a.b_c-d",
    "x+y",
    "it's",
    "a:b",
    "https://api.github.com",
    "two  spaces",
    "ü-unicode",
    "say (hi)",
    "61050",
]


def _any_scalar(rng: random.Random, tame: bool = False) -> str:
    words = TAME if tame else WORDS
    word = " ".join(rng.choice(words) for _ in range(rng.choice([1, 1, 1, 2, 3])))
    style = rng.random()
    if style < 0.15:
        return "'" + word.replace("'", "''") + "'"
    if style < 0.25 and '"' not in word:
        return '"' + word + '"'
    return word


def _comment(rng: random.Random) -> str:
    return rng.choice(["", "", "", "  # note", " # x: y", "    #c"])


def _document(rng: random.Random) -> str:
    tame = rng.random() < 0.5  # half the files use only words that can be nothing but strings

    def _scalar(rng: random.Random) -> str:
        return _any_scalar(rng, tame)

    def _list(rng: random.Random) -> str:
        return "[" + ", ".join(_scalar(rng) for _ in range(rng.randint(0, 3))) + "]"

    lines = []
    if rng.random() < 0.3:
        lines.append("# series.yaml: a comment first")
    lines.append("upstream:" + _comment(rng))
    lines += [
        f"  remote: {rng.choice(['upstream', _scalar(rng)])}{_comment(rng)}",
        f"  base: {rng.choice(['v0.30.0', _scalar(rng)])}{_comment(rng)}",
    ]
    if rng.random() < 0.4:
        lines.append(f"  github: {rng.choice(['vllm-project/vllm', _scalar(rng)])}")
    if rng.random() < 0.5:
        lines.append(f"integration: {rng.choice(['series/integration', _scalar(rng)])}{_comment(rng)}")
    if rng.random() < 0.3:
        lines += [
            "propose:",
            f"  max_lines: {rng.choice(['400', '0', 'lots', '12'])}",
            "  hot_paths:",
            "    - vllm/v1/core",
            f"    - {_scalar(rng)}",
        ]
    if rng.random() < 0.2:
        lines.append("")
    if rng.random() < 0.1:
        return "\n".join(lines + ["topics: []" + _comment(rng)]) + "\n"
    lines.append("topics:" + _comment(rng))
    dash = rng.choice([0, 2, 2, 4])
    gap = rng.choice([1, 1, 1, 3])
    for i in range(rng.randint(0, 6)):
        pad = " " * dash
        inner = " " * (dash + 1 + gap)
        lines.append(f"{pad}-{' ' * gap}name: {rng.choice([f't{i:02d}', _scalar(rng)])}{_comment(rng)}")
        lines.append(f"{inner}branch: {rng.choice([f'topic/t{i:02d}', _scalar(rng)])}")
        for key in rng.sample(
            ["status", "summary", "upstream_pr", "scope", "depends_on", "reason", "owner"], rng.randint(0, 3)
        ):
            if key in ("scope", "depends_on") and rng.random() < 0.4:
                lines.append(f"{inner}{key}:")
                lines += [f"{inner}  - {_scalar(rng)}" for _ in range(rng.randint(1, 2))]
            elif key in ("scope", "depends_on") and rng.random() < 0.7:
                lines.append(f"{inner}{key}: {_list(rng)}{_comment(rng)}")
            elif key == "reason" and rng.random() < 0.4:
                lines.append(f"{inner}{key}:{rng.choice(['', '  # none yet', ' #x'])}")
            elif key == "upstream_pr":
                lines.append(f"{inner}{key}: {rng.choice(['61050', '0', '-3', 'abc', 'true', ''])}")
            else:
                lines.append(f"{inner}{key}: {_scalar(rng)}{_comment(rng)}")
        if rng.random() < 0.15:
            lines.append("")
    text = "\n".join(lines)
    return text + ("\n" if rng.random() < 0.9 else "")


def _mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(text) + 1)
        op = rng.random()
        piece = rng.choice(list(":- #'\"\n\tab0[{&*!|>%?,") + ["  ", "\n  ", ": ", "- ", "key: v\n"])
        if op < 0.4:
            text = text[:at] + piece + text[at:]
        elif op < 0.8:
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at] + piece + text[at + 1 :]
    return text


def _same(fast: Any, slow: Any, where: str) -> None:
    if isinstance(slow, dict):
        assert isinstance(fast, dict) and list(fast) == list(slow), where
        assert fast.lc.line == slow.lc.line, where
        for key in slow:
            assert fast.lc.key(key) == tuple(slow.lc.key(key)), f"{where}.{key} key position"
            if key in fast.lc.values:
                assert fast.lc.value(key) == tuple(slow.lc.value(key)), f"{where}.{key} value position"
            _same(fast[key], slow[key], f"{where}.{key}")
    elif isinstance(slow, list):
        assert isinstance(fast, list) and len(fast) == len(slow), where
        assert fast.lc.line == slow.lc.line, where
        assert fast.fa.flow_style() == slow.fa.flow_style(), where
        for i, item in enumerate(slow):
            assert fast.lc.item(i) == tuple(slow.lc.item(i)), f"{where}[{i}] position"
            _same(fast[i], item, f"{where}[{i}]")
    elif isinstance(slow, bool) or slow is None:
        assert fast is slow, where
    elif isinstance(slow, int):
        assert type(fast) is int and type(slow) is int and fast == slow, where
    elif isinstance(slow, str):
        assert type(fast) is str and fast == slow, where
    else:
        raise AssertionError(f"{where}: ruamel reads {type(slow).__name__}; the fast reader must decline")


def _outcome(read: Any, text: str) -> Any:
    try:
        return read(text, Path("series.yaml"))
    except SeriesError as exc:
        return str(exc)


def test_where_the_fast_reader_answers_it_answers_as_ruamel_does() -> None:
    rng = random.Random(7)
    answered = {"base": 0, "mutated": 0}
    tried = {"base": 0, "mutated": 0}
    for round_ in range(500):
        base = _document(rng)
        for kind, text in (
            ("base", base),
            ("base", base.replace("\n", "\r\n")),  # a Windows editor's
            ("mutated", _mutate(rng, base)),
            ("mutated", _mutate(rng, base)),
        ):
            tried[kind] += 1
            fast = blockyaml.load(text)
            if fast is None:
                continue
            answered[kind] += 1
            try:
                slow = config._yaml().load(io.StringIO(text))
            except Exception as exc:  # noqa: BLE001 - any refusal of ruamel's is a miss of ours
                raise AssertionError(f"round {round_}: ruamel refuses ({exc}) what the fast reader read:\n{text}")
            try:
                _same(fast, slow, "document")
            except AssertionError as exc:
                raise AssertionError(f"round {round_}: {exc}\n{text}") from None
            config._PARSED.clear()
            config._READ.clear()
            assert _outcome(config.read, text) == _outcome(lambda t, p: config._parse(t, p)[0], text), text
    # the check must bite: most plain files are read fast, and so are some mutated ones
    assert answered["base"] > 100 and answered["mutated"] > 50, (answered, tried)


def test_the_files_series_writes_are_read_fast() -> None:
    from series.seriesfile import edit as seriesedit

    text = seriesedit.skeleton("upstream", "v0.31.0", "vllm-project/vllm", "series/integration")
    assert blockyaml.load(text) is not None
    assert blockyaml.load(text.replace("\n", "\r\n")) == blockyaml.load(text)  # CRLF: no slow path
    assert blockyaml.load((Path(__file__).parent.parent / "topics" / "series.yaml").read_text()) is not None


def test_the_editor_splices_the_same_bytes_at_either_reader_s_positions() -> None:
    """seriesedit splices at blockyaml's positions when it reads the file: the bytes of
    each splice (or its refusal) must be those it makes at ruamel's."""
    from series.seriesfile import edit as seriesedit
    from series.seriesfile.edit import Edit

    def edits_for(data: dict[str, Any]) -> list[list[Edit]]:
        names = [t["name"] for t in data.get("topics") or []]
        out = [
            [Edit(("upstream", "base"), data["upstream"]["base"], "v0.32.0")],
            [Edit(("integration",), data.get("integration"), "series/next")],
            [
                Edit(
                    ("topics", "added"),
                    None,
                    {"name": "added", "branch": "topic/added"},
                    after=names[-1] if names else None,
                )
            ],
        ]
        for name in names[:2]:
            topic = next(t for t in data["topics"] if t["name"] == name)
            out += [
                [Edit(("topics", name, "status"), topic.get("status"), "dropped")],
                [Edit(("topics", name, "reason"), topic.get("reason"), "upstream has it")],
                [Edit(("topics", name), topic, None)],
            ]
        return out

    def splice(text: str, doc: Any, edits: list[Edit]) -> str:
        try:
            return seriesedit._splice(text, doc, seriesedit.plain(doc), edits)
        except Exception as exc:  # noqa: BLE001 - the refusal's kind is compared too
            return f"refused: {type(exc).__name__}"

    rng = random.Random(11)
    spliced = 0
    for n in range(300):
        text = _document(rng)
        text = text.replace("\n", "\r\n") if n % 3 == 0 else text
        fast = blockyaml.load(text)
        if fast is None or isinstance(_outcome(config.read, text), str):
            continue
        slow = config._yaml().load(io.StringIO(text))
        for edits in edits_for(seriesedit.plain(fast)):
            ours = splice(text, fast, edits)
            assert ours == splice(text, slow, edits), (edits, text)
            spliced += not ours.startswith("refused")
    assert spliced > 50, spliced


def test_the_editor_quotes_a_value_exactly_when_ruamel_would_misread_it(monkeypatch: Any) -> None:
    """seriesedit.scalar asks blockyaml whether a plain value reads back; its answer must
    be the one ruamel gives."""
    from series.seriesfile import edit as seriesedit

    real_load = blockyaml.load
    words = WORDS + TAME + ["a b", "x  # y", "v1.2.3-rc1", "Yes", "~x", "(x)", "$HOME", "./path", "a,b", "1_000"]
    for text in words + [f"{a} {b}" for a in words[:8] for b in words[:8]]:
        ours = seriesedit.scalar(text)
        monkeypatch.setattr(blockyaml, "load", lambda t: None)
        theirs = seriesedit.scalar(text)
        monkeypatch.setattr(blockyaml, "load", real_load)
        assert ours == theirs, text
