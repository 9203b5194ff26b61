"""Tests that fail when the forge's trust rules are wrong in small ways (issue 37)."""
from __future__ import annotations

from series.forge.http import scrub


def test_scrub_marks_where_the_token_was() -> None:
    """The token is replaced by a marker, not removed silently: a message that reads
    "Authorization: " followed by nothing would hide that something was taken out."""
    token = "s3cr3t-not-shaped-like-a-github-token"
    assert scrub(f"sent {token} to the API", token) == "sent [token] to the API"
    assert scrub("Authorization: token abcdefgh12345", None) == "Authorization: [token]"
