"""A component's options: a dataclass it declares, filled from a table of a spec or recipe and checked one way.

Each component a file names states what that file may set as a frozen dataclass: an approach
implementation its hyperparameters (`ApproachKind.hparams`), a figure kind the fields of its
recipes (`FigureKind.options`). Every such table is checked here, so every file reports the
same mistakes the same way: a key the dataclass lacks names the closest field (or all of them),
a value of the wrong type names the type, a required field left out is named, and the
dataclass's own `problem()` judges values a type cannot (a window shorter than its stride).
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from typing import Any

from concur.components import names, resolve
from concur.errors import ConcurError, closest
from concur.registry.tables import Table

_NOUNS = {str: "a string", int: "an integer", float: "a number", bool: "true or false", dict: "a table", list: "a list"}
_PLURALS = {str: "strings", int: "integers", float: "numbers", bool: "true/false values"}


def options_problem(cls: type, values: Mapping[str, Any], member: str = "a known field") -> tuple[str | None, str] | None:
    """`(field, problem)` for the first value of `values` that `cls` cannot take, or None when it takes them all.

    `member` completes "is not ..." for an unknown key (e.g. "a hyperparameter of 'rasor'").
    """
    fields = {item.name: item for item in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    for key, value in values.items():
        if key not in fields:
            hint = closest(key, fields)
            return key, f"is not {member}" + (f"; did you mean {hint!r}?" if hint else f"; known: {', '.join(fields)}")
        if not _matches(value, hints[key]):
            return key, f"must be {describe(hints[key])}, got {value!r}"
    missing = [name for name, item in fields.items() if name not in values and _required(item)]
    if missing:
        return (missing[0], "is required") if len(missing) == 1 else (None, f"missing {', '.join(missing)}")
    try:
        options = build_options(cls, values)
    except ConcurError as error:  # a dataclass that checks its values as it is built
        return None, str(error)
    problem = options.problem() if hasattr(options, "problem") else None
    if problem is not None:
        name, message = problem
        return name, f"{message}, got {getattr(options, name)!r}"
    return None


def build_options(cls: type, values: Mapping[str, Any]) -> Any:
    """`cls` filled from checked `values`: integers where a number is declared become floats, names of an enum its members."""
    hints = typing.get_type_hints(cls)
    return cls(**{key: _convert(value, hints[key]) for key, value in values.items()})


def read_options(cls: type, table: Table, member: str = "a known field") -> Any:
    """`cls` filled from `table`, or a SpecError naming the table's file and the field at fault."""
    problem = options_problem(cls, table.data, member)
    if problem is not None:
        key, message = problem
        raise table.error(key, message)
    return build_options(cls, table.data)


def component(table: Table, key: str, kind: str) -> str:
    """The component name at `key` of `table`, resolved now, so a typo or a broken plugin names the file and field."""
    name: str = table.get(key, str, required=True)
    if ":" not in name:  # a short name: one of the built-ins or the installed plugins'
        table.choice(key, tuple(names(kind)))
    try:
        resolve(kind, name)
    except ConcurError as exc:
        raise table.error(key, str(exc)) from None
    return name


def describe(hint: Any) -> str:
    """What a value of type `hint` is, in words: "a number", "one of 'family', 'cluster'", "a list of integers"."""
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(option) for option in arguments)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "one of " + ", ".join(str(member.value) for member in hint)
    if _is_union(hint):
        return " or ".join("nothing" if option is type(None) else describe(option) for option in arguments)
    if origin is list:
        (item,) = arguments
        return f"a list of {_PLURALS[item]}" if item in _PLURALS else f"a list, each {describe(item)}"
    if origin is dict:
        return f"a table of {_PLURALS.get(arguments[1], describe(arguments[1]))}"
    return _NOUNS.get(hint, getattr(hint, "__name__", str(hint)))


def _required(item: dataclasses.Field[Any]) -> bool:
    return item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING


def _is_union(hint: Any) -> bool:
    return isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union


def _matches(value: Any, hint: Any) -> bool:
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if _is_union(hint):
        return any(_matches(value, option) for option in arguments)
    if origin is typing.Literal:
        return value in arguments
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return value in {member.value for member in hint}
    if origin is list:
        return isinstance(value, list) and all(_matches(item, arguments[0]) for item in value)
    if origin is dict:
        return isinstance(value, dict) and all(isinstance(key, str) and _matches(item, arguments[1]) for key, item in value.items())
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _convert(value: Any, hint: Any) -> Any:
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if _is_union(hint):
        matching = [option for option in arguments if _matches(value, option)]
        return _convert(value, matching[0]) if matching else value
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if origin is list:
        return [_convert(item, arguments[0]) for item in value]
    if origin is dict:
        return {key: _convert(item, arguments[1]) for key, item in value.items()}
    if hint is float:
        return float(value)
    return value
