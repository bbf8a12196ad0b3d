"""`concur run` (a grid of jobs, locally) and `concur status` (what is done, failed, pending)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import typer

from concur.cli.common import SOURCE_DIR_OPTION, Format, err, out, print_json, print_table, settings
from concur.data.prepare import prepare
from concur.devices import DEVICE_CHOICES, visible_gpus
from concur.errors import ConcurError
from concur.runner.estimate import estimate_seconds, rates
from concur.runner.execute import RunOptions
from concur.runner.grid import GridRequest, expand_grid
from concur.runner.jobdir import JobState, job_dirs
from concur.runner.jobs import make_job
from concur.runner.local import Outcome
from concur.runner.pool import DEFAULT_JOBS_PER_GPU, LocalPool, PoolSettings, Task
from concur.runner.progress_view import GridProgress
from concur.runner.store import Store

ERROR_WIDTH = 80


def run(
    ctx: typer.Context,
    approach: list[str] = typer.Option(
        ..., "--approach", "-a", help="Approach ids, globs or families (family:NAME); repeatable or comma-separated, e.g. 'bert-*'."
    ),
    bench: list[str] = typer.Option(
        ..., "--bench", "-b", help="Benchmark ids, globs or families; repeatable or comma-separated, e.g. family:human."
    ),
    hparams: int = typer.Option(1, "--hparams", min=1, help="Settings per approach: 0 = its published one, 1..N-1 drawn from its [space]."),
    hparam_seed: int = typer.Option(0, "--hparam-seed", help="Seed of the drawn settings: the same seed always draws the same ones."),
    seeds: str = typer.Option("0", "--seeds", "--seed", help="Training seeds, comma-separated, e.g. 0,1,2."),
    device: str = typer.Option("auto", "--device", help=f"One of {', '.join(DEVICE_CHOICES)} or cuda:N."),
    threads: int | None = typer.Option(None, "--threads", min=1, help="CPU threads for PyTorch (default: PyTorch's choice)."),
    per_device_batch_size: int | None = typer.Option(
        None, "--per-device-batch-size", min=1, help="Cap examples per forward pass; gradients accumulate to the spec's batch."
    ),
    model_path: Path | None = typer.Option(None, "--model-path", help="Local copy of the approach's pretrained weights."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Run again jobs that failed before."),
    workers: int = typer.Option(1, "--workers", min=1, help="Jobs run at once without a GPU (each gets an equal share of the cores)."),
    jobs_per_gpu: int = typer.Option(
        DEFAULT_JOBS_PER_GPU, "--jobs-per-gpu", min=1, help="Small jobs ([resources] small = true) sharing one GPU at most."
    ),
    max_attempts: int = typer.Option(3, "--max-attempts", min=1, help="Runs of a job whose worker dies without a result."),
    time_limit: float | None = typer.Option(
        None, "--time-limit", min=0.01, help="Minutes a job may run (default: its spec's resources.time_limit_hours)."
    ),
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
) -> None:
    """Train each APPROACH on each BENCH's train split, test on its test split, store EM/F1.

    Every combination of approaches, benchmarks, hyperparameter settings and seeds is one job;
    a job that already finished is not run again (its stored result is shown).
    """
    state = settings(ctx)
    registry = state.registry()
    request = GridRequest(",".join(approach), ",".join(bench), hparams=hparams, seeds=_seeds(seeds), hparam_seed=hparam_seed)
    points = expand_grid(registry, request)  # every name checked, every setting drawn, before any data is prepared
    workspace = state.workspace()
    locator = state.locator(source_dir)
    prepared = {}
    for point in points:
        if point.bench.id not in prepared:
            prepared[point.bench.id], _ = prepare(point.bench, locator, workspace.data_dir)
    store = Store(workspace.db_path)
    options = RunOptions(device, threads, per_device_batch_size, model_path, retry_failed)
    rates_by_approach = rates(store.rows())
    tasks = []
    for point in points:
        bench_data = prepared[point.bench.id]
        job = make_job(point.approach, bench_data, seed=point.seed, setting=point.setting)
        estimate = estimate_seconds(job.approach, bench_data.manifest["splits"]["train"]["questions"], rates_by_approach)
        tasks.append(Task(job, point.approach, estimate or 0.0))
    pool_settings = PoolSettings(
        options,
        gpus=visible_gpus(device),
        jobs_per_gpu=jobs_per_gpu,
        cpu_workers=workers,
        max_attempts=max_attempts,
        time_limit_seconds=time_limit * 60 if time_limit else None,
    )
    echo = lambda line: err.print(line, markup=False)  # noqa: E731
    pool = LocalPool(workspace, store, state.registry_dirs, pool_settings, echo, stream_output=len(tasks) == 1)
    with GridProgress(len({task.job.key for task in tasks}), echo) as progress:
        outcomes = pool.run(tasks, progress if len(tasks) > 1 else None)
    if len(outcomes) == 1:
        _report_one(outcomes[0], workspace.jobs_dir)
    else:
        _report_grid(outcomes, len(points))


def _report_one(outcome: Outcome, jobs_dir: Path) -> None:
    job, result = outcome.job, outcome.result
    job_dir = jobs_dir / job.key
    if outcome.state is JobState.FAILED:
        hint = "" if outcome.ran else " (it failed before; rerun with --retry-failed)"
        raise ConcurError(f"job {job.key} ({job.describe()}) failed: {result.get('error')}{hint}; traceback in {job_dir / 'result.json'}")
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
        error = (result.get("error") or "")[:ERROR_WIDTH]
        em, f1 = _num(scores.get("exact_match")), _num(scores.get("f1"))
        rows.append([job.approach, job.benchmark, job.hparam_id, job.seed, state, em, f1, job.key, error])
    counts = Counter(outcome.state.value for outcome in outcomes)
    ran = sum(outcome.ran for outcome in outcomes)
    same = f" ({points - len(outcomes)} grid points repeat another's settings)" if points > len(outcomes) else ""
    title = f"{len(outcomes)} jobs{same}, {ran} run now: " + "  ".join(f"{count} {name}" for name, count in sorted(counts.items()))
    print_table(title, ["approach", "benchmark", "hparams", "seed", "state", "EM", "F1", "key", "error"], rows)
    failed = counts.get(JobState.FAILED.value, 0)
    if failed:
        raise ConcurError(f"{failed} of {len(outcomes)} jobs failed; `concur status` shows their errors, --retry-failed runs them again")


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
) -> None:
    """Show finished, failed, running and interrupted jobs (and, given both --approach and
    --bench, the combinations still pending)."""
    state = settings(ctx)
    registry = state.registry()
    for name in approach:
        registry.approach(name)
    for name in bench:
        registry.benchmark(name)
    workspace = state.workspace()
    store = Store(workspace.db_path)
    store.sync(workspace.jobs_dir)
    records = [_finished_record(row) for row in store.rows()]
    for job in job_dirs(workspace.jobs_dir):
        job_state = job.state()
        if job_state in (JobState.RUNNING, JobState.INTERRUPTED):
            started = job.started() or {}
            records.append({**{k: started.get(k) for k in ("key", "approach", "benchmark", "hparam_id", "seed")}, "state": job_state.value})
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
        print_json({"summary": summary, "jobs": records})
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
