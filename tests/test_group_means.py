"""Mean concurrence within and between groups of benchmarks, and the contrast of two such means."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from concur.analysis.bootstrap import BootstrapSettings, Interval, bootstrap_matrix
from concur.analysis.concurrence import Method
from concur.analysis.group_means import family_means, group_contrast, group_mean, group_pairs
from concur.errors import ConcurError

SETTINGS = BootstrapSettings(n_resamples=400, seed=0, interval=Interval.percentile)


def _wide() -> pd.DataFrame:
    # five approaches; h1-h3 rank them 1-5 with one swap each, b1 ranks them backwards
    return pd.DataFrame(
        {"h1": [1, 2, 3, 4, 5], "h2": [2, 1, 3, 4, 5], "h3": [1, 2, 4, 3, 5], "b1": [5, 4, 3, 2, 1]},
        index=["a1", "a2", "a3", "a4", "a5"],
        dtype=float,
    )


def test_pairs_within_a_group_and_between_two_are_distinct_and_never_a_benchmark_with_itself():
    assert group_pairs(["h1", "h2", "h3"], ["h1", "h2", "h3"]) == (("h1", "h2"), ("h1", "h3"), ("h2", "h3"))
    assert group_pairs(["h1", "h2"], ["b1"]) == (("h1", "b1"), ("h2", "b1"))
    assert group_pairs(["h1", "h2"], ["h2", "h1", "b1"]) == (("h1", "h2"), ("h1", "b1"), ("h2", "b1"))


def test_a_group_mean_is_the_mean_of_its_cells_in_the_estimate_and_in_every_resample():
    ci = bootstrap_matrix(_wide(), Method.kendall, SETTINGS)
    human = group_mean(ci, ["h1", "h2", "h3"], ["h1", "h2", "h3"])
    # tau(h1,h2) = tau(h1,h3) = (9 - 1) / 10 = 0.8; h2 and h3 differ in two swaps: (8 - 2) / 10 = 0.6
    assert human.mean == pytest.approx((0.8 + 0.8 + 0.6) / 3)
    labels = list(ci.estimate.values.index)
    cells = np.stack([ci.replicates[:, labels.index(a), labels.index(b)] for a, b in human.pairs], axis=1).mean(axis=1)
    defined = cells[~np.isnan(cells)]
    assert (human.lower, human.upper) == pytest.approx(tuple(np.percentile(defined, [2.5, 97.5])))
    across = group_mean(ci, ["h1", "h2", "h3"], ["b1"])
    assert across.mean == pytest.approx((-1.0 - 0.8 - 0.8) / 3)


def test_a_contrast_is_the_difference_of_the_two_means_on_the_same_resamples():
    ci = bootstrap_matrix(_wide(), Method.kendall, SETTINGS)
    humans = ["h1", "h2", "h3"]
    contrast = group_contrast(ci, (humans, humans), (humans, ["b1"]))
    assert contrast.difference == pytest.approx(contrast.higher.mean - contrast.lower_group.mean)
    assert contrast.difference == pytest.approx(2.2 / 3 + 2.6 / 3)
    assert contrast.lower > 0  # every resample keeps the humans' order against b1's reversal


def test_a_contrast_finds_a_real_pattern_and_no_pattern_where_there_is_none():
    # truth known: three "human" benchmarks measure one ability with small noise; three others are unrelated
    found, false = 0, 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        ability = rng.normal(0, 10, 8)
        columns = {f"h{i}": ability + rng.normal(0, 2, 8) for i in range(3)}
        columns |= {f"s{i}": rng.normal(0, 10, 8) for i in range(3)}
        ci = bootstrap_matrix(pd.DataFrame(columns, index=[f"a{i}" for i in range(8)]), Method.kendall, SETTINGS)
        humans, synthetic = ["h0", "h1", "h2"], ["s0", "s1", "s2"]
        found += group_contrast(ci, (humans, humans), (humans, synthetic)).lower > 0
        false += group_contrast(ci, (synthetic, synthetic), (humans, synthetic)).lower > 0
    assert found >= 36 and false <= 4


def test_a_pair_with_a_benchmark_on_which_every_approach_ties_is_left_out_of_the_mean():
    wide = _wide().assign(tied=[3.0] * 5)  # ranks nothing: its τ with every benchmark is undefined
    ci = bootstrap_matrix(wide, Method.kendall, SETTINGS)
    human = group_mean(ci, ["h1", "h2", "h3", "tied"], ["h1", "h2", "h3", "tied"])
    assert human.pairs == (("h1", "h2"), ("h1", "h3"), ("h2", "h3")) and human.mean == pytest.approx(2.2 / 3)
    assert human.lower <= human.mean <= human.upper
    only_tied = group_mean(ci, ["tied"], ["b1"])
    assert only_tied.pairs == () and np.isnan(only_tied.mean) and np.isnan(only_tied.lower)
    contrast = group_contrast(ci, (["h1", "h2", "h3", "tied"],) * 2, (["h1", "h2", "h3", "tied"], ["b1"]))
    assert len(contrast.lower_group.pairs) == 3 and contrast.difference == pytest.approx(2.2 / 3 + 2.6 / 3)
    table = family_means(ci, {"h1": "human", "h2": "human", "h3": "human", "tied": "human", "b1": "synthetic"})
    assert list(table["pairs"]) == [3, 3]


def test_a_group_outside_the_matrix_is_named():
    ci = bootstrap_matrix(_wide(), Method.kendall, SETTINGS)
    with pytest.raises(ConcurError, match="not in the matrix: babi-1; it has h1, h2, h3, b1"):
        group_mean(ci, ["h1"], ["babi-1"])
    with pytest.raises(ConcurError, match="at least one pair"):
        group_mean(ci, ["h1"], ["h1"])


def test_family_means_cover_every_family_pair_and_say_how_far_within_stands_above_between():
    ci = bootstrap_matrix(_wide(), Method.kendall, SETTINGS)
    families = {"h1": "human", "h2": "human", "h3": "human", "b1": "synthetic"}
    table = family_means(ci, families)
    assert list(zip(table["first"], table["second"], table["pairs"])) == [("human", "human", 3), ("human", "synthetic", 3)]
    within, between = table.iloc[0], table.iloc[1]
    assert within["mean"] == pytest.approx(2.2 / 3) and np.isnan(within["above"])  # no pair of synthetic benchmarks
    assert between["mean"] == pytest.approx(-2.6 / 3)
    contrast = group_contrast(ci, (["h1", "h2", "h3"],) * 2, (["h1", "h2", "h3"], ["b1"]))
    assert (between["above"], between["above_lower"], between["above_upper"]) == pytest.approx(
        (contrast.difference, contrast.lower, contrast.upper)
    )
    assert family_means(ci, {"h1": "human"}).empty  # one benchmark of one family: no pair
