"""Release wheels: the one that fits the target among several; fetched without pip from the index."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from series.wheel import fetch
from series.errors import SeriesError

X86 = "vllm-0.31.0-cp38-abi3-manylinux_2_28_x86_64.whl"
ARM = "vllm-0.31.0-cp38-abi3-manylinux_2_28_aarch64.whl"
ROOT = Path(__file__).resolve().parent.parent


def test_the_cache_gives_the_wheel_for_the_target_not_the_first_by_name(tmp_path: Path) -> None:
    for name in (ARM, X86, "vllm-0.30.0-cp38-abi3-manylinux_2_28_x86_64.whl"):
        (tmp_path / name).write_bytes(b"PK")
    x86 = fetch.Target("manylinux_2_28_x86_64", "3.12")
    arm = fetch.Target("manylinux_2_28_aarch64", "3.12")
    assert fetch.cached("vllm==0.31.0", tmp_path, x86) == tmp_path / X86
    assert fetch.cached("vllm==0.31.0", tmp_path, arm) == tmp_path / ARM
    assert fetch.cached("vllm==0.31.0", tmp_path, fetch.Target("macosx_14_0_arm64", "3.12")) is None
    assert fetch.cached("vllm==0.32.0", tmp_path, x86) is None
    with pytest.raises(SeriesError, match="expected 3.X"):
        fetch.Target(None, "twelve").supported()


def test_pip_gets_the_target(tmp_path: Path) -> None:
    command = fetch.pip_command("vllm==0.31.0", tmp_path, fetch.Target("manylinux_2_28_x86_64", "3.12"))
    assert command is not None and command[-1] == "vllm==0.31.0", command
    assert command[command.index("--platform") + 1] == "manylinux_2_28_x86_64"
    assert command[command.index("--python-version") + 1] == "3.12"


def serve_index(httpserver: HTTPServer, json_api: bool, digest_ok: bool = True) -> bytes:
    body = b"PK\x05\x06" + b"\0" * 18  # an empty zip: enough for the fetch
    digest = hashlib.sha256(body if digest_ok else b"other").hexdigest()
    files = [{"filename": name, "url": f"/files/{name}", "hashes": {"sha256": digest}} for name in (ARM, X86)]
    if json_api:
        httpserver.expect_request("/simple/vllm/").respond_with_data(
            json.dumps({"meta": {"api-version": "1.1"}, "name": "vllm", "files": files}),
            content_type="application/vnd.pypi.simple.v1+json",
        )
    else:
        links = "".join(f'<a href="{f["url"]}#sha256={digest}">{f["filename"]}</a>' for f in files)
        httpserver.expect_request("/simple/vllm/").respond_with_data(
            f"<html><body>{links}</body></html>", content_type="text/html"
        )
    for name in (ARM, X86):
        httpserver.expect_request(f"/files/{name}").respond_with_data(body)
    return body


def fetch_without_pip(httpserver: HTTPServer, tmp_path: Path, platform: str) -> subprocess.CompletedProcess[str]:
    """A real process in which pip cannot be imported and no pip is on PATH (as under uv)."""
    program = (
        "import sys; sys.modules['pip'] = None\n"
        "from pathlib import Path\nfrom series.wheel import fetch\n"
        f"print(fetch.resolve_wheel('vllm==0.31.0', Path({str(tmp_path / 'cache')!r}), "
        f"target=fetch.Target({platform!r}, '3.12')))"
    )
    env = dict(
        os.environ, PIP_INDEX_URL=httpserver.url_for("/simple/"), PATH=str(tmp_path / "empty"), PYTHONPATH=str(ROOT)
    )
    return subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True)


@pytest.mark.parametrize("json_api", [True, False], ids=["pep691-json", "pep503-html"])
def test_fetch_without_pip_from_the_index(httpserver: HTTPServer, tmp_path: Path, json_api: bool) -> None:
    body = serve_index(httpserver, json_api)
    proc = fetch_without_pip(httpserver, tmp_path, "manylinux_2_28_x86_64")
    assert proc.returncode == 0, proc.stderr
    got = Path(proc.stdout.strip().splitlines()[-1].split("'")[1])
    assert got.name == X86 and got.read_bytes() == body, proc.stdout
    assert not list((tmp_path / "cache").glob(".*.part"))


def test_a_wrong_digest_is_refused_and_nothing_kept(httpserver: HTTPServer, tmp_path: Path) -> None:
    serve_index(httpserver, True, digest_ok=False)
    proc = fetch_without_pip(httpserver, tmp_path, "manylinux_2_28_x86_64")
    assert proc.returncode != 0 and "sha256 differs" in proc.stderr, proc.stderr
    assert not list((tmp_path / "cache").iterdir())
