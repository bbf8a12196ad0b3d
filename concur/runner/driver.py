"""The driver of a grid: expand it, check and prepare its data, and run every job without a result.

This is what `concur run` and `concur study run` do between parsing and printing. Every
benchmark's sources are looked for before anything is prepared or run, so a missing file
stops the grid at once with all missing files named (an unattended study must not stop
hours in). The jobs then run in worker processes here (`concur.runner.pool`) or as Slurm
job arrays (`concur.runner.slurm`); each finished job is indexed as it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from concur.data.prepare import PreparedBenchmark, prepare
from concur.data.sources import SourceLocator
from concur.devices import resolve_device, visible_gpus
from concur.errors import ConcurError
from concur.registry.registry import Registry
from concur.runner.availability import check_sources
from concur.runner.estimate import Speeds, job_estimate, throughputs
from concur.runner.executors import Execution, Executor
from concur.runner.grid import GridPoint, GridRequest, expand_grid
from concur.runner.jobs import make_job
from concur.runner.local import Outcome
from concur.runner.pool import LocalPool, PoolSettings, Task
from concur.runner.progress_view import GridProgress
from concur.runner.slurm import SlurmExecutor, load_slurm_config
from concur.runner.store import Store
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
) -> GridRun | None:
    """Run every job of the grid that has no result yet; None when they were queued in Slurm without waiting.

    Without `download` a source file only available online counts as missing too. `echo` is
    told what happens as it happens (starts, ends, retries, submissions).
    """
    if execution.cuda_graphs and execution.executor is Executor.local and resolve_device(execution.device) == "cpu":
        raise ConcurError("--cuda-graphs records CUDA graphs, which needs a GPU; this grid runs on the CPU (leave --cuda-graphs out)")
    points = expand_grid(registry, request)  # every name checked, every setting drawn, before any data is prepared
    check_sources([point.bench for point in points], locator, workspace.data_dir, download=download)
    prepared = _prepare(points, locator, workspace.data_dir)
    with Store(workspace.db_path) as store:
        tasks = _tasks(points, prepared, request, throughputs(store.rows()))
        if execution.executor is Executor.slurm:
            outcomes = _run_on_slurm(tasks, execution, registry_dirs, workspace, store, echo)
        else:
            outcomes = _run_here(tasks, execution, registry_dirs, workspace, store, echo)
    return None if outcomes is None else GridRun(outcomes, len(points))


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
    registry_dirs: Sequence[Path],
    workspace: Workspace,
    store: Store,
    echo: Callable[[str], None],
) -> list[Outcome]:
    """Worker processes on this machine; a single job streams its output, a grid shows its progress instead."""
    settings = PoolSettings(
        execution.run_options(),
        gpus=visible_gpus(execution.device),
        jobs_per_gpu=execution.jobs_per_gpu,
        cpu_workers=execution.workers,
        max_attempts=execution.max_attempts,
        time_limit_seconds=execution.time_limit_seconds(),
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
) -> list[Outcome] | None:
    """Submit what has no result; wait for it (the outcomes, in grid order) or return None at once."""
    config = load_slurm_config(execution.slurm_config)
    slurm = SlurmExecutor(workspace, store, registry_dirs, config, execution.run_options(), echo, execution.time_limit_seconds())
    finished, submissions = slurm.submit(tasks)
    if not execution.wait:
        echo(
            f"{len(submissions)} jobs are queued in Slurm, {len(finished)} were finished before; "
            "`concur status` or `concur study collect FILE` indexes their results as they end"
        )
        return None
    with GridProgress(len(submissions), echo) as progress:
        ran = {outcome.job.key: outcome for outcome in slurm.wait(submissions, tasks, progress)}
    before = {outcome.job.key: outcome for outcome in finished}
    unique = {task.job.key: task for task in tasks}
    return [before.get(key) or ran[key] for key in unique]
