"""Concurrence matrices and bootstrap intervals checked against scipy and hand computations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from concur.analysis.bootstrap import (
    BootstrapSettings,
    Interval,
    approach_count_curve,
    bootstrap_matrix,
    compare_with_reference,
    resample_weights,
)
from concur.analysis.concurrence import Method, concurrence_matrix, weighted_concurrence


def scipy_corr(method: str, x: np.ndarray, y: np.ndarray) -> float:
    keep = ~np.isnan(x) & ~np.isnan(y)
    if method == "pearson":
        return stats.pearsonr(x[keep], y[keep]).statistic
    return stats.kendalltau(x[keep], y[keep], variant="b").statistic


@pytest.fixture
def table_with_ties_and_gaps() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    values = np.round(rng.normal(60, 12, size=(15, 5)))  # whole numbers: many ties
    values[:, 4] = np.round(values[:, 4] / 10)  # heavy ties
    values[2, 1] = values[7, 3] = values[9, 3] = np.nan
    return pd.DataFrame(values, index=[f"a{i}" for i in range(15)], columns=list("vwxyz"))


@pytest.mark.parametrize("method", ["pearson", "kendall"])
def test_matrix_matches_scipy_pairwise_complete(table_with_ties_and_gaps, method):
    matrix = concurrence_matrix(table_with_ties_and_gaps, method)
    values = table_with_ties_and_gaps.to_numpy()
    for i, first in enumerate(table_with_ties_and_gaps.columns):
        for j, second in enumerate(table_with_ties_and_gaps.columns):
            assert matrix.values.loc[first, second] == pytest.approx(scipy_corr(method, values[:, i], values[:, j]), abs=1e-12)
    assert matrix.counts.loc["w", "y"] == 12  # rows 2, 7, 9 lack one of the two
    assert matrix.counts.loc["v", "v"] == 15
    assert matrix.counts.loc["y", "y"] == 13


def test_hand_computed_kendall_with_ties():
    # x: 1 2 3 4, y: 1 1 2 3 -> pairs: (12) tie in y, others concordant: 5 concordant, 0 discordant
    # tau-b = 5 / sqrt(6 * 5)
    wide = pd.DataFrame({"x": [1.0, 2, 3, 4], "y": [1.0, 1, 2, 3]})
    assert concurrence_matrix(wide, "kendall").values.loc["x", "y"] == pytest.approx(5 / np.sqrt(30))
    reverse = pd.DataFrame({"x": [1.0, 2, 3], "y": [3.0, 2, 1]})
    assert concurrence_matrix(reverse, "kendall").values.loc["x", "y"] == pytest.approx(-1.0)
    assert concurrence_matrix(reverse, "pearson").values.loc["x", "y"] == pytest.approx(-1.0)


def test_constant_benchmark_is_undefined_not_zero():
    wide = pd.DataFrame({"solved": [100.0, 100, 100, 100], "hard": [10.0, 30, 20, 40]})
    for method in Method:
        matrix = concurrence_matrix(wide, method)
        assert np.isnan(matrix.values.loc["solved", "hard"])
        assert matrix.values.loc["hard", "hard"] == pytest.approx(1.0)


@pytest.mark.parametrize("method", ["pearson", "kendall"])
def test_weights_equal_resampled_data(table_with_ties_and_gaps, method):
    values = table_with_ties_and_gaps.to_numpy()
    rng = np.random.default_rng(11)
    draws = rng.integers(0, len(values), size=(5, len(values)))
    weights = np.stack([np.bincount(draw, minlength=len(values)) for draw in draws]).astype(float)
    batched = weighted_concurrence(values, weights, method)
    for b, draw in enumerate(draws):
        resampled = values[draw]
        expected = scipy_corr(method, resampled[:, 0], resampled[:, 3])
        assert batched[b, 0, 3] == pytest.approx(expected, abs=1e-12)


def test_resample_weights_are_scipy_draws():
    counts = resample_weights(6, 4, np.random.default_rng(5))
    draws = np.random.default_rng(5).integers(0, 6, (4, 6))
    assert counts.sum(axis=1).tolist() == [6, 6, 6, 6]
    assert counts.tolist() == [np.bincount(row, minlength=6).tolist() for row in draws]


@pytest.mark.parametrize("method", ["pearson", "kendall"])
@pytest.mark.parametrize("interval", ["percentile", "bca"])
def test_intervals_equal_scipy_bootstrap(method, interval):
    rng = np.random.default_rng(0)
    x = rng.normal(60, 10, 20)
    wide = pd.DataFrame({"x": x, "y": x + rng.normal(0, 8, 20)})
    ours = bootstrap_matrix(wide, method, BootstrapSettings(999, 7, 0.9, Interval(interval)))
    theirs = stats.bootstrap(
        (wide["x"].to_numpy(), wide["y"].to_numpy()),
        lambda a, b: scipy_corr(method, a, b),
        paired=True,
        vectorized=False,
        n_resamples=999,
        confidence_level=0.9,
        method="BCa" if interval == "bca" else "percentile",
        rng=np.random.default_rng(7),
    ).confidence_interval
    assert ours.lower.loc["x", "y"] == pytest.approx(theirs.low, abs=1e-10)
    assert ours.upper.loc["x", "y"] == pytest.approx(theirs.high, abs=1e-10)


def test_bootstrap_is_reproducible_and_seed_dependent(table_with_ties_and_gaps):
    first = bootstrap_matrix(table_with_ties_and_gaps, "kendall", BootstrapSettings(300, 1))
    again = bootstrap_matrix(table_with_ties_and_gaps, "kendall", BootstrapSettings(300, 1))
    other = bootstrap_matrix(table_with_ties_and_gaps, "kendall", BootstrapSettings(300, 2))
    pd.testing.assert_frame_equal(first.lower, again.lower)
    pd.testing.assert_frame_equal(first.upper, again.upper)
    assert not first.lower.equals(other.lower)
    off_diagonal = ~np.eye(5, dtype=bool)
    estimate = first.estimate.values.to_numpy()[off_diagonal]
    assert np.all(first.lower.to_numpy()[off_diagonal] <= estimate + 1e-12)
    assert np.all(first.upper.to_numpy()[off_diagonal] >= estimate - 1e-12)


def test_undefined_resamples_are_counted():
    # one approach differs on "mostly-solved": resamples without it make the column constant
    wide = pd.DataFrame({"mostly-solved": [100.0] * 7 + [20.0], "other": np.arange(8, dtype=float)})
    result = bootstrap_matrix(wide, "pearson", BootstrapSettings(2000, 0, interval=Interval.percentile))
    undefined = result.undefined.loc["mostly-solved", "other"]
    assert 0 < undefined < 2000
    assert undefined == pytest.approx(2000 * (7 / 8) ** 8, rel=0.15)  # P(approach 8 never drawn)


def test_compare_with_reference_detects_a_real_difference():
    rng = np.random.default_rng(4)
    reference = rng.normal(60, 10, 30)
    wide = pd.DataFrame({"ref": reference, "close": reference + rng.normal(0, 2, 30), "noise": rng.normal(60, 10, 30)})
    test = compare_with_reference(wide, "ref", "close", "noise", "kendall", BootstrapSettings(1000, 0))
    assert test.n == 30
    assert test.first_value == pytest.approx(scipy_corr("kendall", reference, wide["close"].to_numpy()))
    assert test.difference == pytest.approx(test.first_value - test.second_value)
    assert test.lower > 0 and test.p_value < 0.01
    same = compare_with_reference(wide, "ref", "close", "close", "kendall", BootstrapSettings(200, 0))
    assert same.difference == 0 and same.p_value == 1.0


def test_approach_count_curve_converges_to_full_value():
    rng = np.random.default_rng(2)
    reference = rng.normal(60, 10, 20)
    wide = pd.DataFrame({"ref": reference, "b": reference + rng.normal(0, 6, 20)})
    curve = approach_count_curve(wide, "ref", ["b"], "kendall", [5, 10, 20], draws=200, seed=0)
    assert curve["approaches"].tolist() == [5, 10, 20]
    full = scipy_corr("kendall", reference, wide["b"].to_numpy())
    last = curve.iloc[-1]
    assert last["mean"] == pytest.approx(full) and last["lower"] == pytest.approx(full) and last["mean_abs_error"] == pytest.approx(0)
    widths = (curve["upper"] - curve["lower"]).tolist()
    assert widths[0] > widths[1] > widths[2]
    again = approach_count_curve(wide, "ref", ["b"], "kendall", [5, 10, 20], draws=200, seed=0)
    pd.testing.assert_frame_equal(curve, again)
