"""Uncertainty the paper does not report: resampling the approaches, and the test questions and seeds behind each EM.

The approaches are the sample (a ~ uniform(A), as in the reference study), so every interval
resamples approaches with replacement, the same resample for every cell so that cells can be
compared pairwise. Where a benchmark's per-question outcomes are known
(`concur.analysis.measurement`), each resample also draws its test questions and each cell's
seeds again (a two-level bootstrap): the EMs are themselves estimates, and at a few hundred
questions their noise is often larger than the differences between approaches. Each cell says
which kind of interval it has (`MatrixWithCI.measured`). Intervals are percentile or BCa (Efron & Tibshirani 1993,
ch. 14); both are seeded and identical for the same seed. Resamples in which a correlation
is undefined (e.g. every drawn approach scores 100) are left out of that cell's interval,
and their number is reported.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import pandas as pd
from scipy.special import ndtr, ndtri

from concur.analysis.concurrence import ConcurrenceMatrix, Method, concurrence_matrix, weighted_concurrence
from concur.analysis.measurement import Measurement, em_replicates
from concur.analysis.noise_model import benchmark_noise

INTERVAL_KINDS = {True: "questions+approaches", False: "approaches"}
MAX_NOISE_SCALE = 2.0  # the calibration's largest factor on a resample's question noise (a reliability of 1/4 or less)


class Interval(StrEnum):
    percentile = "percentile"
    bca = "bca"


@dataclass(frozen=True)
class BootstrapSettings:
    n_resamples: int = 2000
    seed: int = 0
    confidence: float = 0.95
    interval: Interval = Interval.bca


@dataclass(frozen=True)
class MatrixWithCI:
    """A concurrence matrix with a confidence interval for every cell."""

    estimate: ConcurrenceMatrix
    lower: pd.DataFrame
    upper: pd.DataFrame
    undefined: pd.DataFrame  # resamples in which the cell's correlation is undefined
    settings: BootstrapSettings
    measured: pd.DataFrame  # True where the interval also resamples both benchmarks' test questions (and seeds)
    replicates: np.ndarray  # (resamples, K, K): the correlations of every resample, for tests between cells

    def kind(self, first: str, second: str) -> str:
        """`questions+approaches` or `approaches`: what the cell's interval resamples."""
        return INTERVAL_KINDS[bool(self.measured.at[first, second])]


@dataclass(frozen=True)
class Comparison:
    """Whether two benchmarks concur differently with a reference, on the same approaches."""

    reference: str
    first: str
    second: str
    method: Method
    n: int
    first_value: float
    second_value: float
    difference: float
    lower: float
    upper: float
    p_value: float
    settings: BootstrapSettings


def resample_weights(n: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Multinomial counts (n_resamples, n): how often each approach is drawn.

    Indices are drawn as `rng.integers(0, n, (n_resamples, n))`, the same draws
    `scipy.stats.bootstrap` makes with this generator, so results can be checked against it.
    """
    draws = rng.integers(0, n, (n_resamples, n))
    counts = np.zeros((n_resamples, n))
    np.add.at(counts, (np.repeat(np.arange(n_resamples), n), draws.ravel()), 1)
    return counts


def jackknife_weights(n: int) -> np.ndarray:
    """Leave-one-approach-out samples (n, n)."""
    return 1.0 - np.eye(n)


def bootstrap_matrix(
    wide: pd.DataFrame, method: Method | str, settings: BootstrapSettings = BootstrapSettings(), measurement: Measurement | None = None
) -> MatrixWithCI:
    """The concurrence matrix of `wide` with seeded bootstrap intervals per cell (two-level where `measurement` covers)."""
    method = Method(method)
    estimate = concurrence_matrix(wide, method)
    replicates = _replicates(wide, method, settings, measurement)
    point = estimate.values.to_numpy()
    if settings.interval is Interval.bca:
        lower, upper = bca_interval(replicates, point, _jackknife(wide, method), settings.confidence)
    else:
        lower, upper = percentile_interval(replicates, settings.confidence)
    labels = estimate.values.index

    def frame(array: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame(array, index=labels, columns=labels)

    covered = np.array([measurement is not None and measurement.covers(str(bench)) for bench in labels])
    measured = frame(covered[:, None] & covered[None, :])
    return MatrixWithCI(estimate, frame(lower), frame(upper), frame(np.isnan(replicates).sum(axis=0)), settings, measured, replicates)


def _replicates(wide: pd.DataFrame, method: Method, settings: BootstrapSettings, measurement: Measurement | None) -> np.ndarray:
    """(resamples, K, K) correlations: approaches drawn from the bootstrap seed's stream, as `scipy.stats.bootstrap`
    draws them; the covered benchmarks' EMs drawn again from their questions and seeds on streams of their own."""
    weights = resample_weights(len(wide), settings.n_resamples, np.random.default_rng(settings.seed))
    covered = measurement is not None and any(measurement.covers(str(bench)) for bench in wide.columns)
    if measurement is None or not covered:
        return weighted_concurrence(wide.to_numpy(dtype=float), weights, method)
    return weighted_concurrence(calibrated_em_replicates(measurement, wide, settings), weights, method)


def calibrated_em_replicates(measurement: Measurement, wide: pd.DataFrame, settings: BootstrapSettings) -> np.ndarray:
    """The EMs of every resample for the concurrence bootstrap: each covered benchmark's drawn deviations scaled by
    1 / sqrt(its reliability), at most `MAX_NOISE_SCALE`.

    A correlation between noisy EMs is attenuated: by the factor rel = V / (V + s2) for true variance V
    across approaches and noise s2 (Pearson; Kendall alike). A resample adds its own noise to EMs that
    already carry some, and BCa takes the further attenuation this causes for the attenuation the estimate
    itself suffered; but a second dose of s2 attenuates by only (V + s2) / (V + 2 s2), less than the first,
    so the interval stays too low (simulated coverage about 0.92 where 0.95 is asked). Noise of s2 / rel
    attenuates by exactly rel again, which is what the scaling gives; the EM intervals use the draws unscaled.
    """
    drawn = em_replicates(measurement, wide, settings.n_resamples, settings.seed)
    observed = wide.to_numpy(dtype=float)
    scaled = drawn.copy()
    for column, bench in enumerate(wide.columns):
        outcomes = measurement.benchmarks.get(str(bench))
        if outcomes is None:
            continue
        noise = benchmark_noise(outcomes)
        reliability = noise.reliability(
            Method.pearson, noise.rows_of([str(a) for a in wide.index[wide[bench].notna()] if str(a) in outcomes.approaches])
        )
        scale = min(MAX_NOISE_SCALE, 1.0 / math.sqrt(reliability)) if reliability > 0 else MAX_NOISE_SCALE
        scaled[:, :, column] = observed[None, :, column] + scale * (drawn[:, :, column] - observed[None, :, column])
    return scaled


def _jackknife(wide: pd.DataFrame, method: Method) -> np.ndarray:
    """Leave-one-approach-out correlations, BCa's acceleration."""
    return weighted_concurrence(wide.to_numpy(dtype=float), jackknife_weights(len(wide)), method)


def percentile_interval(replicates: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Quantiles (1-c)/2 and (1+c)/2 of the defined replicates along axis 0."""
    tail = (1.0 - confidence) / 2.0
    levels = np.broadcast_to(np.array([tail, 1.0 - tail]).reshape((2,) + (1,) * (replicates.ndim - 1)), (2, *replicates.shape[1:]))
    bounds = _quantiles(replicates, levels)
    return bounds[0], bounds[1]


def bca_interval(replicates: np.ndarray, estimate: np.ndarray, jackknife: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Bias-corrected and accelerated interval (Efron 1987), cell by cell.

    Bias z0 from the share of replicates below the estimate (ties count half), acceleration
    from the skewness of the jackknife values.
    """
    defined = ~np.isnan(replicates)
    n_defined = defined.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        below = ((replicates < estimate) & defined).sum(axis=0) + 0.5 * ((replicates == estimate) & defined).sum(axis=0)
        z0 = ndtri(below / n_defined)
        with warnings.catch_warnings():  # a cell undefined in every jackknife sample has no mean; acceleration 0 below
            warnings.simplefilter("ignore", RuntimeWarning)
            deviations = np.nanmean(jackknife, axis=0) - jackknife
        acceleration = np.nansum(deviations**3, axis=0) / (6.0 * np.nansum(deviations**2, axis=0) ** 1.5)
    acceleration = np.where(np.isfinite(acceleration), acceleration, 0.0)  # no jackknife spread: no acceleration
    tail = (1.0 - confidence) / 2.0
    unusable = ~np.isfinite(z0) | np.isnan(estimate)  # every replicate on one side of the estimate, or no estimate
    z0 = np.where(unusable, 0.0, z0)
    levels = []
    for z_alpha in (ndtri(tail), ndtri(1.0 - tail)):
        shifted = z0 + z_alpha
        levels.append(ndtr(z0 + shifted / (1.0 - acceleration * shifted)))
    bounds = _quantiles(replicates, np.stack(levels))
    return np.where(unusable, np.nan, bounds[0]), np.where(unusable, np.nan, bounds[1])


def compare_with_reference(
    wide: pd.DataFrame,
    reference: str,
    first: str,
    second: str,
    method: Method | str,
    settings: BootstrapSettings = BootstrapSettings(),
    measurement: Measurement | None = None,
) -> Comparison:
    """Paired bootstrap test of CORR(first, reference) - CORR(second, reference).

    Both correlations are computed on the approaches that have all three values and on the
    same resamples (of approaches, and of questions and seeds where `measurement` covers), so
    their dependence (they share the reference) is kept.
    """
    method = Method(method)
    complete = wide[[reference, first, second]].dropna()
    estimate = weighted_concurrence(complete.to_numpy(dtype=float), np.ones((1, len(complete))), method)[0]
    replicates = _replicates(complete, method, settings, measurement)
    return difference_test(
        reference,
        first,
        second,
        method,
        len(complete),
        (float(estimate[0, 1]), float(estimate[0, 2])),
        replicates[:, 0, 1] - replicates[:, 0, 2],
        settings,
    )


def difference_test(
    reference: str,
    first: str,
    second: str,
    method: Method,
    n: int,
    values: tuple[float, float],
    differences: np.ndarray,
    settings: BootstrapSettings,
) -> Comparison:
    """The percentile interval and two-sided p-value of a difference of two correlations from its replicates.

    The p-value is twice the smaller share of defined replicate differences on either side of 0.
    """
    differences = differences[~np.isnan(differences)]
    if differences.size:
        bounds = percentile_interval(differences, settings.confidence)
        lower, upper = float(bounds[0]), float(bounds[1])
        p_value = min(1.0, 2.0 * min(float(np.mean(differences <= 0)), float(np.mean(differences >= 0))))
    else:
        lower = upper = p_value = float("nan")
    return Comparison(reference, first, second, method, n, values[0], values[1], values[0] - values[1], lower, upper, p_value, settings)


def row_tests(ci: MatrixWithCI, reference: str) -> pd.DataFrame:
    """Every pair of benchmarks in `reference`'s row: does one concur with it more than the other?

    Differences and p-values come from the matrix's own resamples (each correlation over its
    pairwise-complete approaches); `q_value` is the Benjamini-Hochberg adjusted p-value over the
    whole row, so reading every row entry at q < 0.05 keeps the expected share of false
    discoveries below 5%. `kind` is `questions+approaches` only where both correlations'
    resamples also draw test questions (`MatrixWithCI.measured`), whichever is named first.
    """
    labels = [str(bench) for bench in ci.estimate.values.columns]
    others = [bench for bench in labels if bench != reference]
    at = {bench: index for index, bench in enumerate(labels)}
    rows = []
    for position, first in enumerate(others):
        for second in others[position + 1 :]:
            differences = ci.replicates[:, at[first], at[reference]] - ci.replicates[:, at[second], at[reference]]
            values = (ci.estimate.pair(first, reference)[0], ci.estimate.pair(second, reference)[0])
            n = min(ci.estimate.pair(first, reference)[1], ci.estimate.pair(second, reference)[1])
            test = difference_test(reference, first, second, ci.estimate.method, n, values, differences, ci.settings)
            measured = bool(ci.measured.at[first, reference]) and bool(ci.measured.at[second, reference])  # both correlations
            rows.append({**{name: getattr(test, name) for name in ROW_TEST_FIELDS}, "kind": INTERVAL_KINDS[measured]})
    frame = pd.DataFrame(rows, columns=[*ROW_TEST_FIELDS, "kind"])
    frame["q_value"] = benjamini_hochberg(frame["p_value"].to_numpy(dtype=float))
    return frame


ROW_TEST_FIELDS = ("first", "second", "first_value", "second_value", "difference", "lower", "upper", "p_value", "n")


def benjamini_hochberg(p_values: np.ndarray) -> np.ndarray:
    """Adjusted p-values (q-values) controlling the false discovery rate (Benjamini & Hochberg 1995); NaN stays NaN."""
    q_values = np.full(p_values.shape, np.nan)
    defined = np.flatnonzero(~np.isnan(p_values))
    if defined.size == 0:
        return q_values
    order = defined[np.argsort(p_values[defined], kind="stable")]
    ranked = p_values[order] * defined.size / np.arange(1, defined.size + 1)
    q_values[order] = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
    return q_values


def approach_count_curve(
    wide: pd.DataFrame,
    reference: str,
    others: list[str],
    method: Method | str,
    sizes: list[int],
    *,
    draws: int,
    seed: int,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """How many approaches are enough: concurrence with `reference` on random subsets.

    For each subset size k, `draws` subsets of k approaches (without replacement) are drawn
    from those with a value on the reference; each row gives the mean and central interval
    of the concurrence, and how far it strays from the value on all approaches.
    """
    method = Method(method)
    rng = np.random.default_rng(seed)
    columns = [reference, *others]
    table = wide.loc[wide[reference].notna(), columns]
    values = table.to_numpy(dtype=float)
    full = weighted_concurrence(values, np.ones((1, len(table))), method)[0, 0, 1:]
    tail = (1.0 - confidence) / 2.0
    rows = []
    for size in sizes:
        if size > len(table):
            continue
        order = np.argsort(rng.random((draws, len(table))), axis=1)
        subsets = (order < size).astype(float)
        estimates = weighted_concurrence(values, subsets, method)[:, 0, 1:]
        for column, other in enumerate(others):
            defined = estimates[:, column][~np.isnan(estimates[:, column])]
            if defined.size:
                low, high = np.quantile(defined, [tail, 1.0 - tail])
                mean, error = float(defined.mean()), float(np.mean(np.abs(defined - full[column])))
            else:
                low = high = mean = error = float("nan")
            rows.append(
                {
                    "approaches": size,
                    "benchmark": other,
                    "mean": mean,
                    "lower": float(low),
                    "upper": float(high),
                    "mean_abs_error": error,
                    "full": float(full[column]),
                    "undefined": int(draws - defined.size),
                }
            )
    return pd.DataFrame(rows)


def _quantiles(replicates: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Per-cell quantiles of the defined replicates (linear interpolation, as numpy's default).

    `levels` has shape (Q, *cell_shape): each cell can ask for its own levels, which BCa needs.
    """
    ordered = np.sort(replicates, axis=0)  # NaN sorts last
    n_defined = (~np.isnan(replicates)).sum(axis=0)
    position = levels * (n_defined - 1)
    below = np.clip(np.floor(position).astype(int), 0, max(replicates.shape[0] - 1, 0))
    above = np.clip(below + 1, 0, np.maximum(n_defined - 1, 0))
    fraction = position - below
    low = np.take_along_axis(ordered, below, axis=0)
    high = np.take_along_axis(ordered, above, axis=0)
    result = low + fraction * (high - low)
    return np.where(n_defined > 0, result, np.nan)
