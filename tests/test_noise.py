"""Measurement noise (per-question outcomes, the two-level bootstrap, reliability, rank groups) checked against
hand computations, scipy, and simulated studies whose truth is known (bench.noise_simulation)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from bench.noise_simulation import Scenario, as_measurement, draw_abilities, draw_outcomes, reliability_check, simulated_study
from concur.analysis.bootstrap import (
    BootstrapSettings,
    Interval,
    MatrixWithCI,
    benjamini_hochberg,
    bootstrap_matrix,
    row_tests,
)
from concur.analysis.concurrence import ConcurrenceMatrix, Method, concurrence_matrix, number_at, weighted_concurrence
from concur.analysis.measurement import BenchmarkOutcomes, Measurement, measurement_for, multinomial_counts, run_em_intervals
from concur.analysis.policy import reduce_runs
from concur.analysis.questions import QUESTION_COLUMNS, aggregate_questions, question_frame
from concur.analysis.ranks import holm, rank_groups
from concur.analysis.reliability import (
    BenchmarkNoise,
    NoiseCeilings,
    benchmark_noise,
    inconclusive,
    noise_ceilings,
    remedy,
    verdict_at,
)


def _outcomes(bench: str, runs: dict[str, list[list[int]]]) -> BenchmarkOutcomes:
    """A benchmark's layout from each approach's runs (lists of 0/1 per question), runs weighted equally, padded."""
    slots = max(len(lists) for lists in runs.values())
    questions = len(next(iter(runs.values()))[0])
    outcomes = np.zeros((len(runs), slots, questions), dtype=np.float32)
    weights = np.zeros((len(runs), slots))
    for row, lists in enumerate(runs.values()):
        outcomes[row, : len(lists)] = lists
        weights[row, : len(lists)] = 1.0 / len(lists)
    return BenchmarkOutcomes(bench, tuple(runs), outcomes, weights)


def _study(n: int, questions: int, benches: int, seed: int, ability_sd: float = 1.0) -> dict[str, np.ndarray]:
    """Per-question outcomes of `n` approaches on `benches` benchmarks whose abilities correlate about 0.8."""
    rng = np.random.default_rng(seed)
    common = rng.normal(0.0, ability_sd, n)
    scenario = Scenario(approaches=n, questions=questions)
    return {f"b{index}": draw_outcomes(common + rng.normal(0.0, 0.5 * ability_sd, n), scenario, rng) for index in range(benches)}


# --- weighted_concurrence with values per resample -------------------------------------------------------------------


@pytest.mark.parametrize("method", ["kendall", "pearson"])
def test_concurrence_per_resample_values_equals_scipy_on_the_approaches_repeated_by_their_weights(method):
    rng = np.random.default_rng(7)
    n, k, resamples = 9, 4, 5
    values = np.round(rng.normal(60.0, 10.0, (resamples, n, k)) / 4.0) * 4.0  # coarse: ties within a column
    values[0, 2, 1] = values[1, 5, 3] = values[3, 0, 0] = values[3, 8, 2] = np.nan
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(float)
    got = weighted_concurrence(values, weights, method)
    assert got.shape == (resamples, k, k)
    for sample in range(resamples):
        repeated = np.repeat(values[sample], weights[sample].astype(int), axis=0)
        for first in range(k):
            for second in range(k):
                x, y = repeated[:, first], repeated[:, second]
                keep = ~np.isnan(x) & ~np.isnan(y)
                if method == "kendall":
                    want = stats.kendalltau(x[keep], y[keep], variant="b").statistic
                else:
                    want = stats.pearsonr(x[keep], y[keep]).statistic
                assert got[sample, first, second] == pytest.approx(want, abs=1e-12), (sample, first, second)
    # one table for every resample is the same as that table repeated per resample
    fixed = weighted_concurrence(values[0], weights, method)
    np.testing.assert_allclose(weighted_concurrence(np.broadcast_to(values[0], values.shape), weights, method), fixed, atol=1e-12)


def test_concurrence_per_resample_values_need_one_weight_row_per_table():
    with pytest.raises(ValueError, match=r"weights must have shape \(3, 4\)"):
        weighted_concurrence(np.zeros((3, 4, 2)), np.ones((2, 4)), "kendall")


# --- multinomial_counts -------------------------------------------------------------------------------------------


def test_multinomial_counts_are_draws_with_replacement_counted_per_row_and_seeded():
    counts = multinomial_counts(37, 500, np.random.default_rng(4))
    assert counts.shape == (500, 37) and counts.dtype == np.float32
    assert (counts.sum(axis=1) == 37).all() and (counts >= 0).all() and (counts == np.round(counts)).all()
    np.testing.assert_array_equal(counts, multinomial_counts(37, 500, np.random.default_rng(4)))
    assert not np.array_equal(counts, multinomial_counts(37, 500, np.random.default_rng(5)))
    # the counts of the indices the generator draws, row by row
    draws = np.random.default_rng(4).integers(0, 37, (500, 37), dtype=np.uint16)
    np.testing.assert_array_equal(counts, np.stack([np.bincount(row, minlength=37) for row in draws]))
    # each item is drawn once per resample on average: mean 1, variance 37 (1/37) (1 - 1/37) per count; the sample
    # variance of nearly Poisson(1) counts has a standard error of about sqrt(3 / N) (fourth central moment 1 + 3)
    assert counts.mean() == pytest.approx(1.0)  # exactly: every row sums to 37
    assert counts.var() == pytest.approx(1.0 - 1.0 / 37, abs=4 * math.sqrt(3.0 / counts.size))


# --- measurement_for on a hand-made per-question frame -------------------------------------------------------------

# (approach, benchmark, hparam_id, seed): 0/1 per question. A's X cell has two settings, setting 1 with two seeds; C has
# neither a setting nor a seed (a published value).
RUNS: dict[tuple[str, str, int | None, int | None], list[int]] = {
    ("A", "X", 0, 0): [1, 0, 0, 0],
    ("A", "X", 1, 0): [1, 1, 0, 0],
    ("A", "X", 1, 1): [1, 1, 1, 0],
    ("B", "X", 0, 0): [0, 1, 1, 1],
    ("C", "X", None, None): [1, 0, 1, 0],
    ("A", "Y", 0, 0): [1, 1, 1, 1, 0],
    ("A", "Y", 1, 0): [0, 0, 1, 0, 0],
    ("B", "Y", 0, 0): [1, 0, 0, 0, 0],
    ("B", "Y", 1, 0): [1, 1, 0, 0, 0],
    ("C", "Y", None, None): [0, 1, 1, 1, 1],
}
# Each cell's per-question outcome (its runs weighted by the policy): best takes the setting with the highest mean EM
# (A on X: setting 1, 62.5 against 25; A on Y: setting 0; B on Y: setting 1), mean averages the settings' seed means.
PER_QUESTION: dict[str, dict[str, dict[str, list[float]]]] = {
    "best": {
        "X": {"A": [1, 1, 0.5, 0], "B": [0, 1, 1, 1], "C": [1, 0, 1, 0]},
        "Y": {"A": [1, 1, 1, 1, 0], "B": [1, 1, 0, 0, 0], "C": [0, 1, 1, 1, 1]},
    },
    "mean": {
        "X": {"A": [1, 0.5, 0.25, 0], "B": [0, 1, 1, 1], "C": [1, 0, 1, 0]},
        "Y": {"A": [0.5, 0.5, 1, 0.5, 0], "B": [1, 0.5, 0, 0, 0], "C": [0, 1, 1, 1, 1]},
    },
}
WEIGHTS = {  # each cell's runs' weights, largest first
    "best": {"X": {"A": [0.5, 0.5], "B": [1.0], "C": [1.0]}, "Y": {"A": [1.0], "B": [1.0], "C": [1.0]}},
    "mean": {"X": {"A": [0.5, 0.25, 0.25], "B": [1.0], "C": [1.0]}, "Y": {"A": [0.5, 0.5], "B": [0.5, 0.5], "C": [1.0]}},
}


def _question_rows(runs: dict[tuple[str, str, int | None, int | None], list[int]], seed: int = 0) -> pd.DataFrame:
    """The per-question frame of `runs` (question ids q1, q2, ...), its rows shuffled."""
    rows = [
        (*key, f"q{index + 1}", float(outcome), np.nan)
        for key, outcomes in runs.items()
        for index, outcome in enumerate(outcomes)
    ]  # fmt: skip
    frame = pd.DataFrame(rows, columns=list(QUESTION_COLUMNS))
    return question_frame(frame.sample(frac=1.0, random_state=seed))


@pytest.mark.parametrize("policy", ["best", "mean"])
def test_measurement_lays_out_the_runs_behind_each_value_with_the_policys_weights(policy):
    questions = _question_rows(RUNS)
    cells = reduce_runs(aggregate_questions(questions), policy)
    wide = cells.wide()
    measurement = measurement_for(wide, cells, questions)
    assert sorted(measurement.benchmarks) == ["X", "Y"] and measurement.partial == () and measurement.mismatched == ()
    assert measurement.notes() == []
    hand_em = {"best": {"X": [62.5, 75.0, 50.0], "Y": [80.0, 40.0, 80.0]}, "mean": {"X": [43.75, 75.0, 50.0], "Y": [50.0, 30.0, 80.0]}}
    for bench in ("X", "Y"):
        laid = measurement.benchmarks[bench]
        assert laid.approaches == ("A", "B", "C") and laid.n_questions == {"X": 4, "Y": 5}[bench]
        # the EMs the layout gives are the tidy EMs the policy gives, and the hand-computed ones
        np.testing.assert_allclose(laid.em(), wide.loc[list(laid.approaches), bench].to_numpy(), atol=1e-9)
        np.testing.assert_allclose(laid.em(), hand_em[policy][bench], atol=1e-9)
        expected = PER_QUESTION[policy][bench]
        np.testing.assert_allclose(laid.per_question(), [expected[approach] for approach in laid.approaches], atol=1e-12)
        for row, approach in enumerate(laid.approaches):
            weights = laid.weights[row]
            assert sorted(weights[weights > 0], reverse=True) == WEIGHTS[policy][bench][approach]
            assert laid.n_runs[row] == len(WEIGHTS[policy][bench][approach])
            assert not laid.outcomes[row, weights == 0].any()  # padding runs hold no outcomes
            # every laid-out run is one of the approach's runs on this benchmark, question by question
            own = [outcomes for (name, on, _, _), outcomes in RUNS.items() if name == approach and on == bench]
            for run in laid.outcomes[row, weights > 0]:
                assert run.tolist() in own
    first_setting = [1.0, 0.0, 0.0, 0.0]  # A's setting 0 on X: best leaves it out, mean weighs it by one half
    assert (first_setting in measurement.benchmarks["X"].outcomes[0].tolist()) is (policy == "mean")


def test_a_benchmark_whose_runs_lack_rows_is_partial_and_one_whose_runs_scored_different_questions_is_mismatched():
    runs = dict(RUNS)
    runs |= {  # Z: A's second seed has no per-question rows; W: A and B scored different questions; V: aggregate-only
        ("A", "Z", 0, 0): [1, 0, 1],
        ("B", "Z", 0, 0): [0, 0, 1],
        ("C", "Z", None, None): [1, 1, 1],
        ("A", "W", 0, 0): [1, 1, 0],
        ("C", "W", None, None): [0, 1, 1, 1],
    }
    questions = _question_rows(runs)
    questions = pd.concat(
        [
            questions,
            question_frame(  # B on W: questions q2, q3, q4 where A has q1, q2, q3
                pd.DataFrame([("B", "W", 0, 0, f"q{index}", 1.0, np.nan) for index in (2, 3, 4)], columns=list(QUESTION_COLUMNS))
            ),
        ],
        ignore_index=True,
    )
    extra = pd.DataFrame(
        [("A", "Z", 0, 1, 50.0, np.nan), ("A", "V", 0, 0, 40.0, np.nan), ("B", "V", 0, 0, 60.0, np.nan)],
        columns=["approach", "benchmark", "hparam_id", "seed", "em", "f1"],
    )
    tidy = pd.concat([aggregate_questions(questions), extra.astype(aggregate_questions(questions).dtypes.to_dict())], ignore_index=True)
    cells = reduce_runs(tidy, "best")
    wide = cells.wide()
    assert sorted(wide.columns) == ["V", "W", "X", "Y", "Z"]
    measurement = measurement_for(wide, cells, questions)
    assert sorted(measurement.benchmarks) == ["X", "Y"]
    assert measurement.partial == ("Z",) and measurement.mismatched == ("W",)
    assert not measurement.covers("V") and not measurement.covers("W") and not measurement.covers("Z")
    partial, mismatched = measurement.notes()
    assert "some cells of Z" in partial and "approaches only" in partial
    assert "W were scored on different test questions" in mismatched and "approaches only" in mismatched
    # nothing to lay out: no measurement
    assert measurement_for(wide, cells, questions.iloc[:0]) == Measurement()


# --- BenchmarkOutcomes.replicates -------------------------------------------------------------------------------------


def _three_by_three(seed: int, questions: int = 11) -> BenchmarkOutcomes:
    """Three approaches with 3, 2 and 1 runs (equal weights, padding after)."""
    rng = np.random.default_rng(seed)
    draws = (rng.random((3, 3, questions)) < np.array([0.7, 0.5, 0.3])[:, None, None]).astype(int)
    return _outcomes("t", {"p": draws[0].tolist(), "q": draws[1, :2].tolist(), "r": draws[2, :1].tolist()})


def test_one_replicate_draws_the_questions_once_for_all_approaches_then_each_cells_runs():
    laid = _three_by_three(1)
    used = np.random.default_rng(11)
    got = laid.replicates(1, used)[0]
    rng = np.random.default_rng(11)  # the same stream, drawn by hand in the same order: questions, then runs per cell
    question_counts = multinomial_counts(laid.n_questions, 1, rng)[0].astype(float)
    run_scores = laid.outcomes.astype(float) @ question_counts / laid.n_questions  # (approaches, runs)
    want = []
    for row, size in enumerate([3, 2, 1]):
        counts = multinomial_counts(size, 1, rng)[0].astype(float) if size > 1 else np.ones(1)
        want.append(100.0 * np.sum(counts * run_scores[row, :size]) / counts.sum())
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert used.random() == rng.random()  # and nothing else was drawn


def test_replicates_average_to_the_em():
    """The bootstrap mean of a mean is the mean: for equal run weights E[replicate] = em exactly, so the replicates'
    mean is within 5 standard errors (sd / sqrt(R), sd their own spread) of it."""
    laid = _three_by_three(2, questions=60)
    resamples = 4000
    replicates = laid.replicates(resamples, np.random.default_rng(3))
    error = replicates.std(axis=0, ddof=1) / math.sqrt(resamples)
    assert (np.abs(replicates.mean(axis=0) - laid.em()) < 5 * error).all()
    # with one run the spread is the binomial one of a mean over the questions: 100 sqrt(p (1 - p) / Q)
    single = BenchmarkOutcomes("s", laid.approaches, laid.outcomes[:, :1], np.ones((3, 1)))
    p = single.em() / 100.0
    replicates = single.replicates(resamples, np.random.default_rng(4))
    derived = 100.0 * np.sqrt(p * (1 - p) / laid.n_questions)
    assert (np.abs(replicates.mean(axis=0) - single.em()) < 5 * derived / math.sqrt(resamples)).all()
    # the standard deviation of R normal-ish draws is within ~5 / sqrt(2R) of its value
    np.testing.assert_allclose(replicates.std(axis=0), derived, rtol=5 / math.sqrt(2 * resamples))


def test_with_one_run_per_cell_replicates_draw_only_the_questions():
    laid = _three_by_three(5, questions=23)
    single = BenchmarkOutcomes("s", laid.approaches, laid.outcomes[:, :1], np.ones((3, 1)))
    padding = np.zeros_like(single.outcomes)
    padded = BenchmarkOutcomes("s", laid.approaches, np.concatenate([single.outcomes, padding], axis=1), np.array([[1.0, 0.0]] * 3))
    for layout in (single, padded):
        rng = np.random.default_rng(8)
        got = layout.replicates(300, rng)
        hand = np.random.default_rng(8)
        counts = multinomial_counts(23, 300, hand).astype(float)
        np.testing.assert_allclose(got, 100.0 * counts @ single.outcomes[:, 0].T.astype(float) / 23, rtol=1e-6)
        assert rng.random() == hand.random()  # no draws for runs


# --- run_em_intervals -------------------------------------------------------------------------------------------------


def test_run_intervals_are_the_binomial_quantiles_of_each_runs_questions():
    runs = {("A", "X", 0, 0): (37, 50), ("B", "X", None, None): (3, 20), ("C", "X", 0, 1): (20, 20), ("A", "Y", 0, 0): (130, 400)}
    rows = [
        (approach, bench, hparam, seed, f"q{index}", float(index < correct), np.nan)
        for (approach, bench, hparam, seed), (correct, total) in runs.items()
        for index in range(total)
    ]  # fmt: skip
    questions = question_frame(pd.DataFrame(rows, columns=list(QUESTION_COLUMNS)))
    intervals = run_em_intervals(questions, confidence=0.95, n_resamples=4000, seed=1)
    assert len(intervals) == 4
    for (approach, bench, _, _), (correct, total) in runs.items():
        row = intervals[(intervals["approach"] == approach) & (intervals["benchmark"] == bench)]
        (size,), (em_lower,), (em_upper,) = (row[column].to_numpy(dtype=float) for column in ("n_questions", "em_lower", "em_upper"))
        assert size == total
        step = 100.0 / total
        low, high = 100.0 * np.asarray(stats.binom.ppf([0.025, 0.975], total, correct / total)) / total
        assert em_lower == pytest.approx(low, abs=step) and em_upper == pytest.approx(high, abs=step)
        assert em_lower <= 100.0 * correct / total <= em_upper
    all_right = intervals[intervals["approach"] == "C"].iloc[0]
    assert all_right["em_lower"] == all_right["em_upper"] == 100.0  # nothing to draw from
    assert pd.isna(intervals[intervals["approach"] == "B"].iloc[0]["seed"])  # runs without a seed keep theirs missing


# --- bootstrap_matrix with a measurement ------------------------------------------------------------------------------


def _simulated_table(seed: int, covered: tuple[str, ...] = ("b0", "b1", "b2")) -> tuple[pd.DataFrame, Measurement]:
    """15 approaches x 4 benchmarks of 120 questions each; per-question outcomes for `covered` only."""
    wide, measurement = as_measurement(_study(15, 120, 4, seed))
    return wide, Measurement({bench: measurement.benchmarks[bench] for bench in covered})


@pytest.mark.parametrize("method", ["kendall", "pearson"])
def test_two_level_point_estimate_is_scipys_and_only_covered_pairs_are_measured(method):
    wide, measurement = _simulated_table(1)
    ci = bootstrap_matrix(wide, method, BootstrapSettings(300, 2, 0.95, Interval.bca), measurement)
    for first in wide.columns:
        for second in wide.columns:
            x, y = wide[first].to_numpy(), wide[second].to_numpy()
            want = stats.kendalltau(x, y, variant="b").statistic if method == "kendall" else stats.pearsonr(x, y).statistic
            assert number_at(ci.estimate.values, first, second) == pytest.approx(want, abs=1e-12)
            both = first != "b3" and second != "b3"
            assert bool(ci.measured.at[first, second]) is both
            assert ci.kind(first, second) == ("questions+approaches" if both else "approaches")
    assert ci.replicates.shape == (300, 4, 4)
    assert (ci.lower.to_numpy() <= ci.upper.to_numpy()).all()


@pytest.mark.parametrize("interval", list(Interval))
def test_without_per_question_data_the_bootstrap_is_the_approach_only_one(interval):
    wide, measurement = _simulated_table(2)
    settings = BootstrapSettings(300, 5, 0.95, interval)
    plain = bootstrap_matrix(wide, "kendall", settings)
    assert not plain.measured.to_numpy().any()
    for nothing in (Measurement(), Measurement({"elsewhere": measurement.benchmarks["b0"]})):
        same = bootstrap_matrix(wide, "kendall", settings, nothing)
        np.testing.assert_array_equal(same.replicates, plain.replicates)
        pd.testing.assert_frame_equal(same.lower, plain.lower)
        pd.testing.assert_frame_equal(same.upper, plain.upper)
        assert not same.measured.to_numpy().any()
    # a pair of uncovered benchmarks keeps the approach-only interval beside covered ones: the approaches are drawn
    # from the bootstrap seed's stream whatever else is drawn
    partly = bootstrap_matrix(wide, "kendall", settings, Measurement({"b0": measurement.benchmarks["b0"]}))
    np.testing.assert_array_equal(partly.replicates[:, 2, 3], plain.replicates[:, 2, 3])
    assert number_at(partly.lower, "b2", "b3") == number_at(plain.lower, "b2", "b3")
    assert number_at(partly.upper, "b2", "b3") == number_at(plain.upper, "b2", "b3")
    assert not np.array_equal(partly.replicates[:, 0, 1], plain.replicates[:, 0, 1])


def test_question_noise_widens_the_interval_of_close_approaches():
    """Close approaches (ability sd 0.3) on 100 questions: EM noise is large beside their differences. Over 60 such studies
    the two-level percentile interval was wider every time (median 1.27 times); BCa's bias correction moves the
    interval as well as widening it, so the spread of the replicates and the percentile interval are compared."""
    wide, measurement = simulated_study(Scenario(approaches=20, questions=100, ability_sd=0.3), np.random.default_rng(0))
    settings = BootstrapSettings(1000, 0, 0.95, Interval.percentile)
    two_level = bootstrap_matrix(wide, "kendall", settings, measurement)
    approaches = bootstrap_matrix(wide, "kendall", settings)
    width = lambda ci: float(number_at(ci.upper, "first", "second") - number_at(ci.lower, "first", "second"))  # noqa: E731
    assert width(two_level) > 1.1 * width(approaches)
    assert np.std(two_level.replicates[:, 0, 1]) > 1.1 * np.std(approaches.replicates[:, 0, 1])
    # a second test set's noise also lowers the replicates: attenuation
    assert np.mean(two_level.replicates[:, 0, 1]) < np.mean(approaches.replicates[:, 0, 1])


def test_two_level_bootstrap_is_seeded_and_each_benchmarks_draws_do_not_depend_on_the_column_order():
    wide, measurement = _simulated_table(3, covered=("b0", "b1", "b2", "b3"))
    settings = BootstrapSettings(250, 9, 0.95, Interval.percentile)
    ci = bootstrap_matrix(wide, "kendall", settings, measurement)
    again = bootstrap_matrix(wide, "kendall", settings, measurement)
    np.testing.assert_array_equal(ci.replicates, again.replicates)
    other_seed = bootstrap_matrix(wide, "kendall", BootstrapSettings(250, 10, 0.95, Interval.percentile), measurement)
    assert not np.array_equal(ci.replicates, other_seed.replicates)
    order = ["b2", "b0", "b3", "b1"]
    shuffled = bootstrap_matrix(wide[order], "kendall", settings, measurement)
    pd.testing.assert_frame_equal(shuffled.lower.loc[wide.columns, wide.columns], ci.lower)
    pd.testing.assert_frame_equal(shuffled.upper.loc[wide.columns, wide.columns], ci.upper)
    # a benchmark's draws are its own: left out, the others' intervals stay
    fewer = bootstrap_matrix(wide[["b1", "b3"]], "kendall", settings, measurement)
    assert number_at(fewer.lower, "b1", "b3") == number_at(ci.lower, "b1", "b3")
    assert number_at(fewer.upper, "b1", "b3") == number_at(ci.upper, "b1", "b3")


# --- row tests and Benjamini-Hochberg ---------------------------------------------------------------------------------


def test_benjamini_hochberg_by_hand():
    """Sorted p 0.01, 0.03, 0.04, 0.20 times 4/rank: 0.04, 0.06, 0.0533, 0.20; the running minimum from the top
    gives 0.04, 0.0533, 0.0533, 0.20."""
    q = benjamini_hochberg(np.array([0.01, 0.04, 0.03, 0.20]))
    np.testing.assert_allclose(q, [0.04, 0.16 / 3, 0.16 / 3, 0.20], atol=1e-12)
    with_nan = benjamini_hochberg(np.array([0.01, np.nan, 0.04, 0.03, 0.20, np.nan]))
    np.testing.assert_allclose(with_nan, [0.04, np.nan, 0.16 / 3, 0.16 / 3, 0.20, np.nan], atol=1e-12)  # NaN is no test
    assert np.isnan(benjamini_hochberg(np.array([np.nan, np.nan]))).all()
    assert benjamini_hochberg(np.array([0.5, 0.9])).tolist() == [0.9, 0.9] and benjamini_hochberg(np.array([0.6])).tolist() == [0.6]
    assert benjamini_hochberg(np.array([0.3, 0.4, 0.5]) * 3).max() == 1.0  # capped at 1
    p = np.random.default_rng(0).random(40) ** 3
    np.testing.assert_allclose(benjamini_hochberg(p), stats.false_discovery_control(p, method="bh"), atol=1e-12)


def test_row_tests_compare_every_pair_of_a_reference_row_from_the_matrixs_own_resamples():
    wide, measurement = _simulated_table(4)
    ci = bootstrap_matrix(wide, "kendall", BootstrapSettings(400, 1, 0.95, Interval.bca), measurement)
    rows = row_tests(ci, "b0")
    assert list(zip(rows["first"], rows["second"])) == [("b1", "b2"), ("b1", "b3"), ("b2", "b3")]
    values = ci.estimate.values
    for row in rows.itertuples():
        first_name, second_name = str(row.first), str(row.second)
        assert row.first_value == number_at(values, first_name, "b0") and row.second_value == number_at(values, second_name, "b0")
        assert row.difference == pytest.approx(number_at(values, first_name, "b0") - number_at(values, second_name, "b0"), abs=1e-15)
        first, second = list(wide.columns).index(first_name), list(wide.columns).index(second_name)
        differences = ci.replicates[:, first, 0] - ci.replicates[:, second, 0]
        assert row.p_value == pytest.approx(min(1.0, 2 * min(np.mean(differences <= 0), np.mean(differences >= 0))))
        assert (row.lower, row.upper) == pytest.approx(tuple(np.quantile(differences, [0.025, 0.975])))
        assert row.n == 15
    np.testing.assert_allclose(rows["q_value"], benjamini_hochberg(rows["p_value"].to_numpy()))
    # a difference is measured when both of its correlations are: b3 has no per-question outcomes
    assert rows["kind"].tolist() == ["questions+approaches", "approaches", "approaches"]


# --- reliability and noise ceilings -----------------------------------------------------------------------------------


def test_pearson_reliability_is_the_true_variance_share_by_hand():
    """Two approaches, five questions: a = 1 1 1 1 0 (EM 80), b = 1 0 0 0 0 (EM 20). Their per-question differences
    0 1 1 1 0 have variance 0.3 (ddof 1), so the EM difference's noise is 10^4 0.3 / 5 = 600, and across two approaches
    noise adds 600 / 2 = 300 to the variance of the EMs, 60^2 / 2 = 1800: the true share is 1500 / 1800."""
    laid = _outcomes("h", {"a": [[1, 1, 1, 1, 0]], "b": [[1, 0, 0, 0, 0]]})
    noise = benchmark_noise(laid)
    np.testing.assert_allclose(noise.em, [80.0, 20.0])
    # covariance by hand (ddof 1): var a = (4 0.2^2 + 0.8^2) / 4 = 0.2, var b = 0.2, cov = (0.2 0.8 - 3 0.2 0.2 + 0.8 0.2) / 4 = 0.05
    np.testing.assert_allclose(noise.question_covariance, 1e4 * np.array([[0.2, 0.05], [0.05, 0.2]]) / 5)
    assert noise.reliability(Method.pearson) == pytest.approx(1500 / 1800)
    assert noise.reliability(Method.pearson, n_questions=10) == pytest.approx(1500 / 1650)  # noise halves
    assert noise.reliability(Method.pearson, spread=2.0) == pytest.approx(6000 / 6300)  # true variance x 4
    # a cell with two runs: their EMs 80 and 20 vary by 1800 (ddof 1), of which 10^4 0.3 / 5 = 600 is the answers'
    # own chance (per question the runs' variance is 0 0.5 0.5 0.5 0); the seeds add 1200 x (0.5^2 + 0.5^2) = 600
    seeded = benchmark_noise(_outcomes("s", {"a": [[1, 1, 1, 1, 0], [1, 0, 0, 0, 0]], "b": [[0, 0, 1, 0, 0]]}))
    np.testing.assert_allclose(seeded.seed_variance, [600.0, 0.0])
    np.testing.assert_allclose(np.diag(seeded.covariance()) - np.diag(seeded.question_covariance), [600.0, 0.0])


def _pair(difference: float, noise_variance: float) -> BenchmarkNoise:
    """Two approaches whose EM difference has noise variance `noise_variance` (independent halves)."""
    covariance = np.diag([noise_variance / 2, noise_variance / 2])
    return BenchmarkNoise("p", ("a", "b"), np.array([50.0 + difference, 50.0]), covariance, np.zeros(2), 200)


def test_kendall_reliability_of_a_pair_is_the_expected_squared_agreement_of_two_test_sets():
    """d = 10, sigma^2 = 25: the prior variance of the true difference is 100 - 25 = 75, its posterior N(7.5, 0.75 25),
    and the reliability E[(2 Phi(|delta| / 5) - 1)^2] over it (numerical integration)."""
    noise = _pair(10.0, 25.0)
    posterior = stats.norm(7.5, math.sqrt(0.75 * 25))
    agreement = lambda delta: 2 * stats.norm.cdf(abs(delta) / 5.0) - 1  # noqa: E731
    want = integrate.quad(lambda delta: agreement(delta) ** 2 * posterior.pdf(delta), -60, 80, points=[0.0])[0]
    assert noise.reliability(Method.kendall) == pytest.approx(want, abs=1e-6)
    # |rho| (the ceilings' factor) has a kink at delta = 0, which Gauss-Hermite quadrature resolves to about 0.002
    first = integrate.quad(lambda delta: abs(agreement(delta)) * posterior.pdf(delta), -60, 80, points=[0.0])[0]
    assert noise.agreement(np.arange(2))[0] == pytest.approx(first, abs=3e-3)
    # four times the questions: the noise of a second test set is a quarter
    sharper = lambda delta: 2 * stats.norm.cdf(abs(delta) / 2.5) - 1  # noqa: E731
    want_more = integrate.quad(lambda delta: sharper(delta) ** 2 * posterior.pdf(delta), -60, 80, points=[0.0])[0]
    assert noise.reliability(Method.kendall, n_questions=800) == pytest.approx(want_more, abs=1e-6)
    assert _pair(10.0, 1e-8).reliability(Method.kendall) == pytest.approx(1.0)  # no noise: the order is sure
    assert _pair(0.0, 25.0).reliability(Method.kendall) == 0.0  # no difference seen: no order to repeat
    assert _pair(4.0, 25.0).reliability(Method.kendall) == 0.0  # a difference within the noise: the same
    values = [_pair(10.0, variance).reliability(Method.kendall) for variance in (1.0, 10.0, 25.0, 60.0, 99.0)]
    assert values == sorted(values, reverse=True)  # more noise, less agreement


def _ceiling_table(seed: int) -> tuple[pd.DataFrame, Measurement]:
    """12 approaches x 4 benchmarks; c lacks approach a00, d has no per-question data."""
    outcomes = _study(12, 80, 4, seed, ability_sd=0.5)
    wide, measurement = as_measurement(outcomes)
    wide.columns = ["a", "b", "c", "d"]
    names = measurement.benchmarks["b0"].approaches
    full = {name: measurement.benchmarks[old] for name, old in zip("ab", ("b0", "b1"))}
    full = {name: BenchmarkOutcomes(name, laid.approaches, laid.outcomes, laid.weights) for name, laid in full.items()}
    third = measurement.benchmarks["b2"]
    full["c"] = BenchmarkOutcomes("c", names[1:], third.outcomes[1:], third.weights[1:])
    wide.loc["a00", "c"] = np.nan
    return wide, Measurement(full)


def test_kendall_ceilings_are_the_mean_products_of_pair_agreements_over_common_approaches():
    wide, measurement = _ceiling_table(5)
    ceilings = noise_ceilings(wide, measurement, Method.kendall)
    matrix = ceilings.ceiling
    models = {bench: benchmark_noise(measurement.benchmarks[bench]) for bench in "abc"}
    for bench in "abc":
        assert number_at(matrix, bench, bench) == pytest.approx(models[bench].reliability(Method.kendall))
        assert ceilings.reliability[bench] == number_at(matrix, bench, bench)
    everyone = list(wide.index)
    agreement = {bench: models[bench].agreement(models[bench].rows_of(everyone)) for bench in "ab"}
    assert number_at(matrix, "a", "b") == pytest.approx(float(np.mean(agreement["a"] * agreement["b"])))
    common = everyone[1:]  # c has no a00
    for bench in "ab":
        pair = models[bench].agreement(models[bench].rows_of(common)) * models["c"].agreement(models["c"].rows_of(common))
        assert number_at(matrix, bench, "c") == pytest.approx(float(np.mean(pair)))
    assert np.allclose(matrix.to_numpy(), matrix.to_numpy().T, equal_nan=True)
    assert matrix["d"].isna().all() and matrix.loc["d"].isna().all() and np.isnan(ceilings.reliability["d"])
    assert ((matrix.loc[list("abc"), list("abc")] > 0) & (matrix.loc[list("abc"), list("abc")] <= 1)).all().all()
    assert ceilings.disattenuated is None


def test_pearson_ceilings_disattenuate_r_by_the_square_root_of_both_reliabilities():
    wide, measurement = _ceiling_table(6)
    observed = concurrence_matrix(wide, Method.pearson).values
    ceilings = noise_ceilings(wide, measurement, Method.pearson, observed)
    models = {bench: benchmark_noise(measurement.benchmarks[bench]) for bench in "abc"}
    everyone = list(wide.index)
    share = {bench: models[bench].true_variance_share(models[bench].rows_of(everyone)) for bench in "ab"}
    assert ceilings.reliability["a"] == pytest.approx(share["a"])
    assert number_at(ceilings.ceiling, "a", "b") == pytest.approx(math.sqrt(share["a"] * share["b"]))
    common = everyone[1:]
    over_common = {bench: models[bench].true_variance_share(models[bench].rows_of(common)) for bench in "ac"}
    cross = math.sqrt(over_common["a"] * over_common["c"])
    assert number_at(ceilings.ceiling, "a", "c") == pytest.approx(cross)
    disattenuated = ceilings.disattenuated  # Pearson: present; None would fail the first comparison below
    for first, second in (("a", "b"), ("b", "a"), ("a", "c"), ("b", "c")):
        assert number_at(disattenuated, first, second) == pytest.approx(
            number_at(observed, first, second) / number_at(ceilings.ceiling, first, second)
        )
    assert np.isnan(np.diag(disattenuated.to_numpy())).all()
    assert disattenuated["d"].isna().all() and np.isnan(ceilings.reliability["d"])
    assert np.allclose(ceilings.ceiling.to_numpy(), ceilings.ceiling.to_numpy().T, equal_nan=True)


def _frame(values: dict[tuple[str, str], float], labels: list[str], diagonal: float = 1.0) -> pd.DataFrame:
    array = np.full((len(labels), len(labels)), np.nan)
    np.fill_diagonal(array, diagonal)
    frame = pd.DataFrame(array, index=labels, columns=labels)
    for (first, second), value in values.items():
        frame.at[first, second] = frame.at[second, first] = value
    return frame


def test_a_cell_is_inconclusive_when_its_interval_spans_zero_or_its_ceiling_is_low():
    labels = list("abcde")
    estimate = _frame({pair: 0.4 for pair in [("a", "b"), ("a", "c"), ("b", "c"), ("a", "d"), ("b", "d"), ("c", "d"), ("a", "e")]}, labels)
    lower = _frame({("a", "b"): -0.1, ("a", "c"): 0.2, ("b", "c"): 0.2, ("a", "e"): 0.0}, labels)
    upper = _frame({("a", "b"): 0.5, ("a", "c"): 0.6, ("b", "c"): 0.6, ("a", "e"): 0.7}, labels)
    counts = pd.DataFrame(10, index=labels, columns=labels)
    settings = BootstrapSettings(10, 0, 0.95, Interval.percentile)
    matrix = ConcurrenceMatrix(Method.kendall, estimate, counts)
    ci = MatrixWithCI(matrix, lower, upper, counts * 0, settings, estimate > 2, np.empty((0, 5, 5)))
    ceiling = _frame({("a", "b"): 0.9, ("a", "c"): 0.3, ("b", "c"): 0.9, ("a", "d"): 0.7, ("b", "d"): 0.3, ("a", "e"): 0.5}, labels)
    ceilings = NoiseCeilings(Method.kendall, pd.Series(1.0, index=labels), ceiling, None)
    verdict = inconclusive(ci, ceilings)
    assert verdict.at["a", "b"] is True  # the interval spans 0
    assert verdict.at["a", "c"] is True  # the ceiling is below 0.5
    assert verdict.at["b", "c"] is False  # neither
    assert verdict.at["a", "d"] is None  # no interval, ceiling 0.7: cannot be told
    assert verdict.at["b", "d"] is True  # no interval, ceiling 0.3
    assert verdict.at["c", "d"] is None  # no interval, no ceiling
    assert verdict.at["a", "e"] is True  # the interval ends at 0, ceiling exactly 0.5 is not low
    assert all(verdict_at(verdict, label, label) is None for label in labels)
    assert verdict.at["b", "a"] is True and verdict.at["c", "b"] is False  # both triangles
    only_interval = inconclusive(ci, None)
    assert only_interval.at["a", "b"] is True and only_interval.at["a", "c"] is False and only_interval.at["a", "d"] is None
    only_ceiling = inconclusive(None, ceilings)
    assert only_ceiling.at["a", "c"] is True and only_ceiling.at["a", "b"] is None and only_ceiling.at["c", "d"] is None
    with pytest.raises(ValueError, match="needs an interval or a ceiling"):
        inconclusive(None, None)


# --- remedy -----------------------------------------------------------------------------------------------------------


def test_remedy_names_the_questions_that_bring_the_tau_between_two_test_sets_to_the_target():
    """Four approach sets (20 approaches, ability sd 0.5, 100 questions: reliability about 0.6). On fresh pairs of test
    sets of the size the remedy names (estimated from one test set), the mean tau between the two is 0.8 within 0.07
    (the estimate's own error from one test set is about 0.05 per approach set, see reliability_check)."""
    scenario = Scenario(approaches=20, questions=100, ability_sd=0.5)
    rng = np.random.default_rng(0)
    measured = []
    for _ in range(4):
        abilities = draw_abilities(scenario, rng)[:, 0]
        _, measurement = as_measurement({"x": draw_outcomes(abilities, scenario, rng)})
        noise = benchmark_noise(measurement.benchmarks["x"])
        found = remedy(noise, Method.kendall)
        assert found.reliability == noise.reliability(Method.kendall) < 0.8 and found.n_questions == 100
        assert found.questions_needed is not None and found.questions_needed > 100
        # the search is a bisection to within 1%: the target is met there and not 2% below it
        assert noise.reliability(Method.kendall, n_questions=found.questions_needed) >= 0.8
        assert noise.reliability(Method.kendall, n_questions=found.questions_needed / 1.02) < 0.8
        assert found.spread_needed is not None and found.spread_needed > 1.0
        assert noise.reliability(Method.kendall, spread=found.spread_needed) >= 0.8
        assert noise.reliability(Method.kendall, spread=found.spread_needed / 1.02) < 0.8
        bigger = Scenario(approaches=20, questions=found.questions_needed, ability_sd=0.5)
        taus = []
        for _ in range(25):
            wide, _ = as_measurement({"x": draw_outcomes(abilities, bigger, rng), "y": draw_outcomes(abilities, bigger, rng)})
            taus.append(number_at(concurrence_matrix(wide, Method.kendall).values, "x", "y"))
        measured.append(float(np.mean(taus)))
    assert float(np.mean(measured)) == pytest.approx(0.8, abs=0.07)
    assert all(abs(tau - 0.8) < 0.1 for tau in measured)


def test_remedy_finds_nothing_where_the_differences_are_within_the_noise_or_the_seeds_limit_it():
    """Four approaches with 50 of 100 right each, on different questions: no difference is seen (equal accuracy has
    p = 1), so no number of questions or spread is promised. Seeds: EMs 50, 55, ..., 75 with question variance 1 and
    seed variance 20 each differ beyond noise (Wald statistic 437.5 / 21 = 20.8 on 5 degrees of freedom), but a
    second test set of any size still differs by N(0, 40) per pair, which keeps the reliability under 0.8."""
    rng = np.random.default_rng(1)
    runs = {}
    for name in "wxyz":
        right = np.zeros(100, dtype=int)
        right[rng.permutation(100)[:50]] = 1
        runs[name] = [right.tolist()]
    noise = benchmark_noise(_outcomes("flat", runs))
    assert (noise.em == 50.0).all()
    found = remedy(noise, Method.kendall)
    assert found.reliability == 0.0 and found.equal_p == 1.0
    assert found.questions_needed is None and found.spread_needed is None
    # identical abilities, simulated: the chance differences do not stand out from noise (seeded; 95% of seeds do so)
    alike = Scenario(approaches=10, questions=200)
    _, measurement = as_measurement({"x": draw_outcomes(np.zeros(10), alike, np.random.default_rng(2))})
    chance = remedy(benchmark_noise(measurement.benchmarks["x"]), Method.kendall)
    assert chance.equal_p >= 0.05 and chance.questions_needed is None and chance.spread_needed is None
    em = np.array([50.0, 55.0, 60.0, 65.0, 70.0, 75.0])
    seeded = BenchmarkNoise("seeded", tuple("abcdef"), em, np.eye(6), np.full(6, 20.0), 1000)
    limited = remedy(seeded, Method.kendall)
    assert limited.equal_p == pytest.approx(stats.chi2.sf(437.5 / 21, 5))
    assert limited.reliability < 0.8 and seeded.reliability(Method.kendall, n_questions=1e7) < 0.8
    assert limited.questions_needed is None and limited.spread_needed is not None and limited.spread_needed > 1.0
    pearson = remedy(seeded, Method.pearson)  # var(EM) 87.5, of which noise 21: 66.5 / 87.5; with no question noise 66.5 / 86.5
    assert pearson.reliability == pytest.approx(66.5 / 87.5) and pearson.questions_needed is None
    assert remedy(_pair(10.0, 1e-8), Method.kendall).questions_needed == 200  # already reliable: today's questions


# --- rank groups ------------------------------------------------------------------------------------------------------


def test_holm_by_hand():
    """Sorted p 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04; the running maximum gives
    0.02, 0.03, 0.06, 0.06."""
    np.testing.assert_allclose(holm(np.array([0.01, 0.04, 0.03, 0.005])), [0.03, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(holm(np.array([0.3, 0.6])), [0.6, 0.6])
    assert holm(np.array([0.4, 0.5, 0.9])).tolist() == [1.0, 1.0, 1.0]
    assert holm(np.array([])).size == 0


def test_rank_groups_keep_identical_approaches_together_and_far_ones_apart_best_first():
    abilities = np.array([0.0, 2.0, -2.0, 2.0])  # "d" answers like "b": only chance differs
    scenario = Scenario(approaches=4, questions=500)
    array = draw_outcomes(abilities, scenario, np.random.default_rng(3))
    laid = _outcomes("sim", {name: array[row].tolist() for row, name in enumerate("abcd")})
    ranked = rank_groups(laid)
    assert sorted(ranked.groups[0]) == ["b", "d"] and ranked.groups[1:] == [["a"], ["c"]]
    assert ranked.n_questions == 500 and ranked.alpha == 0.05
    assert ranked.em == pytest.approx(dict(zip(laid.approaches, laid.em())))
    assert list(ranked.em) == sorted(ranked.em, key=lambda name: ranked.em[name], reverse=True)  # best first
    assert len(ranked.pairs) == 6 and ranked.pairs["distinct"].sum() == 5
    np.testing.assert_allclose(ranked.pairs["p_holm"], holm(ranked.pairs["p_value"].to_numpy()))
    loose = rank_groups(laid, alpha=1e-300)  # nothing is told apart at that level: one group
    assert len(loose.groups) == 1


def test_single_run_pair_tests_are_mcnemars_with_the_paired_variance():
    """One run per cell: with b questions only the first answers and c only the second, the EM difference is
    100 (b - c) / Q and the variance of the per-question differences (ddof 1) is (b + c - (b - c)^2 / Q) / (Q - 1), so
    the pair's z^2 is (b - c)^2 / V with V = Q / (Q - 1) (b + c - (b - c)^2 / Q). McNemar's statistic without continuity
    correction is (b - c)^2 / (b + c): the same numerator over the variance under equal accuracy, b + c. V differs from
    it by the factor Q / (Q - 1) and by the centring term (b - c)^2 / Q (a Wald test uses the variance around the
    observed difference): z^2 = McNemar's x (b + c) / V, equal where b = c (both 0) and within about 1% here
    (Q = 300, |z| up to 2.8)."""
    rng = np.random.default_rng(4)
    array = draw_outcomes(np.array([0.3, 0.0, 0.1, -0.2]), Scenario(approaches=4, questions=300), rng)
    laid = _outcomes("mc", {name: array[row].tolist() for row, name in enumerate("abcd")})
    ranked = rank_groups(laid)
    questions = 300
    runs = dict(zip("abcd", array[:, 0].astype(int)))
    largest = 0.0
    z_values = (ranked.pairs["difference"] / ranked.pairs["se"]).to_numpy(dtype=float)
    for pair, z in zip(ranked.pairs.itertuples(), z_values, strict=True):
        first, second = runs[str(pair.first)], runs[str(pair.second)]
        b, c = int(np.sum((first == 1) & (second == 0))), int(np.sum((first == 0) & (second == 1)))
        assert pair.difference == pytest.approx(100.0 * (b - c) / questions)
        paired = questions / (questions - 1) * (b + c - (b - c) ** 2 / questions)
        assert pair.se == pytest.approx(100.0 * math.sqrt(paired) / questions)
        assert pair.p_value == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-9)
        mcnemar = (b - c) ** 2 / (b + c)
        assert z**2 == pytest.approx(mcnemar * (b + c) / paired, rel=1e-12)
        assert abs(z) == pytest.approx(math.sqrt(mcnemar), rel=0.02)
        largest = max(largest, abs(z))
    assert largest > 2.5  # the pairs span the range where the tests decide
    equal = _outcomes("eq", {"x": [[1, 1, 0, 0, 1, 0]], "y": [[0, 1, 1, 0, 1, 0]]})  # b = c = 1: both z = 0, p = 1
    assert rank_groups(equal).pairs["p_value"].tolist() == [1.0]


# --- simulation validation: coverage of the true tau, and the reliability against repeated test sets ------------------

CLOSE = Scenario(approaches=20, questions=200, ability_sd=0.3)  # close approaches: question noise rivals their differences


def test_the_two_level_bca_interval_covers_the_true_tau_of_close_approaches_far_more_often_than_approach_only():
    """500 simulated studies of CLOSE (true tau 2/pi asin 0.8 = 0.590; the mean estimate is about 0.42, attenuated by
    the question noise), each with a 95% BCa interval of 1,000 resamples over questions and approaches, and one over
    approaches only: the acceptance check of the issue, at least 93% coverage.

    Measured on this machine (bench.noise_simulation and other seeds): two-level BCa 0.934 over these 500 studies,
    0.930 over 1,000 others at 400 resamples (binomial standard error 0.008); approach-only BCa 0.79, 0.78. Before the
    bootstrap scaled its question draws by 1/sqrt(reliability) (`calibrated_em_replicates`) the two-level interval
    covered 0.916-0.926, its misses nearly all below the truth: a resample's second dose of question noise
    attenuated tau less than the first had, and BCa's bias correction lifted the interval too little. The misses are
    still mostly below (28 of 33 here)."""
    studies, resamples = 500, 1000
    rng = np.random.default_rng(0)
    hits = {"two-level": 0, "approach-only": 0}
    for study in range(studies):
        wide, measurement = simulated_study(CLOSE, rng)
        settings = BootstrapSettings(resamples, study, 0.95, Interval.bca)
        for kind, given in (("two-level", measurement), ("approach-only", None)):
            ci = bootstrap_matrix(wide, Method.kendall, settings, given)
            hits[kind] += int(number_at(ci.lower, "first", "second") <= CLOSE.true_tau <= number_at(ci.upper, "first", "second"))
    coverage = {kind: count / studies for kind, count in hits.items()}
    assert coverage["two-level"] >= 0.93
    assert coverage["two-level"] >= coverage["approach-only"] + 0.1


@pytest.mark.parametrize("scenario", [CLOSE, Scenario(approaches=20, questions=200)], ids=["close approaches", "200 questions"])
def test_the_reliability_predicts_the_mean_tau_between_two_independent_test_sets(scenario):
    """80 approach sets; for each, the mean tau over 15 pairs of fresh test sets against the reliability estimated from
    one more. Measured beforehand: bias -0.026 to -0.036 for close approaches (40 sets, 4 seeds), -0.009 at ability
    sd 1; the spread of one set's error is about 0.06, so the mean over 80 sets has a standard error near 0.007 and
    the 0.05 bound is more than 2.5 standard errors from the measured bias."""
    result = reliability_check(scenario, repeats=80, pairs=15, seed=1)
    assert abs(result["bias"]) < 0.05
    assert result["mean absolute error"] < 0.1
