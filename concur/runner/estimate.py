"""How long a job will take, from the jobs already measured: for ordering (longest first) and planning.

A job's time grows with its benchmark's training set, so each approach's measured jobs give
a rate in device-seconds per training question (the median over its finished jobs, robust
to one slow node), and a planned job's estimate is that rate times its benchmark's training
questions. Approaches not measured yet have no estimate; planning says so rather than guess.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from concur.data.prepare import PreparedBenchmark
from concur.runner.budget import QUESTIONS
from concur.runner.jobs import Job


def rates(rows: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Median device-seconds per training question of each approach, over its finished ("ok") jobs."""
    per_approach: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        seconds, questions = row.get("device_seconds"), row.get("train_questions")
        if row.get("status") == "ok" and seconds and questions:
            per_approach[row["approach"]].append(seconds / questions)
    return {approach: statistics.median(values) for approach, values in per_approach.items()}


def estimate_seconds(approach: str, train_questions: int | None, rates_by_approach: Mapping[str, float]) -> float | None:
    if train_questions is None or approach not in rates_by_approach:
        return None
    return rates_by_approach[approach] * train_questions


def job_estimate(job: Job, bench: PreparedBenchmark, rates_by_approach: Mapping[str, float]) -> float | None:
    """A job's estimated device-seconds from the training questions it sees: its budget's subset where it has one."""
    cut = job.subset.get("train")
    questions = cut[QUESTIONS] if cut else bench.manifest["splits"]["train"][QUESTIONS]
    return estimate_seconds(job.approach, questions, rates_by_approach)
