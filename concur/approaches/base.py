"""The approach interface every implementation follows, and how jobs build one.

An approach is constructed from its spec and resolved hyperparameters, trained on a train
split, and asked for `{qid: answer_text}` on a test split. The runner owns everything else:
data, scoring, files, the store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from concur.components import resolve
from concur.registry.hparams import build_hparams
from concur.registry.specs import ApproachSpec


@dataclass
class RunContext:
    """What a job gives an approach besides data: where and how to run, and a log."""

    device: str  # "cpu" or "cuda[:N]", as resolved by concur.devices
    seed: int
    log: Callable[[str], None]  # one line to the job's log file (and the console)
    per_device_batch_size: int | None = None  # cap on examples per forward pass (memory only)
    model_path: Path | None = None  # local weights that replace the spec's model location
    cache_dir: Path | None = None  # the workspace's cache, shared by jobs (e.g. token annotations)
    precision: str = "auto"  # concur.approaches.precision: "auto" (bf16 on CUDA, fp32 on CPU), "fp32" or "bf16"
    cuda_graphs: bool = False  # hf-span on CUDA: training pieces replayed as CUDA graphs (concur.approaches.hf_span.graphs)


@dataclass
class TrainReport:
    """What training did, recorded in the job's result."""

    optimizer_steps: int
    train_features: int  # model inputs seen per epoch (e.g. windows of long passages)
    train_questions: int  # questions with a trainable answer span
    skipped_questions: int  # questions without one (counted, never silently lost)
    seconds: float
    losses: list[float] = field(default_factory=list)  # mean loss per logging interval
    details: dict[str, Any] = field(default_factory=dict)


class Approach(Protocol):
    def train(self, train: Any, context: RunContext) -> TrainReport: ...

    def predict(self, test: Any, context: RunContext) -> dict[str, str]: ...


def build_approach(spec: ApproachSpec, hparams: dict[str, Any]) -> Approach:
    """Instantiate the spec's implementation with `hparams` (a validated table)."""
    cls = resolve("approach", spec.implementation).approach_class()
    return cls(spec, build_hparams(spec.implementation, hparams))
