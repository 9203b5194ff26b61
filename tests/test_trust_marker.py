"""A marker token through every network path of the CLI (issue 11): success, 401, 403,
404, 5xx, a redirect, verbose mode, gh as the token's source, the bug log. The marker
must appear in no output, no file written anywhere under the test's root (repository,
HOME, caches, logs), no child process's command line, and no request to a second host."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from tests.conftest import run_series, sh
from tests.repos import github_fixture

MARKER = "ghp_MARKERmarkerMARKER0123456789"
PULL = "/repos/vllm-project/vllm/pulls/61050"


@pytest.fixture
def setup(tmp_path: Path, served: Path) -> tuple[Path, Path, Path]:
    fork = served  # upstream-work with PR #61050, its mirror upstream.git, the fork of it
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.log"
    real_git = shutil.which("git")
    wrappers = {
        "git": f'#!/bin/sh\nprintf "%s\\n" "git $*" >> {calls}\nexec {real_git} "$@"\n',
        "gh": f'#!/bin/sh\nprintf "%s\\n" "gh $*" >> {calls}\n'
        f'[ "$1 $2" = "auth token" ] && echo {MARKER} && exit 0\nexit 1\n',
    }
    for name, text in wrappers.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755 | stat.S_IEXEC)
    return fork, bin_dir, calls


def scan(root: Path, *texts: str) -> None:
    for text in texts:
        assert MARKER not in text, text
    for path in root.rglob("*"):
        if path.parent == root / "bin":
            continue  # the test's own fake gh, which hands the token out
        if path.is_file() and not path.is_symlink():
            assert MARKER.encode() not in path.read_bytes(), f"the token was written to {path}"


def test_the_token_appears_nowhere(setup: tuple[Path, Path, Path], httpserver: HTTPServer, tmp_path: Path) -> None:
    fork, bin_dir, calls = setup
    head = sh("git ls-remote upstream refs/pull/61050/head", fork).split()[0]
    base = sh("git rev-parse v0.30.0", fork).strip()
    good = json.dumps(
        github_fixture("pull-61050", API=httpserver.url_for("").rstrip("/"), HEAD_SHA=head, BASE_SHA=base)
    )
    other = HTTPServer(host="127.0.0.1", port=0)
    other.expect_request(PULL).respond_with_data(good, content_type="application/json")
    other.start()
    echo = {
        "message": f"Bad credentials for Authorization: Bearer {MARKER}",
        "documentation_url": f"https://docs.github.com/?t={MARKER}",
    }
    answers = {
        "success": lambda: Response(good, content_type="application/json", headers={"ETag": '"e1"'}),
        "401": lambda: Response(json.dumps(echo), status=401, content_type="application/json"),
        "403": lambda: Response(json.dumps(echo), status=403, content_type="application/json"),
        "404": lambda: Response(json.dumps(echo), status=404, content_type="application/json"),
        "5xx": lambda: Response(json.dumps(echo), status=503, content_type="application/json"),
        "redirect": lambda: Response("", status=302, headers={"Location": other.url_for(PULL)}),
    }
    current = {"name": "success"}

    def handler(request: Request) -> Response:
        return answers[current["name"]]()

    httpserver.expect_request(PULL).respond_with_handler(handler)
    base_env = {"SERIES_GITHUB_API": httpserver.url_for(""), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    outputs = []
    try:
        for name, expect in (("success", 0), ("401", 1), ("403", 1), ("404", 1), ("5xx", 1), ("redirect", 1)):
            current["name"] = name
            sources = (
                ({**base_env, "GH_TOKEN": MARKER}, base_env)
                if name in ("success", "403")
                else ({**base_env, "GH_TOKEN": MARKER},)
            )
            for env in sources:  # the token from the environment, and from gh
                proc = run_series(
                    "-v",
                    "adopt-upstream",
                    "61050",
                    "--replaces",
                    "offload-evict-fix",
                    "--dry-run",
                    cwd=fork,
                    env=env,
                    expect=expect,
                )
                outputs += [proc.stdout, proc.stderr]
                if name != "success":
                    assert "series: error:" in proc.stderr and "GET " in proc.stderr, proc.stderr
        current["name"] = "success"  # a real adoption: journal, series.yaml, ETag cache, 304s
        proc = run_series(
            "-v",
            "adopt-upstream",
            "61050",
            "--replaces",
            "offload-evict-fix",
            cwd=fork,
            env={**base_env, "GH_TOKEN": MARKER},
        )
        outputs += [proc.stdout, proc.stderr, (fork / "series.yaml").read_text()]
        assert not other.log, "the redirect target got no request at all"
    finally:
        other.clear()
        other.stop()
    sent = {r.headers.get("Authorization") for r, _ in httpserver.log}
    assert sent == {f"Bearer {MARKER}"}, "the token went, and only, to the configured host"
    log = calls.read_text()
    assert "gh auth token" in log and "git fetch" in log, log
    scan(tmp_path, *outputs, log)


def test_the_bug_log_holds_no_token(
    setup: tuple[Path, Path, Path],
    httpserver: HTTPServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A real bug (here: one planted in the forge) while the token is held."""
    fork, _, _ = setup
    from series.cli import main
    from series.forge import github

    def broken(self: object, number: int) -> object:
        raise RuntimeError(f"planted bug holding {MARKER}")

    monkeypatch.setattr(github.GitHubForge, "pull", broken)
    monkeypatch.setenv("SERIES_GITHUB_API", httpserver.url_for(""))
    monkeypatch.setenv("GH_TOKEN", MARKER)
    monkeypatch.chdir(fork)
    with pytest.raises(SystemExit) as info:
        main(["-v", "adopt-upstream", "61050", "--replaces", "offload-evict-fix"])
    assert info.value.code == 4
    out = capsys.readouterr()
    logs = list((tmp_path / "logs").glob("series-*.log"))
    assert len(logs) == 1 and "planted bug holding [token]" in logs[0].read_text()
    scan(tmp_path, out.out, out.err)
