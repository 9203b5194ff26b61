"""A fork server: `python -m series` without an interpreter's start-up per run.

Runs that need a process of their own (a fault point that exits or kills its process
group, a pause point; see harness._needs_a_process) and the `$SERIES` of ci/nightly.sh
each paid a new interpreter and its imports (~0.1-0.3 s of CPU). Instead one server per
test process (per xdist worker) imports series (every module of it), click and pygit2 once,
never runs a command itself, and forks one child per run. The child is made to be what
`python -m series ARGS` would be:

- cwd, umask and the environment (os.environ replaced wholesale, so git children and
  libgit2 see it too) are the caller's; libgit2's configuration search paths are guessed
  again from that environment (pygit2 fixed them from the server's at import);
- stdin/stdout/stderr are the caller's file descriptors (passed over the socket), every
  other descriptor closed (as subprocess's close_fds), sys.std* built as the interpreter
  builds them; sys.argv, sys.path (cwd first, then PYTHONPATH) as `-m` sets them;
- its process group: the caller's (as a subprocess's), or a new session (as
  start_new_session=True), so a fault that kills its process group kills what it would;
- the random module reseeded (the hash seed stays the server's); series runs as `-m` runs it (runpy), then what an exit
  does: non-daemon threads joined, atexit handlers, streams flushed (exit 120 if stdout
  cannot be); the exit code, or the signal, is the caller's returncode as subprocess gives.

State cannot leak between runs: the server never runs a command, so each child starts
from freshly imported modules (series' per-process caches, logging without handlers,
no atexit handlers); they are frozen for the garbage collector (gc.freeze: never
collected, which module-level objects are not in a new process either). What the server cannot make the same, it refuses and the caller runs
`python -m series` instead: a PYTHON* or locale variable other than the server's (they
set interpreter flags and stdio encodings at start-up; PYTHONPATH only goes on sys.path,
so it is served), a module the server imported shadowed by a file in cwd or a PYTHONPATH
entry (as `.git/series`), a process group of another session. Not the same, knowingly:
the hash seed (one per server, not per run) and TLS certificate paths (pygit2 reads
SSL_CERT_* at import; the suite has no TLS).

`spawn()` (or `run()`) is the caller's side; `tests/forkclient.py` is a command-line
client, for scripts. If the server does not start, every call answers None: fall back.
"""

from __future__ import annotations

import sys

_AT_START = set(sys.modules)  # the modules an interpreter has before `-m` looks at sys.path

import os  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV_SOCKET = "SERIES_TESTS_FORKSERVER"  # tests/forkclient.py's: the socket's path
# what the interpreter reads at start-up, besides PYTHONPATH: must equal the server's
_STARTUP = ("PYTHON", "LC_", "LANG")


def _fixed(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(_STARTUP) and k not in ("PYTHONPATH", "LANGUAGE")}


# -- the caller's side ----------------------------------------------------------------------


class Child:
    """A run the server forked: its pid, and wait() its returncode (as subprocess's)."""

    def __init__(self, sock: socket.socket, pid: int):
        self._sock, self.pid = sock, pid
        self.returncode: int | None = None

    def wait(self) -> int:
        if self.returncode is None:
            line = _readline(self._sock)
            self._sock.close()
            assert line.startswith(b"S "), line
            self.returncode = int(line[2:])
        return self.returncode


_server: tuple[str, object] | None = None  # (socket path, Popen)
_broken = False


def socket_path() -> str | None:
    global _server, _broken
    if _server is None and not _broken:
        import subprocess
        import tempfile

        where = tempfile.mkdtemp(prefix="series-forkserver-")
        path = os.path.join(where, "s")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tests.forkserver", path],
                cwd=ROOT,
                env=env,
                stdin=subprocess.PIPE,  # the server ends when this closes: its caller is gone
                stdout=subprocess.PIPE,
            )
            assert proc.stdout is not None
            ready = proc.stdout.readline()
            proc.stdout.close()
        except OSError:
            ready = b""
        if ready != b"ready\n":
            _broken = True
            return None
        _server = (path, proc)
    return None if _server is None else _server[0]


def shutdown() -> None:
    """End the server (at the test process's end)."""
    global _server
    if _server is not None:
        import shutil

        path, proc = _server
        _server = None
        proc.stdin.close()  # type: ignore[attr-defined]
        try:
            proc.wait(timeout=10)  # type: ignore[attr-defined]
        except Exception:
            proc.kill()  # type: ignore[attr-defined]
            proc.wait()  # type: ignore[attr-defined]
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def spawn(
    argv: list[str],
    cwd: str,
    env: dict[str, str],
    fds: tuple[int, int, int],
    new_session: bool = False,
    path: str | None = None,
) -> Child | None:
    """Start `python -m series ARGV` in the server; None: it cannot (run it yourself)."""
    path = path or socket_path()
    if path is None:
        return None
    import json

    umask = os.umask(0o022)
    os.umask(umask)
    request = {
        "argv": list(argv),
        "cwd": os.path.abspath(cwd),
        "env": dict(env),
        "umask": umask,
        "pgid": None if new_session else os.getpgrp(),
        "caller": os.getpid(),
    }
    payload = json.dumps(request).encode()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        socket.send_fds(sock, [struct.pack("!I", len(payload))], list(fds))
        sock.sendall(payload)
        line = _readline(sock)
    except OSError:
        sock.close()
        return None
    if not line.startswith(b"P "):  # refused, or the server is gone
        sock.close()
        return None
    return Child(sock, int(line[2:]))


def _readline(sock: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(1)
        if not chunk:
            break
        data += chunk
    return data


# -- the server -----------------------------------------------------------------------------


def _preload() -> None:
    import importlib
    import pkgutil

    import click  # noqa: F401
    import pygit2  # noqa: F401

    import series

    # scripts run in other processes (they read their environment at import), and -m's own
    scripts = {"series.__main__", "series.evidence.testrun", "series.demo_workload"}
    for info in pkgutil.walk_packages(series.__path__, "series."):
        if info.name not in scripts:
            importlib.import_module(info.name)


def serve(path: str) -> None:
    import gc
    import json
    import selectors

    base_path = list(sys.path[1:])
    server_fixed = _fixed(dict(os.environ))
    _preload()
    tops = {}  # a top-level module imported here -> the sys.path entry it came from
    for name in {n.partition(".")[0] for n in sys.modules} - {n.partition(".")[0] for n in _AT_START}:
        where = getattr(sys.modules.get(name), "__file__", None)
        if where and name not in ("tests", "__main__"):
            up = 2 if os.path.basename(where).startswith("__init__.") else 1
            for _ in range(up):
                where = os.path.dirname(where)
            tops[name] = os.path.realpath(where)
    # What the imports made stays as it is: a child's garbage collections leave it alone
    # instead of touching (and so copying) every page of it, ~25 ms of CPU each.
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, "accept")
    sel.register(sys.stdin.fileno(), selectors.EVENT_READ, "stdin")
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    waiting: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, connection)

    def refusal(req: dict[str, object]) -> str | None:
        env = req["env"]
        assert isinstance(env, dict)
        if _fixed(env) != server_fixed:
            return "start-up variables differ"
        if req["pgid"] is not None:
            caller = int(req["caller"])  # type: ignore[call-overload]
            try:
                if os.getsid(caller) != os.getsid(0) or os.getpgid(caller) != req["pgid"]:
                    return "a process group of another session"
            except OSError:
                return "no such caller"
        for entry in [str(req["cwd"]), *_pythonpath(env)]:
            try:
                names = os.listdir(entry or ".")
            except OSError:
                continue
            real = os.path.realpath(entry or ".")
            for name in names:
                top = name.partition(".")[0]
                if top in tops and tops[top] != real and _importable(os.path.join(real, name), top):
                    return f"{entry}/{name} shadows a module"
        return None

    while True:
        for key, _events in sel.select():
            if key.data == "stdin":
                if not os.read(key.fd, 4096):
                    return
            elif key.data == "accept":
                conn, _ = listener.accept()
                try:
                    head, fds, _flags, _addr = socket.recv_fds(conn, 4, 3)
                    (size,) = struct.unpack("!I", head)
                    payload = b""
                    while len(payload) < size:
                        chunk = conn.recv(size - len(payload))
                        if not chunk:
                            raise OSError("short request")
                        payload += chunk
                    req = json.loads(payload)
                except (OSError, ValueError, struct.error):
                    conn.close()
                    continue
                why = refusal(req) if len(fds) == 3 else "three descriptors, please"
                if why is not None:
                    for fd in fds:
                        os.close(fd)
                    conn.sendall(f"R {why}\n".encode())
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    try:
                        _child(req, fds, base_path)
                    finally:
                        os._exit(70)
                for fd in fds:
                    os.close(fd)
                pidfd = os.pidfd_open(pid)
                waiting[pidfd] = (pid, conn)
                sel.register(pidfd, selectors.EVENT_READ, "child")
                conn.sendall(f"P {pid}\n".encode())
            else:
                pid, conn = waiting.pop(key.fd)
                sel.unregister(key.fd)
                os.close(key.fd)
                _, status = os.waitpid(pid, 0)
                try:
                    conn.sendall(f"S {os.waitstatus_to_exitcode(status)}\n".encode())
                except OSError:
                    pass
                conn.close()


def _importable(path: str, top: str) -> bool:
    """Whether an import of `top` would find `path` (a module file, or a package: a
    directory without __init__ is a namespace portion, which a later entry overrides)."""
    from importlib.machinery import all_suffixes

    if os.path.isdir(path):
        return any(os.path.exists(os.path.join(path, "__init__" + suffix)) for suffix in all_suffixes())
    return any(os.path.basename(path) == top + suffix for suffix in all_suffixes())


def _pythonpath(env: dict[str, str]) -> list[str]:
    return [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]


def _child(req: dict[str, object], fds: list[int], base_path: list[str]) -> None:
    """In the forked child: become `python -m series ARGV` and exit as it would."""
    import atexit
    import io
    import random
    import runpy
    import signal
    import tempfile
    import threading

    import pygit2
    from pygit2.enums import ConfigLevel

    env = req["env"]
    assert isinstance(env, dict)
    if req["pgid"] is None:
        os.setsid()
    else:
        os.setpgid(0, int(req["pgid"]))  # type: ignore[call-overload]
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    os.closerange(3, 1 << 16)  # the socket, the listener, the other children's pidfds, fds
    os.chdir(str(req["cwd"]))
    os.umask(int(req["umask"]))  # type: ignore[call-overload]
    os.environ.clear()
    os.environ.update(env)
    for level in (ConfigLevel.SYSTEM, ConfigLevel.XDG, ConfigLevel.GLOBAL, ConfigLevel.PROGRAMDATA):
        pygit2.settings.search_path[level] = None  # type: ignore[assignment]  # guessed again from this environment
    tempfile.tempdir = None
    random.seed()
    sys.path[:] = [os.getcwd(), *_pythonpath(env), *base_path]
    argv = req["argv"]
    assert isinstance(argv, list)
    sys.argv = ["-m", *argv]
    sys.orig_argv = [sys.executable, "-m", "series", *argv]
    encoding, errors = sys.__stdout__.encoding, str(sys.__stdout__.errors)  # type: ignore[union-attr]

    def stream(fd: int, mode: str, errors: str, line: bool) -> io.TextIOWrapper:
        raw = io.FileIO(fd, mode, closefd=False)
        buffered = io.BufferedReader(raw) if mode == "rb" else io.BufferedWriter(raw)
        return io.TextIOWrapper(buffered, encoding=encoding, errors=errors, line_buffering=line)

    sys.stdin = stream(0, "rb", errors, False)
    sys.stdout = stream(1, "wb", errors, os.isatty(1))
    sys.stderr = stream(2, "wb", "backslashreplace", True)
    for name in ("stdin", "stdout", "stderr"):
        setattr(sys, f"__{name}__", getattr(sys, name))
    interrupted = False
    try:
        runpy._run_module_as_main("series")  # type: ignore[attr-defined]
        code = 0
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            sys.stderr.write(f"{exc.code}\n")
            code = 1
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        code, interrupted = 1, True
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except Exception:
        code = 120
    try:
        sys.stderr.flush()
    except Exception:
        pass
    if interrupted:  # as the interpreter ends on an uncaught KeyboardInterrupt
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)


if __name__ == "__main__":
    serve(sys.argv[1])
