"""One test per finding of the hostile-input run (issue 11), through the real CLI: no
command runs from an injected option, no forged trailer, no exit 4 for input the user
or a server controls, partial and shallow clones handled; each refusal names the input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pygit2
import pytest
from pytest_httpserver import HTTPServer

from tests.conftest import run_series, sh
from tests.repos import github_fixture

TOKEN = "ghp_DOORsecret99887766554433"
PULL = "/repos/vllm-project/vllm/pulls/61050"
INJECT = "--upload-pack=touch PWNED"


def env_for(server: HTTPServer) -> dict[str, str]:
    return {"SERIES_GITHUB_API": server.url_for(""), "GITHUB_TOKEN": TOKEN}


def no_pwned(root: Path) -> None:
    assert not list(root.rglob("PWNED")), "an injected option ran a command"


def one_line_error(proc: object, *named: str) -> str:
    err = proc.stderr.strip()  # type: ignore[attr-defined]
    # one line, and a hint on a line of its own when there is one
    lines = err.splitlines()
    assert proc.returncode == 1 and len(lines) in (1, 2), err  # type: ignore[attr-defined]
    assert len(lines) == 1 or lines[1].startswith("hint: "), err
    assert err.startswith("series: error: ") and "Traceback" not in err, err
    for word in named:
        assert word in err, (word, err)
    return err


def serve_pull(server: HTTPServer, fork: Path, **change: object) -> None:
    head = sh("git ls-remote upstream refs/pull/61050/head", fork).split()[0]
    base = sh("git rev-parse v0.30.0", fork).strip()
    data = github_fixture("pull-61050", API=server.url_for("").rstrip("/"), HEAD_SHA=head, BASE_SHA=base)
    data.update(change)  # type: ignore[attr-defined]
    server.expect_request(PULL).respond_with_data(json.dumps(data), content_type="application/json")


def adopt(fork: Path, server: HTTPServer, expect: int | None = 1) -> object:
    return run_series(
        "adopt-upstream", "61050", "--replaces", "offload-evict-fix", cwd=fork, env=env_for(server), expect=expect
    )


# -- option injection into git fetch -------------------------------------------------------


def test_a_base_sha_that_is_an_option_runs_nothing(served: Path, httpserver: HTTPServer, tmp_path: Path) -> None:
    serve_pull(httpserver, served, base={"sha": INJECT})
    one_line_error(adopt(served, httpserver), "base.sha", "not a commit id")
    no_pwned(tmp_path)
    assert pygit2.Repository(str(served)).references.get("refs/heads/topic/pr-61050") is None


def test_an_upstream_remote_that_is_an_option_runs_nothing(fork: Path, tmp_path: Path) -> None:
    text = (fork / "series.yaml").read_text().replace("remote: upstream", f"remote: '{INJECT}'")
    (fork / "series.yaml").write_text(text)
    proc = run_series("rebase", "--onto", "v0.31.0", "--fetch", cwd=fork, expect=None)
    one_line_error(proc, "series.yaml:", "upstream.remote", "starts with '-'")
    no_pwned(tmp_path)


def test_an_upstream_remote_that_does_not_exist_is_refused_before_fetch(fork: Path, tmp_path: Path) -> None:
    text = (fork / "series.yaml").read_text().replace("remote: upstream", "remote: elsewhere")
    (fork / "series.yaml").write_text(text)
    proc = run_series("rebase", "--onto", "v0.31.0", "--fetch", cwd=fork, expect=None)
    one_line_error(proc, "no git remote named 'elsewhere'", "git remote add elsewhere")


def test_init_refuses_a_remote_that_is_an_option_or_missing(fork: Path, tmp_path: Path) -> None:
    (fork / "series.yaml").unlink()
    for remote, said in ((INJECT, "starts with '-'"), ("nosuch", "no git remote named 'nosuch'")):
        proc = run_series("init", "--base", "v0.30.0", f"--remote={remote}", cwd=fork, expect=None)
        one_line_error(proc, "--remote", said)
        assert not (fork / "series.yaml").exists()
    no_pwned(tmp_path)


def test_import_does_not_copy_a_hostile_series_yaml(fork: Path, tmp_path: Path) -> None:
    export = tmp_path / "export"
    run_series("export", str(export), cwd=fork)
    text = (export / "series.yaml").read_text().replace("remote: upstream", f"remote: '{INJECT}'")
    (export / "series.yaml").write_text(text)
    clone = tmp_path / "clone"
    sh(f"git clone -q -o upstream {tmp_path / 'upstream'} {clone}", tmp_path)
    proc = run_series("import", str(export), cwd=clone, expect=None)
    one_line_error(proc, "series.yaml:", "upstream.remote")
    assert not (clone / "series.yaml").exists(), "nothing copied from a file that does not load"
    no_pwned(tmp_path)


# -- trailer forgery and what a server sends -------------------------------------------------


def test_an_html_url_with_a_newline_forges_no_trailer(served: Path, httpserver: HTTPServer) -> None:
    serve_pull(
        httpserver, served, html_url="https://github.com/vllm-project/vllm/pull/61050\nSigned-off-by: Mallory <m@x.org>"
    )
    one_line_error(adopt(served, httpserver), "html_url", "refusing")
    log = sh("git log --all --format=%B", served)
    assert "Mallory" not in log and "Upstream-PR" not in log


@pytest.mark.parametrize(
    "change, named",
    [
        ({"head": {"sha": "main"}}, "head.sha"),
        ({"base": 7}, "'base' that is not an object"),
        ({"updated_at": "last tuesday"}, "updated_at"),
    ],
)
def test_pull_request_fields_of_the_wrong_kind_are_exit_1(
    served: Path, httpserver: HTTPServer, change: dict[str, object], named: str
) -> None:
    serve_pull(httpserver, served, **change)
    one_line_error(adopt(served, httpserver), named, PULL)


def test_a_title_with_escapes_and_a_lone_surrogate_is_adopted_as_plain_text(
    served: Path, httpserver: HTTPServer
) -> None:
    serve_pull(httpserver, served, title="\x1b]0;owned\x07Fix \ud800 eviction\x1b[2J")
    proc = adopt(served, httpserver, expect=0)
    assert "\x1b" not in proc.stdout + proc.stderr and "\x07" not in proc.stdout, proc.stdout  # type: ignore[attr-defined]
    text = (served / "series.yaml").read_bytes().decode("utf-8")
    assert "\x1b" not in text and "Fix ? eviction" in text, text


def test_a_server_message_echoing_the_token_is_shown_scrubbed(served: Path, httpserver: HTTPServer) -> None:
    httpserver.expect_request(PULL).respond_with_json(
        {"message": f"invalid header Authorization: Bearer {TOKEN}\x1b[31m"}, status=422
    )
    err = one_line_error(adopt(served, httpserver), "GitHub API error 422")
    assert TOKEN not in err and "\x1b" not in err, err


# -- series.yaml, journal and patch files that do not decode --------------------------------


@pytest.mark.parametrize(
    "data, said",
    [
        (b"upstream:\n  remote: upstream\n  base: v0.30.0\xff\n", "series.yaml:3: not UTF-8"),
        ("upstream: {remote: upstream, base: v0.30.0}\n".encode("utf-16"), "series.yaml: is UTF-16"),
        (b"upstream:\n  remote: up\0stream\n", "series.yaml:2: holds a NUL byte"),
        (
            b"upstream:\n  remote: upstream\n  base: v0.30.0\ntopics:\n  - name: a\n    branch: has space\n",
            "branch: 'has space' is not a valid branch name: it contains a space",
        ),
        (b"upstream:\n  remote: upstream\n  base: v0.30.0\nintegration: a..b\n", "contains '..'"),
        (b"upstream:\n  remote: upstream\n  base: v0.30.0\n  api_url: http://api.example.com\n", "not an https"),
        (b"upstream:\n  remote: upstream\n  base: v0.30.0\x1b[2J\n", "malformed YAML"),
    ],
)
def test_series_yaml_that_does_not_decode_or_breaks_git_rules_is_exit_1(fork: Path, data: bytes, said: str) -> None:
    (fork / "series.yaml").write_bytes(data)
    err = one_line_error(run_series("status", cwd=fork, expect=None), said)
    assert "\x1b" not in err


def test_a_corrupt_journal_entry_is_named(fork: Path) -> None:
    journal = fork / ".git" / "series" / "journal"
    journal.mkdir(parents=True, exist_ok=True)
    (journal / "00001-20260201T120000Z.json").write_bytes(b'{"id": "00001", "moves": [1, \xff')
    for verb in ("log", "undo"):
        one_line_error(
            run_series(verb, cwd=fork, expect=None), "00001-20260201T120000Z.json", "unreadable journal entry"
        )


@pytest.mark.parametrize(
    "entry, said",
    [
        ({"moves": "not a list"}, "unreadable journal entry"),
        ({"moves": [{"ref": "refs/heads/a b", "old": None, "new": "a" * 40}]}, "not a ref name"),
        ({"moves": [{"ref": "refs/heads/x", "old": "--upload-pack=x", "new": None}]}, "not a commit id"),
        ({"summary": 7}, "'summary' is not a string"),
    ],
)
def test_a_journal_entry_of_the_wrong_shape_is_named(fork: Path, entry: dict[str, object], said: str) -> None:
    journal = fork / ".git" / "series" / "journal"
    journal.mkdir(parents=True, exist_ok=True)
    good = {
        "id": "00001-20260201T120000Z",
        "command": "import",
        "summary": "s",
        "moves": [],
        "state": "done",
        "time": "",
        "extra": {},
    }
    (journal / "00001-20260201T120000Z.json").write_text(json.dumps({**good, **entry}))
    for verb in ("log", "undo"):
        one_line_error(run_series(verb, cwd=fork, expect=None), "00001-20260201T120000Z.json", said)


def test_series_diff_of_a_non_utf8_blob_is_exit_1(fork: Path) -> None:
    blob = sh("printf 'upstream:\\n  base: v\\377\\n' | git hash-object -w --stdin", fork).strip()
    tree = sh(f"printf '100644 blob {blob}\\tseries.yaml\\n' | git mktree", fork).strip()
    commit = sh(f"git commit-tree -m bad {tree}", fork).strip()
    one_line_error(run_series("diff", f"{commit}:series.yaml", "series.yaml", cwd=fork, expect=None), "not UTF-8")


@pytest.mark.parametrize(
    "header, value, said",
    [
        ("Date", "Mon, 19 Jan 2026 12:00:00 +9999", "'Date:' header"),
        ("Date", "Mon, 19 Jan 99999 12:00:00 +0000", "'Date:' header"),
        ("From", "=?UTF-8?q?Mallory=0A=3Cm=40x=2Eorg=3E?= <fork@example.com>", "author name"),
        ("From", "=?x-unknown?q?Mal?= <fork@example.com>", "encoded word"),
    ],
)
def test_patch_headers_git_cannot_store_are_exit_1(
    fork: Path, tmp_path: Path, header: str, value: str, said: str
) -> None:
    export = tmp_path / "export"
    run_series("export", str(export), cwd=fork)
    patch = sorted((export / "sched-note").glob("*.patch"))[0]
    lines = patch.read_text().split("\n")
    lines = [f"{header}: {value}" if line.startswith(f"{header}: ") else line for line in lines]
    patch.write_text("\n".join(lines))
    before = sh("git for-each-ref", fork)
    one_line_error(run_series("import", str(export), "--force", cwd=fork, expect=None), "sched-note/0001", said)
    assert sh("git for-each-ref", fork) == before
    sh("git fsck --strict --no-dangling 2>&1", fork)


# -- partial and shallow clones ----------------------------------------------------------------


def blobless(fork: Path, tmp_path: Path, name: str = "part", keep: str = "blob:none") -> Path:
    """A partial clone of `fork` (`keep`: git clone's --filter) with its topic branches; the
    remote keeps them too, as a real clone of a fork's server does (issue 33: upstream's
    history is its main and its tags, not every branch of the remote)."""
    bare = tmp_path / "fork.git"
    if not bare.exists():
        sh(f"git clone -q --bare {fork} {bare} && git -C {bare} config uploadpack.allowFilter true", tmp_path)
    part = tmp_path / name
    sh(f"git clone -q --no-checkout --filter={keep} -o upstream file://{bare} {part}", tmp_path)
    for branch in ("sched-note", "offload-evict-fix", "ipc-backport", "api-hello"):
        sh(f"git branch -q topic/{branch} upstream/topic/{branch}", part)
    shutil.copy(fork / "series.yaml", part / "series.yaml")
    return part


def test_a_blobless_clone_gets_its_blobs_through_git(fork: Path, tmp_path: Path) -> None:
    part = blobless(fork, tmp_path)
    assert "?" in sh("git rev-list --objects --missing=print --all", part), "blobs are missing"
    full = run_series("status", cwd=fork).stdout
    assert run_series("status", cwd=part).stdout == full
    proc = run_series("rebase", "--onto", "v0.31.0", cwd=blobless(fork, tmp_path, "part2"), expect=None)
    assert proc.returncode in (0, 3), proc.stderr
    assert "conflict" in proc.stdout.lower() or "clean" in proc.stdout, proc.stdout


def test_a_blobless_clone_whose_promisor_is_gone_is_refused_with_how_to_fix(fork: Path, tmp_path: Path) -> None:
    part = blobless(fork, tmp_path)
    sh(f"git remote set-url upstream file://{tmp_path / 'gone.git'}", part)
    one_line_error(run_series("status", cwd=part, expect=None), "partial clone", "git fetch --refetch upstream")


def test_a_shallow_clone_says_how_deep_it_must_be(fork: Path, tmp_path: Path) -> None:
    bare = tmp_path / "fork.git"
    sh(f"git clone -q --bare {fork} {bare}", tmp_path)
    shallow = tmp_path / "shallow"
    sh(f"git clone -q --no-checkout --depth 1 --no-single-branch -o upstream file://{bare} {shallow}", tmp_path)
    for branch in ("sched-note", "offload-evict-fix", "ipc-backport", "api-hello"):
        sh(f"git branch -q topic/{branch} upstream/topic/{branch}", shallow)
    sh("git fetch -q --depth 1 upstream tag v0.30.0", shallow)
    shutil.copy(fork / "series.yaml", shallow / "series.yaml")
    one_line_error(
        run_series("status", cwd=shallow, expect=None), "shallow clone", "depth of more than 1", "--shallow-since="
    )
