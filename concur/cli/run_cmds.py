"""`concur run` (one job, locally) and `concur status` (what is done, failed, pending)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import typer

from concur.approaches.base import ensure_runnable
from concur.cli.common import SOURCE_DIR_OPTION, Format, err, out, print_json, print_table, settings
from concur.data.prepare import prepare
from concur.devices import DEVICE_CHOICES
from concur.errors import ConcurError
from concur.runner.jobdir import JobState, job_dirs
from concur.runner.jobs import make_job
from concur.runner.local import RunOptions, run_job
from concur.runner.store import Store

ERROR_WIDTH = 80


def run(
    ctx: typer.Context,
    approach: str = typer.Option(..., "--approach", "-a", help="Approach id, e.g. minilm-l6 or bert-base."),
    bench: str = typer.Option(..., "--bench", "-b", help="Benchmark id, e.g. babi-1 or squad-20k."),
    seed: int = typer.Option(0, "--seed", help="Training seed."),
    device: str = typer.Option("auto", "--device", help=f"One of {', '.join(DEVICE_CHOICES)} or cuda:N."),
    threads: int | None = typer.Option(None, "--threads", min=1, help="CPU threads for PyTorch (default: PyTorch's choice)."),
    per_device_batch_size: int | None = typer.Option(
        None, "--per-device-batch-size", min=1, help="Cap examples per forward pass; gradients accumulate to the spec's batch."
    ),
    model_path: Path | None = typer.Option(None, "--model-path", help="Local copy of the approach's pretrained weights."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Run again if this job failed before."),
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
) -> None:
    """Train APPROACH on BENCH's train split, test on its test split, store EM/F1.

    A job that already finished is not run again: the stored result is printed.
    """
    state = settings(ctx)
    registry = state.registry()
    spec = registry.approach(approach)
    bench_spec = registry.benchmark(bench)
    ensure_runnable(spec)  # before any data is prepared
    workspace = state.workspace()
    prepared, _ = prepare(bench_spec, state.locator(source_dir), workspace.data_dir)
    job = make_job(spec, prepared, seed=seed)
    store = Store(workspace.db_path)
    options = RunOptions(device, threads, per_device_batch_size, model_path, retry_failed)
    outcome = run_job(job, spec, prepared, workspace, store, options, echo=lambda line: err.print(line, markup=False))
    result = outcome.result
    job_dir = workspace.jobs_dir / job.key
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
