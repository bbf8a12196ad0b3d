"""What a worker needs to run one job anywhere (a local subprocess, a Slurm node), as one JSON document.

The driver plans a job (its key, resolved hyperparameters, data hash) and hands the worker
this request; the worker rebuilds the approach and benchmark from the same registry
directories and refuses to run if either changed since the job was planned, since its key
would then name a computation other than the one it would do.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from concur.data.prepare import prepared
from concur.errors import ClaimLostError, ConcurError, JobInterrupted
from concur.fsutil import atomic_write_json, read_json
from concur.registry.registry import default_registry
from concur.runner.execution.one_job import RunOptions, execute_job, now
from concur.runner.planning.jobs import Job
from concur.runner.records.claims import Claim, ClaimBook, Heartbeat
from concur.runner.records.jobdir import JobDir
from concur.runner.records.result import FAILED_STATUS, JobResult
from concur.workspace import Workspace


@dataclass(frozen=True)
class JobRequest:
    job: dict[str, Any]  # Job.definition()
    registry_dirs: list[str]
    runs_dir: str
    options: dict[str, Any]  # RunOptions, JSON-ready
    previous_attempts: list[dict[str, Any]] = field(default_factory=list)  # attempts that died without a result
    claim: dict[str, Any] | None = None  # the driver's claim on the job: the worker writes a result only while it holds

    @classmethod
    def make(cls, job: Job, registry_dirs: list[Path], workspace: Workspace, options: RunOptions, claim: Claim | None = None) -> JobRequest:
        values = {name: str(value) if isinstance(value, Path) else value for name, value in dataclasses.asdict(options).items()}
        held = dataclasses.asdict(claim) if claim else None
        return cls(job.definition(), [str(Path(d).resolve()) for d in registry_dirs], str(workspace.root), values, claim=held)

    def job_claim(self) -> Claim | None:
        return Claim(**self.claim) if self.claim else None

    @property
    def key(self) -> str:
        return str(self.job["key"])

    def write(self, path: Path) -> None:
        atomic_write_json(path, dataclasses.asdict(self))

    @classmethod
    def read(cls, path: Path) -> JobRequest:
        return cls(**read_json(path))

    def run_options(self) -> RunOptions:
        values = dict(self.options)
        if values.get("model_path") is not None:
            values["model_path"] = Path(values["model_path"])
        return RunOptions(**values)


def run_request(request: JobRequest, echo: Any = print) -> JobResult:
    """Execute the requested job into its directory; a request that no longer matches its specs fails there.

    A signal (JobInterrupted) leaves the job interrupted even when it comes before the job started: a Slurm
    task given a time limit shorter than submitit's warning gets SIGUSR2 within seconds, while still loading
    the registry, and without the record its driver would take the task's end for a failure.
    """
    try:
        return _run_request(request, echo)
    except JobInterrupted as interruption:
        _record_interruption(request, interruption)
        raise


def _record_interruption(request: JobRequest, interruption: JobInterrupted) -> None:
    """Record the signal in the job's directory unless the run recorded it (or finished) already, and only
    while the job is still this run's: another driver's run of it must not read as interrupted."""
    job_dir = JobDir(Workspace(Path(request.runs_dir)).jobs_dir / request.key)
    claim = request.job_claim()
    if job_dir.interrupted() is not None or job_dir.result() is not None:
        return
    if claim is not None and not ClaimBook(Path(request.runs_dir)).holds(claim):
        return
    job_dir.path.mkdir(parents=True, exist_ok=True)
    at = now()
    job_dir.write_started(request.job, at)  # what the status and the report list an interrupted job by
    job_dir.write_interrupted({"signal": str(interruption), "at": at, "scheduler": _scheduler(), "before_start": True})


def _run_request(request: JobRequest, echo: Any) -> JobResult:
    workspace = Workspace(Path(request.runs_dir))
    job = Job.from_definition(request.job)
    try:
        spec, bench = _resolve(request, workspace, job)
    except ConcurError as error:
        result = failed_result(request, f"{type(error).__name__}: {error}")
        job_dir = JobDir(workspace.jobs_dir / job.key)
        job_dir.path.mkdir(parents=True, exist_ok=True)
        job_dir.write_result(result)
        return result
    claim, scheduler = request.job_claim(), _scheduler()
    book = ClaimBook(workspace.root)
    if claim is not None and not book.holds(claim):
        holder = book.holder(job.key)
        raise ClaimLostError(
            f"job {job.key} is claimed by {holder.describe() if holder else 'nobody'} now, not by this run; not running it"
        )
    if scheduler is None or claim is None:  # a local worker: its driver heartbeats and releases the claim
        return execute_job(job, spec, bench, workspace, request.run_options(), echo, request.previous_attempts, scheduler, claim)
    # A Slurm task outlives its driver: it keeps its claim fresh and gives it up itself once the job
    # ends, but not when a signal stops it: Slurm may requeue it, and the requeued task runs under the
    # same claim (which goes stale, for another driver to take, once the job has left the queue).
    with Heartbeat(book) as heartbeat:
        heartbeat.add(claim)
        try:
            result = execute_job(job, spec, bench, workspace, request.run_options(), echo, request.previous_attempts, scheduler, claim)
        except Exception:
            book.release(claim)
            raise
    book.release(claim)
    return result


def failed_result(request: JobRequest, error: str) -> JobResult:
    """A result for a job that could not produce one itself (it died, ran out of time, or could not start)."""
    return JobResult(
        job=request.job, status=FAILED_STATUS, error=error, previous_attempts=tuple(request.previous_attempts), finished_at=now()
    )


def _resolve(request: JobRequest, workspace: Workspace, job: Job) -> tuple[Any, Any]:
    registry = default_registry([Path(d) for d in request.registry_dirs])
    spec = registry.approach(job.approach)
    if (spec.implementation, spec.model) != (job.implementation, job.model):
        raise ConcurError(f"the spec of approach {job.approach!r} ({spec.file}) changed since job {job.key} was planned; plan it again")
    bench = prepared(workspace.data_dir, registry.benchmark(job.benchmark))
    if bench is None or bench.data_hash != job.data_hash:
        raise ConcurError(f"the prepared data of {job.benchmark!r} changed or is gone since job {job.key} was planned; plan it again")
    return spec, bench


def _scheduler() -> dict[str, Any] | None:
    """The Slurm job this worker runs in, if any: its id, node and how often Slurm requeued it."""
    environment = os.environ
    if "SLURM_JOB_ID" not in environment:
        return None
    task = environment.get("SLURM_ARRAY_TASK_ID")
    job_id = f"{environment.get('SLURM_ARRAY_JOB_ID')}_{task}" if task is not None else environment["SLURM_JOB_ID"]
    return {
        "system": "slurm",
        "job_id": job_id,
        "node": environment.get("SLURMD_NODENAME"),
        "restarts": int(environment.get("SLURM_RESTART_COUNT", "0")),
    }
