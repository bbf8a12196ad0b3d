"""Speed of the vectorised concurrence bootstrap: 44 benchmarks x 20 approaches, BCa.

Run: `python -m bench.speed_bootstrap [--resamples 2000] [--repeats 5] [--questions N]`. Prints the
median wall time per full matrix with intervals, and the machine it ran on. With `--questions N`
the table is a simulated study of the same size whose benchmarks have N test questions each
(`bench.noise_simulation`), and the bootstrap is the two-level one (questions shared by the
approaches, then approaches); the noise ceilings of both correlations are timed too.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import numpy as np
import pandas as pd

from bench.noise_simulation import Scenario, as_measurement, draw_outcomes
from concur.analysis.bootstrap import BootstrapSettings, Interval, bootstrap_matrix
from concur.analysis.concurrence import Method, concurrence_matrix
from concur.analysis.measurement import Measurement, cell_em_intervals
from concur.analysis.reference import liu2023
from concur.analysis.reliability import noise_ceilings

APPROACHES, BENCHMARKS = 20, 44  # the reference study's table


def simulated_table(questions: int, seed: int = 0) -> tuple[pd.DataFrame, Measurement]:
    """A 20 x 44 study with `questions` simulated test questions per benchmark; the benchmarks share most of an
    approach's ability (a common part, sd 1, and one of their own, sd 0.5)."""
    rng = np.random.default_rng(seed)
    scenario = Scenario(approaches=APPROACHES, questions=questions)
    common = rng.normal(0.0, scenario.ability_sd, APPROACHES)
    outcomes = {
        f"bench{index:02d}": draw_outcomes(common + rng.normal(0.0, 0.5 * scenario.ability_sd, APPROACHES), scenario, rng)
        for index in range(BENCHMARKS)
    }
    return as_measurement(outcomes)


def _timed(call: Callable[[], object], repeats: int) -> str:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return f"median {statistics.median(times):.3f} s  (min {min(times):.3f}, max {max(times):.3f}, {repeats} runs)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--questions", type=int, default=0, help="Simulated questions per benchmark (0: liu2023).")
    args = parser.parse_args()
    if args.questions < 0:
        parser.error(f"--questions must be 0 or more, got {args.questions}")
    measurement: Measurement | None = None
    if args.questions:
        wide, measurement = simulated_table(args.questions)
        source = f"simulated, {args.questions} questions per benchmark"
    else:
        reference = liu2023()
        wide = reference.pivot(index="approach", columns="benchmark", values="em")
        source = "liu2023"
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, numpy {np.__version__}, pandas {pd.__version__}")
    print(f"table: {wide.shape[0]} approaches x {wide.shape[1]} benchmarks ({source}), {args.resamples} resamples")
    for method in ("kendall", "pearson"):
        for interval in Interval:
            settings = BootstrapSettings(args.resamples, 0, 0.95, interval)
            print(f"{method:8s} {interval:10s} " + _timed(partial(_matrix, wide, method, settings, measurement), args.repeats))
    if measurement is not None:
        for method in (Method.kendall, Method.pearson):
            observed = concurrence_matrix(wide, method).values
            print(f"{'ceilings':8s} {method:10s} " + _timed(partial(noise_ceilings, wide, measurement, method, observed), args.repeats))
        settings = BootstrapSettings(args.resamples, 0, 0.95, Interval.bca)
        print(f"{'report':8s} {'all':10s} " + _timed(partial(_report_statistics, wide, settings, measurement), args.repeats))


def _fresh(measurement: Measurement | None) -> Measurement | None:
    """The measurement without the question draws an earlier call kept, so that every timed call draws them."""
    return None if measurement is None else replace(measurement, drawn={})


def _matrix(wide: pd.DataFrame, method: str, settings: BootstrapSettings, measurement: Measurement | None) -> None:
    bootstrap_matrix(wide, method, settings, _fresh(measurement))


def _report_statistics(wide: pd.DataFrame, settings: BootstrapSettings, measurement: Measurement) -> None:
    """What a report computes from the table's noise: both matrices (one set of question draws), EM intervals, ceilings."""
    fresh = _fresh(measurement)
    assert fresh is not None
    for method in (Method.kendall, Method.pearson):
        ci = bootstrap_matrix(wide, method, settings, fresh)
        noise_ceilings(wide, fresh, method, ci.estimate.values)
    cell_em_intervals(fresh, wide, confidence=settings.confidence, n_resamples=settings.n_resamples, seed=settings.seed)


if __name__ == "__main__":
    main()
