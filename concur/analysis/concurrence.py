"""Pearson r and Kendall tau-b between every pair of benchmarks, vectorised over resamples.

`CONCUR(B1, B2; A) = CORR(EM(a, B1), EM(a, B2))` over approaches `a`. Missing
cells are handled pairwise-complete: a pair of benchmarks is correlated over the approaches
that have both values, and that count is reported with every cell.

All statistics are computed for a batch of approach *weights* at once: weight 1 for every
approach is the plain estimate, multinomial counts are bootstrap resamples, 0/1 vectors are
jackknife or subsampling draws. A resample that repeats an approach c times is the same as
weighting it by c, so the bootstrap never copies data, and everything reduces to a few
batched matrix products (44 benchmarks x 2,000 resamples take about a second).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import pandas as pd

# Centred sums of squares below this are treated as zero variance (a constant column, e.g.
# every approach at 100 EM): the correlation is undefined there, not a rounding artefact.
VARIANCE_FLOOR = 1e-9
# Upper bound on the bytes of one batched intermediate array; larger batches are chunked.
CHUNK_BYTES = 64 * 2**20
# Fewest approaches a statistic should rest on before it is read without a warning. Below
# five, Kendall's tau takes only a handful of values (n = 4 gives 6 pairs, so tau moves in
# steps of 1/3) and a bootstrap interval over the approaches often spans nearly [-1, 1]; every
# output flags statistics computed over fewer approaches than this.
MIN_APPROACHES = 5


class Method(StrEnum):
    pearson = "pearson"
    kendall = "kendall"


METHOD_SYMBOLS = {Method.pearson: "r", Method.kendall: "τ"}
METHOD_LABELS = {Method.pearson: "Pearson r", Method.kendall: "Kendall τ"}


@dataclass(frozen=True)
class ConcurrenceMatrix:
    """A benchmark x benchmark matrix and the number of approaches behind each cell."""

    method: Method
    values: pd.DataFrame
    counts: pd.DataFrame

    def pair(self, first: str, second: str) -> tuple[float, int]:
        return number_at(self.values, first, second), int(number_at(self.counts, first, second))

    def small_n(self) -> pd.DataFrame:
        """True where a cell rests on fewer than `MIN_APPROACHES` approaches."""
        return self.counts.map(is_small_n)


def number_at(frame: pd.DataFrame, row: str, column: str) -> float:
    """The number in a numeric frame's cell (pandas' types allow any scalar there, so this checks)."""
    value = frame.at[row, column]
    if not isinstance(value, int | float | np.number):
        raise TypeError(f"cell ({row!r}, {column!r}) holds {value!r}, not a number")
    return float(value)


def is_small_n(n: int) -> bool:
    """Whether a statistic over `n` approaches is too coarse to read without a warning."""
    return n < MIN_APPROACHES


def concurrence_matrix(wide: pd.DataFrame, method: Method | str) -> ConcurrenceMatrix:
    """Correlate every pair of columns of an approaches x benchmarks EM table."""
    method = Method(method)
    values = wide.to_numpy(dtype=float)
    weights = np.ones((1, values.shape[0]))
    matrix = weighted_concurrence(values, weights, method)[0]
    present = (~np.isnan(values)).astype(float)
    counts = (present.T @ present).astype(int)
    labels = list(wide.columns)
    return ConcurrenceMatrix(
        method,
        pd.DataFrame(matrix, index=labels, columns=labels),
        pd.DataFrame(counts, index=labels, columns=labels),
    )


def weighted_concurrence(values: np.ndarray, weights: np.ndarray, method: Method | str) -> np.ndarray:
    """Correlation matrices (B, K, K) of `values` (n approaches x K benchmarks, NaN = missing).

    Row b of `weights` (B, n) says how often each approach occurs in sample b; the result
    equals the correlation computed on that sample with the approaches repeated. `values` may
    also differ per sample, (B, n, K): EM drawn again from its test questions in each resample.
    """
    method = Method(method)
    values = np.asarray(values, dtype=float)
    weights = np.asarray(weights, dtype=float)
    batched = values.ndim == 3
    n, k = values.shape[-2:]
    if weights.ndim != 2 or weights.shape[1] != n or (batched and values.shape[0] != weights.shape[0]):
        raise ValueError(f"weights must have shape ({values.shape[0] if batched else 'B'}, {n}), got {weights.shape}")
    compute = _pearson if method is Method.pearson else _kendall
    per_sample = n * k if method is Method.pearson else _n_pairs(n) * k
    chunk = max(1, CHUNK_BYTES // (8 * max(per_sample, 1)))
    parts = [
        compute(values[start : start + chunk] if batched else values[None], weights[start : start + chunk])
        for start in range(0, weights.shape[0], chunk)
    ]
    return np.concatenate(parts, axis=0) if parts else np.empty((0, k, k))


def _pearson(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """`values` (1 or B, n, K): one table for every sample, or one per sample."""
    present = (~np.isnan(values)).astype(float)
    centred = np.nan_to_num(values - np.nanmean(values, axis=1, keepdims=True))  # centring keeps the sums well conditioned
    weighted = weights[:, :, None] * present  # (B, n, K)
    wt = weighted.transpose(0, 2, 1)
    n = wt @ present  # (B, K, K): weight of approaches present in both k and l
    sum_x = (wt * centred.transpose(0, 2, 1)) @ present  # sum of x_k over those approaches
    sum_xx = (wt * (centred**2).transpose(0, 2, 1)) @ present
    sum_xy = (wt * centred.transpose(0, 2, 1)) @ centred
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_x = sum_x / n
        sum_y = sum_x.transpose(0, 2, 1)
        cov = sum_xy - sum_x * sum_y / n
        var_x = sum_xx - sum_x * mean_x
        var_y = var_x.transpose(0, 2, 1)
        r = cov / np.sqrt(var_x * var_y)
    undefined = (n < 2) | (var_x <= VARIANCE_FLOOR) | (var_y <= VARIANCE_FLOOR)
    return np.where(undefined, np.nan, np.clip(r, -1.0, 1.0))


def _kendall(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """tau-b = sum(s_k s_l) / sqrt(untied_k * untied_l) over pairs valid in both benchmarks.

    `values` (1 or B, n, K). Copies of one approach form pairs tied in both benchmarks; they
    add equally to every term of the denominator's (n0 - n1) and cancel, so only distinct
    pairs are needed.
    """
    first, second = np.triu_indices(values.shape[1], k=1)
    with np.errstate(invalid="ignore"):
        signs = np.sign(values[:, first] - values[:, second])  # (1 or B, P, K), NaN where either is missing
    valid = (~np.isnan(signs)).astype(float)
    signs = np.nan_to_num(signs)
    untied = np.abs(signs)
    pair_weights = weights[:, first] * weights[:, second]  # (B, P)
    weighted_signs = (pair_weights[:, :, None] * signs).transpose(0, 2, 1)  # (B, K, P)
    numerator = weighted_signs @ signs
    weighted_untied = (pair_weights[:, :, None] * untied).transpose(0, 2, 1)
    untied_in_first = weighted_untied @ valid  # [k, l]: pairs untied in k among pairs valid for (k, l)
    denominator = untied_in_first * untied_in_first.transpose(0, 2, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = numerator / np.sqrt(denominator)
    return np.where(denominator > 0, np.clip(tau, -1.0, 1.0), np.nan)


def _n_pairs(n: int) -> int:
    return n * (n - 1) // 2
