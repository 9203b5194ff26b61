"""Reading persisted JSON back: the state of a halted operation, a verb's payload in it,
the journal. Files under .git/series are ours, but a user (or a crash, or a disk) can
change them; every field is checked for its type where it is read, and a wrong one is a
ValueError naming the field, which the reader turns into a one-line error naming the file.
"""

from __future__ import annotations

import enum
from typing import Mapping, TypeVar, Union

Json = Union[None, bool, int, float, str, list["Json"], dict[str, "Json"]]
JsonObject = Mapping[str, Json]

E = TypeVar("E", bound=enum.Enum)


def read_object(value: Json | JsonObject, what: str) -> JsonObject:
    if not isinstance(value, dict):
        raise ValueError(f"'{what}' is not an object")
    return value


def read_str(d: JsonObject, key: str) -> str:
    value = d.get(key)
    if not isinstance(value, str):
        raise ValueError(f"'{key}' is not a string")
    return value


def read_opt_str(d: JsonObject, key: str) -> str | None:
    value = d.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"'{key}' is not a string")
    return value


def read_int(d: JsonObject, key: str) -> int:
    value = d.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"'{key}' is not a number")
    return value


def read_opt_int(d: JsonObject, key: str) -> int | None:
    value = d.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise ValueError(f"'{key}' is not a number")
    return value


def read_bool(d: JsonObject, key: str) -> bool:
    value = d.get(key)
    if not isinstance(value, bool):
        raise ValueError(f"'{key}' is not true/false")
    return value


def read_list(d: JsonObject, key: str, default: list[Json] | None = None) -> list[Json]:
    """A list field; `default` when an older series did not write it."""
    value = d.get(key, default)
    if not isinstance(value, list):
        raise ValueError(f"'{key}' is not a list")
    return value


def read_strs(d: JsonObject, key: str) -> list[str]:
    value = d.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"'{key}' is not a list of strings")
    return [str(v) for v in value]


def read_str_map(d: JsonObject, key: str) -> dict[str, str]:
    value = d.get(key)
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError(f"'{key}' is not a map of strings")
    return {k: str(v) for k, v in value.items()}


def read_pairs(d: JsonObject, key: str) -> list[tuple[str, str]]:
    value = d.get(key)
    if not isinstance(value, list) or not all(
        isinstance(v, list) and len(v) == 2 and all(isinstance(x, str) for x in v) for v in value
    ):
        raise ValueError(f"'{key}' is not a list of pairs of strings")
    return [(str(v[0]), str(v[1])) for v in value if isinstance(v, list)]


def read_enum(kind: type[E], d: JsonObject, key: str) -> E:
    value = d.get(key)
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"'{key}' is {value!r}, not one of {', '.join(str(m.value) for m in kind)}") from None
