"""A job is one (approach, benchmark, hyperparameter setting, seed) train-and-test run.

Its key is a content hash (docs/running.md, "Jobs, keys and job directories"): the approach's resolved spec (id,
implementation, model, hyperparameters), the benchmark's id and data hash, the seed and
`concur.RESULT_VERSION`, and, only when a study's budget cuts the benchmark's splits, the
subset taken (its size and seed; `concur.runner.planning.budget`), and only when a study asks for a
precision other than `auto`, that precision (`concur.approaches.precision`). Same key, same
job: a finished key is never run twice, and any change to what the job computes gives a new
key. Descriptive spec fields (names, citations) are not part of it, and a job without a subset
or precision has the key it had before either existed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from concur import RESULT_VERSION
from concur.approaches.precision import AUTO
from concur.data.prepare import PreparedBenchmark
from concur.registry.specs import ApproachSpec
from concur.runner.planning.budget import Budget
from concur.runner.planning.hparams import PUBLISHED, HparamSetting

KEY_LENGTH = 16  # hex digits: 64 bits, collision-free for any study's number of jobs


@dataclass(frozen=True)
class Job:
    approach: str
    benchmark: str
    hparam_id: int
    seed: int
    hparams: dict[str, Any]
    implementation: str
    model: dict[str, Any]
    data_hash: str
    subset: dict[str, dict[str, int]] = field(default_factory=dict)  # split -> {"questions", "seed"}; empty: whole splits
    precision: str = AUTO  # concur.approaches.precision; "auto": bf16 autocast on CUDA, fp32 on the CPU

    @classmethod
    def from_definition(cls, definition: Mapping[str, Any]) -> Job:
        """The job a `job.json` or request defines (one written before budgets existed has no subset)."""
        return cls(**{f.name: definition[f.name] for f in fields(cls) if f.name in definition})

    @property
    def key(self) -> str:
        content: dict[str, Any] = {
            "approach": {"id": self.approach, "implementation": self.implementation, "model": self.model, "hparams": self.hparams},
            "benchmark": {"id": self.benchmark, "data_hash": self.data_hash},
            "seed": self.seed,
            "result_version": RESULT_VERSION,
        }
        if self.subset:
            content["subset"] = self.subset
        if self.precision != AUTO:
            content["precision"] = self.precision
        encoded = json.dumps(content, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(encoded).hexdigest()[:KEY_LENGTH]

    def describe(self) -> str:
        cut = ", ".join(f"{cut['questions']:,} {split} questions" for split, cut in self.subset.items())
        extra = "".join(f", {part}" for part in (cut, "" if self.precision == AUTO else self.precision) if part)
        return f"{self.approach} on {self.benchmark} (hparams {self.hparam_id}, seed {self.seed}{extra})"

    def definition(self) -> dict[str, Any]:
        """What `job.json` records: everything needed to understand and rerun the job."""
        return {
            "key": self.key,
            "approach": self.approach,
            "benchmark": self.benchmark,
            "hparam_id": self.hparam_id,
            "seed": self.seed,
            "hparams": self.hparams,
            "implementation": self.implementation,
            "model": self.model,
            "data_hash": self.data_hash,
            "result_version": RESULT_VERSION,
            **({"subset": self.subset} if self.subset else {}),
            **({"precision": self.precision} if self.precision != AUTO else {}),
        }


def make_job(
    spec: ApproachSpec,
    bench: PreparedBenchmark,
    *,
    seed: int,
    setting: HparamSetting | None = None,
    budget: Budget | None = None,
    precision: str = AUTO,
) -> Job:
    """The job of `spec` with a hyperparameter setting (default: its published one, setting 0) on a prepared
    benchmark, on the subset of its splits that `budget` takes (default: the whole splits), under `precision`."""
    setting = setting or HparamSetting(PUBLISHED, dict(spec.hparams))
    return Job(
        approach=spec.id,
        benchmark=bench.manifest["benchmark"],
        hparam_id=setting.id,
        seed=seed,
        hparams=dict(setting.values),
        implementation=spec.implementation,
        model=dict(spec.model),
        data_hash=bench.data_hash,
        subset=budget.for_bench(bench.manifest["benchmark"]).subset(bench.manifest) if budget else {},
        precision=precision,
    )
