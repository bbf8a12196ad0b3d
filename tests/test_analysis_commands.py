"""What `concur compare` and `concur matrix` compute, called from Python as the commands call it, on a table
small enough to check by hand."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest

from concur.analysis.bootstrap import BootstrapSettings
from concur.analysis.concurrence import Method
from concur.analysis.matrix import MatrixRequest, Order, benchmark_matrix
from concur.analysis.pair import PAIR_COLUMNS, PairRequest, compare_benchmarks, pair_json, pair_rows, pair_stats_text, pair_title
from concur.analysis.reference import liu2023
from concur.analysis.results import Results
from concur.analysis.tidy import tidy_frame
from concur.errors import ConcurError

# Five approaches; e has no value on b3.
# b1 vs b2 over a..e: Kendall (9 concordant - 1 discordant (b, c)) / 10 = 0.8; Pearson: deviations
#   (-20 -10 0 10 20) and (-20 0 -10 10 20), 900 / sqrt(1000 * 1000) = 0.9.
# Against b3, over a..d (the approaches with all three): b1 is b3 reversed, tau = r = -1;
#   b2 vs b3: tau = (1 - 5) / 6 = -2/3; r: deviations (-15 5 -5 15) and (15 5 -5 -15), -400 / 500 = -0.8.
EM = {"b1": [10, 20, 30, 40, 50], "b2": [10, 30, 20, 40, 50], "b3": [40, 30, 20, 10]}
RESAMPLES = BootstrapSettings(200, seed=0)


@pytest.fixture(scope="module")
def hand() -> Results:
    rows = [(approach, bench, float(em)) for bench, ems in EM.items() for approach, em in zip("abcde", ems)]
    frame = tidy_frame(pd.DataFrame(rows, columns=["approach", "benchmark", "em"]), "hand")
    return Results(frame, ("hand",), ("a note from loading",))


@pytest.fixture(scope="module")
def pair(hand):
    notes: list[str] = []
    compared = compare_benchmarks(hand, PairRequest("b1", "b2", "b3", bootstrap=RESAMPLES), registry=None, note=notes.append)
    assert notes == ["a note from loading", "1 of 15 cells missing (correlations are pairwise-complete; n per cell shown): e×b3"]
    return compared


def test_compare_gives_both_correlations_over_the_approaches_with_both_values(pair):
    pearson, kendall = pair.comparison.estimates
    assert (pearson.method, pearson.value, pearson.n) == (Method.pearson, pytest.approx(0.9), 5)
    assert (kendall.method, kendall.value, kendall.n) == (Method.kendall, pytest.approx(0.8), 5)
    for estimate in (pearson, kendall):
        assert estimate.lower <= estimate.value <= estimate.upper
    assert pair.comparison.n == 5 and list(pair.table.wide.columns) == ["b1", "b2", "b3"]


def test_compare_tests_both_against_the_reference_on_the_approaches_with_all_three(pair):
    pearson, kendall = pair.comparison.versus_reference
    assert (pearson.first_value, pearson.second_value, pearson.difference) == pytest.approx((-1.0, -0.8, -0.2))
    assert (kendall.first_value, kendall.second_value, kendall.difference) == pytest.approx((-1.0, -2 / 3, -1 / 3))
    assert {pearson.n, kendall.n} == {4} and pair.comparison.small_n  # n = 4 < 5: flagged, though the pair itself has 5


def test_compare_texts_agree_with_the_values(pair):
    pearson, kendall = pair.comparison.estimates
    assert pair_title(pair) == "b1 vs b2 (95% bca intervals, 200 resamples, seed 0)"
    rows = pair_rows(pair)
    assert all(len(row) == len(PAIR_COLUMNS) for row in rows)
    marks = {estimate.method: "‡" if estimate.inconclusive else "" for estimate in (pearson, kendall)}
    assert pearson.inconclusive is (pearson.lower <= 0 <= pearson.upper)  # no per-question data: the interval decides
    assert rows[0] == ["Pearson r", f"0.900{marks[Method.pearson]}", f"[{pearson.lower:.3f}, {pearson.upper:.3f}]", "n/a", "5"]
    assert rows[1][:2] == ["Kendall τ", f"0.800{marks[Method.kendall]}"] and rows[1][3] == "n/a"  # no ceiling without questions
    assert rows[3][:2] == ["Kendall τ: (b1, b3) - (b2, b3)", "-0.333"] and rows[3][4].startswith("4†  p = ")
    assert pair_stats_text(pair.comparison).splitlines() == [
        f"r = 0.900 [{pearson.lower:.3f}, {pearson.upper:.3f}]",
        f"τ = 0.800 [{kendall.lower:.3f}, {kendall.upper:.3f}]",
        "n = 5",
    ]


def test_compare_json_names_every_statistic_and_gives_null_for_an_undefined_one(pair, tmp_path):
    payload = pair_json(pair, [tmp_path / "s.pdf"])
    assert list(payload) == [
        "first", "second", "policy", "interval", "confidence", "min_approaches",
        "pearson", "kendall", "versus_b3_pearson", "versus_b3_kendall", "plot",
    ]  # fmt: skip
    assert payload["kendall"] == {**payload["kendall"], "value": pytest.approx(0.8), "n": 5, "small_n": False}
    assert payload["versus_b3_kendall"]["difference"] == pytest.approx(-1 / 3) and payload["versus_b3_kendall"]["small_n"]
    assert payload["plot"] == [str(tmp_path / "s.pdf")]
    undefined = dataclasses.replace(pair.comparison.estimates[0], value=math.nan)
    nan_pair = dataclasses.replace(pair, comparison=dataclasses.replace(pair.comparison, estimates=[undefined]))
    assert pair_json(nan_pair, [])["pearson"]["value"] is None
    assert pair_rows(nan_pair)[0][1] == "n/a"


@pytest.mark.parametrize(
    ("first", "second", "reference", "error"),
    [
        ("b1", "b1", None, "compare needs different benchmarks, got b1, b1"),
        ("b1", "b2", "b1", "compare needs different benchmarks, got b1, b2, b1"),
        ("b1", "../b2", None, "compare takes benchmark ids: '../b2' is not a valid id"),
    ],
)
def test_a_pair_request_is_checked_when_made(first, second, reference, error):
    with pytest.raises(ConcurError, match=error.replace("(", r"\(").replace(".", r"\.")):
        PairRequest(first, second, reference)


def test_compare_refuses_a_family_in_place_of_an_id_before_any_note():
    published = Results(liu2023(), ("liu2023",), ("a note from loading",))
    notes: list[str] = []
    with pytest.raises(ConcurError, match="compare takes benchmark ids, not families or patterns: human"):
        compare_benchmarks(published, PairRequest("human", "qamr"), registry=None, note=notes.append)
    assert notes == []


def test_matrix_on_the_hand_table_with_and_without_intervals(hand):
    notes: list[str] = []
    made = benchmark_matrix(hand, MatrixRequest(), registry=None, note=notes.append)
    assert notes[0] == "a note from loading"
    assert made.with_ci is None and made.bootstrap_seconds is None
    values = made.estimate.values
    assert (values.loc["b1", "b2"], values.loc["b1", "b3"], values.loc["b2", "b3"]) == pytest.approx((0.8, -1.0, -2 / 3))
    assert made.estimate.counts.loc["b1", "b3"] == 4 and made.estimate.counts.loc["b1", "b2"] == 5
    pearson = benchmark_matrix(hand, MatrixRequest(Method.pearson, bootstrap=RESAMPLES), registry=None)
    assert pearson.estimate.values.loc["b1", "b2"] == pytest.approx(0.9)
    assert pearson.with_ci is not None and pearson.bootstrap_seconds is not None and pearson.bootstrap_seconds >= 0
    assert pearson.with_ci.lower.loc["b1", "b2"] <= 0.9 <= pearson.with_ci.upper.loc["b1", "b2"]


def test_matrix_cluster_order_puts_the_concurring_pair_side_by_side(hand):
    made = benchmark_matrix(hand, MatrixRequest(benches="b3,b1,b2", order=Order.cluster), registry=None)
    order = list(made.wide.columns)
    assert order in (["b1", "b2", "b3"], ["b3", "b2", "b1"])  # b1, b2 concur (0.8); b3 sits beside b2 (-2/3), not b1 (-1)
    assert list(made.estimate.values.columns) == order


def test_matrix_needs_two_benchmarks_and_says_the_notes_first(hand):
    notes: list[str] = []
    with pytest.raises(ConcurError, match=r"a matrix needs at least two benchmarks; these results and filters leave \['b1'\]"):
        benchmark_matrix(hand, MatrixRequest(benches="b1"), registry=None, note=notes.append)
    assert notes == ["a note from loading"]


def test_compare_and_draw_saves_the_scatter_beside_the_comparison(hand, tmp_path):
    from concur.plots.pair import compare_and_draw

    drawn = compare_and_draw(hand, PairRequest("b1", "b2", bootstrap=RESAMPLES), tmp_path / "pair", registry=None)
    assert drawn.paths == [tmp_path / "pair.pdf", tmp_path / "pair.png"]
    assert all(path.stat().st_size > 0 for path in drawn.paths)
    assert drawn.pair.comparison.versus_reference == [] and not drawn.pair.comparison.small_n
