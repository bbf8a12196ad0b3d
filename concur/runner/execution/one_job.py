"""Execute one job into its directory: train, predict, score, account; the worker side of every executor.

The approach only trains and answers; scoring uses the framework's official metric. A job
with a budget's subset (`concur.runner.planning.budget`) gives the approach only that subset of the
training split and scores the subset of the test split; the sizes are recorded. The
result file is written last and atomically, so a job killed at any point leaves no result
and simply runs again. Faults are recorded, never lost: an exception becomes a failed
result with its traceback (but a full disk or an I/O error, which is no fault of the job's, leaves it without a
result, to run again once there is space); CUDA running out of memory retries the job with half the
per-device batch (twice the gradient accumulation, the same effective batch) and records
each retry; a NaN loss fails the job with the step it appeared at. Every result records the
device, device-seconds, peak memory and the library versions.
"""

from __future__ import annotations

import dataclasses
import gc
import resource
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from concur.approaches.base import RunContext, build_approach
from concur.approaches.precision import device_precision_problem, numerics
from concur.components import resolve
from concur.data.prepare import SPLITS, PreparedBenchmark
from concur.devices import device_description, resolve_device, software_versions
from concur.errors import ClaimLostError, ConcurError, JobInterrupted
from concur.metrics import evaluate
from concur.oserrors import is_storage_error
from concur.registry.specs import ApproachSpec
from concur.runner.execution.faults import FaultPoint, fault_point
from concur.runner.execution.startup import pool_start_seconds, process_age_seconds
from concur.runner.planning.budget import apply_subset
from concur.runner.planning.jobs import Job
from concur.runner.records.claims import Claim, ClaimBook
from concur.runner.records.jobdir import JobDir
from concur.runner.records.result import FAILED_STATUS, OK_STATUS, Accounting, JobResult, Scores
from concur.workspace import Workspace

MISSING_SAMPLE = 10  # qids listed in a result when predictions are missing


@dataclass(frozen=True)
class RunOptions:
    device: str = "auto"
    threads: int | None = None
    per_device_batch_size: int | None = None
    model_path: Path | None = None
    retry_failed: bool = False
    cuda_graphs: bool = False  # hf-span on CUDA: record and replay its training pieces (concur.approaches.hf_span.graphs)


def execute_job(
    job: Job,
    spec: ApproachSpec,
    bench: PreparedBenchmark,
    workspace: Workspace,
    options: RunOptions,
    echo: Callable[[str], None] = print,
    previous_attempts: list[dict[str, Any]] | None = None,
    scheduler: dict[str, Any] | None = None,
    claim: Claim | None = None,
) -> JobResult:
    """Run `job` from a clean directory and write its result; returns the result (status "ok" or "failed").

    `previous_attempts` (attempts that died without a result, from the driver) and `scheduler`
    (what the batch system says of this run, e.g. its Slurm job and restarts) are recorded with it.
    With the job's `claim`, the result is written only while the claim is still this run's:
    an owner whose claim was taken over (it stopped heartbeating for minutes) writes nothing.
    """
    job_dir = JobDir(workspace.jobs_dir / job.key)
    device = resolve_device(options.device)
    if options.threads:
        import torch

        torch.set_num_threads(options.threads)
    job_dir.reset()
    started_at = now()
    job_dir.write_started(job.definition(), started_at)
    fault_point(FaultPoint.STARTED)
    with open(job_dir.log_path(), "a", encoding="utf-8", buffering=1) as log_file:

        def log(line: str) -> None:
            log_file.write(f"{now()} {line}\n")
            echo(line)

        try:
            result = _execute(job, spec, bench, workspace, job_dir, device, options, log, started_at)
        except JobInterrupted as interruption:
            log(f"interrupted by {interruption}; no result: the job runs again from the start")
            job_dir.write_interrupted({"signal": str(interruption), "at": now(), "scheduler": scheduler})
            raise
        result = dataclasses.replace(result, previous_attempts=tuple(previous_attempts or ()), scheduler=scheduler or None)
        if claim is not None:
            book = ClaimBook(workspace.root)
            if not book.holds(claim):
                holder = book.holder(job.key)
                log(f"the claim on this job was taken over by {holder.describe() if holder else 'nobody'}; its result is not written")
                raise ClaimLostError(f"job {job.key}: the claim was taken over while it ran; this run's result was discarded")
        job_dir.write_result(result)
    fault_point(FaultPoint.RESULT_WRITTEN)
    return result


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


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
) -> JobResult:
    """Train, predict and score; any exception becomes a failed result with its traceback."""
    described = device_description(device)
    context = RunContext(
        device=device,
        seed=job.seed,
        log=log,
        per_device_batch_size=options.per_device_batch_size,
        model_path=options.model_path,
        cache_dir=workspace.cache_dir,
        precision=job.precision,
        cuda_graphs=options.cuda_graphs,
    )
    meter = _Meter(device)
    training = _Training()
    subset: dict[str, Any] | None = None
    scores: Scores | None = None
    error: str | None = None
    trace: str | None = None
    try:
        log(f"job {job.key}: {job.describe()} on {described}")
        problem = device_precision_problem(device, job.precision)
        if problem is not None:
            raise ConcurError(f"precision {job.precision}: {problem}")
        splits, subset = apply_subset({name: bench.load(name) for name in SPLITS}, job.subset)
        if subset:
            log(
                "subset of the budget: "
                + "; ".join(f"{cut['questions']:,} of {cut['of_questions']:,} {name} questions" for name, cut in subset.items())
            )
        train_split, test_split = splits["train"], splits["test"]
        predictions = _train_and_predict(job, spec, train_split, test_split, context, training, log)
        fault_point(FaultPoint.TRAINED)
        evaluation = evaluate(test_split.gold_answers(), predictions)
        job_dir.write_predictions(predictions)
        fault_point(FaultPoint.PREDICTED)
        scores = Scores(
            exact_match=evaluation.exact_match,
            f1=evaluation.f1,
            n_questions=evaluation.n_gold,
            n_predicted=evaluation.n_predicted,
            n_missing=len(evaluation.missing),
            n_extra=len(evaluation.extra),
            missing_sample=tuple(evaluation.missing[:MISSING_SAMPLE]),
        )
        log(f"EM {evaluation.exact_match:.2f}  F1 {evaluation.f1:.2f}  over {evaluation.n_gold} test questions")
    except Exception as exc:  # a failed job is recorded with its traceback, never lost
        if is_storage_error(exc):  # the disk's fault, not the job's: no result, so a rerun runs it once there is space
            raise
        scores, error, trace = None, f"{type(exc).__name__}: {exc}", traceback.format_exc()
        log(f"job failed: {error}")
    return JobResult(
        job=job.definition(),
        status=FAILED_STATUS if error is not None else OK_STATUS,
        benchmark={key: bench.manifest[key] for key in ("spec_hash", "data_hash", "splits")},
        device=described,
        versions=software_versions(),
        started_at=started_at,
        precision=numerics(device, job.precision),
        subset=subset or None,
        oom_retries=tuple(training.oom_retries) if training.began else None,
        train_seconds=training.train_seconds,
        train=training.report,
        eval_seconds=training.eval_seconds,
        per_device_batch_size=training.per_device_batch_size,
        scores=scores,
        error=error,
        traceback=trace,
        accounting=meter.read(),
        finished_at=now(),
    )


@dataclass
class _Training:
    """What training and prediction recorded as they went (a failure part way keeps what came before it)."""

    began: bool = False
    oom_retries: list[dict[str, Any]] = field(default_factory=list)
    train_seconds: float | None = None
    report: dict[str, Any] | None = None
    eval_seconds: float | None = None
    per_device_batch_size: int | None = None


def _train_and_predict(
    job: Job,
    spec: ApproachSpec,
    train_split: Any,
    test_split: Any,
    context: RunContext,
    training: _Training,
    log: Callable[[str], None],
) -> dict[str, str]:
    """Train and predict, halving the per-device batch after each CUDA out-of-memory error."""
    training.began = True
    while True:
        approach = None
        try:
            approach = build_approach(spec, job.hparams)
            clock = time.perf_counter()
            report = approach.train(train_split, context)
            training.train_seconds = time.perf_counter() - clock
            training.report = asdict(report)
            clock = time.perf_counter()
            predictions = approach.predict(test_split, context)
            training.eval_seconds = time.perf_counter() - clock
            training.per_device_batch_size = context.per_device_batch_size
            return predictions
        except Exception as error:
            if not _is_cuda_oom(error):
                raise
            current = context.per_device_batch_size or resolve("approach", spec.implementation).batch_size(job.hparams)
            if current <= 1:
                raise
            training.oom_retries.append({"per_device_batch_size": current, "error": str(error).split("\n")[0]})
            log(f"CUDA out of memory with {current} examples per forward pass; retrying with {current // 2} (twice the accumulation)")
            del approach
            _release_cuda_memory()
            context = dataclasses.replace(context, per_device_batch_size=current // 2)


def _is_cuda_oom(error: BaseException) -> bool:
    import torch

    return isinstance(error, torch.cuda.OutOfMemoryError)


def _release_cuda_memory() -> None:
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


class _Meter:
    """Device-seconds and peak memory of one job: GPU-seconds and the GPU's peak allocation on CUDA,
    core-seconds (threads x wall) and the process's peak resident memory on CPU; the seconds its
    process ran before the job's clock started; and, in a forked worker, the seconds its zygote
    took to be ready to fork, which its run paid once."""

    def __init__(self, device: str) -> None:
        import torch

        self.device, self.cuda = device, device.startswith("cuda")
        self.devices = 1 if self.cuda else torch.get_num_threads()
        if self.cuda:
            torch.cuda.reset_peak_memory_stats(torch.device(device))
        self.startup = process_age_seconds()
        self.pool_start = pool_start_seconds()
        self.started = time.perf_counter()

    def read(self) -> Accounting:
        import torch

        wall = time.perf_counter() - self.started
        if self.cuda:
            peak = int(torch.cuda.max_memory_allocated(torch.device(self.device)))
        else:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
        return Accounting(
            device_kind="gpu" if self.cuda else "cpu",
            devices=self.devices,
            wall_seconds=wall,
            startup_seconds=self.startup,
            pool_start_seconds=self.pool_start,
            device_seconds=wall * self.devices,
            peak_memory_bytes=peak,
        )
