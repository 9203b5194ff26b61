"""`python -m series ARGS` through the test process's fork server (tests/forkserver.py),
for scripts the tests run (ci/nightly.sh's $SERIES): `python -I -S tests/forkclient.py
ARGS`, with SERIES_TESTS_FORKSERVER the server's socket. This process's stdin, stdout,
stderr, cwd, process group and environment (less that variable) are the run's; it exits
with the run's code, or dies of its signal. If the server cannot serve the run, this
process becomes `python -m series ARGS` (exec: same pid, descriptors, process group)."""

import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import forkserver  # noqa: E402  (stdlib only at import: this interpreter has no site)


def main() -> None:
    env = dict(os.environ)
    path = env.pop(forkserver.ENV_SOCKET, "")
    argv = sys.argv[1:]
    child = forkserver.spawn(argv, os.getcwd(), env, (0, 1, 2), path=path) if path else None
    if child is None:
        os.execve(sys.executable, [sys.executable, "-m", "series", *argv], env)
    code = child.wait()
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


main()
