"""The Slurm executor: jobs submitted as arrays through submitit, with resources from each approach's spec.

Jobs with the same resources (GPUs, cores, memory, time limit: `[resources]` of the approach,
partition and account from the user's Slurm config) go out as one job array. Each Slurm task
runs one worker (`run_request_file`), which writes only its job directory, so the runs
directory must be on a filesystem the nodes share. Slurm requeues a task after preemption or
a node failure (`--requeue`); the worker starts its job from a clean directory, and records
how often it was restarted. The driver can wait, showing the grid, or exit at once:
`concur study collect` (or a rerun) later indexes what the workers wrote and records the
tasks that ended without a result (cancelled, out of time, out of memory) as failed, with
the path of their Slurm log. Submissions are remembered in `runs/slurm/submissions.jsonl`,
so rerunning a driver never submits a job that is still queued or running.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from concur.errors import ClaimLostError, ConcurError, JobInterrupted
from concur.registry.tables import Table
from concur.runner.execution.one_job import RunOptions, now
from concur.runner.execution.request import JobRequest, failed_result, run_request
from concur.runner.execution.worker import log_lines_to_stdout
from concur.runner.records.claims import Claim, ClaimBook
from concur.runner.records.jobdir import JobDir, JobState
from concur.runner.records.result import JobResult
from concur.runner.records.slurm_queue import QueueStates, is_alive, is_queued, queue_states
from concur.runner.records.store import Store
from concur.runner.scheduling.outcomes import Outcome, claim_job, index_finished, recheck_held, settle_finished
from concur.runner.scheduling.worker_pool import Task
from concur.userfiles import load_toml
from concur.workspace import Workspace

CONFIG_ENV = "CONCUR_SLURM_CONFIG"
DEFAULT_CONFIG = Path("~/.config/concur/slurm.toml")
POLL_SECONDS = 5.0
INTERRUPTING_SIGNALS = (signal.SIGTERM, signal.SIGUSR2)  # what Slurm (and submitit's --signal) send a task it stops
# Why a job may wait forever: what it asks for exceeds what the partition, its QOS or its account allows.
NEVER_STARTS = frozenset({"PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints", "InvalidAccount", "InvalidQOS"})

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SlurmConfig:
    """Site settings for submissions (the specs say what a job needs; this says where it may run)."""

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    array_parallelism: int = 256  # tasks of one array running at once
    additional: dict[str, Any] = field(default_factory=dict)  # more sbatch options, e.g. {constraint = "h100"}


@dataclass(frozen=True)
class Submission:
    key: str
    slurm_id: str  # e.g. "1234_5": task 5 of array 1234
    request: str  # path of the job's request file
    log: str  # the task's stderr, kept by submitit
    submitted_at: str


@dataclass
class Submitted:
    """What submitting a grid found and did."""

    finished: list[Outcome] = field(default_factory=list)  # jobs with a result already
    submissions: list[Submission] = field(default_factory=list)  # jobs in Slurm's queue: submitted now, or before
    held: list[Outcome] = field(default_factory=list)  # RUNNING: jobs another driver holds, with their owners


def load_slurm_config(path: Path | None) -> SlurmConfig:
    """`path`, else $CONCUR_SLURM_CONFIG, else ~/.config/concur/slurm.toml, else the cluster's defaults."""
    chosen = path or (Path(os.environ[CONFIG_ENV]) if os.environ.get(CONFIG_ENV) else DEFAULT_CONFIG.expanduser())
    if not chosen.is_file():
        if path is not None or os.environ.get(CONFIG_ENV):
            raise ConcurError(f"Slurm config {chosen} does not exist")
        return SlurmConfig()
    table = Table(load_toml(chosen), chosen)
    table.reject_unknown({"partition", "account", "qos", "array_parallelism", "additional"})
    parallelism = table.get("array_parallelism", int, SlurmConfig.array_parallelism)
    if parallelism < 1:
        raise table.error("array_parallelism", f"must be at least 1, got {parallelism}")
    return SlurmConfig(
        partition=table.get("partition", str),
        account=table.get("account", str),
        qos=table.get("qos", str),
        array_parallelism=parallelism,
        additional=table.get("additional", dict, {}),
    )


def run_request_file(path: str) -> str:
    """What a Slurm task runs (pickled by submitit): one worker for the job of this request.

    SIGTERM (preemption, `scontrol requeue`, the time limit) and SIGUSR2 (submitit's warning
    before the time limit) stop the job: it is left interrupted, with no result and its claim
    released, so Slurm's requeue or the next run of the grid runs it again from the start.
    """
    log_lines_to_stdout()  # the task's output file (submitit's %j_%t_log.out) keeps them
    with _signals_interrupt():
        try:
            result = run_request(JobRequest.read(Path(path)), echo=logger.info)
        except JobInterrupted as interruption:
            logger.warning("interrupted by %s: left without a result, to be run again", interruption)
            return "interrupted"
        except ClaimLostError as error:  # another driver runs the job now
            logger.warning("%s", error)
            return "not run"
    return result.status


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """Turn SIGTERM and SIGUSR2 into JobInterrupted in the main thread (replacing submitit's handlers)."""

    def interrupt(signum: int, frame: Any) -> None:
        raise JobInterrupted(signal.Signals(signum).name)

    previous = {signum: signal.signal(signum, interrupt) for signum in INTERRUPTING_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class SlurmExecutor:
    """Submit tasks to Slurm, and collect what their workers wrote."""

    def __init__(
        self,
        workspace: Workspace,
        store: Store,
        registry_dirs: Sequence[Path],
        config: SlurmConfig,
        options: RunOptions,
        echo: Callable[[str], None],
        time_limit_seconds: float | None = None,
    ) -> None:
        self.workspace, self.store, self.registry_dirs = workspace, store, list(registry_dirs)
        self.config, self.options, self.echo, self.time_limit_seconds = config, options, echo, time_limit_seconds
        self.claims = ClaimBook(workspace.root)
        self.folder = workspace.root / "slurm"
        self.ledger = self.folder / "submissions.jsonl"

    def submit(self, tasks: Sequence[Task]) -> Submitted:
        """Submit every task without a result that is not already queued or held by another driver."""
        submitted = Submitted()
        remembered = self.submissions()
        alive = self._alive(remembered, self._queue_states(remembered))
        claimed: list[tuple[Task, Claim]] = []
        seen: set[str] = set()
        queued: set[str] = set()  # jobs without a result that a submission still in the queue will run
        damaged_dir = self.workspace.damaged_aside()
        for task in tasks:
            key = task.job.key
            if key in seen:
                continue
            seen.add(key)
            job_dir = JobDir(self.workspace.jobs_dir / key)
            outcome = settle_finished(task.job, job_dir, self.store, self.claims, self.options.retry_failed, self.echo, damaged_dir)
            if outcome is not None:
                submitted.finished.append(outcome)
            elif key in alive:
                self.echo(f"job {key} ({task.job.describe()}) is queued as Slurm job {alive[key].slurm_id}; not submitting it again")
                queued.add(key)
            else:
                claim = claim_job(self.claims, task.job, job_dir, self.options.retry_failed, self.echo)
                if isinstance(claim, Outcome):
                    if claim.state is JobState.RUNNING:
                        self.echo(f"job {key} ({task.job.describe()}) is running in {claim.owner}; not submitting it")
                        submitted.held.append(claim)
                    else:
                        index_finished(self.store, claim, job_dir)
                        submitted.finished.append(claim)
                    continue
                claimed.append((task, claim))
        submitted.submissions += [alive[key] for key in alive if key in queued]  # not those that finished meanwhile
        submitted.submissions += self._submit_claimed(claimed)
        self.claims.sweep()
        return submitted

    def wait(self, submitted: Submitted, tasks: Sequence[Task], progress: Any = None) -> list[Outcome]:
        """Poll until every submission has a result or left the queue without one, indexing each as it ends, and
        every job another driver held has a result (one whose owner dies is claimed and submitted from here)."""
        by_key = {task.job.key: task for task in tasks}
        open_ = {submission.key: submission for submission in submitted.submissions}
        held = {outcome.job.key: outcome for outcome in submitted.held}
        outcomes: list[Outcome] = []
        while open_ or held:
            pending = list(open_.values())
            for submission, result in self._collect(pending, self._queue_states(pending)):
                outcome = Outcome(by_key[submission.key].job, _state(result), ran=True, result=result)
                outcomes.append(outcome)
                del open_[submission.key]
                if progress is not None:
                    progress.finished(outcome)
            for key in list(held):
                looked = recheck_held(self.claims, held[key].job, JobDir(self.workspace.jobs_dir / key), self.echo)
                if isinstance(looked, Outcome) and looked.state is JobState.RUNNING:
                    continue
                del held[key]
                if isinstance(looked, Outcome):
                    index_finished(self.store, looked, JobDir(self.workspace.jobs_dir / key))
                    outcomes.append(looked)
                    if progress is not None:
                        progress.settled_elsewhere(looked)
                else:
                    for submission in self._submit_claimed([(by_key[key], looked)]):
                        open_[submission.key] = submission
            if open_ or held:
                time.sleep(POLL_SECONDS)
        self.claims.sweep(outcome.job.key for outcome in outcomes if outcome.finished)
        return outcomes

    def _submit_claimed(self, claimed: Sequence[tuple[Task, Claim]]) -> list[Submission]:
        """Submit claimed tasks, one job array per allocation they need."""
        groups: dict[tuple[int, int, int, int], list[tuple[Task, Claim]]] = {}
        for task, claim in claimed:
            job_dir = JobDir(self.workspace.jobs_dir / task.job.key)
            if job_dir.state() is JobState.FAILED:  # --retry-failed: the old result must not read as this run's
                job_dir.reset()
            groups.setdefault(self._resources(task), []).append((task, claim))
        submissions: list[Submission] = []
        for resources, group in groups.items():
            submissions += self._submit_array(resources, group)
        return submissions

    def collect(self) -> tuple[int, int]:
        """Index what every remembered submission wrote, recording those that left the queue without a result.

        Returns (jobs finished, jobs still queued). Safe to call any number of times, from any process.
        """
        submissions = self.submissions()
        states = self._queue_states(submissions)  # one answer for both counts, so they never disagree
        finished = self._collect(submissions, states)
        return len(finished), len(self._alive(submissions, states))

    def submissions(self) -> list[Submission]:
        """Every submission remembered in the ledger (the latest per job)."""
        if not self.ledger.is_file():
            return []
        latest: dict[str, Submission] = {}
        for line in self.ledger.read_text(encoding="utf-8").splitlines():
            if line.strip():
                entry = Submission(**json.loads(line))
                latest[entry.key] = entry
        return list(latest.values())

    def _submit_array(self, resources: tuple[int, int, int, int], group: list[tuple[Task, Claim]]) -> list[Submission]:
        """One job array for claimed tasks that need the same allocation; each task's request is written first,
        and each claim is handed to its Slurm task once submitted (released if sbatch refuses)."""
        import submitit
        from submitit.core.utils import FailedJobError, FailedSubmissionError

        gpus, cpus, memory_gb, minutes = resources
        executor = submitit.SlurmExecutor(folder=self.folder / "%j")
        parameters: dict[str, Any] = {
            "job_name": "concur",
            "time": minutes,
            "cpus_per_task": cpus,
            "mem": f"{memory_gb}G",
            "array_parallelism": self.config.array_parallelism,
            "additional_parameters": {"requeue": True, **self.config.additional},
        }
        if gpus:
            parameters["gpus_per_node"] = gpus
        for name in ("partition", "account", "qos"):
            if getattr(self.config, name):
                parameters[name] = getattr(self.config, name)
        executor.update_parameters(**parameters)
        requests_dir = self.workspace.root / "requests"
        requests_dir.mkdir(parents=True, exist_ok=True)
        paths = []
        for task, claim in group:
            options = replace(self.options, device="cuda" if gpus else "cpu", threads=self.options.threads or cpus)
            path = requests_dir / f"{task.job.key}.json"
            JobRequest.make(task.job, self.registry_dirs, self.workspace, options, claim).write(path)
            paths.append(path)
        allocation = f"{gpus} GPU, {cpus} cores, {memory_gb} GB, {minutes} min"
        try:
            jobs = executor.map_array(run_request_file, [str(path) for path in paths])
        except (FailedJobError, FailedSubmissionError) as error:
            for _, claim in group:
                self.claims.release(claim)
            raise ConcurError(f"sbatch refused an array of {len(group)} jobs ({allocation}): {error}") from error
        stamp = now()
        submissions = [
            Submission(task.job.key, str(job.job_id), str(path), str(job.paths.stderr), stamp)
            for (task, _), path, job in zip(group, paths, jobs)
        ]
        for submission, (_, claim) in zip(submissions, group):
            self._remember(submission)
            self.claims.hand_to_slurm(claim, submission.slurm_id)
        self.echo(f"submitted {len(group)} jobs as Slurm array {jobs[0].job_id.split('_')[0]} ({allocation})")
        return submissions

    def _collect(self, submissions: Sequence[Submission], states: QueueStates) -> list[tuple[Submission, JobResult | None]]:
        """The submissions that ended by Slurm's `states`, each with its indexed result (a failure written for one
        that left no result)."""
        ended: list[tuple[Submission, JobResult | None]] = []
        for submission in submissions:
            job_dir = JobDir(self.workspace.jobs_dir / submission.key)
            result = job_dir.result()
            state, reason = states.get(submission.slurm_id, ("", ""))
            if result is None and is_alive(state):
                if reason not in NEVER_STARTS:
                    continue
                subprocess.run(["scancel", submission.slurm_id], capture_output=True, timeout=60)
                error = (
                    f"SlurmJobRefused: Slurm would never start job {submission.slurm_id} (pending: {reason}), so it was cancelled; "
                    "ask for fewer resources (--threads, the approach's [resources]) or another partition (--slurm-config)"
                )
                result = self._write_failure(submission, job_dir, error)
            elif result is None and job_dir.interrupted() is not None and state != "CANCELLED":  # scancel: a failure, not a preemption
                interruption = job_dir.interrupted() or {}
                how = f"ended as {state}" if state else "left the queue"
                self.echo(
                    f"job {submission.key}: Slurm job {submission.slurm_id} got {interruption.get('signal')} and {how}; "
                    "it is left interrupted and runs again when the grid is run again (if it was out of time: --time-limit)"
                )
                ended.append((submission, None))
                continue
            elif result is None:
                how = f"ended as {state}" if state else "left the queue"
                error = (
                    f"SlurmJobEnded: Slurm job {submission.slurm_id} {how} without a result "
                    f"(cancelled, out of time or memory, or its node failed); its log: {submission.log}"
                )
                result = self._write_failure(submission, job_dir, error)
            if result is None:
                continue  # another owner took the job over; its result is indexed when it ends
            self.store.record(result, job_dir.path)
            ended.append((submission, result))
        return ended

    def _write_failure(self, submission: Submission, job_dir: JobDir, error: str) -> JobResult | None:
        """Record the failure of a Slurm job that ended without a result, holding the job's claim meanwhile
        (so of several collectors one writes it); None when another owner has taken the job over."""
        ended = submission.slurm_id
        book = ClaimBook(self.workspace.root, queue_check=lambda slurm_id: False if slurm_id == ended else is_queued(slurm_id))
        claim = book.acquire(submission.key)
        if claim is None:
            return None
        try:
            if job_dir.result() is None:
                job_dir.path.mkdir(parents=True, exist_ok=True)
                job_dir.write_result(failed_result(JobRequest.read(Path(submission.request)), error))
            return job_dir.result()
        finally:
            book.release(claim)

    def _alive(self, submissions: Sequence[Submission], states: QueueStates) -> dict[str, Submission]:
        """The submissions still in Slurm's queue by its `states` (pending, running, requeued, held, stopped)."""
        return {s.key: s for s in submissions if is_alive(states.get(s.slurm_id, ("", ""))[0])}

    def _queue_states(self, submissions: Sequence[Submission]) -> QueueStates:
        return queue_states(s.slurm_id for s in submissions)

    def _remember(self, submission: Submission) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.ledger, "a", encoding="utf-8") as ledger:
            ledger.write(json.dumps(submission.__dict__) + "\n")

    def _resources(self, task: Task) -> tuple[int, int, int, int]:
        """(GPUs, cores, memory GB, minutes) of a task's Slurm allocation."""
        resources = task.spec.resources
        gpus = 0 if self.options.device == "cpu" else resources.gpus
        cpus = self.options.threads or resources.cpus
        seconds = self.time_limit_seconds or resources.time_limit_hours * 3600
        return gpus, cpus, max(1, round(resources.memory_gb)), max(1, round(seconds / 60))


def collect_submitted(workspace: Workspace, store: Store, echo: Callable[[str], None]) -> None:
    """Index what the Slurm jobs submitted from this runs dir wrote, recording those that ended without a
    result, and say how many ended; nothing when no job was ever submitted here (no Slurm needed then).

    Collecting reads only the ledger, the job directories and the queue, so it needs no Slurm config.
    """
    slurm = SlurmExecutor(workspace, store, [], SlurmConfig(), RunOptions(), echo)
    if slurm.submissions():
        ended, queued = slurm.collect()
        echo(f"Slurm: {ended} submitted jobs have ended, {queued} are still queued or running")


def _state(result: JobResult | None) -> JobState:
    if result is None:
        return JobState.INTERRUPTED
    return JobState.DONE if result.ok else JobState.FAILED
