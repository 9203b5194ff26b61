"""The tests' shared machinery: the sealed environment, `sh`, `run_series`, and repository
templates (tests/conftest.py turns them into fixtures and re-exports the helpers).

Time goes in two places when every test starts from nothing: building the same small
repositories again (git processes) and starting a Python interpreter per CLI call (~0.4 s
of imports each). So:

- `from_template(key, build, into)` builds a repository layout once per session, under the
  same sealed environment the tests run in (same objects, same hashes), and gives each test
  a copy, absolute paths inside .git rewritten to the copy's.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

SEALED = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Fork Maintainer",
    "GIT_AUTHOR_EMAIL": "fork@example.com",
    "GIT_AUTHOR_DATE": "2026-02-01T12:00:00Z",
    "GIT_COMMITTER_NAME": "Fork Maintainer",
    "GIT_COMMITTER_EMAIL": "fork@example.com",
    "GIT_COMMITTER_DATE": "2026-02-01T12:00:00Z",
    "GIT_EDITOR": "false",
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
    "SERIES_HTTP_BACKOFF": "0.01",  # retries stay real, their waits short
}
_DROPPED = ("GIT_", "GITHUB_", "GH_", "SERIES_")
GITCONFIG = ("[init]\n\tdefaultBranch = main\n[user]\n\tname = Fork Maintainer\n"
             "\temail = fork@example.com\n[advice]\n\tdetachedHead = false\n")


def sealed(root: Path) -> tuple[dict[str, str], list[str]]:
    """The sealed environment of a test whose temporary directory is `root` (HOME is
    root/home, with its .gitconfig written): (variables to set, variables to drop)."""
    home = root / "home"
    home.mkdir(exist_ok=True)
    (home / ".gitconfig").write_text(GITCONFIG)
    values = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
              "XDG_CACHE_HOME": str(home / ".cache"), "SERIES_LOG_DIR": str(root / "logs"), **SEALED}
    return values, [key for key in os.environ if key.startswith(_DROPPED)]


def sh(script: str, cwd: Path) -> str:
    """Run a bash script (set -eu) in cwd; return stdout."""
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd,
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"script failed ({proc.returncode}):\n{script}\n{proc.stderr}"
    return proc.stdout


# -- templates ------------------------------------------------------------------------------

T = TypeVar("T")
_TEMPLATES: dict[str, tuple[Path, Any]] = {}
_template_base: Callable[[], Path] | None = None  # set by conftest: a session directory


def set_template_base(make: Callable[[], Path]) -> None:
    global _template_base
    _template_base = make


@contextlib.contextmanager
def _environment(values: dict[str, str], drop: list[str]) -> Iterator[None]:
    saved = dict(os.environ)
    for key in drop:
        os.environ.pop(key, None)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def template_tree(key: str, build: Callable[[Path], object]) -> Path:
    """The directory `build` laid out for `key`, built on first use (see from_template)."""
    if key not in _TEMPLATES:
        assert _template_base is not None, "templates need the conftest fixtures"
        base = _template_base() / key
        tree = base / "tree"
        tree.mkdir(parents=True)
        with _environment(*sealed(base)):
            result = build(tree)
        _TEMPLATES[key] = (tree, result)
    return _TEMPLATES[key][0]


def from_template(key: str, build: Callable[[Path], T], into: Path, only: tuple[str, ...] | None = None) -> T:
    """What `build(into)` would make and return, built once per session per `key` and
    copied: `build` gets an empty directory and lays out everything there (several
    repositories side by side). Paths in the answer and in the repositories' text files
    (remote URLs in .git/config, reflog lines) are rewritten to the copy's. `only`: copy
    just these entries of the layout (the rest is already there)."""
    tree = template_tree(key, build)
    result = _TEMPLATES[key][1]
    into.mkdir(parents=True, exist_ok=True)
    for child in tree.iterdir():
        if only is not None and child.name not in only:
            continue
        target = into / child.name
        if child.is_dir() and not child.is_symlink():
            shutil.copytree(child, target, symlinks=True)
            _rewrite(target, str(tree), str(into))
        else:
            shutil.copy2(child, target, follow_symlinks=False)
    return _moved(result, str(tree), str(into))  # type: ignore[no-any-return]


def _rewrite(top: Path, old: str, new: str) -> None:
    before, after = old.encode(), new.encode()
    for dirpath, dirnames, filenames in os.walk(top):
        if "HEAD" in filenames and "objects" in dirnames:  # a git directory: its objects hold no path
            dirnames.remove("objects")
        for name in filenames:
            if name == "index" or name.endswith((".pack", ".idx")):
                continue  # binary, and holds no absolute path
            path = Path(dirpath, name)
            if path.is_symlink():
                continue
            data = path.read_bytes()
            if before in data:
                path.write_bytes(data.replace(before, after))


def _moved(value: Any, old: str, new: str) -> Any:
    if isinstance(value, Path):
        text = str(value)
        return Path(new + text[len(old):]) if text == old or text.startswith(old + "/") else value
    if isinstance(value, tuple):
        return tuple(_moved(v, old, new) for v in value)
    if isinstance(value, list):
        return [_moved(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _moved(v, old, new) for k, v in value.items()}
    return value


def refs_of(repo: Path) -> tuple[tuple[str, str], ...]:
    """A repository's refs and HEAD: what a clone of it starts from."""
    import pygit2

    r = pygit2.Repository(str(repo))
    rows = [(ref.name, str(ref.target)) for ref in r.references.objects]
    head = r.lookup_reference("HEAD")
    rows.append(("HEAD", str(head.target)))
    return tuple(sorted(rows))


# -- the CLI ----------------------------------------------------------------------------------

def run_series(*args: str, cwd: Path, expect: int | None = 0, input: str | None = None,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`series ARGS` in `cwd`; its exit code must be `expect` (None: anything)."""
    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.run([sys.executable, "-m", "series", *args], cwd=cwd, input=input,
                          capture_output=True, text=True, env=full_env)
    if expect is not None:
        assert proc.returncode == expect, (
            f"series {' '.join(args)}: exit {proc.returncode}, expected {expect}\n"
            f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
        )
    return proc
