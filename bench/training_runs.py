"""One fine-tuning run of the training benchmark (`bench.speed_training`): what every system is given, what it
reports, the benchmark's samples it trains and tests on, and the measures every system takes alike."""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.benchmark_sides import benchmark_sides

APPROACH = "minilm-l6"


@dataclass(frozen=True)
class Config:
    """What every system of one benchmark run is given."""

    benchmark: str
    data_dir: str  # where `benchmark` is prepared, once for every system
    model_path: str
    train_questions: int
    test_questions: int
    hparams: dict[str, Any]
    precision: str
    device: str
    threads: int
    seed: int


@dataclass
class Measured:
    """One system's run."""

    system: str
    round: int
    train_windows: int
    optimizer_steps: int
    train_seconds: float
    eval_questions: int
    eval_seconds: float
    total_seconds: float
    peak_memory_mb: float
    em: float
    f1: float
    seed: int = 0
    steady_train_rate: float | None = None  # concur's windows/s after the first quarter of its steps (see steady_rate)
    graph_shapes: int = 0  # batch shapes concur recorded as CUDA graphs (concur-cuda-graphs)

    @property
    def train_rate(self) -> float:
        return self.train_windows / self.train_seconds

    @property
    def eval_rate(self) -> float:
        return self.eval_questions / self.eval_seconds

    @property
    def setup_seconds(self) -> float:
        """The whole run less training and prediction: loading the model, building windows, moving to the device."""
        return self.total_seconds - self.train_seconds - self.eval_seconds


def benchmark_splits(config: Config) -> tuple[Any, Any]:
    """Seeded samples of the benchmark's sides (the sides whole when the counts cover them)."""
    from concur.data.transforms import downsample

    train, test = benchmark_sides(config.benchmark, [], Path(config.data_dir))
    return downsample(train, config.train_questions, config.seed), downsample(test, config.test_questions, config.seed)


def gold_answers(test: Any) -> dict[str, list[str]]:
    return {question.qid: question.answers for _, question in test.questions()}


def peak_memory_mb(device: str) -> float:
    import torch

    if device.startswith("cuda"):
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def measure_run(
    system: str, config: Config, test: Any, predictions: dict[str, str], trained: tuple[int, int, float], started: float, predicting: float
) -> Measured:
    """One run's measures once its predictions are in: `trained` is (windows, optimiser steps, seconds of training)."""
    from concur.metrics import evaluate

    synchronize(config.device)
    done = time.perf_counter()
    scores = evaluate(gold_answers(test), predictions)
    windows, steps, train_seconds = trained
    return Measured(
        system=system,
        round=0,
        train_windows=windows,
        optimizer_steps=steps,
        train_seconds=train_seconds,
        eval_questions=test.n_questions,
        eval_seconds=done - predicting,
        total_seconds=done - started,
        peak_memory_mb=peak_memory_mb(config.device),
        em=scores.exact_match,
        f1=scores.f1,
        seed=config.seed,
    )


def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()
