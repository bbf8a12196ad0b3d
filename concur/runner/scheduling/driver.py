"""The driver of a grid: expand it, check and prepare its data, and run every job without a result.

This is what `concur run` and `concur study run` do between parsing and printing. The
options and every benchmark's sources are checked before anything is prepared or run, so a
wrong device or a missing file stops the grid at once with all missing files named (an
unattended study must not stop hours in). The jobs then run in worker processes here
(`concur.runner.scheduling.worker_pool`) or as Slurm job arrays (`concur.runner.scheduling.slurm`); each finished job is
indexed as it ends, and jobs other drivers hold are waited for unless told not to, so a grid
that returns without RUNNING outcomes is complete.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from concur.approaches.precision import device_precision_problem
from concur.data.prepare import PreparedBenchmark, prepare
from concur.data.sources import SourceLocator
from concur.devices import Gpu, device_problem, visible_gpus
from concur.errors import ConcurError, DamagedFileError
from concur.registry.registry import Registry
from concur.runner.planning.availability import check_sources
from concur.runner.planning.estimate import Speeds, job_estimate, throughputs
from concur.runner.planning.grid import GridPoint, GridRequest, expand_grid
from concur.runner.planning.jobs import make_job
from concur.runner.records.jobdir import JobDir, JobState
from concur.runner.records.store import Store
from concur.runner.scheduling.executor import Execution, Executor
from concur.runner.scheduling.outcomes import Outcome
from concur.runner.scheduling.progress_view import GridProgress
from concur.runner.scheduling.slurm import SlurmExecutor, load_slurm_config
from concur.runner.scheduling.worker_pool import LocalPool, PoolSettings, Task
from concur.stopping import Stopped
from concur.workspace import Workspace


@dataclass(frozen=True)
class GridRun:
    """What running a grid came to."""

    outcomes: list[Outcome]  # one per distinct job, in grid order
    points: int  # grid points: more than the outcomes when points repeat another's settings


def run_grid(
    request: GridRequest,
    execution: Execution,
    *,
    registry: Registry,
    registry_dirs: Sequence[Path],
    workspace: Workspace,
    locator: SourceLocator,
    echo: Callable[[str], None],
    download: bool = True,
) -> GridRun:
    """Run every job of the grid that has no result yet, and wait for those other drivers hold (`execution.wait`).

    Without `download` a source file only available online counts as missing too. `echo` is
    told what happens as it happens (starts, ends, retries, submissions). A signal stops it
    with `Stopped`, whose summary says how many jobs have a result and how many do not.
    """
    problem = device_problem(execution.device)
    if problem is not None:
        raise ConcurError(f"--device: {problem}")
    gpus = visible_gpus(execution.device) if execution.executor is Executor.local else ()  # before any data is prepared
    if execution.cuda_graphs and execution.executor is Executor.local and not gpus:
        raise ConcurError("--cuda-graphs records CUDA graphs, which needs a GPU; this grid runs on the CPU (leave --cuda-graphs out)")
    points = expand_grid(registry, request)  # every name checked, every setting drawn, before any data is prepared
    if execution.executor is Executor.local:
        problem = device_precision_problem("cuda" if gpus else "cpu", request.precision)
        if problem is not None:
            raise ConcurError(f"precision {request.precision}: {problem}")
    tasks: list[Task] = []
    try:
        check_sources([point.bench for point in points], locator, workspace.data_dir, download=download)
        prepared = _prepare(points, locator, workspace.data_dir)
        with Store(workspace.db_path) as store:
            tasks = _tasks(points, prepared, request, throughputs(store.rows()))
            if execution.executor is Executor.slurm:
                outcomes = _run_on_slurm(tasks, execution, registry_dirs, workspace, store, echo)
            else:
                outcomes = _run_here(tasks, execution, gpus, registry_dirs, workspace, store, echo)
    except KeyboardInterrupt as interrupt:
        raise Stopped.of(interrupt, _how_far(tasks, workspace)) from None
    return GridRun(outcomes, len(points))


def _how_far(tasks: Sequence[Task], workspace: Workspace) -> str:
    """How far a stopped grid got, by its job directories: `5 of 18 jobs done, 13 not run`."""
    keys = list(dict.fromkeys(task.job.key for task in tasks))
    if not keys:
        return "no job had started"
    states: Counter[str] = Counter()
    for key in keys:
        try:
            states[JobDir(workspace.jobs_dir / key).state().value] += 1
        except DamagedFileError:
            states["damaged"] += 1
    running = states[JobState.RUNNING.value]
    parts = [f"{states[JobState.DONE.value]} of {len(keys)} jobs done"]
    parts += [f"{states[state]} {state}" for state in (JobState.FAILED.value, "damaged") if states[state]]
    parts.append(f"{states[JobState.PENDING.value] + states[JobState.INTERRUPTED.value]} not run")
    if running:
        parts.append(f"{running} still running elsewhere (another driver or Slurm)")
    return ", ".join(parts)


def _prepare(points: Sequence[GridPoint], locator: SourceLocator, data_dir: Path) -> dict[str, PreparedBenchmark]:
    """Each benchmark of the grid materialised (or verified, when it already is), once."""
    prepared: dict[str, PreparedBenchmark] = {}
    for point in points:
        if point.bench.id not in prepared:
            prepared[point.bench.id], _ = prepare(point.bench, locator, data_dir)
    return prepared


def _tasks(points: Sequence[GridPoint], prepared: dict[str, PreparedBenchmark], request: GridRequest, measured: Speeds) -> list[Task]:
    """One task per grid point, with its estimated wall seconds (0 when its approach was never measured)."""
    tasks = []
    for point in points:
        bench = prepared[point.bench.id]
        job = make_job(point.approach, bench, seed=point.seed, setting=point.setting, budget=request.budget, precision=request.precision)
        estimate = job_estimate(job, bench, measured)
        tasks.append(Task(job, point.approach, 0.0 if estimate is None else estimate.wall_seconds))
    return tasks


def _run_here(
    tasks: list[Task],
    execution: Execution,
    gpus: tuple[Gpu, ...],
    registry_dirs: Sequence[Path],
    workspace: Workspace,
    store: Store,
    echo: Callable[[str], None],
) -> list[Outcome]:
    """Worker processes on this machine; a single job streams its output, a grid shows its progress instead."""
    settings = PoolSettings(
        execution.run_options(),
        gpus=gpus,
        jobs_per_gpu=execution.jobs_per_gpu,
        cpu_workers=execution.workers,
        max_attempts=execution.max_attempts,
        time_limit_seconds=execution.time_limit_seconds(),
        wait=execution.wait,
    )
    pool = LocalPool(workspace, store, registry_dirs, settings, echo, stream_output=len(tasks) == 1)
    with GridProgress(len({task.job.key for task in tasks}), echo) as progress:
        return pool.run(tasks, progress if len(tasks) > 1 else None)


def _run_on_slurm(
    tasks: list[Task],
    execution: Execution,
    registry_dirs: Sequence[Path],
    workspace: Workspace,
    store: Store,
    echo: Callable[[str], None],
) -> list[Outcome]:
    """Submit what has no result; wait for it and for the jobs other drivers hold, or return at once, the
    jobs without a result RUNNING with their owners (a Slurm job, another driver)."""
    config = load_slurm_config(execution.slurm_config)
    slurm = SlurmExecutor(workspace, store, registry_dirs, config, execution.run_options(), echo, execution.time_limit_seconds())
    submitted = slurm.submit(tasks)
    if execution.wait:
        with GridProgress(len(submitted.submissions) + len(submitted.held), echo) as progress:
            ended = slurm.wait(submitted, tasks, progress)
    else:
        by_key = {task.job.key: task for task in tasks}
        queued = [Outcome(by_key[s.key].job, JobState.RUNNING, ran=False, owner=f"Slurm job {s.slurm_id}") for s in submitted.submissions]
        ended = [*submitted.held, *queued]
    known = {outcome.job.key: outcome for outcome in [*submitted.finished, *ended]}
    return [known[key] for key in dict.fromkeys(task.job.key for task in tasks)]
