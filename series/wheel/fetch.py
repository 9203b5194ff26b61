"""Release wheels: `--wheel vllm==0.31.0` is fetched once into a cache and reused.

pip first, not our own HTTP: it honours the user's index (PIP_INDEX_URL, pip.conf), proxies
and credentials. `--only-binary=:all:` because a source distribution would need vLLM's
whole CUDA build; `--no-deps` because we only want the file (vLLM's dependencies, torch
first, are gigabytes). An environment without pip (`uv tool install`, a uv venv) uses a
`pip` on PATH, and else fetches from the index itself: the simple API (PEP 691 JSON, or
the PEP 503 page) of PIP_INDEX_URL / UV_INDEX_URL / pypi.org, checking the sha256 the
index publishes. (uv has no `uv pip download`.)

Which wheel: the one whose tags `packaging.tags` ranks best for the target, this
interpreter by default, or `--platform` / `--python-version` (the GPU runners' platform
when the build runs elsewhere). A cache holding wheels of several architectures gives the
one that fits, never the first by name.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from packaging.version import InvalidVersion, Version

from series.cache import user_cache
from series.errors import SeriesError
from series.ops.fs import replacing

if TYPE_CHECKING:  # imported where used: a wheel given as a path needs none of them (30 ms)
    import urllib.request

    from packaging import tags

Runner = Callable[[list[str]], subprocess.CompletedProcess[str]]
_SPEC = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!_-]+)$")
DEFAULT_INDEX = "https://pypi.org/simple/"


@dataclass(frozen=True)
class Target:
    """Where the wheel will be installed: None fields mean this interpreter's."""

    platform: str | None = None  # e.g. manylinux_2_28_x86_64
    python_version: str | None = None  # e.g. 3.12

    def supported(self) -> list[tags.Tag]:
        """Best first, as pip ranks them."""
        from packaging import tags

        if self.platform is None and self.python_version is None:
            return list(tags.sys_tags())
        version = None
        if self.python_version is not None:
            if not re.fullmatch(r"3\.\d{1,2}", self.python_version):
                raise SeriesError(f"--python-version {self.python_version}: expected 3.X, e.g. 3.12")
            version = tuple(int(p) for p in self.python_version.split("."))
        platforms = [self.platform] if self.platform else None
        return [*tags.cpython_tags(version, platforms=platforms), *tags.compatible_tags(version, platforms=platforms)]

    def pip_args(self) -> list[str]:
        out = []
        if self.platform:
            out += ["--platform", self.platform]
        if self.python_version:
            out += ["--python-version", self.python_version, "--implementation", "cp"]
        return out


def cache_dir() -> Path:
    return user_cache("wheels", "SERIES_WHEEL_CACHE")


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    """On a terminal pip shows its own progress bar (a 320 MB download takes a while)."""
    if sys.stderr.isatty():
        return subprocess.run(cmd, stdout=sys.stderr, stderr=sys.stderr, text=True)
    return subprocess.run(cmd, capture_output=True, text=True)


def pip_command(spec: str, directory: Path, target: Target | None = None) -> list[str] | None:
    """This interpreter's pip, else a pip on PATH; None when there is neither."""
    if importlib.util.find_spec("pip") is not None:
        base = [sys.executable, "-m", "pip"]
    elif shutil.which("pip") or shutil.which("pip3"):
        base = [shutil.which("pip") or shutil.which("pip3") or "pip"]
    else:
        return None
    return [
        *base,
        "download",
        "--no-deps",
        "--only-binary=:all:",
        *(target or Target()).pip_args(),
        "--dest",
        str(directory),
        spec,
    ]


def best(name: str, version: str, filenames: list[str], target: Target | None = None) -> str | None:
    """The filename of NAME==VERSION whose tags rank best for the target, or None."""
    from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

    rank = {tag: n for n, tag in enumerate((target or Target()).supported())}
    want = canonicalize_name(name)
    try:
        wanted = Version(version)
    except InvalidVersion:
        return None
    scored = []
    for filename in filenames:
        try:
            got, ver, _build, wheel_tags = parse_wheel_filename(filename)
        except (InvalidWheelFilename, InvalidVersion):
            continue
        if got != want or ver != wanted:
            continue
        score = min((rank[t] for t in wheel_tags if t in rank), default=None)
        if score is not None:
            scored.append((score, filename))
    return min(scored)[1] if scored else None


def cached(spec: str, directory: Path, target: Target | None = None) -> Path | None:
    m = _SPEC.match(spec)
    if not m or not directory.is_dir():
        return None
    name = best(m["name"], m["version"], [p.name for p in directory.glob("*.whl")], target)
    return directory / name if name else None


def _spec(wheel: str) -> re.Match[str]:
    """NAME==VERSION parsed, or the one-line refusal."""
    m = _SPEC.match(wheel)
    if not m:
        raise SeriesError(f"--wheel {wheel}: expected a .whl path or NAME==VERSION, e.g. vllm==0.31.0")
    return m


def planned(wheel: str, cache: Path | None = None, target: Target | None = None) -> tuple[Path, bool]:
    """For --dry-run: the wheel if it is here already, else a stand-in name; never downloads.

    Returns (path, present)."""
    if wheel.endswith(".whl"):
        return resolve_wheel(wheel, cache)[0], True
    m = _spec(wheel)
    directory = cache or cache_dir()
    hit = cached(wheel, directory, target)
    if hit is not None:
        return hit, True
    stem = re.sub(r"[-_.]+", "_", m["name"]).lower()
    return directory / f"{stem}-{m['version']}-PY-ABI-PLATFORM.whl", False


def resolve_wheel(
    wheel: str, cache: Path | None = None, runner: Runner = _run, target: Target | None = None
) -> tuple[Path, bool]:
    """A wheel path, or NAME==VERSION fetched into the cache. Returns (path, fetched_now)."""
    if wheel.endswith(".whl"):
        path = Path(wheel).expanduser()
        if not path.is_file():
            raise SeriesError(f"{wheel}: no such wheel file (pass a .whl path or vllm==VERSION)")
        return path.resolve(), False
    m = _spec(wheel)
    directory = cache or cache_dir()
    hit = cached(wheel, directory, target)
    if hit is not None:
        return hit, False
    directory.mkdir(parents=True, exist_ok=True)
    command = pip_command(wheel, directory, target)
    if command is None:
        return from_index(m["name"], m["version"], directory, target), True
    proc = runner(command)
    if proc.returncode != 0:
        lines = ((proc.stderr or "") + (proc.stdout or "")).strip().splitlines()
        last = lines[-1] if lines else f"exit {proc.returncode}, see pip's output above"
        raise SeriesError(
            f"pip download {wheel} failed: {last} (check the version and your index, or pass --wheel PATH.whl)"
        )
    hit = cached(wheel, directory, target)
    if hit is None:
        raise SeriesError(
            f"pip download {wheel} left no wheel for this platform in {directory} "
            "(pass --platform / --python-version for another target)"
        )
    return hit, True


# --- without pip: the index's simple API ------------------------------------------------------


def index_url() -> str:
    return (
        os.environ.get("PIP_INDEX_URL")
        or os.environ.get("UV_INDEX_URL")
        or os.environ.get("UV_DEFAULT_INDEX")
        or DEFAULT_INDEX
    )


def _public(url: str) -> str:
    """The URL without user:password, for messages."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.hostname or ""))


def _request(url: str, accept: str) -> urllib.request.Request:
    """Credentials in the URL become a basic-auth header (urllib would not send them)."""
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    host = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    request = urllib.request.Request(
        urllib.parse.urlunsplit(parts._replace(netloc=host)), headers={"Accept": accept, "User-Agent": "series"}
    )
    if parts.username:
        token = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        request.add_header("Authorization", "Basic " + base64.b64encode(token.encode()).decode())
    return request


def _failed(url: str, exc: Exception) -> SeriesError:
    return SeriesError(
        f"fetching {_public(url)} failed: {exc} (no pip here either: check PIP_INDEX_URL, or pass --wheel PATH.whl)"
    )


def _open(url: str, accept: str) -> tuple[bytes, str, str]:
    """GET url: (body, content type, final URL)."""
    import urllib.request

    try:
        with urllib.request.urlopen(_request(url, accept), timeout=60) as response:  # noqa: S310
            return response.read(), response.headers.get("Content-Type", ""), response.geturl()
    except (OSError, ValueError) as exc:
        raise _failed(url, exc) from None


def _download(url: str, dest: Path, digest: str | None) -> None:
    """Stream to dest.part (a release wheel is 320 MB), check the sha256, then rename."""
    import urllib.request

    sha = hashlib.sha256()
    try:  # a failed or mismatched download leaves no file: replacing() removes it
        with (
            urllib.request.urlopen(_request(url, "*/*"), timeout=60) as response,
            replacing(dest, dest.with_name(f".{dest.name}.part")) as out,
        ):  # noqa: S310
            while chunk := response.read(1 << 20):
                sha.update(chunk)
                out.write(chunk)
            if digest is not None and sha.hexdigest() != digest:
                raise SeriesError(f"{dest.name}: sha256 differs from the index's; not kept (try again)")
    except (OSError, ValueError) as exc:
        raise _failed(url, exc) from None


def files_on_index(name: str, index: str | None = None) -> dict[str, tuple[str, str | None]]:
    """{filename: (absolute url, sha256 or None)} for a project, from its simple-API page."""
    from packaging.utils import canonicalize_name

    base = (index or index_url()).rstrip("/") + "/"
    page = urllib.parse.urljoin(base, f"{canonicalize_name(name)}/")
    body, kind, final = _open(page, "application/vnd.pypi.simple.v1+json, text/html;q=0.1")
    out: dict[str, tuple[str, str | None]] = {}
    if "json" in kind:
        for entry in json.loads(body).get("files", []):
            url = urllib.parse.urljoin(final, entry["url"])
            out[entry["filename"]] = (url, (entry.get("hashes") or {}).get("sha256"))
        return out
    for href in _links(body.decode("utf-8", errors="replace")):
        url, _, fragment = urllib.parse.urljoin(final, href).partition("#")
        digest = fragment[len("sha256=") :] if fragment.startswith("sha256=") else None
        out[urllib.parse.unquote(url.rsplit("/", 1)[-1])] = (url, digest)
    return out


def _links(page: str) -> list[str]:
    """The hrefs of a PEP 503 page's <a> tags."""
    from html.parser import HTMLParser

    class Links(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.links: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            href = dict(attrs).get("href")
            if tag == "a" and href:
                self.links.append(href)

    parser = Links()
    parser.feed(page)
    return parser.links


def from_index(name: str, version: str, directory: Path, target: Target | None = None) -> Path:
    files = files_on_index(name)
    chosen = best(name, version, list(files), target)
    if chosen is None:
        raise SeriesError(
            f"{_public(index_url())} has no {name}=={version} wheel for this platform "
            "(check the version, pass --platform / --python-version, or --wheel PATH.whl)"
        )
    url, digest = files[chosen]
    _download(url, directory / chosen, digest)
    return directory / chosen
