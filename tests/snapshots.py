"""Whole-output snapshots: a verb's output compared with a file kept under tests/snapshots/.

The tests call the `snapshot` fixture (tests/conftest.py) with what a command printed; the
expected text is tests/snapshots/<test>[.<label>].txt (or .json for a --json document, kept
byte for byte: its layout is output too). A mismatch fails with a unified diff, expected
first. `pytest --snapshot-update` or SERIES_SNAPSHOT_UPDATE=1 rewrites the files instead
(and writes missing ones); say why in the commit message of any such update.

What is normalized is only what differs between runs or machines, never what a change of
behaviour could change: the test's temporary directory (-> <TMP>), and what a test names
explicitly (`volatile`: patterns of real time, e.g. a duration). Everything else is kept.
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

SNAPSHOT_DIR = Path(__file__).parent / "snapshots"
# Read once, at import: the sealed environment drops SERIES_* variables during a test.
UPDATE_FROM_ENV = os.environ.get("SERIES_SNAPSHOT_UPDATE") == "1"

# A pattern of real time and what stands in its place, e.g. (r"\d+\.\d+ s", "<SECONDS> s").
Volatile = tuple[str, str]
# The wall clock in an operation's id and its report's file name (00001-20260201T120000Z);
# the placeholder keeps the shape, so a change of format still shows.
WALL_CLOCK: Volatile = (r"\b\d{8}T\d{6}Z\b", "YYYYMMDDTHHMMSSZ")
# The wall clock of an operation in `series log --json` ("time": "2026-02-01T12:00:00+00:00").
LOG_TIME: Volatile = (r'"time": "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"', '"time": "YYYY-MM-DDTHH:MM:SS+00:00"')


class Snapshot:
    """Compares (or, updating, writes) the snapshots of one test."""

    def __init__(self, test_name: str, tmp_path: Path, update: bool):
        self.base = re.sub(r"[^A-Za-z0-9_.-]+", "-", test_name).strip("-")
        self.tmp_path = tmp_path
        self.update = update
        self.used: set[str] = set()

    def normalized(self, text: str, volatile: Iterable[Volatile] = ()) -> str:
        # The real path first (a symlinked /tmp prints either way), the longest first.
        for path in sorted({str(self.tmp_path.resolve()), str(self.tmp_path)}, key=len, reverse=True):
            text = text.replace(path, "<TMP>")
        for pattern, placeholder in volatile:
            text = re.sub(pattern, placeholder, text)
        return text

    def __call__(self, text: str, label: str = "", *, json: bool = False, volatile: Iterable[Volatile] = ()) -> None:
        name = f"{self.base}.{label}" if label else self.base
        name += ".json" if json else ".txt"
        assert name not in self.used, f"two snapshots named {name}: give each a label"
        self.used.add(name)
        actual = self.normalized(text, volatile)
        path = SNAPSHOT_DIR / name
        if self.update:
            SNAPSHOT_DIR.mkdir(exist_ok=True)
            if not path.exists() or path.read_text(encoding="utf-8") != actual:
                path.write_text(actual, encoding="utf-8")
            return
        assert path.exists(), (
            f"no snapshot {path.relative_to(SNAPSHOT_DIR.parent.parent)}: "
            "write it with 'pytest --snapshot-update' (or SERIES_SNAPSHOT_UPDATE=1)"
        )
        expected = path.read_text(encoding="utf-8")
        if actual != expected:
            diff = "".join(
                difflib.unified_diff(
                    expected.splitlines(keepends=True),
                    actual.splitlines(keepends=True),
                    f"tests/snapshots/{name} (expected)",
                    "actual output",
                )
            )
            raise AssertionError(
                f"output differs from its snapshot {name} "
                f"(if the change is meant, rerun with --snapshot-update):\n{diff}"
            )

    def run(
        self, proc: subprocess.CompletedProcess[str], label: str = "", *, volatile: Iterable[Volatile] = ()
    ) -> None:
        """A command's text output: stdout, then its stderr under a '--- stderr' line when it
        wrote any (a halt's hint, a warning), then '--- exit N' when N is not 0."""
        text = proc.stdout
        if proc.stderr:
            text += "--- stderr\n" + proc.stderr
        if proc.returncode:
            text += f"--- exit {proc.returncode}\n"
        self(text, label, volatile=volatile)
