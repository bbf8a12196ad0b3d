"""Effective robustness: how much better a model does under shift than its in-distribution score predicts.

Following Miller et al. (2020, "The Effect of Natural Distribution Shift on Question
Answering Models"; after Taori et al. 2020), shifted-set scores y are regressed on
original-set scores x across models, in an axis scaling in which that relation is close to
linear (`probit` in the paper; `logit` and `linear` for comparison). A model's effective
robustness is its distance above the fitted line, in percentage points. The band around
the line is a pointwise percentile bootstrap over models: the models are the sample, so
they are resampled with replacement (the same draws as `concur.analysis.bootstrap`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
from scipy.special import expit, logit, ndtr, ndtri

from concur.analysis.bootstrap import resample_weights
from concur.errors import ConcurError, UnknownNameError

Scaling = Literal["linear", "probit", "logit"]  # how scores are mapped before the linear fit
SCALINGS: tuple[Scaling, ...] = get_args(Scaling)
# Scores of exactly 0 or 100 % have no probit/logit; they are moved this many percentage
# points inside [0, 100] first: half a question on a 1,000-question test set, finer than any
# difference such a benchmark can show.
CLIP_PERCENT = 0.05
DEFAULT_GRID_POINTS = 101
MIN_MODELS = 3  # a line through two points fits perfectly and has no spread to resample
_NO_SPREAD = 1e-12  # relative: rounding leaves sxx slightly above 0 when all drawn x are equal


@dataclass(frozen=True, eq=False)
class RobustnessFit:
    """A line y = intercept + slope * x in transformed space, with its bootstrap band (percent)."""

    scaling: str
    slope: float
    intercept: float
    r2: float
    n: int
    confidence: float
    n_resamples: int
    seed: int
    grid: np.ndarray  # x values (percent) at which the line and band are given
    line: np.ndarray  # fitted y at `grid` (percent)
    lower: np.ndarray  # pointwise band at `grid` (percent)
    upper: np.ndarray
    effective_robustness: np.ndarray  # y - fitted y at each model's x, percentage points, in input order

    def predict(self, x: np.ndarray | float) -> np.ndarray:
        """The fitted shifted-set score (percent) for original-set scores `x` (percent)."""
        return from_axis(self.intercept + self.slope * to_axis(x, self.scaling), self.scaling)


def to_axis(percent: np.ndarray | float, scaling: str) -> np.ndarray:
    """Scores in percent to the fitting (and plotting) axis of `scaling`; 0 and 100 are clipped (CLIP_PERCENT)."""
    _check_scaling(scaling)
    values = np.asarray(percent, dtype=float)
    if scaling == "linear":
        return values
    share = np.clip(values, CLIP_PERCENT, 100.0 - CLIP_PERCENT) / 100.0
    return np.asarray(ndtri(share) if scaling == "probit" else logit(share), dtype=float)


def from_axis(values: np.ndarray | float, scaling: str) -> np.ndarray:
    """The inverse of `to_axis` (up to clipping): axis values back to percent."""
    _check_scaling(scaling)
    values = np.asarray(values, dtype=float)
    if scaling == "linear":
        return values
    return 100.0 * (ndtr(values) if scaling == "probit" else expit(values))


def fit_effective_robustness(
    x: np.ndarray,
    y: np.ndarray,
    *,
    scaling: str,
    n_resamples: int,
    seed: int,
    confidence: float = 0.95,
    grid: np.ndarray | None = None,
) -> RobustnessFit:
    """Least-squares line of `y` on `x` (percent, one pair per model) in `scaling`, with a bootstrap band.

    The band at each grid point is the (1 - confidence) / 2 and (1 + confidence) / 2
    quantiles of the lines fitted to `n_resamples` resamples of the models; resamples in
    which every drawn model has the same x (no line) are left out. Same seed, same band.
    """
    _check_scaling(scaling)
    x_values, y_values = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x_values.ndim != 1 or x_values.shape != y_values.shape:
        raise ConcurError(f"x and y must be two equally long lists of scores, got shapes {x_values.shape} and {y_values.shape}")
    scores = np.concatenate([x_values, y_values])
    if not np.isfinite(scores).all() or ((scores < 0) | (scores > 100)).any():
        raise ConcurError("scores must be percentages from 0 to 100 (no missing values)")
    if len(x_values) < MIN_MODELS or np.ptp(to_axis(x_values, scaling)) == 0:
        raise ConcurError(f"a robustness line needs at least {MIN_MODELS} models with different original-set scores, got {len(x_values)}")
    if n_resamples < 1 or not 0 < confidence < 1:
        raise ConcurError(f"need n_resamples >= 1 and 0 < confidence < 1, got {n_resamples} and {confidence}")
    grid_values = np.linspace(x_values.min(), x_values.max(), DEFAULT_GRID_POINTS) if grid is None else np.asarray(grid, dtype=float)

    tx, ty = to_axis(x_values, scaling), to_axis(y_values, scaling)
    slope, intercept = _weighted_lines(tx, ty, np.ones((1, len(tx))))
    r2 = float(np.corrcoef(tx, ty)[0, 1] ** 2) if np.ptp(ty) > 0 else float("nan")  # no variance to explain
    weights = resample_weights(len(tx), n_resamples, np.random.default_rng(seed))
    slopes, intercepts = _weighted_lines(tx, ty, weights)
    lines = intercepts[:, None] + slopes[:, None] * to_axis(grid_values, scaling)[None, :]
    tail = (1.0 - confidence) / 2.0
    lower, upper = np.nanquantile(lines, [tail, 1.0 - tail], axis=0)
    fitted = intercept[0] + slope[0] * to_axis(grid_values, scaling)
    return RobustnessFit(
        scaling=scaling,
        slope=float(slope[0]),
        intercept=float(intercept[0]),
        r2=r2,
        n=len(x_values),
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        grid=grid_values,
        line=from_axis(fitted, scaling),
        lower=from_axis(lower, scaling),
        upper=from_axis(upper, scaling),
        effective_robustness=y_values - from_axis(intercept[0] + slope[0] * tx, scaling),
    )


def _weighted_lines(tx: np.ndarray, ty: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares slope and intercept for each row of model weights (counts of a resample), at once.

    A row whose weighted x has no spread gets NaN (no line through one point).
    """
    total = weights.sum(axis=1)
    mean_x, mean_y = weights @ tx / total, weights @ ty / total
    dx = tx[None, :] - mean_x[:, None]
    sxx = (weights * dx * dx).sum(axis=1)
    sxy = (weights * dx * (ty[None, :] - mean_y[:, None])).sum(axis=1)
    flat = sxx <= _NO_SPREAD * (weights * tx[None, :] ** 2).sum(axis=1)
    slopes = np.where(flat, np.nan, sxy / np.where(flat, 1.0, sxx))
    return slopes, mean_y - slopes * mean_x


def _check_scaling(scaling: str) -> None:
    if scaling not in SCALINGS:
        raise UnknownNameError("scaling", scaling, SCALINGS)
