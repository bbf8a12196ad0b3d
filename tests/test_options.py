"""One way to read a component's options: hyperparameters and recipe fields checked against the dataclass that declares them."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Literal

import pytest

from concur.errors import SpecError
from concur.registry.options import build_options, describe, options_problem, read_options
from concur.registry.tables import Table


class Colour(StrEnum):
    red = "red"
    blue = "blue"


@dataclass(frozen=True)
class Window:
    length: int
    stride: int
    rate: float = 0.5
    colour: Colour = Colour.red
    order: Literal["family", "cluster"] = "family"
    sizes: dict[str, int] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    limit: int | None = None

    def problem(self) -> tuple[str, str] | None:
        return ("stride", f"must be at most length ({self.length})") if self.stride > self.length else None


FIELDS = ("length", "stride", "rate", "colour", "order", "sizes", "tags", "limit")


def test_values_are_converted_to_the_declared_types():
    window = build_options(Window, {"length": 8, "stride": 4, "rate": 1, "colour": "blue", "sizes": {"a": 3}, "limit": 2})
    assert window == Window(8, 4, 1.0, Colour.blue, "family", {"a": 3}, [], 2)
    assert isinstance(window.rate, float) and window.colour is Colour.blue


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ({"length": 8, "stride": 4, "strid": 2}, ("strid", "is not a known field; did you mean 'stride'?")),
        ({"length": 8, "stride": 4, "zzz": 2}, ("zzz", f"is not a known field; known: {', '.join(FIELDS)}")),
        ({"length": 8, "stride": "4"}, ("stride", "must be an integer, got '4'")),
        ({"length": 8, "stride": True}, ("stride", "must be an integer, got True")),  # TOML's true is not 1
        ({"length": 8, "stride": 4, "rate": "high"}, ("rate", "must be a number, got 'high'")),
        ({"length": 8, "stride": 4, "colour": "green"}, ("colour", "must be one of red, blue, got 'green'")),
        ({"length": 8, "stride": 4, "order": "alpha"}, ("order", "must be one of 'family', 'cluster', got 'alpha'")),
        ({"length": 8, "stride": 4, "sizes": {"a": 1.5}}, ("sizes", "must be a table of integers, got {'a': 1.5}")),
        ({"length": 8, "stride": 4, "tags": ["x", 1]}, ("tags", "must be a list of strings, got ['x', 1]")),
        ({"length": 8, "stride": 4, "limit": "none"}, ("limit", "must be an integer or nothing, got 'none'")),
        ({"length": 8}, ("stride", "is required")),
        ({}, (None, "missing length, stride")),
        ({"length": 8, "stride": 9}, ("stride", "must be at most length (8), got 9")),
    ],
)
def test_every_mistake_names_its_field_and_what_was_expected(values, problem):
    assert options_problem(Window, values) == problem


def test_the_unknown_key_message_says_what_the_table_holds():
    assert options_problem(Window, {"lenght": 8, "stride": 4}, "a hyperparameter of 'window'") == (
        "lenght",
        "is not a hyperparameter of 'window'; did you mean 'length'?",
    )


def test_a_table_is_read_or_its_file_and_field_are_named(tmp_path):
    path = tmp_path / "spec.toml"
    assert read_options(Window, Table({"length": 8, "stride": 8}, path)) == Window(8, 8)
    with pytest.raises(SpecError) as error:
        read_options(Window, Table({"length": 8, "stride": 4.5}, path, "options."))
    assert str(error.value) == f"{path}, field 'options.stride': must be an integer, got 4.5"


@pytest.mark.parametrize(
    ("hint", "words"),
    [(float, "a number"), (list[int], "a list of integers"), (list[Colour], "a list, each one of red, blue"), (Path, "Path")],
)
def test_types_are_described_in_words(hint, words):
    assert describe(hint) == words
