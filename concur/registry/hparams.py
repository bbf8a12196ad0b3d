"""An approach's hyperparameters, checked against the dataclass its implementation declares.

Every hyperparameter an implementation takes is a field of its `ApproachKind.hparams`
dataclass, and a spec states them all; `concur.registry.options` checks a table against it
(unknown keys with the closest field, types, values through the dataclass's `problem()`).
Specs are checked when loaded, and every sampled hyperparameter setting before a job is written.
"""

from __future__ import annotations

from typing import Any

from concur.components import resolve
from concur.registry.options import build_options, options_problem


def hparams_problem(implementation: str, hparams: dict[str, Any]) -> tuple[str | None, str] | None:
    """`(field, problem)` for the first invalid hyperparameter, or None when all are valid."""
    return options_problem(resolve("approach", implementation).hparams, hparams, f"a hyperparameter of {implementation!r}")


def build_hparams(implementation: str, hparams: dict[str, Any]) -> Any:
    """The implementation's hyperparameter dataclass, filled from a validated table."""
    return build_options(resolve("approach", implementation).hparams, hparams)
