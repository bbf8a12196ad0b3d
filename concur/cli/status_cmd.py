"""`concur status`: what is done, failed, running and pending, and with --cost what it cost."""

from __future__ import annotations

import typer

from concur.cli.common import ERROR_WIDTH, Format, echo, number, print_json, print_table, settings, warn
from concur.runner.status import DeviceHours, Survey, collect_slurm_results, device_hours, survey


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
    workspace = state.existing_workspace()
    problem = collect_slurm_results(workspace, echo)
    if problem is not None:
        warn(problem)
    jobs = survey(workspace, approach, bench)
    for line in jobs.problems:
        warn(line)
    if cost:
        _show_cost(device_hours(jobs.finished), output)
        return
    _show_jobs(jobs, output)


def _show_jobs(jobs: Survey, output: Format) -> None:
    """The surveyed jobs, one row each under a title that counts them by state (or all of it as JSON)."""
    summary = jobs.summary()
    if output is Format.json:
        print_json({"summary": summary, "jobs": jobs.records, "problems": jobs.problems})
        return
    rows = [
        [
            r["approach"],
            r["benchmark"],
            r["hparam_id"],
            r["seed"],
            r["state"],
            number(r.get("em")),
            number(r.get("f1")),
            number(r.get("train_seconds"), 1),
            r.get("device"),
            r["key"],
            (r.get("error") or "")[:ERROR_WIDTH],
        ]
        for r in jobs.records
    ]
    print_table(
        "  ".join(f"{count} {name}" for name, count in summary.items()),
        ["approach", "benchmark", "hparams", "seed", "state", "EM", "F1", "train s", "device", "key", "error"],
        rows,
    )


def _show_cost(hours: DeviceHours, output: Format) -> None:
    if output is Format.json:
        print_json(
            {
                "cells": [{"approach": a, "benchmark": b, **cell.as_dict()} for (a, b), cell in sorted(hours.cells.items())],
                "approaches": {a: cost.as_dict() for a, cost in sorted(hours.approaches.items())},
                "total": hours.total.as_dict(),
            }
        )
        return
    named = [(a, b, cell) for (a, b), cell in sorted(hours.cells.items())]
    named += [(a, "all", cost) for a, cost in sorted(hours.approaches.items())] + [("all", "all", hours.total)]
    rows = [[a, b, cost.jobs, f"{cost.of('gpu'):.3f}", f"{cost.of('cpu'):.3f}"] for a, b, cost in named]
    print_table("device-hours of finished jobs", ["approach", "benchmark", "jobs", "GPU-hours", "CPU core-hours"], rows)
