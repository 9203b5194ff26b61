"""The interpreter `series test --run --python PY` names, asked what it has installed.

A probe script runs in PY (isolated: -I) and prints one JSON line with a marker key;
anything else at that path (/bin/true, /bin/echo, a script printing other JSON, a
directory) is refused as not a Python interpreter, one line, exit 1. The answer is read
with every field checked (series.persisted).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from series import persisted
from series.errors import SeriesError

_PROBE = r"""
import hashlib, importlib.metadata as md, importlib.util as u, json, os, sys
out = {"series_probe": MARKER, "python": sys.version.split()[0], "executable": sys.executable}
spec = u.find_spec(PACKAGE)
out["location"] = list(spec.submodule_search_locations or []) if spec else []
try:
    dist = md.distribution(PACKAGE)
    out["version"] = dist.version
    record = dist.read_text("RECORD") or ""
    out["record"] = hashlib.sha256(record.encode()).hexdigest()
except md.PackageNotFoundError:
    out["version"] = None
out["pytest"] = md.version("pytest") if u.find_spec("pytest") else None
print(json.dumps(out))
"""


@dataclass(frozen=True)
class Environment:
    python: str
    version: str  # the installed package's version, e.g. 0.31.0 or 0.31.0+series.g1a2b3c4
    package_dir: Path  # the installed package, e.g. .../site-packages/vllm
    pytest: str
    build_key: str  # what the cached results of this build are keyed by

    @property
    def public_version(self) -> str:
        return self.version.partition("+")[0]


def probe(python: str, package: str = "vllm", need_pytest: bool = True) -> Environment:
    """What PY has installed; SeriesError when it has no package (or no pytest, when
    `need_pytest`: a workload run needs none)."""
    exe = resolved(python)  # pytest runs in the scratch layout, not here
    try:
        found = _probed(_ask(python, exe, _PROBE.replace("PACKAGE", repr(package))))
    except ValueError as exc:
        raise SeriesError(f"--python {python} is not a Python interpreter: {exc}") from None
    if not found.version or not found.location:
        raise SeriesError(
            f"--python {python} has no {package} installed",
            f"install the base release there (pip install {package}==VERSION) or name another interpreter",
        )
    if need_pytest and not found.pytest:
        raise SeriesError(
            f"--python {python} has no pytest",
            f"`{exe} -m pip install pytest` (upstream's tests/conftest.py also needs "
            "pytest-asyncio and friends; see the README)",
        )
    key = hashlib.sha256(f"{found.executable}\0{found.version}\0{found.record}".encode())
    return Environment(exe, found.version, Path(found.location[0]), found.pytest or "", key.hexdigest()[:20])


def resolved(python: str) -> str:
    """PY as it is run: found on PATH, made absolute (a workload runs elsewhere)."""
    exe = shutil.which(python) or python
    return os.path.abspath(exe) if os.sep in exe else exe


def _ask(python: str, exe: str, script: str) -> str:
    """Run a probe script in PY (isolated: -I); its stdout. SeriesError when PY cannot run it."""
    not_python = f"--python {python} is not a Python interpreter"
    try:
        proc = subprocess.run(
            [exe, "-I", "-c", script.replace("MARKER", repr(_MARKER))],
            capture_output=True,
            text=True,
            timeout=120,
            errors="replace",
        )
    except subprocess.TimeoutExpired:
        raise SeriesError(f"{not_python}: it did not answer in 120 seconds") from None
    except OSError as exc:
        raise SeriesError(f"{not_python}: cannot run it ({exc.strerror or exc})") from None
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or [""])[-1]
        raise SeriesError(f"--python {python}: it failed to start (exit {proc.returncode}: {tail})")
    return proc.stdout


_MARKER = "vllm-series probe 1"


@dataclass(frozen=True)
class _Answer:
    version: str | None
    location: list[str]
    pytest: str | None
    executable: str
    record: str | None


def _probed(stdout: str) -> _Answer:
    """The probe's answer, or a ValueError saying what is wrong with it: anything can sit
    at a --python path (/bin/true, /bin/echo, a script printing other JSON)."""
    lines = stdout.strip().splitlines()
    if not lines:
        raise ValueError("it printed nothing when asked to run a Python script")
    try:
        data = persisted.read_object(json.loads(lines[-1]), "answer")
    except ValueError:
        raise ValueError(f"it answered {lines[-1][:60]!r} when asked to run a Python script") from None
    if data.get("series_probe") != _MARKER:
        raise ValueError(f"it answered {lines[-1][:60]!r}, not the probe's JSON")
    try:
        return _Answer(
            persisted.read_opt_str(data, "version"),
            persisted.read_strs(data, "location"),
            persisted.read_opt_str(data, "pytest"),
            persisted.read_str(data, "executable"),
            persisted.read_opt_str(data, "record"),
        )
    except ValueError as exc:
        raise ValueError(f"its answer is not the probe's ({exc})") from None


# What a measurement reports of the machine it ran on. torch is imported (a few seconds) for
# the accelerator's name only where a device node of one exists; nothing here needs the network.
_MACHINE = r"""
import importlib.metadata as md, json, os, platform, sys
def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None
out = {"series_probe": MARKER, "vllm": version("vllm"), "torch": version("torch"), "device": None,
       "python": sys.version.split()[0], "platform": platform.platform()}
cpu = None
try:
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), None)
except OSError:
    pass
count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
out["cpu"] = f"{cpu or platform.processor() or platform.machine()} ({count} CPUs)"
# torch takes seconds to import: only where an accelerator's device node says it may see one
accelerator = any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/kfd", "/dev/dxg")) or sys.platform == "darwin"
if out["torch"] and accelerator:
    try:
        import torch
        if torch.cuda.is_available():
            n = torch.cuda.device_count()
            out["device"] = torch.cuda.get_device_name(0) + (f" x{n}" if n > 1 else "")
        elif getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            out["device"] = "mps"
    except Exception as exc:
        out["device_error"] = str(exc)[:200]
print(json.dumps(out))
"""


def machine(python: str) -> persisted.Json:
    """PY's answer to the machine probe (vllm, torch, device, cpu, python, platform), not
    yet checked: series.measure.measurement.machine_from_json reads it."""
    stdout = _ask(python, resolved(python), _MACHINE)
    lines = stdout.strip().splitlines()
    try:
        data = json.loads(lines[-1]) if lines else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("series_probe") != _MARKER:
        raise SeriesError(
            f"--python {python} is not a Python interpreter: it answered "
            f"{(lines or [''])[-1][:60]!r}, not the probe's JSON"
        )
    return data
