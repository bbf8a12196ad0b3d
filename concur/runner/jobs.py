"""A job is one (approach, benchmark, hyperparameter setting, seed) train-and-test run.

Its key is a content hash (DESIGN.md, "Job key"): the approach's resolved spec (id,
implementation, model, hyperparameters), the benchmark's id and data hash, the seed and
`concur.RESULT_VERSION`. Same key, same job: a finished key is never run twice, and any
change to what the job computes gives a new key. Descriptive spec fields (names,
citations) are not part of it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from concur import RESULT_VERSION
from concur.data.prepare import PreparedBenchmark
from concur.registry.specs import ApproachSpec
from concur.runner.hparams import PUBLISHED, HparamSetting

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

    @property
    def key(self) -> str:
        content = {
            "approach": {"id": self.approach, "implementation": self.implementation, "model": self.model, "hparams": self.hparams},
            "benchmark": {"id": self.benchmark, "data_hash": self.data_hash},
            "seed": self.seed,
            "result_version": RESULT_VERSION,
        }
        encoded = json.dumps(content, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(encoded).hexdigest()[:KEY_LENGTH]

    def describe(self) -> str:
        return f"{self.approach} on {self.benchmark} (hparams {self.hparam_id}, seed {self.seed})"

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
        }


def make_job(spec: ApproachSpec, bench: PreparedBenchmark, *, seed: int, setting: HparamSetting | None = None) -> Job:
    """The job of `spec` with a hyperparameter setting (default: its published one, setting 0) on a prepared benchmark."""
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
    )
