"""Upstream pull requests: the forge (GitHub REST or git refs alone), PR refs, retirement."""

from __future__ import annotations

import urllib.parse

import pygit2

from series.forge.base import Forge, OfflineForge
from series.model import Upstream


def open_forge(repo: pygit2.Repository, upstream: Upstream, *, offline: bool = False) -> Forge:
    """The GitHub API when upstream.github is set and --offline is not; else git refs."""
    if offline or not upstream.github:
        return OfflineForge(repo, upstream.remote)
    from series.forge.github import GitHubForge, api_base, find_token

    base = api_base(upstream.api_url)
    token = find_token(urllib.parse.urlsplit(base).hostname)
    return GitHubForge(upstream.github, base, token)
