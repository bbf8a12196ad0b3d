"""The noise assessment as a user sees it: `concur matrix`, `compare`, `ranks`, `results` and `report` on per-question
results whose truth is known.

Eight approaches answer four benchmarks (`bench.noise_simulation`'s Rasch model, a seeded generator):

- `sharp` and `echo`: the same true ranking, abilities 0.7 logits apart, 400 questions each: every approach is told
  from its neighbours, the reliability is high, and the two concur beyond noise. `a4-twin` has a4's ability and, on
  `sharp`, a4's very answers (identical per-question outcomes), so the two cannot be told apart there;
- `flat`: every approach has the same ability, 200 questions: its ranking is pure noise (reliability near 0, every
  pair with it inconclusive, one rank group);
- `mixed`: another true order, half the spread, 300 questions, two seeds per cell (seed variance).

The tidy CSV holds the same runs' EMs without their questions, so it gives the same point values and no noise
assessment. Per-approach EMs and correlations are computed again here from the CSV (pandas, scipy).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bench.noise_simulation import Scenario, draw_outcomes
from tests.test_report import Tables

APPROACHES = ("a1", "a2", "a3", "a4", "a5", "a6", "a7", "a4-twin")
SHARP, ECHO, FLAT, MIXED = "sharp", "echo", "flat", "mixed"
BENCHES = (ECHO, FLAT, MIXED, SHARP)  # as concur orders benchmarks outside the registry: by name
QUESTIONS = {SHARP: 400, ECHO: 400, FLAT: 200, MIXED: 300}
SEEDS = {SHARP: 1, ECHO: 1, FLAT: 1, MIXED: 2}
SHARP_GROUPS = [{"a1"}, {"a2"}, {"a3"}, {"a4", "a4-twin"}, {"a5"}, {"a6"}, {"a7"}]  # the truth, and what 400 questions resolve
RESAMPLES = "500"
JSON_DECIMALS = 6  # concur matrix --format json rounds its matrices to this


def _study(seed: int = 20261129) -> pd.DataFrame:
    """The per-question rows (approach, benchmark, question_id, em, seed, hparam_id) of the four benchmarks."""
    rng = np.random.default_rng(seed)
    ability = np.append(np.linspace(2.5, -2.5, 7), 0.0)  # a1 best ... a7 worst, then the twin at a4's ability
    ability[-1] = ability[3]
    outcomes = {}
    outcomes[SHARP] = draw_outcomes(ability, Scenario(questions=QUESTIONS[SHARP]), rng)
    outcomes[SHARP][-1] = outcomes[SHARP][3]  # the twin answers exactly as a4 does
    outcomes[ECHO] = draw_outcomes(ability, Scenario(questions=QUESTIONS[ECHO]), rng)
    outcomes[FLAT] = draw_outcomes(np.zeros(len(APPROACHES)), Scenario(questions=QUESTIONS[FLAT]), rng)
    mixed_ability = 0.5 * ability[[1, 0, 3, 2, 5, 4, 6, 3]]
    outcomes[MIXED] = draw_outcomes(mixed_ability, Scenario(questions=QUESTIONS[MIXED], seeds=SEEDS[MIXED], seed_sd=0.1), rng)
    frames = []
    for bench, array in outcomes.items():  # (approaches, seeds, questions)
        approach, run, question = np.meshgrid(*(np.arange(size) for size in array.shape), indexing="ij")
        frames.append(
            pd.DataFrame(
                {
                    "approach": np.array(APPROACHES)[approach.ravel()],
                    "benchmark": bench,
                    "question_id": [f"{bench}-q{index:03d}" for index in question.ravel()],
                    "em": array.reshape(-1).astype(int),
                    "seed": run.ravel(),
                    "hparam_id": 0,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def study() -> pd.DataFrame:
    return _study()


@pytest.fixture(scope="module")
def files(study, tmp_path_factory) -> dict[str, Path]:
    """The per-question CSV and the tidy CSV of the same runs (EM in percent, no questions)."""
    root = tmp_path_factory.mktemp("noise-outputs")
    questions, tidy = root / "questions.csv", root / "tidy.csv"
    study.to_csv(questions, index=False)
    run_em(study).to_csv(tidy, index=False)
    return {"questions": questions, "tidy": tidy}


def run_em(study: pd.DataFrame) -> pd.DataFrame:
    """Each run's EM in percent, from its questions."""
    runs = study.groupby(["approach", "benchmark", "hparam_id", "seed"], as_index=False)["em"].mean()
    return runs.assign(em=runs["em"] * 100.0)


@pytest.fixture(scope="module")
def em(study) -> pd.DataFrame:
    """approaches x benchmarks: each cell's EM, the mean of its runs' (one setting, so every policy agrees)."""
    return run_em(study).groupby(["approach", "benchmark"])["em"].mean().unstack()


def correlation(em: pd.DataFrame, first: str, second: str, method: str = "kendall") -> float:
    function = stats.kendalltau if method == "kendall" else stats.pearsonr
    return float(function(em[first], em[second]).statistic)


def cells(payload: dict, key: str) -> dict[tuple[str, str], object]:
    """A matrix of `concur matrix --format json` by (row, column) benchmark."""
    names = payload["benchmarks"]
    return {(first, second): payload[key][i][j] for i, first in enumerate(names) for j, second in enumerate(names)}


def pairs(benches=BENCHES) -> list[tuple[str, str]]:
    return [(first, second) for first, second in itertools.permutations(benches, 2)]


def table_rows(lines: list[str]) -> list[list[str]]:
    """The body rows of a table as the CLI prints it (rich's box characters), each as its cells' texts."""
    return [[text.strip() for text in line.split("│")[1:-1]] for line in lines if line.startswith("│")]


def ran(result) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


# --- concur matrix ----------------------------------------------------------------------------------------------------


def test_matrix_json_carries_reliability_ceilings_and_inconclusive_cells(concur, files, em):
    with_ci = concur("matrix", "--results", files["questions"], "--ci", "--resamples", RESAMPLES, "--format", "json")
    payload = json.loads(ran(with_ci))
    assert payload["benchmarks"] == list(BENCHES) and payload["approaches"] == sorted(APPROACHES)
    values, ceiling, verdict = (cells(payload, key) for key in ("values", "ceiling", "inconclusive"))
    kinds = {pair: payload["ci"]["kind"][BENCHES.index(pair[0])][BENCHES.index(pair[1])] for pair in pairs()}
    assert set(kinds.values()) == {"questions+approaches"}  # every benchmark has its questions: two-level intervals

    # the point values are Kendall's tau of the per-approach EMs computed from the CSV, as JSON rounds them
    for first, second in pairs():
        assert values[first, second] == pytest.approx(round(correlation(em, first, second), JSON_DECIMALS), abs=1e-12)
    assert all(values[bench, bench] == 1.0 for bench in BENCHES)

    reliability = payload["reliability"]
    assert reliability[SHARP] > 0.8 and reliability[ECHO] > 0.8  # approaches far apart, 400 questions
    assert 0.0 <= reliability[FLAT] < 0.3  # identical abilities: pure noise
    for first, second in pairs():
        assert ceiling[first, second] == ceiling[second, first]
    assert all(ceiling[bench, bench] == reliability[bench] for bench in BENCHES)  # a benchmark's ceiling with itself
    assert all(ceiling[FLAT, other] < payload["conclusive_ceiling"] == 0.5 for other in BENCHES if other != FLAT)
    assert ceiling[SHARP, ECHO] > 0.8

    assert all(verdict[FLAT, other] is True and verdict[other, FLAT] is True for other in BENCHES if other != FLAT)
    assert verdict[SHARP, ECHO] is False and verdict[ECHO, SHARP] is False  # same true ranking, both reliable
    assert all(verdict[bench, bench] is None for bench in BENCHES)
    assert cells(payload["ci"] | {"benchmarks": payload["benchmarks"]}, "lower")[SHARP, ECHO] > 0.5
    shown = ", ".join(f"{bench} {reliability[bench]:.2f}" for bench in BENCHES)
    assert f"reliability (expected Kendall τ between two test sets of each benchmark's size): {shown}" in with_ci.stderr

    # without intervals a cell is inconclusive only by its ceiling; otherwise its verdict is unknown (null)
    plain = json.loads(ran(concur("matrix", "--results", files["questions"], "--format", "json")))
    assert "ci" not in plain and cells(plain, "ceiling") == ceiling and plain["reliability"] == reliability
    for (first, second), verdict_without in cells(plain, "inconclusive").items():
        expected = None if first == second or ceiling[first, second] >= 0.5 else True
        assert verdict_without is expected, (first, second)
    assert "disattenuated" not in plain  # Kendall: nothing to disattenuate

    # Pearson: the ceiling is sqrt(rel_1 rel_2) and the disattenuated r is r over the ceiling
    pearson = json.loads(ran(concur("matrix", "--results", files["questions"], "--corr", "pearson", "--format", "json")))
    r, r_ceiling, disattenuated = (cells(pearson, key) for key in ("values", "ceiling", "disattenuated"))
    r_reliability = pearson["reliability"]
    assert r_reliability[SHARP] > 0.8 and r_reliability[FLAT] < 0.5
    for first, second in pairs():
        assert r[first, second] == pytest.approx(round(correlation(em, first, second, "pearson"), JSON_DECIMALS), abs=1e-12)
        product = max(r_reliability[first], 0.0) * max(r_reliability[second], 0.0)
        assert r_ceiling[first, second] == pytest.approx(math.sqrt(product), abs=2e-6)
        assert disattenuated[first, second] == pytest.approx(r[first, second] / r_ceiling[first, second], rel=1e-5)
    assert all(disattenuated[bench, bench] is None and r_ceiling[bench, bench] == r_reliability[bench] for bench in BENCHES)


def test_matrix_from_aggregate_ems_has_the_same_values_and_no_noise_assessment(concur, files, em):
    payload = json.loads(ran(concur("matrix", "--results", files["tidy"], "--ci", "--resamples", RESAMPLES, "--format", "json")))
    assert payload["benchmarks"] == list(BENCHES)
    for first, second in pairs():
        assert cells(payload, "values")[first, second] == pytest.approx(round(correlation(em, first, second), JSON_DECIMALS), abs=1e-12)
    assert {kind for row in payload["ci"]["kind"] for kind in row} == {"approaches"}
    assert all(value is None for value in cells(payload, "ceiling").values())
    assert payload["reliability"] == {bench: None for bench in BENCHES}
    assert all(isinstance(cells(payload, "inconclusive")[pair], bool) for pair in pairs())  # told by the interval alone

    table = concur("matrix", "--results", files["tidy"], "--ci", "--resamples", RESAMPLES)
    lines = ran(table).splitlines()
    assert lines[-1] == "intervals resample: approaches"
    assert "≤" not in table.stdout and "reliability" not in table.stderr  # no ceiling, no reliability without questions


def test_matrix_table_marks_the_noise_benchmarks_cells(concur, files, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # wide enough for the square matrix
    lines = ran(concur("matrix", "--results", files["questions"], "--ci", "--resamples", RESAMPLES)).splitlines()
    header = next(line for line in lines if line.startswith("┃ benchmark"))
    assert [cell.strip() for cell in header.split("┃")[1:-1]] == ["benchmark", *BENCHES]
    rows = {texts[0]: dict(zip(BENCHES, texts[1:])) for texts in table_rows(lines)}
    assert list(rows) == list(BENCHES)
    ceiling = re.compile(r"≤(\d\.\d\d)$")
    for other in BENCHES:
        if other == FLAT:
            continue
        for text in (rows[FLAT][other], rows[other][FLAT]):
            assert "‡" in text.split(" ")[0], text  # the value is marked inconclusive
            found = ceiling.search(text)
            assert found and float(found.group(1)) < 0.5, text
    sharp_echo = rows[SHARP][ECHO]
    assert "‡" not in sharp_echo and ceiling.search(sharp_echo) and float(ceiling.search(sharp_echo).group(1)) > 0.8
    assert "≤" not in rows[FLAT][FLAT]  # no ceiling on the diagonal
    assert "n = 8 approaches in every cell" in lines
    assert any(line.startswith("‡ inconclusive: noise alone could explain it") and "ceiling is below 0.5" in line for line in lines)
    assert any(line.startswith("≤c: the pair's noise ceiling") for line in lines)
    assert lines[-1] == "intervals resample: questions+approaches"


# --- concur compare -------------------------------------------------------------------------------------------------------


def test_compare_reports_reliabilities_ceiling_and_the_test_against_a_third(concur, files, em, tmp_path):
    args = ["compare", SHARP, ECHO, "--against", FLAT, "--results", files["questions"], "--resamples", RESAMPLES]
    args += ["--plot", str(tmp_path / "pair")]
    payload = json.loads(ran(concur(*args, "--format", "json")))
    matrix = json.loads(ran(concur("matrix", "--results", files["questions"], "--format", "json")))
    for method in ("kendall", "pearson"):
        estimate = payload[method]
        assert estimate["kind"] == "questions+approaches" and estimate["n"] == 8 and estimate["inconclusive"] is False
        assert estimate["value"] == pytest.approx(correlation(em, SHARP, ECHO, method), abs=1e-12)
        assert set(estimate["reliability"]) == {SHARP, ECHO} and min(estimate["reliability"].values()) > 0.8
        assert 0.8 < estimate["ceiling"] <= 1.0
    kendall = payload["kendall"]
    # the same numbers as concur matrix gives for this pair (its JSON rounded to 6 decimals)
    assert kendall["reliability"][SHARP] == pytest.approx(matrix["reliability"][SHARP], abs=1e-6)
    assert kendall["ceiling"] == pytest.approx(cells(matrix, "ceiling")[SHARP, ECHO], abs=1e-6)
    assert kendall["disattenuated"] is None
    assert payload["pearson"]["disattenuated"] == pytest.approx(payload["pearson"]["value"] / payload["pearson"]["ceiling"])

    versus = payload[f"versus_{FLAT}_kendall"]
    assert versus["first"] == pytest.approx(correlation(em, SHARP, FLAT)) and versus["second"] == pytest.approx(correlation(em, ECHO, FLAT))
    assert versus["difference"] == pytest.approx(versus["first"] - versus["second"], abs=1e-12)
    assert 0.0 <= versus["p_value"] <= 1.0 and versus["n"] == 8
    assert 0.0 <= payload[f"versus_{FLAT}_pearson"]["p_value"] <= 1.0

    table = ran(concur(*args)).splitlines()
    rows = {texts[0]: texts[1:] for texts in table_rows(table)}
    for bench in (SHARP, ECHO):
        assert rows[f"Kendall τ reliability of {bench}"][0] == f"{kendall['reliability'][bench]:.3f}"
        assert rows[f"Pearson r reliability of {bench}"][0] == f"{payload['pearson']['reliability'][bench]:.3f}"
    assert rows["Kendall τ"][0] == f"{kendall['value']:.3f}" and rows["Kendall τ"][2] == f"{kendall['ceiling']:.3f}"
    assert rows["Pearson r, disattenuated"][0] == f"{payload['pearson']['disattenuated']:.3f}"
    test_row = rows[f"Kendall τ: ({SHARP}, {FLAT}) - ({ECHO}, {FLAT})"]
    assert test_row[0] == f"{versus['difference']:.3f}" and test_row[3] == f"8  p = {versus['p_value']:.3f}"
    assert "intervals resample: questions+approaches" in table


# --- concur ranks ---------------------------------------------------------------------------------------------------------


def test_ranks_groups_what_the_questions_cannot_tell_apart(concur, files, em):
    payload = json.loads(ran(concur("ranks", SHARP, "--results", files["questions"], "--format", "json")))
    groups = payload["groups"]
    assert [set(group) for group in groups] == SHARP_GROUPS  # best first; the twins share a group, the rest stand apart
    assert sorted(itertools.chain.from_iterable(groups)) == sorted(APPROACHES)  # every approach once
    assert payload["n_questions"] == QUESTIONS[SHARP] and payload["correction"] == "holm"
    for approach, value in payload["em"].items():
        assert value == pytest.approx(em.at[approach, SHARP], abs=1e-9)
        lower, upper = payload["em_interval"][approach]
        assert lower < value < upper
    leaders = [payload["em"][group[0]] for group in groups]
    assert leaders == sorted(leaders, reverse=True)
    twins = next(pair for pair in payload["pairs"] if {pair["first"], pair["second"]} == {"a4", "a4-twin"})
    assert (twins["difference"], twins["se"], twins["p_value"], twins["distinct"]) == (0.0, 0.0, 1.0, False)
    apart = next(pair for pair in payload["pairs"] if {pair["first"], pair["second"]} == {"a1", "a7"})
    assert apart["distinct"] is True and apart["p_holm"] < 1e-10

    lines = ran(concur("ranks", SHARP, "--results", files["questions"])).splitlines()
    listed = [texts[:2] for texts in table_rows(lines)]
    assert {approach: int(number) for number, approach in listed} == {
        approach: number for number, group in enumerate(groups, start=1) for approach in group
    }
    assert [number for number, _ in listed] == sorted((number for number, _ in listed), key=int)

    aggregate = concur("ranks", SHARP, "--results", files["tidy"])
    assert aggregate.returncode == 2 and "Traceback" not in aggregate.stderr
    assert len(aggregate.stderr.strip().splitlines()) == 1
    assert f"{SHARP} has no per-question outcomes" in aggregate.stderr and "a per-question CSV" in aggregate.stderr
    unknown = concur("ranks", "nosuch", "--results", files["questions"])
    assert unknown.returncode == 2 and "'nosuch'" in unknown.stderr and "Traceback" not in unknown.stderr


# --- concur results -------------------------------------------------------------------------------------------------------


def test_results_give_each_run_its_interval_from_its_questions(concur, files, study):
    rows = list(csv.DictReader(io.StringIO(ran(concur("results", "--results", files["questions"])))))
    expected = run_em(study).set_index(["approach", "benchmark", "seed"])["em"]
    assert len(rows) == len(expected) == len(APPROACHES) * sum(SEEDS.values())
    for row in rows:
        value = float(row["em"])
        assert value == pytest.approx(expected[row["approach"], row["benchmark"], int(row["seed"])], abs=1e-9)
        assert int(row["n_questions"]) == QUESTIONS[row["benchmark"]]
        if 0.0 < value < 100.0:
            assert float(row["em_lower"]) < value < float(row["em_upper"]), row
        half_width = 100.0 * 1.96 * math.sqrt(value / 100.0 * (1.0 - value / 100.0) / QUESTIONS[row["benchmark"]])
        assert float(row["em_upper"]) - float(row["em_lower"]) == pytest.approx(2.0 * half_width, rel=0.2)  # binomial


# --- concur report --------------------------------------------------------------------------------------------------------


class Page(Tables):
    """`Tables`, with each row's own attributes (`rows[table]`) and each cell's interval spans (`attributes["_ci"]`)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[dict]] = {}
        self._span: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        super().handle_starttag(tag, attrs)
        attributes = dict(attrs)
        if tag == "tr" and self._table:
            self.rows.setdefault(self._table, []).append(attributes)
        elif tag == "span" and self._cell is not None and attributes.get("class") == "ci":
            self._span = []

    def handle_endtag(self, tag):
        if tag == "span" and self._span is not None and self._cell is not None:
            self._cell[0].setdefault("_ci", []).append("".join(self._span))
            self._span = None
        super().handle_endtag(tag)

    def handle_data(self, data):
        super().handle_data(data)
        if self._span is not None:
            self._span.append(data)


def read_page(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def body(page: Page, table: str) -> list[tuple[dict, list[tuple[dict, str]]]]:
    """The rows of `table` that hold data (not its header), with each row's attributes."""
    return [(attributes, row) for attributes, row in zip(page.rows[table], page.tables[table]) if attributes]


def test_report_shows_intervals_groups_reliability_ceilings_and_row_tests(concur, files, em, tmp_path):
    out = tmp_path / "report"
    made = concur("report", "--results", files["questions"], "--out", out, "--resamples", "200", "--reference", SHARP)
    ran(made)
    page = read_page(out / "index.html")

    em_rows = page.tables["em-table"][1:]
    assert sorted(row[0][1] for row in em_rows) == sorted(APPROACHES)
    for row in em_rows:
        for attributes, text in row[1:]:
            (span,) = attributes["_ci"]
            lower, upper = (float(number) for number in span.strip("[]").split(", "))
            value = float(attributes["data-value"])
            assert value == pytest.approx(em.at[row[0][1], attributes["data-bench"]])
            assert lower <= round(value, 1) <= upper and upper - lower > 1.0, (row[0][1], text)

    groups = {attributes["data-bench"]: row for attributes, row in body(page, "rank-groups")}
    assert sorted(groups) == sorted(BENCHES)  # one row per benchmark
    read = {bench: [set(group.strip("{}").split(", ")) for group in row[-1][1].split(" > ")] for bench, row in groups.items()}
    assert read[SHARP] == SHARP_GROUPS
    assert read[FLAT] == [set(APPROACHES)]  # pure noise: no approach told from another
    assert all(row[1][1] == str(QUESTIONS[bench]) for bench, row in groups.items())

    reliability = {attributes["data-bench"]: attributes for attributes, _ in body(page, "reliability")}
    assert sorted(reliability) == sorted(BENCHES)
    assert float(reliability[SHARP]["data-reliability"]) > 0.8 and float(reliability[FLAT]["data-reliability"]) < 0.3
    assert reliability[FLAT].get("class") == "low"
    assert all("class" not in reliability[bench] for bench in (SHARP, ECHO))

    for table in ("kendall-matrix", "pearson-matrix"):
        matrix = {(attributes["data-bench"], cell["data-bench"]): cell for attributes, row in body(page, table) for cell, _ in row[1:]}
        for other in BENCHES:
            if other == FLAT:
                continue
            for pair in ((FLAT, other), (other, FLAT)):
                assert matrix[pair].get("data-inconclusive") == "true", (table, pair)
                assert 0.0 <= float(matrix[pair]["data-ceiling"].removeprefix("≤")) < 0.5
        assert "data-inconclusive" not in matrix[SHARP, ECHO] and float(matrix[SHARP, ECHO]["data-ceiling"].removeprefix("≤")) > 0.8

    tests = body(page, "row-tests")
    others = [bench for bench in BENCHES if bench != SHARP]
    assert len(tests) == math.comb(len(BENCHES) - 1, 2)
    assert sorted((a["data-first"], a["data-second"]) for a, _ in tests) == sorted(itertools.combinations(others, 2))
    for attributes, row in tests:
        p_value, q_value = float(row[-2][1]), float(row[-1][1])
        assert 0.0 <= p_value <= q_value <= 1.0 and float(attributes["data-q"]) == pytest.approx(q_value, abs=5e-4)

    # `flat` is pure noise: its approaches' EMs do not differ beyond noise, so no number of questions is promised.
    (warning,) = [warning for warning in page.warnings if warning.startswith(f"{FLAT}: reliability")]
    assert f"{FLAT}: reliability {float(reliability[FLAT]['data-reliability']):.2f} " in warning
    assert "its ranking of the approaches is mostly noise" in warning
    equal = re.search(r"do not differ beyond noise \(test of equal accuracy: p = (0\.\d\d)\), so no number of questions", warning)
    assert equal is not None and float(equal.group(1)) >= 0.05, warning
    assert "test questions would bring it" not in warning
    remedy_cell = next(row[-1][1] for attributes, row in body(page, "reliability") if attributes["data-bench"] == FLAT)
    assert remedy_cell == f"not estimable: the EMs do not differ beyond noise (p = {equal.group(1)})"  # the table and the warning agree
    assert not any(warning.startswith((f"{SHARP}:", f"{ECHO}:")) for warning in page.warnings)  # reliable: no warning
    assert any(warning.startswith("Kendall τ: ") and "pairs are inconclusive (‡)" in warning for warning in page.warnings)
    assert f"warning: {FLAT}: reliability" in made.stderr

    tidy_out = tmp_path / "tidy-report"
    ran(concur("report", "--results", files["tidy"], "--out", tidy_out, "--resamples", "200"))
    tidy = read_page(tidy_out / "index.html")
    assert any(warning.startswith(f"No per-question outcomes for {', '.join(BENCHES)}:") for warning in tidy.warnings)
    assert "reliability" not in tidy.tables and "rank-groups" not in tidy.tables
    assert all("_ci" not in attributes for row in tidy.tables["em-table"][1:] for attributes, _ in row[1:])


# --- bad input ------------------------------------------------------------------------------------------------------------


def test_an_outcome_that_is_not_1_or_0_names_the_file_and_line(concur, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("approach,benchmark,question_id,em\na1,sharp,q1,1\na1,sharp,q2,2\na2,sharp,q1,0\na2,sharp,q2,1\n")
    result = concur("matrix", "--results", bad)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [f"error: {bad}, line 3: column 'em' must be 1 or 0 (answered exactly or not), got '2'"]
