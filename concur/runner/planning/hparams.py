"""Hyperparameter settings of an approach: setting 0 is its published SQuAD setting, 1..N-1 random samples.

The reference study trains every approach with its SQuAD hyperparameters and five random
settings drawn from a declared space. A sample is drawn from a generator seeded by the
study's seed, the approach's id and the setting's number, so the same study always samples
the same settings, an approach's settings do not change when others join the grid, and
setting k is the same whether N is 3 or 6.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from concur.errors import ConcurError
from concur.registry.specs import ApproachSpec

PUBLISHED = 0  # the setting id of the approach's own (SQuAD) hyperparameters


@dataclass(frozen=True)
class HparamSetting:
    id: int
    values: dict[str, Any]


def hparam_settings(spec: ApproachSpec, count: int, study_seed: int) -> list[HparamSetting]:
    """Settings 0..count-1 of `spec`: the published one, then samples from its `[space]`."""
    if count < 1:
        raise ValueError(f"the number of hyperparameter settings must be at least 1, got {count}")
    if count > 1 and not spec.space:
        raise ConcurError(f"approach {spec.id!r} declares no [space] to draw settings from ({spec.file}); run it with --hparams 1")
    settings = [HparamSetting(PUBLISHED, dict(spec.hparams))]
    for setting_id in range(1, count):
        rng = np.random.default_rng([study_seed, _stable_number(spec.id), setting_id])
        sampled = {name: _draw(rng, entry) for name, entry in sorted(spec.space.items())}
        settings.append(HparamSetting(setting_id, {**spec.hparams, **sampled}))
    return settings


def _draw(rng: np.random.Generator, entry: dict[str, Any]) -> Any:
    (kind, values), *_ = entry.items()  # the registry checked: exactly one kind per entry
    if kind == "choice":
        return values[int(rng.integers(len(values)))]
    low, high = values
    if kind == "int_uniform":
        return int(rng.integers(low, high + 1))
    if kind == "log_uniform":
        return float(math.exp(rng.uniform(math.log(low), math.log(high))))
    return float(rng.uniform(low, high))  # uniform


def _stable_number(text: str) -> int:
    """A number from `text` that, unlike hash(), is the same in every process."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
