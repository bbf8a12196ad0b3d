"""Typed access to TOML tables with errors that name the file and the field."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal, overload

from concur.errors import SpecError, closest

# Keys that describe a spec without changing what it computes; they stay out of its hash,
# so fixing a description never invalidates prepared data or finished jobs.
DESCRIPTIVE_KEYS = frozenset({"name", "description", "citation", "notes", "hparams_source"})

_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false", dict: "a table", list: "a list"}


class Table:
    """A TOML table read with type checks; `path` and `prefix` locate errors."""

    def __init__(self, data: dict[str, Any], path: Path, prefix: str = "") -> None:
        self.data, self.path, self.prefix = data, path, prefix

    def field_name(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def error(self, key: str | None, problem: str) -> SpecError:
        return SpecError(self.path, self.field_name(key) if key else (self.prefix.rstrip(".") or None), problem)

    def get(self, key: str, kind: type, default: Any = None, *, required: bool = False) -> Any:
        if key not in self.data:
            if required:
                raise self.error(key, "is required")
            return default
        value = self.data[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.error(key, f"must be {_TYPE_NAMES.get(kind, kind.__name__)}, got {value!r}")
        return value

    @overload
    def table(self, key: str, *, required: Literal[True]) -> Table: ...
    @overload
    def table(self, key: str, *, required: bool = False) -> Table | None: ...
    def table(self, key: str, *, required: bool = False) -> Table | None:
        value = self.get(key, dict, required=required)
        return None if value is None else Table(value, self.path, f"{self.prefix}{key}.")

    def choice(self, key: str, choices: tuple[str, ...], default: str | None = None) -> str:
        value: str = self.get(key, str, default, required=default is None)
        if value not in choices:
            hint = closest(value, choices)
            raise self.error(key, f"{value!r} is not one of {', '.join(choices)}" + (f" (did you mean {hint!r}?)" if hint else ""))
        return value

    def reject_unknown(self, allowed: set[str] | frozenset[str]) -> None:
        for key in self.data:
            if key not in allowed:
                hint = closest(key, allowed)
                raise self.error(
                    key, "is not a known field" + (f"; did you mean {hint!r}?" if hint else f"; known: {', '.join(sorted(allowed))}")
                )


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`base` updated by `override`, merging nested tables key by key."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def content_hash(data: dict[str, Any]) -> str:
    """SHA-256 of a spec's content, ignoring descriptive keys at the top level."""
    content = {key: value for key, value in data.items() if key not in DESCRIPTIVE_KEYS}
    return hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
