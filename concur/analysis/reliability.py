"""How much of a concurrence the test questions allow: each benchmark's reliability, each pair's ceiling.

Each EM is the approach's true accuracy plus noise whose covariance across approaches is known
from the per-question outcomes (`concur.analysis.measurement`): the questions are shared, so
the noise of a difference between two approaches is the variance of their per-question
differences over the number of questions, plus the seed variance of each cell where it has
several runs. From it:

- **Kendall.** Two approaches whose true EMs differ by `delta`, measured with a difference
  noise `sigma`, are ordered the same way on a second test set with agreement
  `rho = 2 Phi(|delta| / sigma) - 1` (the expected product of the two orders' signs). The
  expected tau between two independent test sets of one benchmark (its **reliability**) is
  the mean of `rho^2` over pairs of approaches; the **ceiling** of a pair of benchmarks,
  what tau would be if both ranked the approaches identically, is the mean of
  `|rho_1| |rho_2|`. `delta^2` is estimated without the bias of the observed difference
  (`d^2 - sigma^2`, floored at 0), since `E[d^2] = delta^2 + sigma^2`.
- **Pearson.** The classical reliability: the share of the EMs' variance across approaches
  that is not noise; the ceiling is `sqrt(rel_1 rel_2)` and the disattenuated r is
  `r / sqrt(rel_1 rel_2)` (Spearman 1904).

A cell is **inconclusive** when noise alone could explain it: its interval includes 0, or its
ceiling is below `CONCLUSIVE_CEILING`, so that even identical rankings would look unalike.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import chdtrc

from concur.analysis.bootstrap import MatrixWithCI
from concur.analysis.concurrence import Method
from concur.analysis.measurement import Measurement
from concur.analysis.noise_model import BenchmarkNoise, benchmark_noise

CONCLUSIVE_CEILING = 0.5  # below it, a pair's noise alone would halve an identical ranking
TARGET_CEILING = 0.8  # the reliability the report's warnings say how to reach ("high", as the paper reads tau)
MAX_SCALE = 1e4  # the most questions (times today's) or EM spread the search for the target tries


@dataclass(frozen=True)
class NoiseCeilings:
    """Reliability per benchmark and ceiling per pair for one correlation; NaN where a benchmark has no per-question data."""

    method: Method
    reliability: pd.Series  # by benchmark
    ceiling: pd.DataFrame  # benchmark x benchmark; the diagonal holds the reliability
    disattenuated: pd.DataFrame | None  # Pearson only: r / sqrt(rel_1 rel_2) over each pair's common approaches


def noise_ceilings(wide: pd.DataFrame, measurement: Measurement, method: Method, observed: pd.DataFrame | None = None) -> NoiseCeilings:
    """Reliabilities and ceilings of `wide`'s benchmarks over its approaches (pairwise-complete, as the matrix).

    `observed` is the Pearson matrix whose values are disattenuated. Benchmarks with a value for
    the same approaches share one set of pairs, so their ceilings are one matrix product.
    """
    labels = [str(bench) for bench in wide.columns]
    models = {bench: benchmark_noise(measurement.benchmarks[bench]) for bench in labels if measurement.covers(bench)}
    ceiling = pd.DataFrame(np.nan, index=labels, columns=labels)
    present = wide.notna()
    groups: dict[tuple[str, ...], list[str]] = {}
    for bench in models:
        groups.setdefault(tuple(str(approach) for approach in wide.index[present[bench]]), []).append(bench)
    for common, benches in groups.items():  # pairs within a group: the same approaches
        if len(common) >= 2:
            ceiling.loc[benches, benches] = _ceilings([models[bench] for bench in benches], list(common), method)
    for (first_common, first_group), (second_common, second_group) in itertools.permutations(groups.items(), 2):
        shared = [approach for approach in first_common if approach in set(second_common)]
        if len(shared) < 2:
            continue
        for first in first_group:
            for second in second_group:
                ceiling.at[first, second] = _ceilings([models[first], models[second]], shared, method)[0, 1]
    disattenuated = None
    if method is Method.pearson and observed is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            disattenuated = observed.loc[labels, labels] / ceiling.where(ceiling > 0)
        disattenuated = disattenuated.where(~np.eye(len(labels), dtype=bool))
    reliability = pd.Series({bench: ceiling.at[bench, bench] for bench in labels}, dtype=float)
    return NoiseCeilings(method, reliability, ceiling, disattenuated)


def _ceilings(models: list[BenchmarkNoise], approaches: list[str], method: Method) -> np.ndarray:
    """The ceilings among benchmarks over the same approaches; the diagonal holds each one's reliability."""
    if method is Method.kendall:  # tau-b: sum of |rho_1| |rho_2| over sqrt(untied pairs of 1 x untied pairs of 2)
        agreement = np.stack([model.agreement(model.rows_of(approaches)) for model in models])  # (benchmarks, pairs)
        untied = np.array([model.untied(model.rows_of(approaches)).sum() for model in models], dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            matrix = agreement @ agreement.T / np.sqrt(np.outer(untied, untied))
        diagonal = [model.reliability(Method.kendall, model.rows_of(approaches)) for model in models]
    else:
        shares = np.array([max(model.true_variance_share(model.rows_of(approaches)), 0.0) for model in models])
        matrix = np.sqrt(np.outer(shares, shares))
        diagonal = [model.true_variance_share(model.rows_of(approaches)) for model in models]
    np.fill_diagonal(matrix, diagonal)
    return np.asarray(matrix)


def inconclusive(ci: MatrixWithCI | None, ceilings: NoiseCeilings | None) -> pd.DataFrame:
    """True where noise alone could explain a cell (interval includes 0, or ceiling below `CONCLUSIVE_CEILING`),
    False where neither holds, None where it cannot be told (no interval and no low ceiling). The diagonal is None."""
    if ci is not None:
        labels = [str(bench) for bench in ci.estimate.values.index]
    elif ceilings is not None:
        labels = [str(bench) for bench in ceilings.ceiling.index]
    else:
        raise ValueError("inconclusive needs an interval or a ceiling")
    size = len(labels)
    low = np.zeros((size, size), dtype=bool)
    if ceilings is not None:
        low = ceilings.ceiling.loc[labels, labels].to_numpy(dtype=float) < CONCLUSIVE_CEILING  # NaN compares False
    verdict = np.full((size, size), None, dtype=object)
    if ci is not None:
        lower, upper = ci.lower.to_numpy(dtype=float), ci.upper.to_numpy(dtype=float)
        known = ~np.isnan(lower)
        spans_zero = known & (lower <= 0.0) & (upper >= 0.0)
        verdict[known] = [bool(value) for value in spans_zero[known]]  # Python booleans: JSON and `verdict_at` read them
    verdict[low] = True
    np.fill_diagonal(verdict, None)
    return pd.DataFrame(verdict, index=labels, columns=labels, dtype=object)


def verdict_at(frame: pd.DataFrame, first: str, second: str) -> bool | None:
    """A cell of an `inconclusive` frame (True, False or None)."""
    value = frame.at[first, second]
    return value if isinstance(value, bool) else None


@dataclass(frozen=True)
class Remedy:
    """What it would take a benchmark to reach a reliability of `target`: questions, or a wider EM spread.

    Both are estimated from the approaches' differences, so neither is given when the
    differences do not stand out from noise (`equal_p` at least `ALPHA_EQUAL`): the data are
    then as consistent with approaches of equal accuracy, whose ranking no number of
    questions makes meaningful.
    """

    benchmark: str
    reliability: float
    n_questions: int
    equal_p: float  # p-value of "every approach has the same true EM" (a Wald test with the noise covariance)
    questions_needed: int | None  # None: not estimable (equal_p), or more questions alone do not reach it (seed noise)
    spread_needed: float | None  # the factor on today's EM differences that reaches it at today's size


ALPHA_EQUAL = 0.05  # below it, the approaches' EMs differ beyond noise and a remedy can be estimated


def remedy(noise: BenchmarkNoise, method: Method, target: float = TARGET_CEILING) -> Remedy:
    """How many test questions, or how much wider a spread of EMs, would bring the reliability to `target`."""
    today = noise.reliability(method)
    equal_p = equal_accuracy_p(noise)
    questions = spread = None
    if equal_p < ALPHA_EQUAL:
        questions = _smallest(lambda scale: noise.reliability(method, n_questions=noise.n_questions * scale), target)
        spread = _smallest(lambda scale: noise.reliability(method, spread=scale), target)
    return Remedy(
        noise.benchmark,
        today,
        noise.n_questions,
        equal_p,
        None if questions is None else math.ceil(noise.n_questions * questions),
        spread,
    )


def equal_accuracy_p(noise: BenchmarkNoise) -> float:
    """p-value of the hypothesis that every approach has the same true EM: the Wald statistic of the centred EMs
    under their noise covariance, chi-squared with (its rank) degrees of freedom."""
    n = len(noise.approaches)
    centring = np.eye(n) - 1.0 / n
    deviations = centring @ noise.em
    covariance = centring @ noise.covariance() @ centring
    rank = int(np.linalg.matrix_rank(covariance))
    if rank == 0:
        return 1.0 if np.allclose(deviations, 0.0) else 0.0
    statistic = float(deviations @ np.linalg.pinv(covariance) @ deviations)
    return float(chdtrc(rank, statistic))


def _smallest(reliability_at: Callable[[float], float], target: float) -> float | None:
    """The smallest scale in [1, MAX_SCALE] at which the (increasing) reliability reaches `target`, by bisection."""
    if reliability_at(1.0) >= target:
        return 1.0
    if not reliability_at(MAX_SCALE) >= target:
        return None
    low, high = 1.0, MAX_SCALE
    while high / low > 1.01:
        middle = math.sqrt(low * high)
        low, high = (middle, high) if reliability_at(middle) < target else (low, middle)
    return high


@dataclass(frozen=True)
class MatrixNoise:
    """What noise says about a matrix: each pair's ceiling (where per-question data exists) and which cells are inconclusive."""

    ceilings: NoiseCeilings | None  # None when no benchmark of the matrix has per-question data
    inconclusive: pd.DataFrame  # True / False / None per cell (`inconclusive`)


def assess_matrix(
    wide: pd.DataFrame, measurement: Measurement, method: Method, observed: pd.DataFrame, ci: MatrixWithCI | None
) -> MatrixNoise | None:
    """The noise assessment of a matrix of `wide`; None when there is nothing to assess it with (no interval, no per-question data)."""
    covered = any(measurement.covers(str(bench)) for bench in wide.columns)
    if ci is None and not covered:
        return None
    ceilings = noise_ceilings(wide, measurement, method, observed) if covered else None
    return MatrixNoise(ceilings, inconclusive(ci, ceilings))
