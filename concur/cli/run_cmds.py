"""`concur run`: a grid of jobs, and how the outcome of any grid (also a study's) is told."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import typer

from concur.cli.common import ERROR_WIDTH, SOURCE_DIR_OPTION, Settings, echo, number, out, print_table, settings
from concur.cli.run_options import (
    ATTEMPTS_OPTION,
    CUDA_GRAPHS_OPTION,
    DEVICE_OPTION,
    EXECUTOR_OPTION,
    JOBS_PER_GPU_OPTION,
    MODEL_PATH_OPTION,
    PER_DEVICE_OPTION,
    RETRY_OPTION,
    SLURM_CONFIG_OPTION,
    THREADS_OPTION,
    TIME_LIMIT_OPTION,
    WAIT_OPTION,
    WORKERS_OPTION,
)
from concur.errors import ConcurError
from concur.runner.planning.budget import Budget
from concur.runner.planning.grid import GridRequest
from concur.runner.records.jobdir import JobState
from concur.runner.scheduling.driver import run_grid
from concur.runner.scheduling.executor import Execution, Executor
from concur.runner.scheduling.outcomes import Outcome, raise_unless_complete

APPROACH_OPTION = typer.Option(
    ..., "--approach", "-a", help="Approach ids, globs or families (family:NAME); repeatable or comma-separated, e.g. 'bert-*'."
)
BENCH_OPTION = typer.Option(
    ..., "--bench", "-b", help="Benchmark ids, globs or families; repeatable or comma-separated, e.g. family:human."
)
TRAIN_QUESTIONS_OPTION = typer.Option(
    None, "--train-questions", min=1, help="Budget: train on a seeded subset of this many training questions (whole passages first)."
)
TEST_QUESTIONS_OPTION = typer.Option(None, "--test-questions", min=1, help="Budget: score a seeded subset of this many test questions.")
SUBSET_SEED_OPTION = typer.Option(0, "--subset-seed", help="Seed of the budget's subsets.")
PRECISION_OPTION = typer.Option(
    "auto", "--precision", help="auto (bf16 autocast on CUDA, fp32 on the CPU), fp32 or bf16; other than auto, part of the job keys."
)


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
    cuda_graphs: bool = CUDA_GRAPHS_OPTION,
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
    train_questions: int | None = TRAIN_QUESTIONS_OPTION,
    test_questions: int | None = TEST_QUESTIONS_OPTION,
    subset_seed: int = SUBSET_SEED_OPTION,
    precision: str = PRECISION_OPTION,
) -> None:
    """Train each APPROACH on each BENCH's train split, test on its test split, store EM/F1.

    Every combination of approaches, benchmarks, hyperparameter settings and seeds is one job;
    a job that already finished is not run again (its stored result is shown). Source files
    not found locally are downloaded.
    """
    budget = Budget(train_questions, test_questions, subset_seed) if train_questions or test_questions else None
    selection = (",".join(approach), ",".join(bench))
    request = GridRequest(*selection, hparams=hparams, seeds=_seeds(seeds), hparam_seed=hparam_seed, budget=budget, precision=precision)
    execution = Execution(
        device, threads, per_device_batch_size, model_path, retry_failed, workers, jobs_per_gpu, max_attempts, time_limit,
        executor, slurm_config, wait, cuda_graphs,
    )  # fmt: skip
    run_and_report(settings(ctx), request, execution, source_dir)


def run_and_report(
    state: Settings, request: GridRequest, execution: Execution, source_dir: list[Path] | None, *, download: bool = True
) -> None:
    """Run the grid, then tell its outcome: one job in full, a grid as a table. It returns only when every job of
    the grid has a result and none failed; failures end in JobsFailedError, jobs without a result in JobsUnfinishedError."""
    ran = run_grid(
        request,
        execution,
        registry=state.registry(),
        registry_dirs=state.registry_dirs,
        workspace=state.workspace(),
        locator=state.locator(source_dir),
        echo=echo,
        download=download,
    )
    if len(ran.outcomes) == 1:
        _report_one(ran.outcomes[0], state.workspace().jobs_dir)
    else:
        _report_grid(ran.outcomes, ran.points)
    raise_unless_complete(ran.outcomes)


def _report_one(outcome: Outcome, jobs_dir: Path) -> None:
    job, result = outcome.job, outcome.result
    job_dir = jobs_dir / job.key
    if outcome.damaged:
        return  # named above, and in the closing error
    if outcome.state is JobState.FAILED:
        hint = "" if outcome.ran else " (it failed before; rerun with --retry-failed)"
        raise ConcurError(f"job {job.key} ({job.describe()}) failed: {outcome.error}{hint}; traceback in {job_dir / 'result.json'}")
    if outcome.state is JobState.RUNNING:
        out.print(f"no result yet: {job.describe()}  job {job.key} is running in {outcome.owner}; `concur status` shows it")
        return
    if outcome.state is JobState.INTERRUPTED:
        out.print(f"interrupted: {job.describe()}  job {job.key} has no result yet; run it again to finish it")
        return
    if result is None or result.scores is None:
        raise ConcurError(f"job {job.key} ({job.describe()}): its result in {job_dir} holds no scores")
    scores = result.scores
    prefix = "done" if outcome.ran else "already done, nothing to run"
    out.print(f"{prefix}: {job.describe()}  job {job.key}")
    out.print(
        f"EM {scores.exact_match:.2f}  F1 {scores.f1:.2f}  "
        f"({scores.n_questions or 0:,} test questions, {scores.n_missing or 0:,} unanswered)  "
        f"train {result.train_seconds or 0.0:.1f} s  eval {result.eval_seconds or 0.0:.1f} s  on {result.device}"
    )
    out.print(f"results: {job_dir}")


def _report_grid(outcomes: list[Outcome], points: int) -> None:
    rows = []
    for outcome in outcomes:
        job, result = outcome.job, outcome.result
        state = outcome.state.value if outcome.ran else f"{outcome.state.value} (before)"
        error = (outcome.error or (f"running in {outcome.owner}" if outcome.owner else ""))[:ERROR_WIDTH]
        em, f1 = (number(result.exact_match), number(result.f1)) if result else (number(None), number(None))
        rows.append([job.approach, job.benchmark, job.hparam_id, job.seed, state, em, f1, job.key, error])
    counts = Counter(outcome.state.value for outcome in outcomes)
    ran = sum(outcome.ran for outcome in outcomes)
    same = f" ({points - len(outcomes)} grid points repeat another's settings)" if points > len(outcomes) else ""
    title = f"{len(outcomes)} jobs{same}, {ran} run now: " + "  ".join(f"{count} {name}" for name, count in sorted(counts.items()))
    print_table(title, ["approach", "benchmark", "hparams", "seed", "state", "EM", "F1", "key", "error"], rows)


def _seeds(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError as error:
        raise ConcurError(f"--seeds must be comma-separated integers, got {text!r}") from error
