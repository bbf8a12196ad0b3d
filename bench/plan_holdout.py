"""How well `concur study plan` estimates a cell it never measured: each measured cell held out in turn.

Run: `python -m bench.plan_holdout RUNS_DIR [--out FILE.json]`, RUNS_DIR being a runs directory
(its concur.sqlite and jobs/) with finished jobs, e.g. a quick-start study's. For every (approach,
benchmark) cell with finished jobs, the throughputs are computed again from every other cell's
jobs (`concur.runner.planning.estimate.throughputs`, as the planner does), and a job of the cell's median
size (training examples, test questions) is estimated twice: at its approach's medians over the
other benchmarks (the planner before the two-way model), and as the planner estimates it now
(`Speeds.of`: the two-way model where measured cells link the approach and the benchmark). Both are
compared with the cell's measured median device-seconds. Prints a row per cell and the median and
largest error of each estimate, and writes them as JSON.
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.outputs import write_json
from concur.runner.planning.estimate import Throughput, measured_jobs, throughputs
from concur.runner.records.store import finished_jobs


def cell_sizes(rows: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[float, float, float]]:
    """Per measured cell: the median (device-seconds, training examples, test questions) of its finished jobs."""
    jobs: dict[tuple[str, str], list[tuple[float, float, float]]] = defaultdict(list)
    for row, examples in measured_jobs(rows):
        if row.get("n_questions"):
            jobs[row["approach"], row["benchmark"]].append((row["device_seconds"], examples, row["n_questions"]))
    return {cell: tuple(statistics.median(column) for column in zip(*sizes)) for cell, sizes in jobs.items()}


def held_out(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A record per measured cell: its measured device-seconds and both estimates from the other cells alone."""
    records = []
    for (approach, benchmark), (measured, examples, tested) in sorted(cell_sizes(rows).items()):
        others = [row for row in rows if (row["approach"], row["benchmark"]) != (approach, benchmark)]
        speeds = throughputs(others)
        by_approach: Throughput | None = speeds.approaches.get(approach)
        modeled = speeds.of(approach, benchmark)
        if by_approach is None or modeled is None:
            continue  # the approach ran on this benchmark only: nothing to estimate it from
        records.append(
            {
                "approach": approach,
                "benchmark": benchmark,
                "measured_seconds": measured,
                "approach_median_seconds": by_approach.estimate(examples, tested),
                "two_way_seconds": modeled.estimate(examples, tested),
            }
        )
    return records


def summary(records: list[dict[str, Any]], key: str) -> dict[str, float]:
    errors = [abs(record[key] / record["measured_seconds"] - 1) for record in records]
    return {"median_abs_error": statistics.median(errors), "max_abs_error": max(errors)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs_dir", type=Path)
    parser.add_argument("--out", type=Path, help="write the records and the summary as JSON here")
    args = parser.parse_args()
    if not (args.runs_dir / "jobs").is_dir():
        raise SystemExit(f"{args.runs_dir}: not a runs directory (it has no jobs/ folder)")
    rows = finished_jobs(args.runs_dir / "concur.sqlite", args.runs_dir / "jobs").rows
    records = held_out(rows)
    if not records:
        raise SystemExit(f"{args.runs_dir}: no cell whose approach also ran on another benchmark; nothing to hold out")
    print(f"{'approach':24s} {'benchmark':30s} {'measured':>9s} {'approach median':>16s} {'two-way':>9s}  (device-seconds)")
    for record in records:
        print(
            f"{record['approach']:24s} {record['benchmark']:30s} {record['measured_seconds']:9.1f} "
            f"{record['approach_median_seconds']:16.1f} {record['two_way_seconds']:9.1f}"
        )
    results = {
        "cells": len(records),
        "approach_median": summary(records, "approach_median_seconds"),
        "two_way": summary(records, "two_way_seconds"),
    }
    for name in ("approach_median", "two_way"):
        errors = results[name]
        print(f"{name}: median |error| {errors['median_abs_error']:.0%}, largest {errors['max_abs_error']:.0%} over {len(records)} cells")
    if args.out:
        write_json(args.out, {**results, "records": records})


if __name__ == "__main__":
    main()
