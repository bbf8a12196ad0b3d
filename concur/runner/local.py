"""Run one job in this process: train, predict, score, write the job directory, index it.

The approach only trains and answers; scoring uses the framework's official metric. The
result file is written last and atomically, then indexed by the driver (this process), so
a job killed at any point leaves no result and no row, and simply runs again.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from concur.approaches.base import RunContext, build_approach
from concur.data.prepare import PreparedBenchmark
from concur.devices import device_description, resolve_device, software_versions
from concur.errors import ConcurError
from concur.metrics import evaluate
from concur.registry.specs import ApproachSpec
from concur.runner.jobdir import JobDir, JobState
from concur.runner.jobs import Job
from concur.runner.store import Store
from concur.workspace import Workspace

MISSING_SAMPLE = 10  # qids listed in a result when predictions are missing


@dataclass(frozen=True)
class RunOptions:
    device: str = "auto"
    threads: int | None = None
    per_device_batch_size: int | None = None
    model_path: Path | None = None
    retry_failed: bool = False


@dataclass
class Outcome:
    job: Job
    state: JobState
    ran: bool  # False when the job was already finished and nothing was done
    result: dict[str, Any] = field(default_factory=dict)


def run_job(
    job: Job,
    spec: ApproachSpec,
    bench: PreparedBenchmark,
    workspace: Workspace,
    store: Store,
    options: RunOptions,
    echo: Callable[[str], None] = print,
) -> Outcome:
    """Run `job` unless its key already finished (or failed, without `retry_failed`)."""
    job_dir = JobDir(workspace.jobs_dir / job.key)
    state = job_dir.state()
    if state is JobState.DONE or (state is JobState.FAILED and not options.retry_failed):
        result = job_dir.result() or {}
        store.record(result, job_dir.path)
        return Outcome(job, state, ran=False, result=result)
    if state is JobState.RUNNING:
        started = job_dir.started() or {}
        raise ConcurError(f"job {job.key} ({job.describe()}) is already running in process {started.get('pid')}")
    if state is JobState.INTERRUPTED:
        echo(f"job {job.key} was interrupted before it finished; running it again from the start")
    device = resolve_device(options.device)
    if options.threads:
        import torch

        torch.set_num_threads(options.threads)
    job_dir.reset()
    with job_dir.running_here():
        started_at = _now()
        job_dir.write_started(job.definition(), started_at)
        with open(job_dir.log_path(), "a", encoding="utf-8", buffering=1) as log_file:

            def log(line: str) -> None:
                log_file.write(f"{_now()} {line}\n")
                echo(line)

            result = _execute(job, spec, bench, workspace, job_dir, device, options, log, started_at)
        job_dir.write_result(result)
    store.record(result, job_dir.path)
    return Outcome(job, JobState.DONE if result["status"] == "ok" else JobState.FAILED, ran=True, result=result)


def _execute(
    job: Job,
    spec: ApproachSpec,
    bench: PreparedBenchmark,
    workspace: Workspace,
    job_dir: JobDir,
    device: str,
    options: RunOptions,
    log: Callable[[str], None],
    started_at: str,
) -> dict[str, Any]:
    """Train, predict and score; any exception becomes a failed result with its traceback."""
    result: dict[str, Any] = {
        "job": job.definition(),
        "benchmark": {key: bench.manifest[key] for key in ("spec_hash", "data_hash", "splits")},
        "device": device_description(device),
        "versions": software_versions(),
        "started_at": started_at,
    }
    context = RunContext(
        device=device,
        seed=job.seed,
        log=log,
        work_dir=job_dir.path,
        per_device_batch_size=options.per_device_batch_size,
        model_path=options.model_path,
        cache_dir=workspace.cache_dir,
    )
    try:
        log(f"job {job.key}: {job.describe()} on {result['device']}")
        approach = build_approach(spec, job.hparams)
        train_split, test_split = bench.load("train"), bench.load("test")
        clock = time.perf_counter()
        report = approach.train(train_split, context)
        result["train_seconds"] = time.perf_counter() - clock
        result["train"] = asdict(report)
        clock = time.perf_counter()
        predictions = approach.predict(test_split, context)
        result["eval_seconds"] = time.perf_counter() - clock
        scores = evaluate(test_split.gold_answers(), predictions)
        job_dir.write_predictions(predictions)
        result["scores"] = {
            "exact_match": scores.exact_match,
            "f1": scores.f1,
            "n_questions": scores.n_gold,
            "n_predicted": scores.n_predicted,
            "n_missing": len(scores.missing),
            "n_extra": len(scores.extra),
            "missing_sample": scores.missing[:MISSING_SAMPLE],
        }
        log(f"EM {scores.exact_match:.2f}  F1 {scores.f1:.2f}  over {scores.n_gold} test questions")
        result["status"] = "ok"
    except Exception as exc:  # a failed job is recorded with its traceback, never lost
        result["status"] = "failed"
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc()
        log(f"job failed: {result['error']}")
    result["finished_at"] = _now()
    return result


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
