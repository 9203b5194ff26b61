"""The patch file format: git compatibility both ways, exact messages, hostile paths."""

from __future__ import annotations

import re
from pathlib import Path

import pygit2
import pytest

from series.errors import SeriesError
from series.patches import format as patch_format
from series.patches.importer import apply_hunks, apply_patch, check_path, file_changes, split_lines
from tests.conftest import sh


def _repo_with_history(tmp_path: Path) -> Path:
    """One commit that adds, deletes, renames, chmods and edits a file without final newline."""
    path = tmp_path / "r"
    path.mkdir()
    sh(
        """
git init -q
printf 'a\\nb\\nc' > tail.txt
printf 'x\\n' > tool.sh
seq 1 30 > moved.txt
echo gone > gone.txt
mkdir -p 'dir with space' && echo s > 'dir with space/f.txt'
git add . && git commit -qm base
printf 'a\\nB\\nc\\nd' > tail.txt
chmod +x tool.sh
git mv moved.txt renamed.txt && sed -i 's/^15$/fifteen/' renamed.txt
git rm -q gone.txt
echo new > added.txt
printf 'caf\\303\\251\\n' > 'caf\\303\\251.txt'
echo t >> 'dir with space/f.txt'
git add . && git commit -qm 'Change many things

The body explains why.
---
Even a dashed line in the body.'
printf 'a\nB\nc\nd\ne\n' > tail.txt
chmod -x tool.sh
echo more >> added.txt
echo brand-new > 'second new.txt'
rm 'dir with space/f.txt' && ln -s ../tail.txt 'dir with space/f.txt'
git add -A && git commit -qm 'Only changes and additions: the fast path'
""",
        path,
    )
    return path


@pytest.mark.parametrize("rev", ["HEAD~1", "HEAD"])
def test_export_matches_git_format_patch_full_index(tmp_path: Path, rev: str) -> None:
    path = _repo_with_history(tmp_path)
    repo = pygit2.Repository(str(path))
    head = repo.revparse_single(rev).peel(pygit2.Commit)
    diff, stats = patch_format.tree_diff(repo, head.parents[0].tree, head.tree, "test")
    patch = patch_format.Patch(
        head.author.name, head.author.email, head.author.time, head.author.offset, head.message, diff, 1, 1
    )
    ours = patch_format.render(patch, stats)
    theirs = sh(
        f"git -c core.quotePath=true format-patch -1 --stdout --full-index -M --subject-prefix='PATCH 1/1' {rev}", path
    )
    # the only differences: the placeholder commit id and the version trailer
    theirs_body = theirs.split("\n", 1)[1].rsplit("-- \n", 1)[0]
    ours_body = ours.split("\n", 1)[1]
    our_diff = ours_body[ours_body.index("diff --git") :]
    their_diff = theirs_body[theirs_body.index("diff --git") :]
    # libgit2 and git score similarity differently (90% vs 96%); everything else is equal
    our_diff, their_diff = (re.sub(r"similarity index \d+%", "similarity", d) for d in (our_diff, their_diff))
    assert our_diff == their_diff, f"ours:\n{our_diff}\n\ntheirs:\n{their_diff}"
    assert ours.startswith(patch_format.FROM_LINE + "\n"), ours


def test_git_am_applies_an_exported_patch(tmp_path: Path) -> None:
    path = _repo_with_history(tmp_path)
    repo = pygit2.Repository(str(path))
    head = repo.head.peel(pygit2.Commit)
    diff, stats = patch_format.tree_diff(repo, head.parents[0].tree, head.tree, "test")
    text = patch_format.render(
        patch_format.Patch(
            head.author.name, head.author.email, head.author.time, head.author.offset, head.message, diff
        ),
        stats,
    )
    (tmp_path / "p.patch").write_bytes(patch_format.encode(text))
    sh(f"git checkout -q --detach HEAD~1 && git am -q {tmp_path / 'p.patch'}", path)
    assert sh("git rev-parse HEAD^{tree}", path) == sh("git rev-parse main^{tree}", path)


def test_exported_patch_reimports_to_the_same_tree(tmp_path: Path) -> None:
    path = _repo_with_history(tmp_path)
    repo = pygit2.Repository(str(path))
    for commit in (repo.revparse_single(r).peel(pygit2.Commit) for r in ("HEAD~1", "HEAD")):
        diff, stats = patch_format.tree_diff(repo, commit.parents[0].tree, commit.tree, "test")
        text = patch_format.render(patch_format.Patch("A", "a@x", 0, 0, commit.message, diff), stats)
        patch = patch_format.parse(text, "p")
        assert apply_patch(repo, commit.parents[0].tree, patch, "p") == commit.tree_id, text


@pytest.mark.parametrize("rev", ["HEAD~1", "HEAD"])
def test_import_of_git_format_patch_output_rebuilds_the_tree(tmp_path: Path, rev: str) -> None:
    path = _repo_with_history(tmp_path)
    text = sh(f"git format-patch -1 --stdout --full-index -M {rev}", path)
    repo = pygit2.Repository(str(path))
    head = repo.revparse_single(rev).peel(pygit2.Commit)
    patch = patch_format.parse(text, "git.patch")
    assert patch.message == head.message, (patch.message, head.message)
    assert (patch.author_name, patch.author_time) == (head.author.name, head.author.time)
    tree = apply_patch(repo, head.parents[0].tree, patch, "git.patch")
    assert tree == head.tree_id


@pytest.mark.parametrize(
    "message",
    [
        "subject only\n",
        "subject\n\nbody line\n\nSigned-off-by: A <a@x>\n",
        "no final newline",
        "first line\nsecond line of the same paragraph\n",
        "trailing blank lines\n\nbody\n\n\n",
        "body with a separator\n\nbefore\n---\nafter\n",
        "\nstarts empty\n",
        "not utf-8: \udcff\udcfe\n",
    ],
)
def test_messages_round_trip_exactly(message: str) -> None:
    patch = patch_format.Patch("A", "a@x", 1767268800, 0, message, "")
    parsed = patch_format.parse(patch_format.render(patch), "m.patch")
    assert parsed.message == message, (patch_format.render(patch), parsed.message)


@pytest.mark.parametrize(
    "name,offset",
    [
        ("Doe, Jane", 0),
        ('Q "Quote" Person', -330),
        ("Zoë Ünicode", 540),
        ("J. R. Hacker", -60),
    ],
)
def test_authors_and_dates_round_trip(name: str, offset: int) -> None:
    patch = patch_format.Patch(name, "someone@example.com", 1767268800, offset, "s\n", "")
    parsed = patch_format.parse(patch_format.render(patch), "a.patch")
    assert (parsed.author_name, parsed.author_email, parsed.author_time, parsed.author_offset) == (
        name,
        "someone@example.com",
        1767268800,
        offset,
    )


def test_rfc2047_names_and_folded_headers_from_git_are_read() -> None:
    text = (
        "From 1234 Mon Sep 17 00:00:00 2001\nFrom: =?UTF-8?q?Zo=C3=AB?=\n <z@x>\n"
        "Date: Thu, 1 Jan 2026 00:00:00 +0100\nSubject: [PATCH] =?UTF-8?q?caf=C3=A9?=\n\n---\n"
    )
    parsed = patch_format.parse(text, "x.patch")
    assert (parsed.author_name, parsed.author_email, parsed.message) == ("Zoë", "z@x", "café\n")
    assert parsed.author_offset == 60


@pytest.mark.parametrize(
    "path",
    [
        "../etc/passwd",
        "a/../../b",
        "/etc/passwd",
        ".git/config",
        "sub/.GIT/hooks/pre-commit",
        "a//b",
        "./a",
        "C:/x",
        ".git./x",
    ],
)
def test_hostile_paths_are_refused(path: str) -> None:
    with pytest.raises(SeriesError):
        check_path(path, "p.patch")


def test_hostile_paths_in_a_diff_are_refused() -> None:
    diff = (
        "diff --git a/../outside b/../outside\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/../outside\n@@ -0,0 +1 @@\n+x\n"
    )
    with pytest.raises(SeriesError, match="escapes"):
        file_changes(diff, "p.patch")
    renamed = "diff --git a/ok b/ok2\nsimilarity index 100%\nrename from ok\nrename to .git/hooks/post-checkout\n"
    with pytest.raises(SeriesError, match=".git"):
        file_changes(renamed, "p.patch")


def test_binary_patches_are_refused() -> None:
    diff = (
        "diff --git a/logo.png b/logo.png\nindex 1111111..2222222 100644\n"
        "Binary files a/logo.png and b/logo.png differ\n"
    )
    with pytest.raises(SeriesError, match="binary"):
        file_changes(diff, "p.patch")


def test_hunks_apply_with_an_offset_and_keep_crlf() -> None:
    old = b"".join(f"line {i}\r\n".encode() for i in range(1, 21))
    new = old.replace(b"line 10\r\n", b"line ten\r\n")
    hunks_text = patch_format.unified_hunks(old, new)
    diff = "diff --git a/f b/f\n--- a/f\n+++ b/f\n" + hunks_text
    change = file_changes(diff, "p")[0]
    shifted = b"extra\n" * 3 + old
    assert apply_hunks(shifted, change.hunks, "p") == b"extra\n" * 3 + new
    with pytest.raises(SeriesError, match="does not apply"):
        apply_hunks(old.replace(b"line 9\r\n", b"other\r\n"), change.hunks, "p")


def test_split_lines_only_splits_on_newline() -> None:
    assert split_lines(b"a\rb\x0cc\nd") == [b"a\rb\x0cc\n", b"d"]


def test_stable_file_names() -> None:
    assert (
        patch_format.file_name(1, "[Bugfix][KV offload] keep request order on touch")
        == "0001-Bugfix-KV-offload-keep-request-order-on-touch.patch"
    )
    assert patch_format.file_name(12, "...") == "0012-patch.patch"
