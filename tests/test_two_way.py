"""The two-way model of cell costs: approach effect x benchmark effect, fitted by least squares on logs, hand-computed."""

from __future__ import annotations

import pytest

from concur.runner.planning.two_way import fit_two_way


def test_a_cell_never_measured_is_its_approach_times_its_benchmark_as_the_other_cells_measured_them():
    # b costs 3x a on x; y costs 4x x for a: so b on y costs 12
    model = fit_two_way({("a", "x"): 1.0, ("a", "y"): 4.0, ("b", "x"): 3.0})
    assert model.predict("b", "y") == pytest.approx(12.0, rel=1e-8)
    assert model.predict("a", "y") == pytest.approx(4.0, rel=1e-8)  # three cells, three free effects: fitted exactly


def test_effects_are_the_least_squares_fit_of_the_logarithms():
    # log2 costs [[0, 1], [1, 3]]: fitted = row mean + column mean - grand mean = 1/2 + 1/2 - 5/4 for (a, x)
    model = fit_two_way({("a", "x"): 1.0, ("a", "y"): 2.0, ("b", "x"): 2.0, ("b", "y"): 8.0})
    assert model.predict("a", "x") == pytest.approx(2**-0.25)
    assert model.predict("b", "y") == pytest.approx(2 ** (2 + 2 - 1.25))  # row b mean 2, column y mean 2


def test_no_prediction_without_a_chain_of_measured_cells_between_the_approach_and_the_benchmark():
    model = fit_two_way({("a", "x"): 1.0, ("b", "y"): 5.0, ("c", "z"): 0.0})
    assert model.predict("a", "x") == pytest.approx(1.0) and model.predict("b", "y") == pytest.approx(5.0)
    assert model.predict("a", "y") is None and model.predict("b", "x") is None  # two unrelated scales
    assert model.predict("never-run", "x") is None and model.predict("a", "never-run-on") is None
    assert model.predict("c", "z") is None  # a cost of 0 has no logarithm: left out
    assert fit_two_way({}).predict("a", "x") is None


def test_a_sparse_grid_links_cells_through_other_approaches_and_benchmarks():
    # costs a_i x b_j with a = (1, 2, 5), b = (1, 3, 7), measured along a chain only: a-x, a-y, b-y, b-z, c-z
    effects_a, effects_b = {"a": 1.0, "b": 2.0, "c": 5.0}, {"x": 1.0, "y": 3.0, "z": 7.0}
    chain = [("a", "x"), ("a", "y"), ("b", "y"), ("b", "z"), ("c", "z")]
    model = fit_two_way({cell: effects_a[cell[0]] * effects_b[cell[1]] for cell in chain})
    assert model.predict("c", "x") == pytest.approx(5.0, rel=1e-6)
    assert model.predict("a", "z") == pytest.approx(7.0, rel=1e-6)
