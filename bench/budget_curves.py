"""EM against CPU seconds for each approach of a study at several training budgets: where a CPU study's time buys signal.

Run (the quick start's curves): `python -m bench.budget_curves --source-dir DATA --runs-dir runs/budget-curves
--points minilm-l6:2000x0.25,2000x0.5,2000x0.75,2000x1 --points rasor:2000x1,2000x2,2000x3
--points bidaf:2000x1,2000x2 --points docreader-nofeat:2000x1,2000x2 --points bidaf-pp:2000x1,2000x2
--points mnemonic-reader-nofeat:2000x1,2000x2 --out bench/results/budget-curves.json`; `--points all:...` gives
every approach of `--base` the same points.

A point `NxE` is a job trained on a seeded subset of N training questions of `--bench` for E epochs and scored on
the same `--test-questions` test questions as every other point. Each approach's k-th point at N questions joins
one study file written to the runs dir (`--base`'s approaches and per-approach overrides, with `epochs = E`), run
by `concur study run` with `--workers` jobs at a time, one thread each: the way the quick start spends a CPU. A
job's cost is its measured seconds on one core (training, prediction and setup); its EM has a 95% interval over
the test questions (the binomial form of the question bootstrap). Rerunning skips points already in the runs dir.

Writes the result file (every job: approach, point, EM, F1, seconds, optimiser steps, final loss) and beside it a
plot of EM against the job's seconds, one line per approach. Prints the table the docs carry.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tomllib
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from bench.machine import describe_cpu, git_commit  # noqa: E402
from bench.outputs import write_json  # noqa: E402
from concur.analysis.measurement import em_intervals  # noqa: E402
from concur.runner.records.store import Store  # noqa: E402
from concur.workspace import Workspace  # noqa: E402

ALL = "all"  # in --points: every approach of the base study


@dataclass(frozen=True)
class Point:
    """A training budget: `questions` seeded training questions, `epochs` passes over them."""

    questions: int
    epochs: float

    @property
    def label(self) -> str:
        return f"{self.questions}x{self.epochs:g}"

    @property
    def examples(self) -> float:
        return self.questions * self.epochs


@dataclass(frozen=True)
class Measured:
    """One job of the curves."""

    approach: str
    questions: int  # the point's training questions
    epochs: float
    em: float
    em_lower: float
    em_upper: float
    f1: float
    train_seconds: float
    eval_seconds: float
    job_seconds: float
    optimizer_steps: int
    final_loss: float | None
    test_questions: int
    skipped_questions: int  # of `questions`, those the approach could not train on (an answer past its passage cut)


def parse_point(text: str) -> Point:
    """`NxE`, e.g. `1000x2`: N training questions, E epochs (E may be a fraction)."""
    questions, sep, epochs = text.strip().partition("x")
    try:
        point = Point(int(questions), float(epochs)) if sep else None
    except ValueError:
        point = None
    if point is None or point.questions < 1 or not point.epochs > 0:
        raise argparse.ArgumentTypeError(f"a point is NxE with N training questions and E epochs, e.g. 1000x2; got {text!r}")
    return point


def parse_points(text: str) -> tuple[str, list[Point]]:
    """`--points APPROACH:NxE,NxE,...` (APPROACH `all` for every approach of the base study)."""
    approach, sep, points = text.partition(":")
    if not sep or not approach.strip():
        raise argparse.ArgumentTypeError(f"expected APPROACH:NxE,... (APPROACH may be {ALL!r}), e.g. all:1000x1,2000x1; got {text!r}")
    return approach.strip(), [parse_point(point) for point in points.split(",") if point.strip()]


def points_by_approach(base_approaches: list[str], specs: list[tuple[str, list[Point]]]) -> dict[str, list[Point]]:
    """Every approach's points, from `--points` options in order (each adds to the approaches it names)."""
    chosen: dict[str, list[Point]] = {approach: [] for approach in base_approaches}
    for approach, points in specs:
        if approach != ALL and approach not in chosen:
            raise SystemExit(f"--points {approach}: not an approach of the base study; it has {', '.join(base_approaches)}")
        for name in base_approaches if approach == ALL else [approach]:
            chosen[name] += [point for point in points if point not in chosen[name]]
    return {approach: points for approach, points in chosen.items() if points}


def toml_value(value: Any) -> str:
    """A scalar or a list of strings as TOML (strings in JSON's escapes, which TOML's basic strings share)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return repr(value)


def study_rounds(chosen: dict[str, list[Point]]) -> list[tuple[str, dict[str, Point]]]:
    """The points as studies that keep every worker busy: the k-th point of each approach at N training questions
    run together (a study has one budget, so one N, and one setting per approach)."""
    rounds: dict[tuple[int, int], dict[str, Point]] = defaultdict(dict)
    for approach, points in chosen.items():
        seen: dict[int, int] = defaultdict(int)
        for point in sorted(points, key=lambda point: point.examples):
            rounds[(point.questions, seen[point.questions])][approach] = point
            seen[point.questions] += 1
    return [(f"{questions}-round{index + 1}", rounds[(questions, index)]) for questions, index in sorted(rounds)]


def study_text(name: str, bench: str, points: dict[str, Point], overrides: dict[str, dict[str, Any]], test: int) -> str:
    """A study file of one round on `bench`: every approach with its base overrides and its point's `epochs`."""
    (questions,) = {point.questions for point in points.values()}
    lines = [
        f"name = {toml_value(name)}",
        f"approaches = {toml_value(list(points))}",
        f"benches = [{toml_value(bench)}]",
        "seeds = [0]",
        "",
        "[budget]",
        f"train_questions = {questions}",
        f"test_questions = {test}",
        "seed = 0",
        "",
        "[hparams]",
        "count = 1",
    ]
    for approach, point in points.items():
        values = {**overrides.get(approach, {}), "epochs": point.epochs}
        lines += ["", f"[hparams.{approach}]", *(f"{key} = {toml_value(value)}" for key, value in values.items())]
    return "\n".join(lines) + "\n"


def run_point(args: argparse.Namespace, study: Path) -> None:
    command = [sys.executable, "-m", "concur", "--runs-dir", str(args.runs_dir), "study", "run", str(study), "--device", "cpu",
               "--workers", str(args.workers), "--threads", "1"]  # fmt: skip
    command += ["--source-dir", str(args.source_dir)] if args.source_dir else []
    command += ["--registry", str(args.registry)] if args.registry else []
    if subprocess.run(command).returncode != 0:
        raise SystemExit(f"`concur study run {study}` failed; rerun this command to resume (finished jobs are kept)")


def measured_jobs(runs_dir: Path, bench: str, test: int) -> list[Measured]:
    """Every finished job of `bench` scored on `test` questions in the runs dir."""
    with Store.open_for_reading(Workspace.resolve(runs_dir).db_path) as store:
        rows = [row for row in store.rows() if row["benchmark"] == bench and row["status"] == "ok" and row["n_questions"] == test]
    jobs = []
    for row in rows:
        epochs = float(_hparams(row)["epochs"])
        skipped = int(row["skipped_train_questions"] or 0)
        (lower,), (upper,) = em_intervals(np.array([round(row["em"] * row["n_questions"] / 100)]), np.array([row["n_questions"]]))
        jobs.append(
            Measured(row["approach"], row["train_questions"] + skipped, epochs, row["em"], lower, upper, row["f1"], row["train_seconds"],
                     row["eval_seconds"], row["device_seconds"], row["optimizer_steps"], row["final_loss"], row["n_questions"], skipped)
        )  # fmt: skip
    return sorted(jobs, key=lambda job: (job.approach, job.job_seconds))


def _hparams(row: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads(row["hparams"])) if isinstance(row["hparams"], str) else dict(row["hparams"])


def plot(jobs: list[Measured], bench: str, path: Path) -> None:
    """EM (with its interval) against the job's seconds on one core, a line per approach."""
    by_approach: dict[str, list[Measured]] = defaultdict(list)
    for job in jobs:
        by_approach[job.approach].append(job)
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for approach, points in sorted(by_approach.items()):
        x = [job.job_seconds for job in points]
        y = [job.em for job in points]
        errors = [[job.em - job.em_lower for job in points], [job.em_upper - job.em for job in points]]
        axes.errorbar(x, y, yerr=errors, marker="o", capsize=2, label=approach)
        for job in points:
            axes.annotate(
                Point(job.questions, job.epochs).label, (job.job_seconds, job.em), fontsize=6, xytext=(3, 3), textcoords="offset points"
            )
    axes.set_xscale("log")
    axes.set_xlabel("job seconds on one CPU core: training and prediction (log scale)")
    axes.set_ylabel(f"EM on {bench} (95% interval)")
    axes.legend(fontsize=7)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=150)
    plt.close(figure)
    print(f"written: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, default=Path("analysis/studies/quickstart.toml"),
                        help="the study whose approaches and per-approach overrides the points start from")  # fmt: skip
    parser.add_argument("--bench", default="squad-dev-carved")
    parser.add_argument("--points", type=parse_points, action="append", required=True, metavar="APPROACH:NxE,...")
    parser.add_argument("--test-questions", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--source-dir", type=Path)
    parser.add_argument("--runs-dir", type=Path, default=Path("runs/budget-curves"))
    parser.add_argument("--registry", type=Path, help="a registry directory beside the built-in one (e.g. bench/checks)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/budget-curves.json"))
    args = parser.parse_args()
    if not args.base.is_file():
        raise SystemExit(f"--base {args.base}: no such study file")
    base = tomllib.loads(args.base.read_text())
    overrides = {name: values for name, values in base.get("hparams", {}).items() if isinstance(values, dict)}
    chosen = points_by_approach(list(base["approaches"]), args.points)

    studies = args.runs_dir / "studies"
    studies.mkdir(parents=True, exist_ok=True)
    rounds = study_rounds(chosen)
    for number, (label, points) in enumerate(rounds, start=1):
        study = studies / f"curves-{label}.toml"
        study.write_text(study_text(f"budget-curves-{label}", args.bench, points, overrides, args.test_questions))
        print(f"[{number}/{len(rounds)}] " + ", ".join(f"{approach} {point.label}" for approach, point in points.items()), flush=True)
        run_point(args, study)

    jobs = [job for job in measured_jobs(args.runs_dir, args.bench, args.test_questions)
            if Point(job.questions, job.epochs) in chosen.get(job.approach, [])]  # fmt: skip
    write_json(args.out, {
        "machine": f"{describe_cpu()}; {args.workers} jobs at a time, 1 thread each",
        "commit": git_commit(),
        "bench": args.bench,
        "test_questions": args.test_questions,
        "base": str(args.base),
        "jobs": [asdict(job) for job in jobs],
    })  # fmt: skip
    plot(jobs, args.bench, args.out.with_suffix(".png"))
    print(f"\n{'approach':<24} {'point':>8} {'EM':>5} {'95% interval':>13} {'train s':>8} {'eval s':>7} {'job s':>6} {'steps':>6}")
    for job in jobs:
        interval = f"{job.em_lower:.1f}-{job.em_upper:.1f}"
        point = Point(job.questions, job.epochs).label
        seconds = f"{job.train_seconds:>8.0f} {job.eval_seconds:>7.0f} {job.job_seconds:>6.0f}"
        print(f"{job.approach:<24} {point:>8} {job.em:>5.1f} {interval:>13} {seconds} {job.optimizer_steps:>6}")


if __name__ == "__main__":
    main()
