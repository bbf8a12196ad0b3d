"""Run one job in this process and index it (the in-process path), and what a grid's outcomes mean: each job's, and the whole grid's.

The job's directory is written by `execute_job`; this process, the driver, then indexes the
result. A job killed at any point leaves no result and no row, and simply runs again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from concur.data.prepare import PreparedBenchmark
from concur.errors import ConcurError, DamagedFileError, JobsFailedError, JobsUnfinishedError
from concur.fsutil import move_aside
from concur.registry.specs import ApproachSpec
from concur.runner.execution.faults import FaultPoint, fault_point
from concur.runner.execution.one_job import RunOptions, execute_job
from concur.runner.planning.jobs import Job
from concur.runner.records.claims import Claim, ClaimBook, Heartbeat
from concur.runner.records.jobdir import JOB_FILE, JobDir, JobState
from concur.runner.records.result import JobResult
from concur.runner.records.store import Store
from concur.workspace import Workspace


@dataclass
class Outcome:
    job: Job
    state: JobState
    ran: bool  # False when the job was already finished and nothing was done
    result: JobResult | None = None  # DONE or FAILED: its result (None when damaged)
    owner: str | None = None  # RUNNING: who runs it (another driver's process, a Slurm job)
    damage: str | None = None  # FAILED because its result.json (or job.json) cannot be read: the line naming the file

    @property
    def finished(self) -> bool:
        """Whether the job has a result (ok or failed): a grid whose every outcome is finished is complete."""
        return self.state in (JobState.DONE, JobState.FAILED)

    @property
    def damaged(self) -> bool:
        return self.damage is not None

    @property
    def error(self) -> str | None:
        """Why the job failed: its damaged file, or its result's error."""
        return self.damage or (self.result.error if self.result else None)


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
    book = ClaimBook(workspace.root)
    finished = settle_finished(job, job_dir, store, book, options.retry_failed)
    if finished is not None:
        return finished
    claim = claim_job(book, job, job_dir, options.retry_failed, echo)
    if isinstance(claim, Outcome):
        if claim.state is JobState.RUNNING:
            raise ConcurError(f"job {job.key} ({job.describe()}) is already running: {claim.owner}")
        index_finished(store, claim, job_dir)
        return claim
    try:
        with Heartbeat(book) as heartbeat:
            heartbeat.add(claim)
            result = execute_job(job, spec, bench, workspace, options, echo, claim=claim)
        store.record(result, job_dir.path)
    finally:
        book.release(claim)
    return Outcome(job, JobState.DONE if result.ok else JobState.FAILED, ran=True, result=result)


def claim_job(book: ClaimBook, job: Job, job_dir: JobDir, retry_failed: bool, echo: Callable[[str], None]) -> Claim | Outcome:
    """Claim a job about to run: the claim, or the outcome that makes running it unnecessary.

    That outcome is RUNNING (with its owner) when a live owner holds the claim, or the finished
    one when the result appeared while this driver looked (another driver just finished it).
    """
    claim = book.acquire(job.key)
    if claim is None:
        holder = book.holder(job.key)
        return Outcome(job, JobState.RUNNING, ran=False, owner=holder.describe() if holder else "another driver")
    finished = finished_outcome(job, job_dir, retry_failed)
    if finished is not None:  # finished by another driver between our look and our claim
        book.release(claim)
        return finished
    fault_point(FaultPoint.CLAIMED)
    if (job_dir.path / JOB_FILE).is_file():
        echo(f"job {job.key} was interrupted before it finished; running it again from the start")
    return claim


def finished_outcome(
    job: Job, job_dir: JobDir, retry_failed: bool, echo: Callable[[str], None] | None = None, damaged_dir: Path | None = None
) -> Outcome | None:
    """The stored outcome of a job that needs no run: done, or failed when failures are not retried.

    With `echo`, a damaged result is reported and its job left alone (a FAILED outcome naming the
    file and the fix): a grid goes on with its other jobs, and the damaged file is never overwritten.
    With `retry_failed` and a `damaged_dir` as well, the damaged file is moved there instead
    (never deleted) and the job runs again.
    """
    try:
        state = job_dir.state()
    except DamagedFileError as error:
        if echo is None:
            raise
        if retry_failed and damaged_dir is not None:
            moved = move_aside(error.path, damaged_dir / job.key / error.path.name)
            echo(f"job {job.key} ({job.describe()}): its damaged {error.path.name} ({error.problem}) is moved to {moved}; running it again")
            return finished_outcome(job, job_dir, retry_failed, echo, damaged_dir)
        echo(f"warning: job {job.key} ({job.describe()}) is not run: {error}")
        return Outcome(job, JobState.FAILED, ran=False, damage=str(error))
    if state is JobState.DONE or (state is JobState.FAILED and not retry_failed):
        return Outcome(job, state, ran=False, result=job_dir.result())
    return None


def settle_finished(
    job: Job,
    job_dir: JobDir,
    store: Store,
    book: ClaimBook,
    retry_failed: bool,
    echo: Callable[[str], None] | None = None,
    damaged_dir: Path | None = None,
) -> Outcome | None:
    """The outcome of a job that needs no run (`finished_outcome`), indexed, and any claim its killed owner left
    removed; None when the job is to run. What every executor does first with each job of a grid."""
    finished = finished_outcome(job, job_dir, retry_failed, echo, damaged_dir)
    if finished is not None:
        index_finished(store, finished, job_dir)
        book.clear_if_stale(job.key)
    return finished


def index_finished(store: Store, outcome: Outcome, job_dir: JobDir) -> None:
    """Index the result of a job this driver found finished (before, or by another driver); a damaged one has none."""
    if outcome.result is not None:
        store.record(outcome.result, job_dir.path)


def recheck_held(book: ClaimBook, job: Job, job_dir: JobDir, echo: Callable[[str], None]) -> Claim | Outcome:
    """Look again at a job another owner held: its outcome once it has a result, this driver's claim once the
    owner is gone (dead, a zombie, its heartbeat stale, or it let the job go without a result), else RUNNING.

    A result the other owner wrote meanwhile is taken as it is, failed ones too: it is this
    run's attempt, not an earlier failure that --retry-failed would run again.
    """
    finished = finished_outcome(job, job_dir, retry_failed=False, echo=echo)
    if finished is not None:
        return finished
    holder = book.holder(job.key)
    why = "its owner let it go without a result" if holder is None else book.why_stale(holder)
    if why is None:
        return Outcome(job, JobState.RUNNING, ran=False, owner=holder.describe() if holder else None)
    claimed = claim_job(book, job, job_dir, False, echo)
    if isinstance(claimed, Claim):
        echo(f"job {job.key} ({job.describe()}): {why}; this driver takes it over")
    return claimed


def raise_unless_complete(outcomes: list[Outcome]) -> None:
    """End a grid that is not complete in the error that says what is missing and the fix that works for it."""
    failed = [outcome for outcome in outcomes if outcome.state is JobState.FAILED]
    unfinished = [outcome for outcome in outcomes if not outcome.finished]
    left = f"; {_unfinished_phrase(unfinished)}" if unfinished else ""
    if failed:
        damaged = sum(outcome.damaged for outcome in failed)
        ran_and_failed = len(failed) - damaged
        parts = []
        if ran_and_failed:
            parts.append(f"{ran_and_failed} failed: `concur status` shows their errors, --retry-failed runs them again")
        if damaged:
            parts.append(
                f"{damaged} {'has a damaged result file' if damaged == 1 else 'have damaged result files'} (named above): "
                "`concur store check` lists them, and --retry-failed (or `concur store rebuild`) moves them aside and runs the jobs again"
            )
        raise JobsFailedError(f"{len(failed)} of {len(outcomes)} jobs have no usable result: " + "; ".join(parts) + left)
    if unfinished:
        raise JobsUnfinishedError(f"{len(unfinished)} of {len(outcomes)} jobs have no result yet: {_unfinished_phrase(unfinished)}")


def _unfinished_phrase(unfinished: list[Outcome]) -> str:
    """The jobs without a result, by who has them, and how to finish them."""
    owners = Counter(_owner_kind(outcome) for outcome in unfinished)
    parts = [f"{count} {kind}" for kind, count in owners.items()]
    held = any(outcome.state is JobState.RUNNING for outcome in unfinished)
    how = "run the same command again (without --no-wait) to wait for them" if held else "run the same command again to run them"
    return ", ".join(parts) + f"; {how} (it runs only the jobs without a result), or `concur status` to see them"


def _owner_kind(outcome: Outcome) -> str:
    if outcome.state is JobState.INTERRUPTED:
        return "interrupted (they run again)"
    owner = outcome.owner or "another driver"
    return "queued in Slurm" if owner.startswith("Slurm job") else f"running in {owner}"
