"""What `series test --run` can execute of an upstream CI step's command: `pytest ...`
(with VAR=value before it) and `export VAR=...`, read without a shell; anything else is
left to upstream's CI. Used by the evidence run (series.verbs.test.evidence)."""

from __future__ import annotations

import re
import shlex

from series.evidence import testmap

_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELL_OPS = ("&&", "||", ";", "|", "`", "$(", ">", "<")


def parse_command(command: str) -> tuple[str, dict[str, str], list[str]] | None:
    """('export'|'pytest', env, args) for what --run can execute; None for anything else."""
    text = testmap.unescape(command).strip()
    if any(op in text for op in _SHELL_OPS):
        return None
    try:
        words = shlex.split(text)
    except ValueError:
        return None
    env: dict[str, str] = {}
    if words[:1] == ["export"]:
        pairs = [w.split("=", 1) for w in words[1:] if _ASSIGN.match(w)]
        return ("export", {k: v for k, v in pairs}, []) if pairs else None
    while words and _ASSIGN.match(words[0]):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    if words[:1] == ["pytest"]:
        return "pytest", env, words[1:]
    if words[:3] in (["python", "-m", "pytest"], ["python3", "-m", "pytest"]):
        return "pytest", env, words[3:]
    return None


_SHARD_OPTIONS = ("--shard-id", "--num-shards")


def local_args(args: list[str], env: dict[str, str]) -> list[str]:
    """Upstream's pytest arguments as one local process runs them: a sharded step
    (`--shard-id=$$BUILDKITE_PARALLEL_JOB`) runs whole, and $VARS expand from env."""
    out: list[str] = []
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        if arg in _SHARD_OPTIONS:
            skip_next = True
            continue
        if arg.startswith(tuple(f"{o}=" for o in _SHARD_OPTIONS)):
            continue
        out.append(_expand(arg, env))
    return out


def _expand(arg: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: env.get(m.group(1), m.group(0)), arg)
