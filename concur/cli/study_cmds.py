"""`concur study plan|run|collect FILE`: a whole grid from a study file (analysis/studies/*.toml)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import typer

from concur.cli.common import (
    DEFAULT_RECIPES,
    SOURCE_DIR_OPTION,
    Format,
    Settings,
    echo,
    err,
    out,
    print_json,
    print_table,
    settings,
    warn,
)
from concur.cli.run_cmds import run_and_report
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
from concur.errors import JobsFailedError, JobsUnfinishedError
from concur.runner.planning.availability import MissingSource, missing_message
from concur.runner.planning.budget import Budget
from concur.runner.planning.estimate import FROM_APPROACH, FROM_CELL, FROM_MODEL
from concur.runner.planning.study import Plan, Study, Tally, load_study, survey_study
from concur.runner.records.store import Store
from concur.runner.scheduling.executor import Execution, Executor
from concur.runner.scheduling.slurm import collect_submitted
from concur.runner.status import SECONDS_PER_HOUR

app = typer.Typer(help="Run whole studies: a grid of approaches x benchmarks x settings x seeds from a study file.", no_args_is_help=True)
STUDY_FILE = typer.Argument(..., exists=True, dir_okay=False, help="A study file, e.g. analysis/studies/liu2023.toml.")
DOWNLOAD_OPTION = typer.Option(
    False, "--download", help="Fetch source files not found locally from their official URLs (needs internet); else they stop the run."
)


@app.command("plan")
def plan_command(
    ctx: typer.Context,
    file: Path = STUDY_FILE,
    output: Format = typer.Option(Format.table, "--format", help="table or json"),
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
    parallel: int = typer.Option(1, "--parallel", min=1, help="Jobs that will run at once (e.g. --workers, or GPUs x jobs per GPU)."),
) -> None:
    """The study's jobs, how many are done, the device-hours and wall time still to spend by the throughputs
    measured so far, and the source files missing on this machine."""
    _show(ctx, file, output, source_dir, sync=False, parallel=parallel)


@app.command("collect")
def collect_command(
    ctx: typer.Context,
    file: Path = STUDY_FILE,
    output: Format = typer.Option(Format.table, "--format", help="table or json"),
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
) -> None:
    """Index every result the workers wrote (also after the driver exited), then show the plan."""
    _show(ctx, file, output, source_dir, sync=True)


@app.command("run")
def run_command(
    ctx: typer.Context,
    file: Path = STUDY_FILE,
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
    download: bool = DOWNLOAD_OPTION,
    report: Path | None = typer.Option(
        None,
        "--report",
        help="Then write the study's HTML report into this directory (concur report --results study:FILE --study FILE).",
    ),
) -> None:
    """Run every job of the study that has no result yet (rerunning it runs only what is missing).

    Every benchmark's source files are looked for first; any missing one stops the study
    before a job starts, with each missing file and how to get it. With `--report DIR`, the
    study's own results are then written up as one HTML page, its figures comparing every
    benchmark with the study's `reference`.
    """
    study = load_study(file)
    execution = Execution(
        device, threads, per_device_batch_size, model_path, retry_failed, workers, jobs_per_gpu, max_attempts, time_limit,
        executor, slurm_config, wait, cuda_graphs,
    )  # fmt: skip
    state = settings(ctx)
    try:
        run_and_report(state, study.grid, execution, source_dir, download=download)
    except JobsFailedError:
        if report is None:
            raise
        _write_report(state, file, study.reference, report, source_dir)  # failed jobs are part of what the report shows
        raise
    except JobsUnfinishedError as unfinished:
        if report is None:
            raise
        raise JobsUnfinishedError(f"{unfinished}; the report ({report}) is written once every job has a result") from None
    if report is not None:
        _write_report(state, file, study.reference, report, source_dir)


def _write_report(state: Settings, file: Path, reference: str | None, out_dir: Path, source_dir: list[Path] | None) -> None:
    """The study's report, with the figure recipes of ./analysis, else of the analysis/ folder holding analysis/studies/FILE."""
    from concur.analysis.results import STUDY_PREFIX  # the report's layers import pandas, scipy and matplotlib
    from concur.cli.report_cmd import make_report
    from concur.report.content import ReportOptions

    beside = file.resolve().parent.parent
    recipes = None if DEFAULT_RECIPES.is_dir() or not any(beside.glob("*.toml")) else [beside]
    options = ReportOptions(results=(), reference=reference)
    make_report(state, [f"{STUDY_PREFIX}{file}"], out_dir, options, recipes=recipes, study=file, source_dir=source_dir)


def _show(ctx: typer.Context, file: Path, output: Format, source_dir: list[Path] | None, *, sync: bool, parallel: int = 1) -> None:
    state = settings(ctx)
    study = load_study(file)
    if sync:
        workspace = state.existing_workspace()
        with Store(workspace.db_path) as store:
            collect_submitted(workspace, store, echo)
    else:
        workspace = state.workspace()
    locator = state.locator(source_dir)
    plan, missing = survey_study(state.registry(), study, workspace, locator, warn)
    if not workspace.root.is_dir():  # planning before the first run is what plan is for; a mistyped runs dir shows here
        warn(f"no runs directory at {workspace.root} yet: nothing of this study has run there")
    if output is Format.json:
        print_json(_plan_payload(study, plan, missing, parallel))
    else:
        _print_plan(study, plan, parallel)
    if missing:
        err.print(
            f"warning: `concur study run` would stop before any job: {missing_message(missing, locator, download=False)}", markup=False
        )


def _plan_payload(study: Study, plan: Plan, missing: list[MissingSource], parallel: int) -> dict[str, Any]:
    """`study plan --format json`: the counts, the estimates, the missing source files and every job."""
    return {
        "study": study.name,
        "counts": dict(plan.counts()),
        "parallel": parallel,
        "estimate_wall_seconds": plan.wall_estimate(parallel)[0],
        "run_start_seconds": plan.run_start_seconds,
        "budget": dataclasses.asdict(study.grid.budget) if study.grid.budget else None,
        "missing_sources": [
            {"path": item.source.path, "benchmarks": list(item.benchmarks), "download": item.source.origin} for item in missing
        ],
        "jobs": [
            {
                "approach": planned.point.approach.id,
                "benchmark": planned.point.bench.id,
                "hparam_id": planned.point.setting.id,
                "seed": planned.point.seed,
                "key": planned.job.key if planned.job else None,
                "state": planned.state,
                "estimate_seconds": planned.estimate_seconds,
                "estimate_wall_seconds": planned.estimate_wall_seconds,
                "estimate_from": planned.estimate_basis,
                "device_seconds": planned.measured_seconds,
            }
            for planned in plan.jobs
        ],
    }


def _print_plan(study: Study, plan: Plan, parallel: int) -> None:
    """The plan as a person reads it: a summary, the wall time to go, what the estimates rest on, a row per approach."""
    out.print(_summary(study.name, plan, study.grid.budget))
    out.print(_wall_line(plan, parallel))
    bases = _bases_line(plan)
    if bases:
        out.print(bases)
    print_table(
        None, ["approach", "jobs", "done", "failed", "to run", "device-h spent", "device-h to go"], [_row(t) for t in plan.tallies()]
    )


def _summary(name: str, plan: Plan, budget: Budget | None) -> str:
    counts = plan.counts()
    shape = plan.shape()
    parts = "  ".join(f"{counts[state]:,} {state}" for state in sorted(counts))
    plural = "s" if shape.seeds != 1 else ""
    grid = f"{shape.approaches} approaches x {shape.benches} benchmarks x {shape.settings} settings x {shape.seeds} seed{plural}"
    if budget is not None:
        limits = [f"{limit:,} {split}" for split, limit in budget.limits().items() if limit is not None]
        grid += f"; budget: at most {' / '.join(limits)} questions, seed {budget.seed}"
        if budget.benches:
            grid += f" ({', '.join(budget.benches)}: their own)"
    return f"{name}: {len(plan.jobs):,} jobs ({grid}): {parts}"


def _wall_line(plan: Plan, parallel: int) -> str:
    """The wall time still to spend, `parallel` jobs at a time, longest first."""
    seconds, unmeasured = plan.wall_estimate(parallel)
    at_once = f"{parallel} job{'s' if parallel != 1 else ''} at a time"
    unknown = f", plus {unmeasured:,} jobs of approaches never measured" if unmeasured else ""
    start = f" ({plan.run_start_seconds:,.0f} s of it starting the warm workers)" if seconds and plan.run_start_seconds else ""
    return f"wall time to go, {at_once}: {_duration(seconds)}{start}{unknown}"


def _bases_line(plan: Plan) -> str:
    """What the estimates of the jobs to run come from, where they do not all come from their own cells' jobs."""
    bases = plan.estimate_bases()
    if not bases or set(bases) == {FROM_CELL}:
        return ""
    words = {
        FROM_CELL: "their own cell's finished jobs",
        FROM_MODEL: "the approach x benchmark model",
        FROM_APPROACH: "their approach's medians alone",
    }
    parts = ", ".join(f"{bases[basis]:,} from {words[basis]}" for basis in words if bases[basis])
    return f"estimates of the {bases.total():,} jobs to run that have one: {parts}"


def _duration(seconds: float) -> str:
    minutes = seconds / 60
    return f"{minutes:,.1f} min" if minutes < 120 else f"{minutes / 60:,.1f} h"


def _row(tally: Tally) -> list[str]:
    to_go = f"{tally.estimate_seconds / SECONDS_PER_HOUR:,.1f}" if tally.estimate_seconds is not None else ""
    if tally.unmeasured:
        why = f"{tally.unmeasured:,} unmeasured" + (f", {tally.unprepared:,} not prepared" if tally.unprepared else "")
        to_go = f"{to_go} + ? ({why})" if to_go else f"? ({why})"
    spent = tally.spent_seconds / SECONDS_PER_HOUR
    return [tally.label, f"{tally.jobs:,}", f"{tally.done:,}", f"{tally.failed:,}", f"{tally.to_run:,}", f"{spent:,.2f}", to_go]
