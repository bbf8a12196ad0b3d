"""The implementations an approach spec can name in `implementation = "..."`.

Each entry points at a dataclass listing the hyperparameters the implementation accepts
(imported to validate specs, so it must not import torch) and at the approach class
(imported only when a job runs).
"""

from __future__ import annotations

import dataclasses
import importlib
import types
import typing
from dataclasses import dataclass
from typing import Any

from concur.errors import UnknownNameError, closest


@dataclass(frozen=True)
class Implementation:
    hparams: str  # a dataclass with a `problem() -> (field, why) | None` value check
    approach: str
    batch_field: str = "batch_size"  # the hyperparameter holding examples per optimiser step


IMPLEMENTATIONS: dict[str, Implementation] = {
    "hf-span": Implementation(
        hparams="concur.approaches.hf_span.hparams:HFSpanHParams",
        approach="concur.approaches.hf_span.approach:HFSpanApproach",
        batch_field="train_batch_size",
    ),
    "bidaf": Implementation(
        hparams="concur.approaches.reader.hparams.bidaf:BidafHParams",
        approach="concur.approaches.reader.models.bidaf:BidafApproach",
    ),
    "rasor": Implementation(
        hparams="concur.approaches.reader.hparams.rasor:RasorHParams",
        approach="concur.approaches.reader.models.rasor:RasorApproach",
    ),
    "docreader": Implementation(
        hparams="concur.approaches.reader.hparams.docreader:DocReaderHParams",
        approach="concur.approaches.reader.models.docreader:DocReaderApproach",
    ),
    "bidaf-pp": Implementation(
        hparams="concur.approaches.reader.hparams.bidaf_pp:BidafPPHParams",
        approach="concur.approaches.reader.models.bidaf_pp:BidafPPApproach",
    ),
    "mnemonic-reader": Implementation(
        hparams="concur.approaches.reader.hparams.mnemonic_reader:MnemonicReaderHParams",
        approach="concur.approaches.reader.models.mnemonic_reader:MnemonicReaderApproach",
    ),
    "qanet": Implementation(
        hparams="concur.approaches.reader.hparams.qanet:QANetHParams",
        approach="concur.approaches.reader.models.qanet:QANetApproach",
    ),
    "fusionnet": Implementation(
        hparams="concur.approaches.reader.hparams.fusionnet:FusionNetHParams",
        approach="concur.approaches.reader.models.fusionnet:FusionNetApproach",
    ),
}


def batch_size(implementation: str, hparams: dict[str, Any]) -> int:
    """Examples per optimiser step of a job: what a per-device cap divides into accumulation steps."""
    return int(hparams[IMPLEMENTATIONS[implementation].batch_field])


def _load(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def hparams_class(implementation: str) -> type:
    if implementation not in IMPLEMENTATIONS:
        raise UnknownNameError("implementation", implementation, IMPLEMENTATIONS)
    return _load(IMPLEMENTATIONS[implementation].hparams)


def approach_class(implementation: str) -> type:
    if implementation not in IMPLEMENTATIONS:
        raise UnknownNameError("implementation", implementation, IMPLEMENTATIONS)
    return _load(IMPLEMENTATIONS[implementation].approach)


def validate_hparams(implementation: str, hparams: dict[str, Any]) -> tuple[str | None, str] | None:
    """`(field, problem)` for the first invalid hyperparameter, or None when all are valid."""
    cls = hparams_class(implementation)
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
    cls = hparams_class(implementation)
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
