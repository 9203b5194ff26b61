"""The demo's GitHub: a loopback server shaped like GitHub's REST API, for PR #61050 alone.

`series upstream` reads a PR's reviews, review threads, labels, commits, review requests
and check runs; the demo answers them from here (stdlib http.server on 127.0.0.1, a
thread of the demo's own process), so the tour stays offline and the verb still runs its
real online path: the GitHub client's checks, and the fetch stored for --offline.

Times are relative to when the demo starts (the turn and quiet clocks read the real
clock): the maintainer's review question is three days old, so the row says "ours turn
for 3 days, past 48 h" on any day the demo runs. `state` is what the PR is now: "open"
after our measurement comment, "merged" once v0.32 squash-merged it.
"""

from __future__ import annotations

import datetime
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pygit2

REPO = "/repos/vllm-project/vllm"
NUMBER = 61050
TOKEN = "demo-token-for-the-loopback-server"  # given to the verb so no real token is sent here
WE = "fork-maintainer"  # whose token it is (GET /user)
REVIEWER = "kv-offload-owner"  # CODEOWNERS of vllm/v1/kv_offload in the demo


def _user(login: str) -> dict[str, Any]:
    return {"login": login, "type": "User"}


class FakeGitHub:
    """Serves PR #61050 as `state` says; `url` is what SERIES_GITHUB_API takes."""

    def __init__(self, upstream: pygit2.Repository) -> None:
        self._now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
        self.head = str(upstream.references["refs/pull/61050/head"].target)
        squash = upstream.revparse_single("v0.32.0").peel(pygit2.Commit).parents[0]
        self.squash = str(squash.id)
        self.state = "open"
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _stamp(self, days: int) -> str:
        return (self._now - datetime.timedelta(days=days)).isoformat().replace("+00:00", "Z")

    def answers(self) -> dict[str, Any]:
        merged = self.state == "merged"
        pull = {
            "url": f"{self.url.rstrip('/')}{REPO}/pulls/{NUMBER}",
            "number": NUMBER,
            "html_url": f"https://github.com/vllm-project/vllm/pull/{NUMBER}",
            "state": "closed" if merged else "open",
            "draft": False,
            "merged": merged,
            "title": "[Bugfix][KV offload] Fix eviction order of touched offloaded blocks",
            "body": "## Purpose\n\nTouch a request's blocks in reverse so its prefix stays cached.\n",
            "user": _user("ada-upstream"),
            "created_at": self._stamp(days=20),
            "updated_at": self._stamp(days=1 if merged else 3),
            "closed_at": self._stamp(days=1) if merged else None,
            "merged_at": self._stamp(days=1) if merged else None,
            "merge_commit_sha": self.squash if merged else None,
            "labels": [{"name": "ready"}] if merged else [],
            "requested_reviewers": [],
            "head": {"ref": "fix-61050", "sha": self.head, "repo": {"full_name": "ada-upstream/vllm"}},
            "base": {"ref": "main", "sha": "0" * 40, "repo": {"full_name": "vllm-project/vllm"}},
        }
        thread = [
            {
                "id": 7001,
                "in_reply_to_id": None,
                "position": 3,
                "user": _user(REVIEWER),
                "created_at": self._stamp(days=3),
                "body": "Does store() keep a fresh prefix's chunk 0 too?",
            }
        ]
        if merged:  # answered, approved, merged
            thread.append(
                {
                    "id": 7002,
                    "in_reply_to_id": 7001,
                    "position": 3,
                    "user": _user("ada-upstream"),
                    "created_at": self._stamp(days=2),
                    "body": "Not yet: a follow-up will.",
                }
            )
        return {
            f"{REPO}/pulls/{NUMBER}": pull,
            f"{REPO}/pulls/{NUMBER}/reviews": [
                {"id": 8001, "state": "APPROVED", "user": _user(REVIEWER), "submitted_at": self._stamp(days=1)}
            ]
            if merged
            else [],
            f"{REPO}/pulls/{NUMBER}/comments": thread,
            f"{REPO}/issues/{NUMBER}/comments": [],
            f"{REPO}/pulls/{NUMBER}/commits": [
                {
                    "sha": self.head,
                    "author": _user("ada-upstream"),
                    "commit": {"committer": {"date": self._stamp(days=20)}},
                }
            ],
            f"{REPO}/issues/{NUMBER}/timeline": [],
            f"{REPO}/commits/{self.head}/check-runs": {
                "total_count": 2,
                "check_runs": [
                    {"name": "DCO", "status": "completed", "conclusion": "success"},
                    {"name": "pre-commit", "status": "completed", "conclusion": "success"},
                ],
            },
            f"{REPO}/commits/{self.head}/status": {"state": "pending", "total_count": 0, "statuses": []},
            "/user": _user(WE),
            # GraphQL's review threads: the one thread, resolved once the PR merged
            "/graphql": {
                "data": {
                    "repository": {
                        "pullRequest": {
                            "reviewThreads": {
                                "pageInfo": {"hasNextPage": False, "endCursor": None},
                                "nodes": [{"isResolved": merged, "comments": {"nodes": [{"databaseId": 7001}]}}],
                            }
                        }
                    }
                }
            },
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (GraphQL's one route reads only)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.do_GET()

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                answer = fake.answers().get(self.path.split("?", 1)[0])
                body = json.dumps(answer if answer is not None else {"message": "Not Found"}).encode()
                self.send_response(200 if answer is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # the tour prints only the verbs
                pass

        return Handler
