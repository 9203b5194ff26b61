"""series.yaml keeps its line ends (issue 22): a CRLF file edited by drop, supersede, add or
undo is CRLF everywhere, byte for byte what the LF file becomes with CRLF line ends; a
file of mixed ends keeps each untouched line's own, and one without a final newline is
still read back as the same series."""

from __future__ import annotations

from pathlib import Path

from series.seriesfile import edit as seriesedit
from series.seriesfile.edit import Edit
from tests.conftest import run_series, sh

EDITS = [
    ("drop", "ipc-backport", "--reason", "fixed differently upstream"),
    ("supersede", "sched-note", "--by", "api-hello"),
    ("add", "topic/late", "--summary", "a late one"),
]


def edited(fork: Path, original: bytes, verb: tuple[str, ...]) -> bytes:
    (fork / "series.yaml").write_bytes(original)
    run_series(*verb, cwd=fork)
    return (fork / "series.yaml").read_bytes()


def test_every_edit_of_a_crlf_series_yaml_keeps_crlf(fork: Path) -> None:
    sh("git branch topic/late topic/api-hello", fork)
    lf = (fork / "series.yaml").read_bytes()
    assert b"\r" not in lf
    crlf = lf.replace(b"\n", b"\r\n")
    for verb in EDITS:
        want = edited(fork, lf, verb)
        assert want != lf, verb
        got = edited(fork, crlf, verb)
        assert got == want.replace(b"\n", b"\r\n"), (verb, got)
        run_series("undo", cwd=fork)
        assert (fork / "series.yaml").read_bytes() == crlf, verb


def test_mixed_line_ends_and_no_final_newline_survive(fork: Path) -> None:
    lines = (fork / "series.yaml").read_bytes().splitlines(keepends=True)
    mixed = b"".join(line.replace(b"\n", b"\r\n") if n % 2 else line for n, line in enumerate(lines))
    got = edited(fork, mixed, EDITS[0])
    kept = [line for line in mixed.splitlines(keepends=True) if b"ipc-backport" not in line]
    assert all(line in got.splitlines(keepends=True) for line in kept), got
    new = [line for line in got.splitlines(keepends=True) if line not in mixed.splitlines(keepends=True)]
    assert new and all(line.endswith(b"\n") and not line.endswith(b"\r\r\n") for line in new), new
    assert run_series("status", "--json", cwd=fork).returncode == 0

    bare = (fork / "series.yaml").read_bytes().rstrip(b"\r\n")
    got = edited(fork, bare, ("drop", "api-hello"))
    assert got.startswith(bare[: bare.index(b"  - name: api-hello")]), got
    assert b"status: dropped" in got and got.count(b"\r") <= bare.count(b"\r") + 1, got


def test_the_editor_writes_new_lines_with_the_file_s_line_end() -> None:
    text = "upstream:\r\n  remote: upstream\r\n  base: v0.30.0\r\ntopics:\r\n  - name: a\r\n    branch: topic/a\r\n"
    out = seriesedit.apply(
        text,
        Path("series.yaml"),
        [
            Edit(("upstream", "base"), "v0.30.0", "v0.31.0"),
            Edit(("topics", "a", "status"), None, "dropped"),
            Edit(("topics", "b"), None, {"name": "b", "branch": "topic/b"}, after="a"),
        ],
    )
    assert out == (
        "upstream:\r\n  remote: upstream\r\n  base: v0.31.0\r\n"
        "topics:\r\n  - name: a\r\n    branch: topic/a\r\n    status: dropped\r\n"
        "  - name: b\r\n    branch: topic/b\r\n"
    ), repr(out)


def test_a_file_without_a_final_newline_gets_none_unless_its_last_line_moves() -> None:
    text = "upstream:\r\n  remote: upstream\r\n  base: v0.30.0\r\ntopics:\r\n  - name: a\r\n    branch: topic/a"
    out = seriesedit.apply(text, Path("series.yaml"), [Edit(("upstream", "base"), "v0.30.0", "v0.31.0")])
    assert out == text.replace("v0.30.0", "v0.31.0"), repr(out)
    out = seriesedit.apply(text, Path("series.yaml"), [Edit(("topics", "a", "status"), None, "dropped")])
    assert out == text + "\r\n    status: dropped\r\n", repr(out)


def test_the_round_trip_fallback_keeps_crlf_too() -> None:
    text = "upstream: {remote: upstream, base: v0.30.0}  # flow: not spliced\r\ntopics:\r\n  - name: a\r\n    branch: topic/a\r\n"
    out = seriesedit.apply(text, Path("series.yaml"), [Edit(("upstream", "base"), "v0.30.0", "v0.31.0")])
    assert out is not None and "v0.31.0" in out and "\n" not in out.replace("\r\n", ""), repr(out)
