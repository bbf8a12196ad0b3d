"""The local executor: worker processes over this machine's GPUs (or CPU cores), one driver that indexes.

Each job runs in its own worker process (`concur.runner.execution.worker`), pinned to one GPU with
CUDA_VISIBLE_DEVICES, or given a set number of CPU threads. A job whose spec says it is
small (`[resources] small = true`: the 2016-2018 readers leave a GPU mostly idle) shares
its GPU with other small jobs, up to `jobs_per_gpu` and the GPU's memory by the specs'
estimates; other jobs get a GPU to themselves. Jobs start longest first (by the durations
already measured), so the last one to finish is a short one.

A job is claimed (`concur.runner.records.claims`) just before its worker starts, so drivers on any
number of hosts sharing one runs dir split a grid between them and never run a job twice;
the driver refreshes its claims while their workers run and releases each once its result is
indexed. A job another driver holds is waited for: taken as finished when its result appears,
and taken over when its owner dies (its process gone or a zombie, its heartbeat stale), so a
grid that returns has a result for every job unless told not to wait. Only drivers write the
SQLite index; workers write their job directories. Faults are recorded: a worker that dies
without a result (killed, crashed) is retried up to `max_attempts` times with the reasons
kept; a job past its time limit is stopped and recorded as failed; a worker stopped by a full
disk ends the grid with the path and the free space, recording nothing as failed. Workers
die with the driver (Linux: PR_SET_PDEATHSIG), so a killed driver leaves no orphan that could
write a result nobody indexes; rerunning it runs exactly the jobs without a result.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, Protocol

from concur.components import resolve
from concur.devices import Gpu, usable_cores
from concur.errors import StorageError
from concur.oserrors import free_space
from concur.registry.specs import ApproachSpec
from concur.runner.execution.faults import FaultPoint, fault_point
from concur.runner.execution.one_job import RunOptions
from concur.runner.execution.request import JobRequest, failed_result
from concur.runner.execution.worker import DRIVER_PID_ENV, STORAGE_EXIT
from concur.runner.planning.jobs import Job
from concur.runner.records.claims import Claim, ClaimBook, Heartbeat
from concur.runner.records.jobdir import JobDir, JobState
from concur.runner.records.result import JobResult
from concur.runner.records.store import Store
from concur.runner.scheduling.outcomes import Outcome, claim_job, index_finished, recheck_held, settle_finished
from concur.runner.scheduling.zygote_client import ForkedWorker, Zygote, ZygoteError
from concur.stopping import terminate_as_stop
from concur.workspace import Workspace

POLL_SECONDS = 0.25
# Small jobs sharing one GPU by default: a few small jobs fill a GPU that one leaves mostly idle, while many
# at once slow each other down (docs/performance.md, docs/running.md).
DEFAULT_JOBS_PER_GPU = 4
OUTPUT_TAIL_LINES = 5  # lines of a dead worker's output kept in the failure reason
HELD_LOOK_SECONDS = 1.0  # how often the jobs other drivers hold are looked at again (a claim and a result file each)


def worker_modules(specs: Iterable[ApproachSpec]) -> tuple[str, ...]:
    """What the workers of these approaches import, each module once in the order met: a zygote's preload."""
    modules: dict[str, None] = {}
    for spec in specs:
        modules.update(dict.fromkeys(resolve("approach", spec.implementation).modules()))
    return tuple(modules)


@dataclass(frozen=True)
class Task:
    job: Job
    spec: ApproachSpec
    estimate_seconds: float = 0.0  # wall seconds, for longest-first ordering and the ETA; 0 when nothing was measured


@dataclass(frozen=True)
class PoolSettings:
    options: RunOptions  # what every worker runs with (its device is set per worker)
    gpus: tuple[Gpu, ...] = ()  # empty: run on CPU
    jobs_per_gpu: int = DEFAULT_JOBS_PER_GPU  # small jobs sharing one GPU at most
    cpu_workers: int = 1  # parallel jobs without GPUs
    max_attempts: int = 3  # runs of a job whose worker keeps dying
    time_limit_seconds: float | None = None  # overrides every spec's resources.time_limit_hours
    wait: bool = True  # wait for the jobs other drivers hold (taking over those whose owner dies), or leave them to them


def worker_threads(settings: PoolSettings, spec: ApproachSpec, on_gpu: bool, cores: int) -> int:
    """CPU threads of a worker: as given, else an equal share of the cores on the CPU; on a GPU, the
    spec's cpus within the share of a job that may run beside as many others as the GPUs take
    (small jobs: `jobs_per_gpu` per GPU), so that packed jobs do not oversubscribe the cores."""
    if settings.options.threads:
        return settings.options.threads
    if not on_gpu:
        return max(1, cores // settings.cpu_workers)
    sharing = len(settings.gpus) * (settings.jobs_per_gpu if spec.resources.small else 1)
    return max(1, min(spec.resources.cpus, cores // sharing))


@dataclass
class _Todo:
    task: Task
    history: list[dict[str, Any]]  # attempts that died without a result
    claim: Claim | None = None  # taken when the job first starts, kept across its retries
    owner: str | None = None  # while another driver holds the job: who (this driver waits for it)


class WorkerProcess(Protocol):
    """What the pool needs of a worker: a `subprocess.Popen`, or a worker the zygote forked."""

    pid: int

    def poll(self) -> int | None: ...

    def wait(self) -> int: ...


@dataclass
class _Running:
    task: Task
    claim: Claim
    request: JobRequest
    process: WorkerProcess
    gpu: Gpu | None
    started: float
    deadline: float
    output: IO[bytes] | None


class LocalPool:
    """Run tasks in worker processes; returns one outcome per distinct job."""

    def __init__(
        self,
        workspace: Workspace,
        store: Store,
        registry_dirs: Sequence[Path],
        settings: PoolSettings,
        echo: Callable[[str], None],
        *,
        stream_output: bool = False,
    ) -> None:
        self.workspace, self.store, self.registry_dirs = workspace, store, list(registry_dirs)
        self.settings, self.echo, self.stream_output = settings, echo, stream_output
        self.requests_dir = workspace.root / "requests"
        self.claims = ClaimBook(workspace.root)
        self._running: dict[str, _Running] = {}
        self._outcomes: dict[str, Outcome] = {}
        self._heartbeat = Heartbeat(self.claims)
        self._zygote: Zygote | None = None  # forks the workers of a grid; a single job's worker is a new process
        self._held: dict[str, _Todo] = {}  # jobs another driver runs, waited for
        self._held_looked_at = 0.0  # when the held jobs were last looked at (time.monotonic)

    def run(self, tasks: Sequence[Task], progress: Any = None) -> list[Outcome]:
        """Run every task that has no result yet (longest first); `progress` is told of each change.

        A job another driver holds is waited for (`settings.wait`): taken as finished once its
        result appears, taken over once its owner is gone. Without waiting its outcome is RUNNING.
        """
        todo: list[_Todo] = []
        order: list[str] = []
        damaged_dir = self.workspace.damaged_aside()
        for task in tasks:
            key = task.job.key
            if key in order:
                continue  # two grid points with the same settings are one job
            order.append(key)
            job_dir = JobDir(self.workspace.jobs_dir / key)
            retry = self.settings.options.retry_failed
            finished = settle_finished(task.job, job_dir, self.store, self.claims, retry, self.echo, damaged_dir)
            if finished is not None:
                self._outcomes[key] = finished
                continue
            todo.append(_Todo(task, []))
        todo.sort(key=lambda item: -item.task.estimate_seconds)
        self.requests_dir.mkdir(parents=True, exist_ok=True)
        if not self.stream_output and sys.platform.startswith("linux"):
            # GPU workers too, while it has not initialised CUDA: see concur.runner.execution.zygote
            self._zygote = Zygote(os.environ, worker_modules(item.task.spec for item in todo))
        try:
            with Heartbeat(self.claims) as self._heartbeat, terminate_as_stop():
                while todo or self._running or self._held:
                    self._poll(todo, progress)  # first, so that a slot freed since the last look is refilled now
                    self._look_at_held(todo, progress)
                    self._start(todo, progress)
                    if progress is not None:
                        progress.update(
                            [r.task for r in self._running.values()],
                            [t.task for t in todo],
                            list(self._outcomes.values()),
                            [(held.task, held.owner or "") for held in self._held.values()],
                        )
                    if todo or self._running or self._held:
                        self._idle()
        finally:
            for running in self._running.values():  # an exception in the driver: stop the workers it started
                _kill(running.process)
                self.claims.release(running.claim)
            for item in todo:
                if item.claim is not None:
                    self.claims.release(item.claim)
            if self._zygote is not None:
                self._zygote.close()
            self.claims.sweep(key for key, outcome in self._outcomes.items() if outcome.finished)
        return [self._outcomes[key] for key in order]

    def _idle(self) -> None:
        """Wait for the next look: POLL_SECONDS, or less when a forked worker exits sooner."""
        if self._zygote is not None:
            self._zygote.wait_for_exit(POLL_SECONDS)
        else:
            time.sleep(POLL_SECONDS)

    def _start(self, todo: list[_Todo], progress: Any) -> None:
        index = 0
        while index < len(todo):
            item = todo[index]
            placed, gpu = self._place(item.task)
            if not placed:
                index += 1
                continue
            todo.pop(index)
            if item.claim is None:
                job = item.task.job
                job_dir = JobDir(self.workspace.jobs_dir / job.key)
                claimed = claim_job(self.claims, job, job_dir, self.settings.options.retry_failed, self.echo)
                if isinstance(claimed, Outcome) and claimed.state is JobState.RUNNING and self.settings.wait:
                    self.echo(f"job {job.key} ({job.describe()}) is running in {claimed.owner}; waiting for it (--no-wait: leave it)")
                    item.owner = claimed.owner
                    self._held[job.key] = item
                    continue
                if isinstance(claimed, Outcome):
                    self._settled_elsewhere(claimed, progress)
                    continue
                item.claim = claimed
            try:
                self._launch(item, gpu)
            except BaseException:  # not started (a full disk under its request file): its claim is not left behind
                self.claims.release(item.claim)
                raise
            if progress is not None:
                progress.started(item.task, gpu.visible_id if gpu else None)

    def _look_at_held(self, todo: list[_Todo], progress: Any) -> None:
        """Every HELD_LOOK_SECONDS, look again at the jobs other drivers hold: settle those that finished, and claim
        (at the front of `todo`) those whose owner is gone."""
        if not self._held or time.monotonic() - self._held_looked_at < HELD_LOOK_SECONDS:
            return
        self._held_looked_at = time.monotonic()
        for key, item in list(self._held.items()):
            looked = recheck_held(self.claims, item.task.job, JobDir(self.workspace.jobs_dir / key), self.echo)
            if isinstance(looked, Outcome) and looked.state is JobState.RUNNING:
                item.owner = looked.owner or item.owner
                continue
            del self._held[key]
            if isinstance(looked, Outcome):
                self._settled_elsewhere(looked, progress)
            else:
                item.claim, item.owner = looked, None
                todo.insert(0, item)

    def _settled_elsewhere(self, outcome: Outcome, progress: Any) -> None:
        """A job this driver did not run: another driver runs it now (left to it), or has just finished it."""
        job = outcome.job
        if outcome.state is JobState.RUNNING:
            self.echo(f"job {job.key} ({job.describe()}) is running in {outcome.owner}; left to it (--no-wait)")
        index_finished(self.store, outcome, JobDir(self.workspace.jobs_dir / job.key))
        self._outcomes[job.key] = outcome
        if progress is not None:
            progress.settled_elsewhere(outcome)

    def _place(self, task: Task) -> tuple[bool, Gpu | None]:
        """Whether the task can start now, and on which GPU (None: on CPU)."""
        settings = self.settings
        if not settings.gpus or task.spec.resources.gpus == 0:
            cpu_jobs = sum(1 for r in self._running.values() if r.gpu is None)
            return cpu_jobs < settings.cpu_workers, None
        resources = task.spec.resources
        candidates = []
        for gpu in settings.gpus:
            here = [r.task.spec.resources for r in self._running.values() if r.gpu == gpu]
            if not here:
                candidates.append((0, gpu))
            elif resources.small and all(other.small for other in here) and len(here) < settings.jobs_per_gpu:
                if sum(other.gpu_memory_gb for other in here) + resources.gpu_memory_gb <= gpu.memory_gb:
                    candidates.append((len(here), gpu))
        if not candidates:
            return False, None
        return True, min(candidates, key=lambda item: item[0])[1]  # the least loaded GPU

    def _launch(self, item: _Todo, gpu: Gpu | None) -> None:
        settings, task, claim = self.settings, item.task, item.claim
        assert claim is not None  # claimed by _start
        options = replace(settings.options, device="cuda" if gpu else "cpu", threads=self._threads(task, gpu))
        request = replace(JobRequest.make(task.job, self.registry_dirs, self.workspace, options, claim), previous_attempts=item.history)
        request_path = self.requests_dir / f"{task.job.key}.json"
        request.write(request_path)
        output_path = self.requests_dir / f"{task.job.key}.out"
        environment = {
            **os.environ,
            "CUDA_VISIBLE_DEVICES": gpu.visible_id if gpu else "",
            "CONCUR_PROGRESS": "0",
            DRIVER_PID_ENV: str(os.getpid()),
        }
        output = None
        process: WorkerProcess | None = self._forked(request_path, output_path, environment)
        if process is None:
            output = None if self.stream_output else open(output_path, "ab")  # noqa: SIM115
            process = subprocess.Popen(
                [sys.executable, "-m", "concur.runner.execution.worker", str(request_path)],
                stdout=output if output else _stderr_descriptor(),
                stderr=subprocess.STDOUT,
                env=environment,
                start_new_session=True,  # its own process group, so a time limit stops everything it started
            )
        limit = settings.time_limit_seconds or task.spec.resources.time_limit_hours * 3600
        now = time.monotonic()
        self._running[task.job.key] = _Running(task, claim, request, process, gpu, now, now + limit, output)
        self._heartbeat.add(claim)

    def _forked(self, request: Path, output: Path, environment: dict[str, str]) -> ForkedWorker | None:
        """The job's worker forked warm, or None when this pool starts new processes (or its zygote failed)."""
        if self._zygote is None:
            return None
        try:
            return self._zygote.fork(request, output, environment)
        except ZygoteError as error:
            self.echo(f"warm workers stopped ({error}); starting a new process for each job")
            self._zygote = None
            return None

    def _threads(self, task: Task, gpu: Gpu | None) -> int:
        return worker_threads(self.settings, task.spec, gpu is not None, usable_cores())

    def _poll(self, todo: list[_Todo], progress: Any) -> None:
        for key, running in list(self._running.items()):
            code = running.process.poll()
            if code is None and time.monotonic() < running.deadline:
                continue
            del self._running[key]
            if running.output:
                running.output.close()
            job_dir = JobDir(self.workspace.jobs_dir / key)
            if code is None:  # over its time limit
                _kill(running.process)
                limit = _duration(running.deadline - running.started)
                self._finish(
                    running, job_dir, failed_result(running.request, f"TimeLimitExceeded: stopped at its time limit of {limit}"), progress
                )
                continue
            result = job_dir.result()
            if result is not None:
                self._finish(running, job_dir, result, progress)
                continue
            if code == STORAGE_EXIT:  # the disk, not the job: every other job would meet it too
                self._heartbeat.remove(key)
                self.claims.release(running.claim)
                raise StorageError(f"job {key} ({running.task.job.describe()}) stopped without a result: {self._storage_problem(key)}")
            history = [
                *running.request.previous_attempts,
                {"error": self._death(code, key), "gpu": running.gpu.visible_id if running.gpu else None},
            ]
            if len(history) < self.settings.max_attempts:
                self.echo(f"job {key} ({running.task.job.describe()}): worker died ({history[-1]['error']}); retrying")
                todo.insert(0, _Todo(running.task, history, running.claim))
                continue
            error = f"WorkerDied: {history[-1]['error']} (attempt {len(history)} of {self.settings.max_attempts})"
            self._finish(running, job_dir, failed_result(replace(running.request, previous_attempts=history), error), progress)

    def _finish(self, running: _Running, job_dir: JobDir, result: JobResult, progress: Any) -> None:
        try:  # the claim goes whatever happens (a full disk under the index): a result is indexed by its next reader
            if job_dir.result() is None and self.claims.holds(running.claim):  # the driver writes results only for workers that could not
                job_dir.path.mkdir(parents=True, exist_ok=True)
                job_dir.write_result(result)
            fault_point(FaultPoint.UNINDEXED)
            self.store.record(result, job_dir.path)
            fault_point(FaultPoint.INDEXED)
        finally:
            self._heartbeat.remove(running.claim.key)
            self.claims.release(running.claim)
        job = running.task.job
        state = JobState.DONE if result.ok else JobState.FAILED
        self._outcomes[job.key] = Outcome(job, state, ran=True, result=result)
        with contextlib.suppress(FileNotFoundError):
            (self.requests_dir / f"{job.key}.json").unlink()
            if state is JobState.DONE:
                (self.requests_dir / f"{job.key}.out").unlink()
        if progress is not None:
            progress.finished(self._outcomes[job.key])

    def _storage_problem(self, key: str) -> str:
        """What the worker said of the disk (its last output line), else the free space of the runs dir."""
        lines = self._output_tail(key)
        if lines:
            return lines[-1]
        root = self.workspace.root
        return f"its worker could not write to {root} ({free_space(root)}); free some space, then run the same command again"

    def _output_tail(self, key: str) -> list[str]:
        """The last lines a worker printed (none when it streamed them to the terminal)."""
        output = self.requests_dir / f"{key}.out"
        if not output.is_file():
            return []
        return [line.strip() for line in output.read_text(errors="replace").strip().splitlines()[-OUTPUT_TAIL_LINES:] if line.strip()]

    def _death(self, code: int, key: str) -> str:
        reason = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code} without a result"
        tail = self._output_tail(key)
        if tail:
            reason += "; its last output: " + " | ".join(tail)
        return reason


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def _stderr_descriptor() -> int:
    """The descriptor a streaming worker writes to: ours, or fd 2 when sys.stderr is an in-memory stream (CliRunner)."""
    try:
        return sys.stderr.fileno()
    except (OSError, io.UnsupportedOperation):
        return 2


def _kill(process: WorkerProcess) -> None:
    """Stop a worker and everything it started (it leads its own session, or is about to: a just-forked one is killed by pid)."""
    if process.poll() is None:  # an exited worker's pid may be another process's already
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)
    process.wait()
