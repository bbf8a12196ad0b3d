"""`concur run` (a grid of jobs, locally) and `concur status` (what is done, failed, pending)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from concur.cli.common import SOURCE_DIR_OPTION, Format, Settings, err, out, print_json, print_table, settings
from concur.data.prepare import prepare
from concur.devices import DEVICE_CHOICES, visible_gpus
from concur.errors import ConcurError, DamagedFileError, JobsFailedError
from concur.runner.availability import check_sources
from concur.runner.budget import Budget
from concur.runner.estimate import job_estimate, rates
from concur.runner.execute import RunOptions
from concur.runner.grid import GridRequest, expand_grid
from concur.runner.jobdir import JobState
from concur.runner.jobs import make_job
from concur.runner.local import Outcome
from concur.runner.pool import DEFAULT_JOBS_PER_GPU, LocalPool, PoolSettings, Task
from concur.runner.progress_view import GridProgress
from concur.runner.slurm import SlurmConfig, SlurmExecutor, load_slurm_config
from concur.runner.store import Store, active_jobs, finished_jobs, writable
from concur.workspace import Workspace

ERROR_WIDTH = 80
SECONDS_PER_HOUR = 3600.0
STARTED_FIELDS = ("approach", "benchmark", "hparam_id", "seed")  # what status shows of a running job's job.json


APPROACH_OPTION = typer.Option(
    ..., "--approach", "-a", help="Approach ids, globs or families (family:NAME); repeatable or comma-separated, e.g. 'bert-*'."
)
BENCH_OPTION = typer.Option(
    ..., "--bench", "-b", help="Benchmark ids, globs or families; repeatable or comma-separated, e.g. family:human."
)
DEVICE_OPTION = typer.Option("auto", "--device", help=f"One of {', '.join(DEVICE_CHOICES)} or cuda:N.")
THREADS_OPTION = typer.Option(None, "--threads", min=1, help="CPU threads per job (default: the spec's cpus on a GPU, else a share).")
PER_DEVICE_OPTION = typer.Option(
    None, "--per-device-batch-size", min=1, help="Cap examples per forward pass; gradients accumulate to the spec's batch."
)
MODEL_PATH_OPTION = typer.Option(None, "--model-path", help="Local copy of the approach's pretrained weights.")
RETRY_OPTION = typer.Option(False, "--retry-failed", help="Run again jobs that failed before.")
WORKERS_OPTION = typer.Option(1, "--workers", min=1, help="Jobs run at once without a GPU (each gets an equal share of the cores).")
JOBS_PER_GPU_OPTION = typer.Option(
    DEFAULT_JOBS_PER_GPU, "--jobs-per-gpu", min=1, help="Small jobs ([resources] small = true) sharing one GPU at most."
)
ATTEMPTS_OPTION = typer.Option(3, "--max-attempts", min=1, help="Runs of a job whose worker dies without a result.")
TIME_LIMIT_OPTION = typer.Option(None, "--time-limit", min=0.01, help="Minutes a job may run (default: its spec's time_limit_hours).")


class Executor(StrEnum):
    local = "local"
    slurm = "slurm"


EXECUTOR_OPTION = typer.Option(Executor.local, "--executor", help="local: worker processes here; slurm: job arrays through submitit.")
SLURM_CONFIG_OPTION = typer.Option(
    None, "--slurm-config", help="TOML with partition, account, qos, array_parallelism (default: ~/.config/concur/slurm.toml)."
)
WAIT_OPTION = typer.Option(True, "--wait/--no-wait", help="With Slurm: wait for the jobs, or submit and exit (collect later).")
TRAIN_QUESTIONS_OPTION = typer.Option(
    None, "--train-questions", min=1, help="Budget: train on a seeded subset of this many training questions (whole passages first)."
)
TEST_QUESTIONS_OPTION = typer.Option(None, "--test-questions", min=1, help="Budget: score a seeded subset of this many test questions.")
SUBSET_SEED_OPTION = typer.Option(0, "--subset-seed", help="Seed of the budget's subsets.")


@dataclass(frozen=True)
class Execution:
    """How the jobs of a grid run (the options `concur run` and `concur study run` share)."""

    device: str = "auto"
    threads: int | None = None
    per_device_batch_size: int | None = None
    model_path: Path | None = None
    retry_failed: bool = False
    workers: int = 1
    jobs_per_gpu: int = DEFAULT_JOBS_PER_GPU
    max_attempts: int = 3
    time_limit_minutes: float | None = None
    executor: Executor = Executor.local
    slurm_config: Path | None = None
    wait: bool = True


def run(
    ctx: typer.Context,
    approach: list[str] = APPROACH_OPTION,
    bench: list[str] = BENCH_OPTION,
    hparams: int = typer.Option(1, "--hparams", min=1, help="Settings per approach: 0 = its published one, 1..N-1 drawn from its [space]."),
    hparam_seed: int = typer.Option(0, "--hparam-seed", help="Seed of the drawn settings: the same seed always draws the same ones."),
    seeds: str = typer.Option("0", "--seeds", "--seed", help="Training seeds, comma-separated, e.g. 0,1,2."),
    device: str = DEVICE_OPTION,
    threads: int | None = THREADS_OPTION,
    per_device_batch_size: int | None = PER_DEVICE_OPTION,
    model_path: Path | None = MODEL_PATH_OPTION,
    retry_failed: bool = RETRY_OPTION,
    workers: int = WORKERS_OPTION,
    jobs_per_gpu: int = JOBS_PER_GPU_OPTION,
    max_attempts: int = ATTEMPTS_OPTION,
    time_limit: float | None = TIME_LIMIT_OPTION,
    executor: Executor = EXECUTOR_OPTION,
    slurm_config: Path | None = SLURM_CONFIG_OPTION,
    wait: bool = WAIT_OPTION,
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
    train_questions: int | None = TRAIN_QUESTIONS_OPTION,
    test_questions: int | None = TEST_QUESTIONS_OPTION,
    subset_seed: int = SUBSET_SEED_OPTION,
) -> None:
    """Train each APPROACH on each BENCH's train split, test on its test split, store EM/F1.

    Every combination of approaches, benchmarks, hyperparameter settings and seeds is one job;
    a job that already finished is not run again (its stored result is shown). Source files
    not found locally are downloaded.
    """
    budget = Budget(train_questions, test_questions, subset_seed) if train_questions or test_questions else None
    request = GridRequest(",".join(approach), ",".join(bench), hparams=hparams, seeds=_seeds(seeds), hparam_seed=hparam_seed, budget=budget)
    execution = Execution(
        device, threads, per_device_batch_size, model_path, retry_failed, workers, jobs_per_gpu, max_attempts, time_limit,
        executor, slurm_config, wait,
    )  # fmt: skip
    run_grid(settings(ctx), request, execution, source_dir)


def run_grid(
    state: Settings, request: GridRequest, execution: Execution, source_dir: list[Path] | None, *, download: bool = True
) -> list[Outcome]:
    """Expand, check the data, prepare, run every job without a result, index, and report; failures end in a ConcurError.

    Every benchmark's sources are looked for before anything is prepared or run, so a missing
    file stops the grid at once with all missing files named; without `download` a file only
    available online is missing too.
    """
    registry = state.registry()
    points = expand_grid(registry, request)  # every name checked, every setting drawn, before any data is prepared
    workspace = state.workspace()
    locator = state.locator(source_dir)
    check_sources([point.bench for point in points], locator, workspace.data_dir, download=download)
    prepared = {}
    for point in points:
        if point.bench.id not in prepared:
            prepared[point.bench.id], _ = prepare(point.bench, locator, workspace.data_dir)
    store = Store(workspace.db_path)
    rates_by_approach = rates(store.rows())
    tasks = []
    for point in points:
        bench_data = prepared[point.bench.id]
        job = make_job(point.approach, bench_data, seed=point.seed, setting=point.setting, budget=request.budget)
        tasks.append(Task(job, point.approach, job_estimate(job, bench_data, rates_by_approach) or 0.0))
    options = RunOptions(execution.device, execution.threads, execution.per_device_batch_size, execution.model_path, execution.retry_failed)
    echo = lambda line: err.print(line, markup=False)  # noqa: E731
    time_limit_seconds = execution.time_limit_minutes * 60 if execution.time_limit_minutes else None
    if execution.executor is Executor.slurm:
        slurm = SlurmExecutor(
            workspace, store, state.registry_dirs, load_slurm_config(execution.slurm_config), options, echo, time_limit_seconds
        )
        outcomes = _run_on_slurm(slurm, tasks, execution.wait, echo)
        if outcomes is None:
            return []
    else:
        pool_settings = PoolSettings(
            options,
            gpus=visible_gpus(execution.device),
            jobs_per_gpu=execution.jobs_per_gpu,
            cpu_workers=execution.workers,
            max_attempts=execution.max_attempts,
            time_limit_seconds=time_limit_seconds,
        )
        pool = LocalPool(workspace, store, state.registry_dirs, pool_settings, echo, stream_output=len(tasks) == 1)
        with GridProgress(len({task.job.key for task in tasks}), echo) as progress:
            outcomes = pool.run(tasks, progress if len(tasks) > 1 else None)
    if len(outcomes) == 1:
        _report_one(outcomes[0], workspace.jobs_dir)
    else:
        _report_grid(outcomes, len(points))
    return outcomes


def _run_on_slurm(slurm: SlurmExecutor, tasks: list[Task], wait: bool, echo: Any) -> list[Outcome] | None:
    """Submit what has no result; wait for it (the outcomes, in grid order) or return None at once."""
    finished, submissions = slurm.submit(tasks)
    if not wait:
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


def collect_slurm(workspace: Workspace, store: Store) -> None:
    """Index what Slurm jobs wrote, recording those that ended without a result, when anything was submitted here."""
    slurm = SlurmExecutor(workspace, store, [], SlurmConfig(), RunOptions(), lambda line: err.print(line, markup=False))
    if slurm.submissions():
        ended, queued = slurm.collect()
        err.print(f"Slurm: {ended} submitted jobs have ended, {queued} are still queued or running")


def _report_one(outcome: Outcome, jobs_dir: Path) -> None:
    job, result = outcome.job, outcome.result
    job_dir = jobs_dir / job.key
    if result.get("damaged"):
        raise ConcurError(f"job {job.key} ({job.describe()}) was not run: its result file is damaged (named above)")
    if outcome.state is JobState.FAILED:
        hint = "" if outcome.ran else " (it failed before; rerun with --retry-failed)"
        raise ConcurError(f"job {job.key} ({job.describe()}) failed: {result.get('error')}{hint}; traceback in {job_dir / 'result.json'}")
    if outcome.state is JobState.RUNNING:
        out.print(f"not started here: {job.describe()}  job {job.key} is running in {result.get('owner')}; `concur status` shows it")
        return
    if outcome.state is JobState.INTERRUPTED:
        out.print(f"interrupted: {job.describe()}  job {job.key} has no result yet; run it again to finish it")
        return
    scores = result["scores"]
    prefix = "done" if outcome.ran else "already done, nothing to run"
    out.print(f"{prefix}: {job.describe()}  job {job.key}")
    out.print(
        f"EM {scores['exact_match']:.2f}  F1 {scores['f1']:.2f}  "
        f"({scores['n_questions']:,} test questions, {scores['n_missing']:,} unanswered)  "
        f"train {result['train_seconds']:.1f} s  eval {result['eval_seconds']:.1f} s  on {result['device']}"
    )
    out.print(f"results: {job_dir}")


def _report_grid(outcomes: list[Outcome], points: int) -> None:
    rows = []
    for outcome in outcomes:
        job, result = outcome.job, outcome.result
        scores = result.get("scores") or {}
        state = outcome.state.value if outcome.ran else f"{outcome.state.value} (before)"
        error = (result.get("error") or (f"running in {result['owner']}" if "owner" in result else ""))[:ERROR_WIDTH]
        em, f1 = _num(scores.get("exact_match")), _num(scores.get("f1"))
        rows.append([job.approach, job.benchmark, job.hparam_id, job.seed, state, em, f1, job.key, error])
    counts = Counter(outcome.state.value for outcome in outcomes)
    ran = sum(outcome.ran for outcome in outcomes)
    same = f" ({points - len(outcomes)} grid points repeat another's settings)" if points > len(outcomes) else ""
    title = f"{len(outcomes)} jobs{same}, {ran} run now: " + "  ".join(f"{count} {name}" for name, count in sorted(counts.items()))
    print_table(title, ["approach", "benchmark", "hparams", "seed", "state", "EM", "F1", "key", "error"], rows)
    failed = counts.get(JobState.FAILED.value, 0)
    if failed:
        raise JobsFailedError(
            f"{failed} of {len(outcomes)} jobs failed; `concur status` shows their errors, --retry-failed runs them again"
        )


def _seeds(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError as error:
        raise ConcurError(f"--seeds must be comma-separated integers, got {text!r}") from error


def status(
    ctx: typer.Context,
    approach: list[str] = typer.Option([], "--approach", "-a", help="Only these approaches (repeatable)."),
    bench: list[str] = typer.Option([], "--bench", "-b", help="Only these benchmarks (repeatable)."),
    output: Format = typer.Option(Format.table, "--format", help="table or json"),
    cost: bool = typer.Option(False, "--cost", help="Sum GPU-hours and CPU core-hours per approach and benchmark instead."),
) -> None:
    """Show finished, failed, running and interrupted jobs (and, given both --approach and
    --bench, the combinations still pending); with --cost, what they cost."""
    state = settings(ctx)
    registry = state.registry()
    for name in approach:
        registry.approach(name)
    for name in bench:
        registry.benchmark(name)
    workspace = state.workspace()
    _collect_slurm_results(workspace)
    finished = finished_jobs(workspace.db_path, workspace.jobs_dir)
    active, damaged = active_jobs(workspace.jobs_dir, finished.with_result)
    problems = finished.warnings() + [str(error) for error in damaged]
    for line in problems:
        warn(line)
    if cost:
        _show_cost(
            [row for row in finished.rows if (not approach or row["approach"] in approach) and (not bench or row["benchmark"] in bench)],
            output,
        )
        return
    records = [_finished_record(row) for row in finished.rows]
    records += [{"key": job.key, **{k: job.started.get(k) for k in STARTED_FIELDS}, "state": job.state.value} for job in active]
    records = [r for r in records if (not approach or r["approach"] in approach) and (not bench or r["benchmark"] in bench)]
    if approach and bench:
        present = {(r["approach"], r["benchmark"]) for r in records}
        records += [
            {"key": None, "approach": a, "benchmark": b, "hparam_id": 0, "seed": None, "state": JobState.PENDING.value}
            for a in approach
            for b in bench
            if (a, b) not in present
        ]
    counts = Counter(r["state"] for r in records)
    summary = {
        state.value: counts.get(state.value, 0)
        for state in (JobState.DONE, JobState.FAILED, JobState.RUNNING, JobState.INTERRUPTED, JobState.PENDING)
    }
    if output is Format.json:
        print_json({"summary": summary, "jobs": records, "problems": problems})
        return
    rows = [
        [
            r["approach"],
            r["benchmark"],
            r["hparam_id"],
            r["seed"],
            r["state"],
            _num(r.get("em")),
            _num(r.get("f1")),
            _num(r.get("train_seconds"), 1),
            r.get("device"),
            r["key"],
            (r.get("error") or "")[:ERROR_WIDTH],
        ]
        for r in records
    ]
    print_table(
        "  ".join(f"{count} {name}" for name, count in summary.items()),
        ["approach", "benchmark", "hparams", "seed", "state", "EM", "F1", "train s", "device", "key", "error"],
        rows,
    )


def _collect_slurm_results(workspace: Workspace) -> None:
    """Index what Slurm jobs submitted from here wrote, where the index can be written; a damaged index is
    left to `finished_jobs`, which says so once and reads the job directories instead."""
    if not writable(workspace.db_path):
        return
    try:
        with Store(workspace.db_path) as store:
            collect_slurm(workspace, store)
    except DamagedFileError:
        return
    except ConcurError as error:  # the local view stays available while Slurm does not answer
        warn(f"Slurm jobs not collected: {error}")


def warn(line: str) -> None:
    """One warning line on stderr, the line taken as text (a path may hold brackets rich would read as markup)."""
    err.print(f"[yellow]warning:[/] {escape(line)}")


def _show_cost(rows: list[dict[str, Any]], output: Format) -> None:
    """Device-hours per (approach, benchmark), per approach and in all: GPU-hours and CPU core-hours apart."""
    cells: dict[tuple[str, str], Counter] = {}
    for row in rows:
        cell = cells.setdefault((row["approach"], row["benchmark"]), Counter())
        cell["jobs"] += 1
        cell[f"{row.get('device_kind') or 'unknown'}_hours"] += (row.get("device_seconds") or 0.0) / SECONDS_PER_HOUR
    per_approach: dict[str, Counter] = {}
    for (approach_id, _), cell in cells.items():
        per_approach.setdefault(approach_id, Counter()).update(cell)
    total = sum(per_approach.values(), Counter())
    if output is Format.json:
        print_json(
            {
                "cells": [{"approach": a, "benchmark": b, **cell} for (a, b), cell in sorted(cells.items())],
                "approaches": {a: dict(c) for a, c in sorted(per_approach.items())},
                "total": dict(total),
            }
        )
        return
    table_rows = [[a, b, cell["jobs"], f"{cell['gpu_hours']:.3f}", f"{cell['cpu_hours']:.3f}"] for (a, b), cell in sorted(cells.items())]
    table_rows += [[a, "all", c["jobs"], f"{c['gpu_hours']:.3f}", f"{c['cpu_hours']:.3f}"] for a, c in sorted(per_approach.items())]
    table_rows.append(["all", "all", total["jobs"], f"{total['gpu_hours']:.3f}", f"{total['cpu_hours']:.3f}"])
    print_table("device-hours of finished jobs", ["approach", "benchmark", "jobs", "GPU-hours", "CPU core-hours"], table_rows)


def _finished_record(row: dict[str, Any]) -> dict[str, Any]:
    state = JobState.DONE if row["status"] == "ok" else JobState.FAILED
    keep = (
        "key",
        "approach",
        "benchmark",
        "hparam_id",
        "seed",
        "em",
        "f1",
        "train_seconds",
        "eval_seconds",
        "device",
        "error",
        "finished_at",
    )
    return {**{k: row[k] for k in keep}, "state": state.value}


def _num(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"
