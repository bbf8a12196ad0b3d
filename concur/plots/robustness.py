"""The effective-robustness scatter: shifted-set against original-set score, one point per model.

Drawn as in Miller et al. (2020): in the fit's axis scaling (probit, logit or linear), where
the fitted line is straight, with ticks labelled in percent so that scores read as scores.
The models farthest from the line are named, since they are the interesting ones.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, NullLocator

from concur.analysis.robustness import RobustnessFit, to_axis
from concur.errors import ConcurError
from concur.plots.style import OKABE_ITO, figure_style

FIGSIZE = (5.5, 4.8)
POINT_COLOR = OKABE_ITO[0]
FIT_COLOR = OKABE_ITO[5]
DIAGONAL_COLOR = OKABE_ITO[7]
BAND_ALPHA = 0.25
POINT_SIZE = 22
ANNOTATED = 5  # models named on the plot: the largest |effective robustness|
PADDING = 0.04  # share of the data range left free around it
TICK_BINS = 6
LABEL_FONTSIZE = 7
LEGEND_FONTSIZE = 8  # smaller than the style default: four entries share the plot with the points


def robustness_figure(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    labels: Sequence[str],
    fit: RobustnessFit,
    *,
    x_label: str,
    y_label: str,
    title: str | None = None,
    annotate: int = ANNOTATED,
) -> Figure:
    """Models (x = original-set score, y = shifted-set score, percent), the fit with its band, and y = x."""
    x_values, y_values = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if not len(x_values) == len(y_values) == len(labels):
        raise ConcurError(f"x, y and labels must be equally long, got {len(x_values)}, {len(y_values)} and {len(labels)}")
    scale = fit.scaling
    with figure_style():
        fig, ax = plt.subplots(figsize=FIGSIZE)
        grid = to_axis(fit.grid, scale)
        band = f"{fit.confidence:.0%} bootstrap band ({fit.n_resamples} resamples)"
        ax.fill_between(
            grid, to_axis(fit.lower, scale), to_axis(fit.upper, scale), color=FIT_COLOR, alpha=BAND_ALPHA, linewidth=0, label=band
        )
        ax.plot(grid, to_axis(fit.line, scale), color=FIT_COLOR, label=f"fit: slope {fit.slope:.2f}, $R^2$ = {fit.r2:.2f}")
        tx, ty = to_axis(x_values, scale), to_axis(y_values, scale)
        ax.scatter(
            tx, ty, s=POINT_SIZE, color=POINT_COLOR, edgecolors="white", linewidths=0.4, zorder=3, label=f"models (n = {len(x_values)})"
        )
        x_range = _percent_range(x_values, fit.grid)
        y_range = _percent_range(y_values, fit.lower, fit.upper)
        diagonal = to_axis(np.array([min(x_range[0], y_range[0]), max(x_range[1], y_range[1])]), scale)
        ax.plot(diagonal, diagonal, color=DIAGONAL_COLOR, linestyle="--", linewidth=1, label="y = x (no drop under shift)")
        for axis, limits, set_limits in ((ax.xaxis, x_range, ax.set_xlim), (ax.yaxis, y_range, ax.set_ylim)):
            set_limits(*_padded(to_axis(np.array(limits), scale)))
            _percent_ticks(axis, limits, scale)
        middle = float(np.mean(ax.get_xlim()))
        for index in _most_robust(x_values, y_values, fit, annotate):
            left = tx[index] > middle  # label towards the centre, so it stays inside the axes
            ax.annotate(
                labels[index],
                (tx[index], ty[index]),
                xytext=(-4 if left else 4, 3),
                textcoords="offset points",
                ha="right" if left else "left",
                fontsize=LABEL_FONTSIZE,
            )
        suffix = "" if scale == "linear" else f" ({scale} scale)"
        ax.set_xlabel(f"{x_label}{suffix}")
        ax.set_ylabel(f"{y_label}{suffix}")
        if title:
            ax.set_title(title)
        ax.legend(loc="best", frameon=True, fontsize=LEGEND_FONTSIZE)
    return fig


def _most_robust(x: np.ndarray, y: np.ndarray, fit: RobustnessFit, count: int) -> np.ndarray:
    distance = np.abs(y - fit.predict(x))
    return np.argsort(-distance, kind="stable")[: max(count, 0)]


def _percent_range(*arrays: np.ndarray) -> tuple[float, float]:
    values = np.concatenate([np.asarray(array, dtype=float).ravel() for array in arrays])
    return float(np.nanmin(values)), float(np.nanmax(values))


def _padded(limits: np.ndarray) -> tuple[float, float]:
    low, high = float(limits[0]), float(limits[1])
    pad = PADDING * (high - low) if high > low else 1.0
    return low - pad, high + pad


def _percent_ticks(axis: Axis, limits: tuple[float, float], scale: str) -> None:
    """Round percentages inside the data range, placed at their transformed position."""
    ticks = np.asarray(MaxNLocator(nbins=TICK_BINS, steps=[1, 2, 2.5, 5, 10]).tick_values(*limits))  # an array (stubs: a Sequence)
    ticks = ticks[(ticks > 0) & (ticks < 100)] if scale != "linear" else ticks[(ticks >= 0) & (ticks <= 100)]
    axis.set_ticks(to_axis(ticks, scale), [f"{tick:g}" for tick in ticks])
    axis.set_minor_locator(NullLocator())
