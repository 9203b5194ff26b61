"""The manifest beside a built wheel: what went into it, for whoever installs it later.

Deterministic (no build time): two builds of the same inputs give the same manifest, as
they give the same wheel.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from series import __version__
from series.git.repo import branch_commit
from series.workspace import Workspace


def manifest(
    ws: Workspace,
    *,
    integration_branch: str | None,
    integration_sha: str,
    wheel: Path,
    wheel_sha256: str,
    version: str,
    method: str,
    source_wheel: Path | None,
    changes: dict[str, list[str]],
) -> dict[str, Any]:
    topics = []
    for topic in ws.series.topics:
        head = branch_commit(ws.repo, topic.branch)
        topics.append(
            {
                "name": topic.name,
                "status": topic.status.value,
                "branch": topic.branch,
                "head": str(head.id) if head is not None else None,
                "upstream_pr": topic.upstream_pr,
                **({"merged_in": topic.merged_in} if topic.merged_in else {}),
                **({"superseded_by": topic.superseded_by} if topic.superseded_by else {}),
            }
        )
    up = ws.series.upstream
    return {
        "tool": "series",
        "tool_version": __version__,
        "upstream": {"base": up.base, "sha": str(ws.base_commit().id), "remote": up.remote, "github": up.github},
        "integration": {"branch": integration_branch, "sha": integration_sha},
        "topics": topics,
        "wheel": {
            "file": wheel.name,
            "sha256": wheel_sha256,
            "version": version,
            "method": method,
            "source_wheel": source_wheel.name if source_wheel else None,
        },
        "changes": changes,
    }


def manifest_path(wheel: Path) -> Path:
    return wheel.with_name(wheel.name[: -len(".whl")] + ".manifest.json")


def write(wheel: Path, data: dict[str, Any]) -> Path:
    path = manifest_path(wheel)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path
