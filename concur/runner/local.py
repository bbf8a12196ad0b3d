"""Run one job in this process and index it: the in-process path (`concur run` of one job, tests, notebooks).

The job's directory is written by `execute_job`; this process, the driver, then indexes the
result. A job killed at any point leaves no result and no row, and simply runs again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from concur.data.prepare import PreparedBenchmark
from concur.errors import ConcurError
from concur.registry.specs import ApproachSpec
from concur.runner.execute import RunOptions, execute_job
from concur.runner.jobdir import JobDir, JobState
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
    """Run `job` unless its key already finished (or failed, without `retry_failed`)."""
    job_dir = JobDir(workspace.jobs_dir / job.key)
    finished = finished_outcome(job, job_dir, options.retry_failed)
    if finished is not None:
        store.record(finished.result, job_dir.path)
        return finished
    state = job_dir.state()
    if state is JobState.RUNNING:
        started = job_dir.started() or {}
        raise ConcurError(f"job {job.key} ({job.describe()}) is already running in process {started.get('pid')}")
    if state is JobState.INTERRUPTED:
        echo(f"job {job.key} was interrupted before it finished; running it again from the start")
    result = execute_job(job, spec, bench, workspace, options, echo)
    store.record(result, job_dir.path)
    return Outcome(job, JobState.DONE if result["status"] == "ok" else JobState.FAILED, ran=True, result=result)


def finished_outcome(job: Job, job_dir: JobDir, retry_failed: bool) -> Outcome | None:
    """The stored outcome of a job that needs no run: done, or failed when failures are not retried."""
    state = job_dir.state()
    if state is JobState.DONE or (state is JobState.FAILED and not retry_failed):
        return Outcome(job, state, ran=False, result=job_dir.result() or {})
    return None
