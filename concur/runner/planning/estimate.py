"""How long a job will take, from the jobs already measured: for ordering (longest first) and planning.

A job's time has three parts, each measured by every finished job and stored in the index:
a fixed part (starting the worker, from its process's start or fork to the job's clock, then
reading the data, loading weights, making features), the optimisation loop (`fit_seconds`),
which grows with the training examples it passes over (the spec's epochs times the training
questions, or its fixed steps times its batch), and prediction (`eval_seconds`), which grows
with the test questions. A throughput is the median of each part over finished jobs (robust
to one slow node), and a planned job's estimate is the fixed part plus each rate times its own
examples and test questions: a budget of 300 questions and one epoch is estimated as such, not
at the rate of a full-size run. Where a cell's jobs ran at several sizes (a pilot, then the
study), each rate is instead a line through them, whose constant (first steps and batches cost
more) joins the fixed part. A question's cost depends on its benchmark's text lengths (a
reader's passage, a pretrained model's windows: MiniLM's epoch costs about ten times as much on
the synthetic Wikidata set as on bAbI task 1), so a job is estimated from its
(approach, benchmark) cell's finished jobs where it has some. A cell never measured takes its
approach's fixed part, and its rates from a two-way model of every measured cell's (`two_way`:
the approach's effect times the benchmark's, as the other approaches measured it), or its
approach's medians over every benchmark where no measured cell links the two. Results from
before `fit_seconds` was stored count all their time as training. Approaches not measured yet
have no estimate; planning says so rather than guess.
A run of forked workers also waits once, before its first job, for its zygote's imports
(`run_start_seconds`).

Times are device-seconds (GPU-seconds, or core-seconds on the CPU: threads x wall), as the
accounting of each job records them; `wall_seconds` turns a job's estimate back into the
wall time it takes, and `makespan` packs the estimates onto parallel slots, longest first as
the local executor starts them.
"""

from __future__ import annotations

import heapq
import itertools
import statistics
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from concur.components import resolve
from concur.data.prepare import PreparedBenchmark
from concur.runner.planning.budget import QUESTIONS
from concur.runner.planning.jobs import Job
from concur.runner.planning.two_way import TwoWay, fit_two_way

# What a job's estimate comes from (`Speeds.basis`): its own cell's finished jobs, the two-way model, or its approach's medians.
FROM_CELL, FROM_MODEL, FROM_APPROACH = "cell", "model", "approach"


@dataclass(frozen=True)
class Throughput:
    """An approach's measured speed, over its jobs on one benchmark or on all, in device-seconds."""

    fixed_seconds: float  # per job, whatever its size
    seconds_per_example: float  # per training example passed over by the optimisation loop
    seconds_per_test_question: float
    devices: float  # device-seconds per wall second (CPU threads, or 1 GPU)
    jobs: int  # finished jobs it is the median of

    def estimate(self, examples: float, test_questions: int) -> float:
        return self.fixed_seconds + self.seconds_per_example * examples + self.seconds_per_test_question * test_questions


@dataclass(frozen=True)
class Speeds:
    """Measured throughputs: per (approach, benchmark) cell and per approach over every benchmark, and the
    two-way models of the cells' rates that estimate the cells never measured."""

    cells: Mapping[tuple[str, str], Throughput] = field(default_factory=dict)
    approaches: Mapping[str, Throughput] = field(default_factory=dict)
    per_example: TwoWay = field(default_factory=lambda: fit_two_way({}))
    per_test_question: TwoWay = field(default_factory=lambda: fit_two_way({}))

    def of(self, approach: str, benchmark: str) -> Throughput | None:
        """The cell's throughput where it was measured; else its approach's, with the two-way models' rates where
        they link the approach and the benchmark; None for an approach never measured."""
        return self.lookup(approach, benchmark)[0]

    def lookup(self, approach: str, benchmark: str) -> tuple[Throughput | None, str | None]:
        """`of`'s answer and what it comes from: `FROM_CELL`, `FROM_MODEL`, `FROM_APPROACH`, or None (never measured)."""
        measured = self.cells.get((approach, benchmark))
        if measured is not None:
            return measured, FROM_CELL
        speed = self.approaches.get(approach)
        if speed is None:
            return None, None
        per_example = self.per_example.predict(approach, benchmark)
        per_test_question = self.per_test_question.predict(approach, benchmark)
        if per_example is None and per_test_question is None:
            return speed, FROM_APPROACH
        modeled = replace(
            speed,
            seconds_per_example=speed.seconds_per_example if per_example is None else per_example,
            seconds_per_test_question=speed.seconds_per_test_question if per_test_question is None else per_test_question,
        )
        return modeled, FROM_MODEL


def training_examples(implementation: str | None, hparams: Mapping[str, Any], train_questions: int) -> float | None:
    """Examples the optimisation loop passes over: fixed steps times the batch, or epochs times the questions.

    None for a fixed step count of an unknown kind (index rows from before the kind was stored): its batch is unknown.
    """
    steps = hparams.get("steps", 0)
    if not steps:
        return float(hparams.get("epochs", 1.0)) * train_questions
    if implementation is None:
        return None
    return float(steps * resolve("approach", implementation).batch_size(hparams))


def measured_jobs(rows: Iterable[Mapping[str, Any]]) -> Iterator[tuple[Mapping[str, Any], float]]:
    """The finished ("ok") jobs that recorded their device-seconds and training budget, each with the training
    examples its optimisation loop passed over: the jobs a throughput can be measured from."""
    for row in rows:
        if row.get("status") != "ok" or not row.get("device_seconds") or not row.get("train_questions") or not row.get("hparams"):
            continue
        examples = training_examples(row.get("implementation"), row["hparams"], row["train_questions"])
        if examples:
            yield row, examples


def throughputs(rows: Iterable[Mapping[str, Any]]) -> Speeds:
    """Each cell's and each approach's throughput over its finished ("ok") jobs that recorded their accounting."""
    parts: dict[tuple[str, str], list[tuple[float, float, float, float]]] = defaultdict(list)
    sizes: dict[tuple[str, str], list[tuple[float, float, float, float]]] = defaultdict(list)
    for row, examples in measured_jobs(rows):
        seconds = row["device_seconds"]
        wall, fit, evaluated, tested = row.get("wall_seconds"), row.get("fit_seconds"), row.get("eval_seconds"), row.get("n_questions")
        cell = (row["approach"], row["benchmark"])
        if wall and fit is not None and evaluated is not None and tested:
            devices = seconds / wall
            fixed = max(0.0, seconds - (fit + evaluated) * devices) + (row.get("startup_seconds") or 0.0) * devices
            parts[cell].append((fixed, fit * devices / examples, evaluated * devices / tested, devices))
            sizes[cell].append((examples, fit * devices, tested, evaluated * devices))
        else:  # recorded before fit_seconds was: all of it counts as training
            parts[cell].append((0.0, seconds / examples, 0.0, 1.0))
    by_approach: dict[str, list[tuple[float, float, float, float]]] = defaultdict(list)
    for (approach, _), measured in parts.items():
        by_approach[approach] += measured
    cells = {cell: _sized(_median(measured), sizes[cell]) for cell, measured in parts.items()}
    return Speeds(
        cells,
        {approach: _median(measured) for approach, measured in by_approach.items()},
        fit_two_way({cell: speed.seconds_per_example for cell, speed in cells.items()}),
        fit_two_way({cell: speed.seconds_per_test_question for cell, speed in cells.items()}),
    )


def _median(measured: Sequence[tuple[float, float, float, float]]) -> Throughput:
    fixed, per_example, per_test_question, devices = (statistics.median(column) for column in zip(*measured))
    return Throughput(fixed, per_example, per_test_question, devices, jobs=len(measured))


def _sized(speed: Throughput, sizes: Sequence[tuple[float, float, float, float]]) -> Throughput:
    """A cell's throughput with each rate fitted as a line where its jobs ran at several sizes (a pilot and the study).

    A job's first steps and first prediction batches cost more than the rest, so a rate measured as seconds over
    examples on small jobs overestimates large ones (the readers' jobs of the quick start, planned from 100
    questions); jobs of two sizes tell that constant from the rate, and it joins the fixed part.
    """
    fitting = _line([(examples, seconds) for examples, seconds, _, _ in sizes])
    predicting = _line([(tested, seconds) for _, _, tested, seconds in sizes])
    if fitting is None and predicting is None:
        return speed
    fixed, per_example, per_test_question = speed.fixed_seconds, speed.seconds_per_example, speed.seconds_per_test_question
    if fitting is not None:
        fixed, per_example = fixed + fitting[0], fitting[1]
    if predicting is not None:
        fixed, per_test_question = fixed + predicting[0], predicting[1]
    return replace(speed, fixed_seconds=fixed, seconds_per_example=per_example, seconds_per_test_question=per_test_question)


def _line(points: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """(intercept, slope) of seconds against size by Theil and Sen's estimator: the median slope between jobs of
    different sizes and the median residual, robust to one slow job as the medians are. None unless the jobs ran at
    two sizes or more with a positive slope; the intercept is at least 0."""
    slopes = [(t2 - t1) / (n2 - n1) for (n1, t1), (n2, t2) in itertools.combinations(points, 2) if n1 != n2]
    if not slopes or (slope := statistics.median(slopes)) <= 0:
        return None
    return max(0.0, statistics.median(seconds - slope * size for size, seconds in points)), slope


def run_start_seconds(rows: Iterable[Mapping[str, Any]]) -> float:
    """Wall seconds a local run waits once before its first job: the median zygote start its forked jobs recorded (0 if none did)."""
    starts = [row["pool_start_seconds"] for row in rows if row.get("status") == "ok" and row.get("pool_start_seconds") is not None]
    return statistics.median(starts) if starts else 0.0


@dataclass(frozen=True)
class JobEstimate:
    """A job's estimated cost, and what it was estimated from."""

    device_seconds: float
    wall_seconds: float  # device_seconds on as many devices (threads) as the jobs it was estimated from had
    basis: str  # FROM_CELL, FROM_MODEL or FROM_APPROACH


def job_estimate(job: Job, bench: PreparedBenchmark, measured: Speeds) -> JobEstimate | None:
    """A job's estimate for the questions it sees (its budget's subsets where it has them); None for an approach
    never measured, or fixed steps of an unknown batch."""
    speed, basis = measured.lookup(job.approach, job.benchmark)
    if speed is None or basis is None:
        return None
    splits = bench.manifest["splits"]
    train = job.subset.get("train", {}).get(QUESTIONS, splits["train"][QUESTIONS])
    test = job.subset.get("test", {}).get(QUESTIONS, splits["test"][QUESTIONS])
    examples = training_examples(job.implementation, job.hparams, train)
    if examples is None:
        return None
    seconds = speed.estimate(examples, test)
    return JobEstimate(seconds, seconds / speed.devices, basis)


def makespan(durations: Sequence[float], slots: int, busy: Sequence[float] = ()) -> float:
    """Wall time of jobs of these durations on `slots` parallel slots, longest first, each to the slot free first;
    `busy` holds the seconds left of jobs already running, one per slot they occupy."""
    if slots < 1:
        raise ValueError(f"slots must be at least 1, got {slots}")
    if len(busy) > slots:
        raise ValueError(f"{len(busy)} running jobs cannot fit {slots} slots")
    free_at = [*busy, *[0.0] * (slots - len(busy))]
    heapq.heapify(free_at)
    for duration in sorted(durations, reverse=True):
        heapq.heappush(free_at, heapq.heappop(free_at) + duration)
    return max(free_at)
