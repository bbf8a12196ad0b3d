"""An approach's hyperparameters, checked against the dataclass its implementation declares.

Every hyperparameter an implementation takes is a field of its `ApproachKind.hparams`
dataclass, and a spec states them all: a key the dataclass lacks is an error naming the
closest field, a value of the wrong type names the type, and the dataclass's own `problem()`
checks values (e.g. a window shorter than its stride). Specs are checked when loaded, and
every sampled hyperparameter setting before a job is written.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from concur.components import resolve
from concur.errors import closest


def hparams_problem(implementation: str, hparams: dict[str, Any]) -> tuple[str | None, str] | None:
    """`(field, problem)` for the first invalid hyperparameter, or None when all are valid."""
    cls = resolve("approach", implementation).hparams
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    for key, value in hparams.items():
        if key not in fields:
            hint = closest(key, fields)
            return key, f"is not a hyperparameter of {implementation!r}" + (f"; did you mean {hint!r}?" if hint else "")
        if not _matches(value, hints[key]):
            return key, f"must be {_describe(hints[key])}, got {value!r}"
    required = [
        name
        for name, f in fields.items()
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and name not in hparams
    ]
    if required:
        return None, f"missing {', '.join(required)} (every hyperparameter of {implementation!r} is declared in the spec)"
    problem = build_hparams(implementation, hparams).problem()
    if problem is not None:
        name, message = problem
        return name, f"= {hparams[name]!r} {message}"
    return None


def build_hparams(implementation: str, hparams: dict[str, Any]) -> Any:
    """The implementation's hyperparameter dataclass, filled from a validated table."""
    cls = resolve("approach", implementation).hparams
    hints = typing.get_type_hints(cls)
    return cls(**{key: float(value) if hints[key] is float else value for key, value in hparams.items()})


def _matches(value: Any, hint: Any) -> bool:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return any(_matches(value, option) for option in typing.get_args(hint))
    if typing.get_origin(hint) is typing.Literal:
        return value in typing.get_args(hint)
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _describe(hint: Any) -> str:
    if typing.get_origin(hint) is typing.Literal:
        return "one of " + ", ".join(repr(option) for option in typing.get_args(hint))
    return getattr(hint, "__name__", str(hint))
