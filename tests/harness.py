"""The tests' shared machinery: the sealed environment, `sh`, `run_series`, and repository
templates (tests/conftest.py turns them into fixtures and re-exports the helpers).

Time goes in two places when every test starts from nothing: building the same small
repositories again (git processes) and starting a Python interpreter per CLI call (~0.4 s
of imports each). So:

- `from_template(key, build, into)` builds a repository layout once per session, under the
  same sealed environment the tests run in (same objects, same hashes), and gives each test
  a copy, absolute paths inside .git rewritten to the copy's. Creating files and
  directories is most of a copy's cost here, so a template's object stores are packed
  (one pack, not a directory per object prefix) and linked, not copied, into each copy,
  as `git clone --local` links them: git never writes an object file in place.
- `run_series` runs the CLI inside this interpreter, as a fresh process would see it: its
  own cwd, environment, stdin and stdout/stderr (file descriptors too, so git and pytest
  children write where a subprocess's would), and afterwards what a process exit would do
  (atexit handlers, locks, the module-level caches series keeps per process). `fresh=True`,
  a fault or pause point in the environment, or SERIES_TESTS_FRESH=1 (the whole suite)
  run `python -m series` in a subprocess instead: kills, signals and import-time
  behaviour need a real process. A fault or pause point's process is forked by a fork
  server that imported series once (tests/forkserver.py: series_process), as are the
  $SERIES runs of scripts (series_command); `fresh=True` and SERIES_TESTS_FRESH=1 start
  the interpreter itself (its start-up is what they are about).
"""

from __future__ import annotations

import atexit
import contextlib
import io
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
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
GITCONFIG = (
    "[init]\n\tdefaultBranch = main\n[user]\n\tname = Fork Maintainer\n"
    "\temail = fork@example.com\n[advice]\n\tdetachedHead = false\n"
)
# The whole suite through `python -m series` (to check the in-process runs change nothing).
# Read once, here: the sealed environment drops SERIES_* variables.
ALL_FRESH = os.environ.get("SERIES_TESTS_FRESH") == "1"


def sealed(root: Path) -> tuple[dict[str, str], list[str]]:
    """The sealed environment of a test whose temporary directory is `root` (HOME is
    root/home, with its .gitconfig written): (variables to set, variables to drop)."""
    home = root / "home"
    home.mkdir(exist_ok=True)
    (home / ".gitconfig").write_text(GITCONFIG)
    values = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "SERIES_LOG_DIR": str(root / "logs"),
        **SEALED,
    }
    return values, [key for key in os.environ if key.startswith(_DROPPED)]


def sh(script: str, cwd: Path) -> str:
    """Run a bash script (set -eu) in cwd; return stdout."""
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, capture_output=True, text=True)
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
            _compact(tree)
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
            os.mkdir(target)
            _copy_tree(str(child), str(target), str(tree).encode(), str(into).encode())
        else:
            shutil.copy2(child, target, follow_symlinks=False)
    return _moved(result, str(tree), str(into))  # type: ignore[no-any-return]


def _compact(tree: Path) -> None:
    """Pack every object store of a template into one pack (unreachable objects too: -k;
    no server info or bitmap files: a copy should hold what the build made, in fewer
    files), and drop git init's sample hooks (never run: a hook runs only without the
    .sample suffix)."""
    for dirpath, dirnames, filenames in os.walk(tree):
        if "HEAD" in filenames and "objects" in dirnames:  # a git directory
            dirnames.remove("objects")
            subprocess.run(
                [
                    "git",
                    "--git-dir",
                    dirpath,
                    "-c",
                    "repack.writeBitmaps=false",
                    "repack",
                    "-a",
                    "-d",
                    "-k",
                    "-n",
                    "-q",
                ],
                check=True,
                capture_output=True,
            )
            for sample in Path(dirpath, "hooks").glob("*.sample"):
                sample.unlink()


def _copy_tree(source: str, target: str, old: bytes, new: bytes, objects: bool = False) -> None:
    """Copy the directory `source` into the existing `target` in one pass: symlinks as
    links, a git directory's object files hard-linked (immutable: git writes a new file and
    renames it), every other file with its mode and mtime, `old` replaced by `new` in it
    (remote URLs, reflog lines; the index is binary and holds no absolute path)."""
    with os.scandir(source) as scan:
        entries = list(scan)
    names = {e.name for e in entries}
    git_dir = "HEAD" in names and "objects" in names
    for entry in entries:
        to = os.path.join(target, entry.name)
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), to)
        elif entry.is_dir():
            os.mkdir(to)
            _copy_tree(entry.path, to, old, new, objects or (git_dir and entry.name == "objects"))
        elif objects:
            os.link(entry.path, to)
        else:
            info = entry.stat()
            with open(entry.path, "rb") as f:
                data = f.read()
            if entry.name != "index" and old in data:
                data = data.replace(old, new)
            mode = info.st_mode & 0o7777
            with open(os.open(to, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), "wb") as f:
                f.write(data)
                if mode & _UMASK:  # what the umask took from the mode, as copy2 keeps it
                    os.fchmod(f.fileno(), mode)
            os.utime(to, ns=(info.st_atime_ns, info.st_mtime_ns))


_UMASK = os.umask(0o022)
os.umask(_UMASK)


def _moved(value: Any, old: str, new: str) -> Any:
    if isinstance(value, Path):
        text = str(value)
        return Path(new + text[len(old) :]) if text == old or text.startswith(old + "/") else value
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


def run_series(
    *args: str,
    cwd: Path,
    expect: int | None = 0,
    input: str | None = None,
    env: dict[str, str] | None = None,
    fresh: bool = False,
) -> subprocess.CompletedProcess[str]:
    """`series ARGS` in `cwd`; its exit code must be `expect` (None: anything)."""
    full_env = dict(os.environ, **(env or {}))
    if fresh or ALL_FRESH:
        proc = subprocess.run(
            [sys.executable, "-m", "series", *args], cwd=cwd, input=input, capture_output=True, text=True, env=full_env
        )
    elif _needs_a_process(full_env):
        proc = series_process(list(args), cwd, full_env, input)
    else:
        proc = _in_process(list(args), cwd, input, full_env)
    if expect is not None:
        assert proc.returncode == expect, (
            f"series {' '.join(args)}: exit {proc.returncode}, expected {expect}\n"
            f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
        )
    return proc


def series_process(
    argv: list[str], cwd: Path, env: dict[str, str], input: str | None = None, new_session: bool = False
) -> subprocess.CompletedProcess[str]:
    """`python -m series ARGV` in a process of its own, as subprocess.run(capture_output=True,
    text=True) gives it: forked by the test process's fork server (tests/forkserver.py),
    which saves the interpreter's start-up, or, where it cannot serve the run, started."""
    from tests import forkserver

    command = [sys.executable, "-m", "series", *argv]
    if not ALL_FRESH:
        out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        stdin = None
        if input is not None:
            stdin = tempfile.TemporaryFile()
            stdin.write(input.encode())
            stdin.seek(0)
        child = forkserver.spawn(
            argv, str(cwd), env, (0 if stdin is None else stdin.fileno(), out.fileno(), err.fileno()), new_session
        )
        if stdin is not None:
            stdin.close()
        if child is not None:
            code = child.wait()
            return subprocess.CompletedProcess(command, code, _read(out), _read(err))
        out.close()
        err.close()
    return subprocess.run(
        command, cwd=cwd, input=input, capture_output=True, text=True, env=env, start_new_session=new_session
    )


def series_command() -> tuple[str, dict[str, str]]:
    """`python -m series` as a script's command line (ci/nightly.sh's $SERIES), and the
    variables to add to its environment: a client of the fork server where it runs."""
    from tests import forkserver

    path = None if ALL_FRESH else forkserver.socket_path()
    if path is None:
        return f"{sys.executable} -m series", {}
    client = Path(__file__).with_name("forkclient.py")
    return f"{sys.executable} -I -S {client}", {forkserver.ENV_SOCKET: path}


def _needs_a_process(env: dict[str, str]) -> bool:
    """A fault point exits or kills the process (a full disk only raises); a pause point
    waits for another process to act."""
    fault = env.get("SERIES_FAULT", "")
    return bool(fault and not fault.startswith("enospc:")) or bool(env.get("SERIES_PAUSE"))


class _ThreadStream:
    """sys.stdout/sys.stderr during an in-process run: the run's thread writes to the
    run's file; other threads (the test's HTTP server logging its requests) write where
    they did before, as they would with the command in another process."""

    def __init__(self, own: io.TextIOWrapper, other: Any):
        self._own, self._other, self._thread = own, other, threading.get_ident()
        self.active = True

    def _target(self) -> Any:
        return self._own if self.active and threading.get_ident() == self._thread else self._other

    def write(self, text: str) -> int:
        return int(self._target().write(text))

    def flush(self) -> None:
        self._target().flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target(), name)


def _decoded(data: bytes) -> str:
    """As subprocess.run(text=True) decodes: UTF-8 (LC_ALL=C.UTF-8), universal newlines."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def _in_process(argv: list[str], cwd: Path, input: str | None, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    import series.cli

    _process_start()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_tempdir = tempfile.tempdir
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    exits: list[tuple[Callable[..., object], tuple[object, ...], dict[str, object]]] = []

    def register(func: Callable[..., object], *a: object, **kw: object) -> Callable[..., object]:
        exits.append((func, a, kw))
        return func

    for stream in saved_streams[1:]:
        stream.flush()
    saved_fds = [os.dup(fd) for fd in (0, 1, 2)]
    files = [tempfile.TemporaryFile() for _ in range(3)]
    code: int | None = None
    streams: list[_ThreadStream] = []
    try:
        files[0].write((input or "").encode())
        files[0].seek(0)
        for fd, f in enumerate(files):
            os.dup2(f.fileno(), fd)
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 (closed below)
        own_out = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        own_err = open(
            2,
            "w",
            encoding="utf-8",
            errors="backslashreplace",
            closefd=False,  # noqa: SIM115
            buffering=1,
        )
        streams = [_ThreadStream(own_out, saved_streams[1]), _ThreadStream(own_err, saved_streams[2])]
        sys.stdout, sys.stderr = streams
        os.environ.clear()
        os.environ.update(env)
        tempfile.tempdir = None
        os.chdir(cwd)
        root.handlers = []  # series' logging.basicConfig takes effect, as in a new process
        atexit.register = register  # type: ignore[assignment]
        try:
            series.cli.main(argv)
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc.code)
        finally:
            atexit.register = _REAL_REGISTER
            for func, a, kw in reversed(exits):  # what the interpreter does when it exits
                with contextlib.suppress(Exception):
                    func(*a, **kw)
            _process_end()
            for stream in (sys.stdout, sys.stderr, own_out, own_err):
                with contextlib.suppress(Exception):
                    stream.flush()
    finally:
        for s in streams:
            s.active = False
        added = [h for h in root.handlers if h not in saved_handlers]
        root.handlers, root.level = saved_handlers, saved_level
        for handler in added:
            handler.close()
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        tempfile.tempdir = saved_tempdir
        stdin = sys.stdin
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        if stdin is not saved_streams[0]:
            stdin.close()
        for fd, saved in enumerate(saved_fds):
            os.dup2(saved, fd)
            os.close(saved)
    out, err = (_read(f) for f in files[1:])
    files[0].close()
    return subprocess.CompletedProcess([sys.executable, "-m", "series", *argv], code, out, err)


_REAL_REGISTER = atexit.register


def _read(f: Any) -> str:
    f.seek(0)
    data = f.read()
    f.close()
    return _decoded(data)


def _exit_code(code: object) -> int:
    """The exit status of `sys.exit(code)`, as the interpreter computes it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    sys.stderr.write(f"{code}\n")
    return 1


def _process_start() -> None:
    """What series keeps per process starts empty, as in a new interpreter."""
    _process_end()


def _process_end() -> None:
    """Forget what series keeps per process (what an exit forgets): the global options'
    output settings, held locks, the credentials to redact, parsed configs, git's version."""
    modules = sys.modules
    if (cli := modules.get("series.cli")) is not None:
        cli.OUTPUT.quiet, cli.OUTPUT.color, cli.OUTPUT.pager = False, "auto", True
    if (fs := modules.get("series.ops.fs")) is not None:
        for fd, _depth in fs.Lock._held.values():
            with contextlib.suppress(OSError):
                os.close(fd)  # closing the descriptor drops its flock, as an exit does
        fs.Lock._held.clear()
    if (errors := modules.get("series.errors")) is not None:
        errors._SECRETS.clear()
    if (config := modules.get("series.seriesfile.config")) is not None:
        config._PARSED.clear()
        config._READ.clear()
    if (merge := modules.get("series.engine.merge")) is not None:
        merge._checked.clear()


def still_running(pid: int) -> bool:
    """Whether process `pid` runs: an exited orphan stays a zombie until init reaps it (a
    container's init may never), and a zombie does not run."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] != b"Z"
    except FileNotFoundError:
        return False
