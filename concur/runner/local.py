"""Run one job in this process and index it: the in-process path (`concur run` of one job, tests, notebooks).

The job's directory is written by `execute_job`; this process, the driver, then indexes the
result. A job killed at any point leaves no result and no row, and simply runs again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from concur.data.prepare import PreparedBenchmark
from concur.errors import ConcurError, DamagedFileError
from concur.registry.specs import ApproachSpec
from concur.runner.claims import Claim, ClaimBook, Heartbeat
from concur.runner.execute import RunOptions, execute_job
from concur.runner.faults import FaultPoint, fault_point
from concur.runner.jobdir import JOB_FILE, JobDir, JobState
from concur.runner.jobs import Job
from concur.runner.store import Store
from concur.workspace import Workspace


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
    """Run `job` unless its key already finished (or failed, without `retry_failed`) or another owner runs it."""
    job_dir = JobDir(workspace.jobs_dir / job.key)
    finished = finished_outcome(job, job_dir, options.retry_failed)
    book = ClaimBook(workspace.root)
    if finished is not None:
        store.record(finished.result, job_dir.path)
        book.clear_if_stale(job.key)
        return finished
    claim = claim_job(book, job, job_dir, options.retry_failed, echo)
    if isinstance(claim, Outcome):
        if claim.state is JobState.RUNNING:
            raise ConcurError(f"job {job.key} ({job.describe()}) is already running: {claim.result['owner']}")
        store.record(claim.result, job_dir.path)
        return claim
    try:
        with Heartbeat(book) as heartbeat:
            heartbeat.add(claim)
            result = execute_job(job, spec, bench, workspace, options, echo, claim=claim)
        store.record(result, job_dir.path)
    finally:
        book.release(claim)
    return Outcome(job, JobState.DONE if result["status"] == "ok" else JobState.FAILED, ran=True, result=result)


def claim_job(book: ClaimBook, job: Job, job_dir: JobDir, retry_failed: bool, echo: Callable[[str], None]) -> Claim | Outcome:
    """Claim a job about to run: the claim, or the outcome that makes running it unnecessary.

    That outcome is RUNNING (with its owner) when a live owner holds the claim, or the finished
    one when the result appeared while this driver looked (another driver just finished it).
    """
    claim = book.acquire(job.key)
    if claim is None:
        holder = book.holder(job.key)
        return Outcome(job, JobState.RUNNING, ran=False, result={"owner": holder.describe() if holder else "another driver"})
    finished = finished_outcome(job, job_dir, retry_failed)
    if finished is not None:  # finished by another driver between our look and our claim
        book.release(claim)
        return finished
    fault_point(FaultPoint.CLAIMED)
    if (job_dir.path / JOB_FILE).is_file():
        echo(f"job {job.key} was interrupted before it finished; running it again from the start")
    return claim


def finished_outcome(job: Job, job_dir: JobDir, retry_failed: bool, echo: Callable[[str], None] | None = None) -> Outcome | None:
    """The stored outcome of a job that needs no run: done, or failed when failures are not retried.

    With `echo`, a damaged result is reported and its job left alone (a FAILED outcome naming the
    file and the fix): a grid goes on with its other jobs, and the damaged file is never overwritten.
    """
    try:
        state = job_dir.state()
    except DamagedFileError as error:
        if echo is None:
            raise
        echo(f"warning: job {job.key} ({job.describe()}) is not run: {error}")
        return Outcome(job, JobState.FAILED, ran=False, result={"status": "failed", "error": str(error), "damaged": True})
    if state is JobState.DONE or (state is JobState.FAILED and not retry_failed):
        return Outcome(job, state, ran=False, result=job_dir.result() or {})
    return None
