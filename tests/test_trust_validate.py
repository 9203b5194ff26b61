"""series.validate against git itself (CONTRIBUTING.md rule 1): branch names against
`git check-ref-format --branch`, dates and identities against `git fsck --strict`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from series import validate
from series.errors import SeriesError
from series.git.command import git

ALPHABET = "ab/.-_@{}~^:?*[\\ \t\x7f\x01lock" + "é"


def git_accepts_branch(name: str) -> bool:
    return subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True).returncode == 0


def ours_accepts_branch(name: str) -> bool:
    try:
        validate.branch_name(name, "b")
        return True
    except SeriesError:
        return False


@settings(
    max_examples=150, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.text(alphabet=ALPHABET, min_size=1, max_size=12))
@example("a b")
@example("-x")
@example("a..b")
@example("x.lock")
@example("a/.b")
@example("a@{1}")
@example("topic/ok")
@example("a//b")
@example("@")
@example("x.")
@example("/a")
def test_branch_names_follow_git_check_ref_format(name: str) -> None:
    if "\0" in name or name.startswith("refs/") or name == "HEAD" or name.startswith("@{-"):
        return  # not expressible on a command line / refused by policy, said in the message
    assert ours_accepts_branch(name) == git_accepts_branch(name), name


def test_policy_refusals_name_the_value_and_the_rule() -> None:
    with pytest.raises(
        SeriesError, match=r"topics\[0\]\.branch: 'a b' is not a valid branch name: it contains a space"
    ):
        validate.branch_name("a b", "topics[0].branch")
    with pytest.raises(SeriesError, match="starts with '-'"):
        validate.remote_name("--upload-pack=touch x", "upstream.remote")
    with pytest.raises(SeriesError, match="not a commit id"):
        validate.commit_id("a" * 39, "x")
    assert validate.commit_id("a" * 64, "x") == "a" * 64
    for bad in (True, 0, -3, "7", 1.0):
        with pytest.raises(SeriesError):
            validate.pr_number(bad, "n")
    with pytest.raises(SeriesError, match="newline"):
        validate.trailer_value("https://x\nSigned-off-by: m", "Upstream-PR")
    assert validate.printable("a\x1b[2Jb\tc\n\ud800") == "a\\x1b[2Jb\tc\n\\ud800"
    assert validate.one_line("a\nb") == "a\\nb"


@pytest.mark.parametrize(
    "url, ok",
    [
        ("https://ghe.example.com/api/v3", True),
        ("http://127.0.0.1:8080", True),
        ("http://localhost:1", True),
        ("http://[::1]:8/", True),
        ("http://api.example.com", False),
        ("ftp://x", False),
        ("https://", False),
        ("https://a b", False),
        ("https://x\n", False),
    ],
)
def test_api_urls(url: str, ok: bool) -> None:
    try:
        validate.api_url(url, "upstream.api_url")
        accepted = True
    except SeriesError:
        accepted = False
    assert accepted == ok, url


# Years past 9999 pass fsck (it only checks for time_t overflow) but no git date parser
# reads them back (a Date: header, --date): refused as a policy, and said so.
@pytest.mark.parametrize(
    "time, offset, ok, fsck_ok",
    [
        (0, 0, True, True),
        (253402300799, 5999, True, True),
        (1700000000, -5999, True, True),
        (253402300800, 0, False, True),
        (-1, 0, False, False),
        (1700000000, 6000, False, False),
        (1700000000, 6039, False, False),
    ],
)
def test_dates_are_what_fsck_strict_accepts(tmp_path: Path, time: int, offset: int, ok: bool, fsck_ok: bool) -> None:
    try:
        validate.timestamp(time, offset, "Date")
        ours = True
    except SeriesError:
        ours = False
    assert ours == ok
    ok = fsck_ok
    if time < 0:
        return  # a negative time cannot even be written as a raw commit header
    sign, minutes = ("-" if offset < 0 else "+"), abs(offset)
    zone = f"{sign}{minutes // 60:02d}{minutes % 60:02d}"
    repo = tmp_path / "r"
    git(tmp_path, "init", "-q", str(repo))
    tree = git(repo, "mktree", input="").stdout.strip()
    raw = f"tree {tree}\nauthor A <a@x> {time} {zone}\ncommitter A <a@x> {time} {zone}\n\nm\n"
    oid = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--literally", "--stdin"],
        cwd=repo,
        input=raw,
        capture_output=True,
        text=True,
    ).stdout.strip()
    git(repo, "update-ref", "refs/heads/main", oid)
    fsck = subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=repo, capture_output=True, text=True)
    assert (fsck.returncode == 0) == ok, (time, zone, fsck.stderr)


@pytest.mark.parametrize(
    "name, email, ok",
    [
        ("Ada", "a@x", True),
        ("A <b>", "a@x", False),
        ("A\nB", "a@x", False),
        ("A", "a>@x", False),
        ("A\0", "a@x", False),
        ("Zoë", "z@x", True),
    ],
)
def test_identities(name: str, email: str, ok: bool) -> None:
    try:
        validate.identity(name, email, "From")
        accepted = True
    except SeriesError:
        accepted = False
    assert accepted == ok
