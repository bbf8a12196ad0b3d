"""Do concur's noise-aware statistics hold where the truth is known? Simulated studies with per-question outcomes.

Model (a Rasch item-response model): approach a has ability theta on each of two benchmarks, drawn
from a bivariate normal with correlation `correlation`, so the population Kendall tau of the
abilities, and of the true accuracies (monotone in ability), is `2/pi arcsin(correlation)`
(Greiner's relation). Each benchmark's questions have difficulties d ~ N(0, difficulty_sd), and
an approach answers a question correctly with probability `sigmoid(theta - d)`; each run of a
cell adds N(0, seed_sd) to the ability (training noise). One simulated study draws approaches,
questions and outcomes, and computes what concur reports.

Checks: the coverage of the true tau by the two-level 95% interval (questions, seeds and
approaches resampled) beside the approach-only interval; and the reliability (the noise
ceiling of a benchmark with itself) against the mean tau between two independent test sets of
the same approaches, measured by drawing such pairs.

Run: `python -m bench.noise_simulation --studies 500 --out bench/results/noise-simulation.json`.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

from bench.outputs import write_json
from concur.analysis.bootstrap import BootstrapSettings, Interval, bootstrap_matrix
from concur.analysis.concurrence import Method, concurrence_matrix
from concur.analysis.measurement import BenchmarkOutcomes, Measurement
from concur.analysis.noise_model import benchmark_noise
from concur.progress import task_progress

BENCHMARKS = ("first", "second")


@dataclass(frozen=True)
class Scenario:
    """One kind of study: its size and how noisy its measurements are."""

    approaches: int = 20
    questions: int = 200
    seeds: int = 1
    correlation: float = 0.8  # of the approaches' abilities on the two benchmarks
    ability_sd: float = 1.0
    difficulty_sd: float = 1.5
    seed_sd: float = 0.0

    @property
    def true_tau(self) -> float:
        return 2.0 / math.pi * math.asin(self.correlation)


SCENARIOS = {
    "2000 questions": Scenario(questions=2000),
    "200 questions": Scenario(questions=200),
    "200 questions, close approaches": Scenario(questions=200, ability_sd=0.3),
    "200 questions, 3 seeds": Scenario(questions=200, seeds=3, seed_sd=0.15, ability_sd=0.5),
    "100 questions, 10 approaches": Scenario(approaches=10, questions=100, ability_sd=0.5),
}


def draw_abilities(scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
    """(approaches, 2): abilities on the two benchmarks."""
    covariance = scenario.ability_sd**2 * np.array([[1.0, scenario.correlation], [scenario.correlation, 1.0]])
    return rng.multivariate_normal(np.zeros(2), covariance, size=scenario.approaches)


def draw_outcomes(abilities: np.ndarray, scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
    """(approaches, seeds, questions) 0/1 outcomes on one freshly drawn test set."""
    difficulty = rng.normal(0.0, scenario.difficulty_sd, scenario.questions)
    runs = abilities[:, None] + rng.normal(0.0, scenario.seed_sd, (len(abilities), scenario.seeds))
    chance = expit(runs[:, :, None] - difficulty[None, None, :])
    return (rng.random(chance.shape) < chance).astype(np.float32)


def as_measurement(outcomes: dict[str, np.ndarray]) -> tuple[pd.DataFrame, Measurement]:
    """The EM table and the measurement concur builds from these outcomes (seeds weighted equally)."""
    names = tuple(f"a{index:02d}" for index in range(next(iter(outcomes.values())).shape[0]))
    laid_out = {}
    for bench, array in outcomes.items():
        weights = np.full(array.shape[:2], 1.0 / array.shape[1])
        laid_out[bench] = BenchmarkOutcomes(bench, names, array, weights)
    wide = pd.DataFrame({bench: laid.em() for bench, laid in laid_out.items()}, index=list(names))
    return wide, Measurement(laid_out)


def simulated_study(scenario: Scenario, rng: np.random.Generator) -> tuple[pd.DataFrame, Measurement]:
    abilities = draw_abilities(scenario, rng)
    return as_measurement({bench: draw_outcomes(abilities[:, column], scenario, rng) for column, bench in enumerate(BENCHMARKS)})


def coverage(scenario: Scenario, studies: int, resamples: int, seed: int) -> dict[str, float]:
    """Share of studies whose 95% interval of tau(first, second) covers the true tau, by kind of interval."""
    rng = np.random.default_rng(seed)
    hits = {"two-level BCa": 0, "two-level percentile": 0, "approach-only BCa": 0, "approach-only percentile": 0}
    widths = {name: 0.0 for name in hits}
    estimates = []
    for study in range(studies):
        wide, measurement = simulated_study(scenario, rng)
        for interval in Interval:
            settings = BootstrapSettings(resamples, study, 0.95, interval)
            name = "BCa" if interval is Interval.bca else "percentile"
            for kind, given in (("two-level", measurement), ("approach-only", None)):
                ci = bootstrap_matrix(wide, Method.kendall, settings, given)
                lower, upper = float(ci.lower.iat[0, 1]), float(ci.upper.iat[0, 1])
                hits[f"{kind} {name}"] += int(lower <= scenario.true_tau <= upper)
                widths[f"{kind} {name}"] += upper - lower
        estimates.append(concurrence_matrix(wide, Method.kendall).values.iat[0, 1])
    result = {f"coverage {name}": hits[name] / studies for name in hits}
    result.update({f"mean width {name}": widths[name] / studies for name in widths})
    result["mean estimate"] = float(np.mean(estimates))
    return result


def reliability_check(scenario: Scenario, repeats: int, pairs: int, seed: int) -> dict[str, float]:
    """Reliability estimated from one test set against the mean tau between two independent test sets.

    For each repeat the approaches are fixed; `pairs` pairs of independent test sets measure the
    truth, and the estimate comes from one more test set, as a user has one.
    """
    rng = np.random.default_rng(seed)
    truths, estimates = [], []
    for _ in range(repeats):
        abilities = draw_abilities(scenario, rng)[:, 0]
        taus = []
        for _ in range(pairs):
            wide, _ = as_measurement({"x": draw_outcomes(abilities, scenario, rng), "y": draw_outcomes(abilities, scenario, rng)})
            taus.append(concurrence_matrix(wide, Method.kendall).values.iat[0, 1])
        _, measurement = as_measurement({"x": draw_outcomes(abilities, scenario, rng)})
        truths.append(float(np.nanmean(taus)))
        estimates.append(benchmark_noise(measurement.benchmarks["x"]).reliability(Method.kendall))
    truth, estimate = np.array(truths), np.array(estimates)
    return {
        "mean tau between test sets": float(truth.mean()),
        "mean reliability estimate": float(estimate.mean()),
        "bias": float((estimate - truth).mean()),
        "mean absolute error": float(np.abs(estimate - truth).mean()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=500, help="Simulated studies per scenario (coverage).")
    parser.add_argument("--resamples", type=int, default=1000, help="Bootstrap resamples per interval.")
    parser.add_argument("--repeats", type=int, default=100, help="Approach sets per scenario (reliability).")
    parser.add_argument("--pairs", type=int, default=50, help="Pairs of independent test sets per approach set (the truth).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="Write the results as JSON here.")
    args = parser.parse_args()
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cpus"
    rows = {}
    with task_progress() as progress:
        task = progress.add_task("scenarios", total=len(SCENARIOS), status="")
        for name, scenario in SCENARIOS.items():
            progress.update(task, status=name)
            started = time.perf_counter()
            rows[name] = {
                "scenario": asdict(scenario),
                "true tau": scenario.true_tau,
                **coverage(scenario, args.studies, args.resamples, args.seed),
                **reliability_check(scenario, args.repeats, args.pairs, args.seed),
                "seconds": time.perf_counter() - started,
            }
            progress.update(task, advance=1)
    for name, row in rows.items():
        print(
            f"{name:34s} true tau {row['true tau']:.3f}  two-level BCa {row['coverage two-level BCa']:.3f}  "
            f"percentile {row['coverage two-level percentile']:.3f}  approach-only BCa {row['coverage approach-only BCa']:.3f}  "
            f"reliability {row['mean reliability estimate']:.3f} vs {row['mean tau between test sets']:.3f}"
        )
    payload = {"machine": machine, "studies": args.studies, "resamples": args.resamples, "seed": args.seed, "scenarios": rows}
    if args.out is not None:
        write_json(args.out, payload)


if __name__ == "__main__":
    main()
