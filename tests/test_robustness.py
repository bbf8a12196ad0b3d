"""Effective robustness: the fitted line, its bootstrap band, and the figure."""

import numpy as np
import pytest
from matplotlib.collections import PathCollection
from scipy import stats

from concur.analysis.robustness import CLIP_PERCENT, SCALINGS, fit_effective_robustness, from_axis, to_axis
from concur.errors import ConcurError, UnknownNameError
from concur.plots.robustness import robustness_figure
from concur.plots.style import save_figure


def _noisy(n=40, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.uniform(55, 92, n)
    y = from_axis(0.05 + 0.9 * to_axis(x, "probit") + rng.normal(0, 0.12, n), "probit")
    return x, y


@pytest.mark.parametrize("scaling", SCALINGS)
def test_exact_line_in_transformed_space_is_recovered(scaling):
    x = np.array([35.0, 48.5, 60.0, 71.2, 80.0, 88.8, 93.1])
    slope, intercept = (0.8, 2.5) if scaling == "linear" else (0.9, -0.3)
    y = from_axis(intercept + slope * to_axis(x, scaling), scaling)
    fit = fit_effective_robustness(x, y, scaling=scaling, n_resamples=200, seed=0)
    assert (fit.slope, fit.intercept, fit.r2, fit.n) == (pytest.approx(slope), pytest.approx(intercept), pytest.approx(1.0), 7)
    np.testing.assert_allclose(fit.effective_robustness, 0.0, atol=1e-9)
    np.testing.assert_allclose(fit.line, from_axis(intercept + slope * to_axis(fit.grid, scaling), scaling))
    # Every resample of points on one line gives that line: the band collapses onto it.
    np.testing.assert_allclose(fit.lower, fit.line, atol=1e-9)
    np.testing.assert_allclose(fit.upper, fit.line, atol=1e-9)


def test_linear_fit_matches_scipy_linregress():
    x, y = _noisy()
    fit = fit_effective_robustness(x, y, scaling="linear", n_resamples=100, seed=0)
    reference = stats.linregress(x, y)
    assert fit.slope == pytest.approx(reference.slope, rel=1e-12)
    assert fit.intercept == pytest.approx(reference.intercept, rel=1e-12)
    assert fit.r2 == pytest.approx(reference.rvalue**2, rel=1e-12)
    np.testing.assert_allclose(fit.effective_robustness, y - (reference.intercept + reference.slope * x))
    probit = fit_effective_robustness(x, y, scaling="probit", n_resamples=100, seed=0)
    transformed = stats.linregress(stats.norm.ppf(x / 100), stats.norm.ppf(y / 100))
    assert (probit.slope, probit.intercept) == (pytest.approx(transformed.slope), pytest.approx(transformed.intercept))
    assert to_axis(50.0, "logit") == pytest.approx(0.0) and to_axis(84.1344746, "probit") == pytest.approx(1.0)


def test_band_equals_a_loop_over_the_same_resamples():
    x, y = _noisy(n=25)
    grid = np.array([60.0, 75.0, 90.0])
    fit = fit_effective_robustness(x, y, scaling="logit", n_resamples=300, seed=11, confidence=0.9, grid=grid)
    draws = np.random.default_rng(11).integers(0, len(x), (300, len(x)))
    lines = []
    for rows in draws:
        slope, intercept = np.polyfit(to_axis(x[rows], "logit"), to_axis(y[rows], "logit"), 1)
        lines.append(intercept + slope * to_axis(grid, "logit"))
    lower, upper = np.quantile(np.array(lines), [0.05, 0.95], axis=0)
    np.testing.assert_allclose(fit.lower, from_axis(lower, "logit"), rtol=1e-9)
    np.testing.assert_allclose(fit.upper, from_axis(upper, "logit"), rtol=1e-9)


def test_band_is_seeded_and_contains_the_line():
    x, y = _noisy()
    first = fit_effective_robustness(x, y, scaling="probit", n_resamples=500, seed=7)
    again = fit_effective_robustness(x, y, scaling="probit", n_resamples=500, seed=7)
    other = fit_effective_robustness(x, y, scaling="probit", n_resamples=500, seed=8)
    np.testing.assert_array_equal(first.lower, again.lower)
    np.testing.assert_array_equal(first.upper, again.upper)
    assert not np.array_equal(first.lower, other.lower)
    assert (first.lower < first.line).all() and (first.line < first.upper).all()
    assert first.grid[0] == x.min() and first.grid[-1] == x.max()
    np.testing.assert_allclose(first.effective_robustness, y - first.predict(x))


def test_scores_of_0_and_100_are_clipped():
    x = np.array([0.0, 40.0, 60.0, 100.0])
    y = np.array([0.0, 30.0, 50.0, 100.0])
    for scaling in ("probit", "logit"):
        assert np.isfinite(to_axis(x, scaling)).all()
        assert from_axis(to_axis(100.0, scaling), scaling) == pytest.approx(100.0 - CLIP_PERCENT)
        fit = fit_effective_robustness(x, y, scaling=scaling, n_resamples=50, seed=0)
        assert np.isfinite([fit.slope, fit.intercept, fit.r2]).all() and np.isfinite(fit.lower).all()


def test_invalid_input():
    x, y = _noisy(n=5)
    with pytest.raises(UnknownNameError, match="unknown scaling 'probits'; did you mean 'probit'"):
        fit_effective_robustness(x, y, scaling="probits", n_resamples=10, seed=0)
    with pytest.raises(ConcurError, match="at least 3 models"):
        fit_effective_robustness(x[:2], y[:2], scaling="linear", n_resamples=10, seed=0)
    with pytest.raises(ConcurError, match="at least 3 models with different"):
        fit_effective_robustness(np.full(4, 70.0), y[:4], scaling="linear", n_resamples=10, seed=0)
    with pytest.raises(ConcurError, match="percentages from 0 to 100"):
        fit_effective_robustness(x * 2, y, scaling="linear", n_resamples=10, seed=0)
    with pytest.raises(ConcurError, match="equally long"):
        fit_effective_robustness(x, y[:-1], scaling="linear", n_resamples=10, seed=0)


def _figure(scaling, n=30):
    x, y = _noisy(n=n)
    fit = fit_effective_robustness(x, y, scaling=scaling, n_resamples=200, seed=0)
    return x, robustness_figure(x, y, [f"model {i}" for i in range(n)], fit, x_label="SQuAD EM", y_label="Amazon EM", title="shift")


@pytest.mark.parametrize("scaling", SCALINGS)
def test_figure_draws_every_model_in_the_fit_scaling(scaling):
    x, fig = _figure(scaling)
    (ax,) = fig.axes
    (points,) = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(points.get_offsets()) == 30
    np.testing.assert_allclose(points.get_offsets()[:, 0], to_axis(x, scaling))
    # Ticks sit at transformed positions but read as percentages.
    labels = [float(label.get_text()) for label in ax.get_xticklabels()]
    np.testing.assert_allclose(ax.get_xticks(), to_axis(labels, scaling))
    assert len(ax.texts) == 5 and ax.get_title() == "shift"


def test_figure_saves_pdf_and_png(tmp_path):
    _, fig = _figure("probit")
    written = save_figure(fig, tmp_path / "robustness")
    assert [path.suffix for path in written] == [".pdf", ".png"] and all(path.stat().st_size > 1000 for path in written)
    assert written[0].read_bytes().startswith(b"%PDF") and written[1].read_bytes().startswith(b"\x89PNG")


def test_figure_rejects_mismatched_labels():
    x, y = _noisy(n=6)
    fit = fit_effective_robustness(x, y, scaling="probit", n_resamples=10, seed=0)
    with pytest.raises(ConcurError, match="equally long"):
        robustness_figure(x, y, ["only one"], fit, x_label="x", y_label="y")
