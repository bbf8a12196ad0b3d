"""`concur matrix`, `compare`, `results` and `figures` as a user runs them, on the bundled reference."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from scipy import stats

from concur.analysis.reference import liu2023
from tests.conftest import REPO
from tests.test_cli import concur
from tests.test_runner import _run, _setup

HUMAN = ["squad", "mrqa-newsqa", "mrqa-nq", "mrqa-drop", "mrqa-hotpotqa", "qamr"]


def reference_em(bench: str) -> dict[str, float]:
    frame = liu2023()
    rows = frame[frame["benchmark"] == bench]
    return dict(zip(rows["approach"], rows["em"]))


def kendall(first: dict[str, float], second: dict[str, float]) -> float:
    shared = sorted(set(first) & set(second))
    return stats.kendalltau([first[a] for a in shared], [second[a] for a in shared]).statistic


def test_matrix_csv_contract_on_the_reference():
    result = concur("matrix", "--results", "liu2023", "--benches", ",".join(HUMAN), "--format", "csv")
    assert result.returncode == 0, result.stderr
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == ["benchmark", *HUMAN]
    assert [row[0] for row in rows[1:]] == HUMAN
    for i, row in enumerate(rows[1:]):
        for j, value in enumerate(row[1:]):
            assert value == f"{round(kendall(reference_em(HUMAN[i]), reference_em(HUMAN[j])), 4):.4f}"
    assert "Kendall τ over 20 approaches" in result.stderr


def test_matrix_families_pearson_json_and_ci():
    args = ["matrix", "--results", "liu2023", "--benches", "downsampled", "--approaches", "pretrained", "--corr", "pearson"]
    args += ["--ci", "--resamples", "500", "--format", "json"]
    result = concur(*args)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["benchmarks"] == ["squad-1k", "squad-10k", "squad-20k", "squad-40k", "squad-60k"]
    assert len(payload["approaches"]) == 10 and payload["counts"][0][1] == 10
    first, second = reference_em("squad-1k"), reference_em("squad-60k")
    pretrained = payload["approaches"]
    expected = stats.pearsonr([first[a] for a in pretrained], [second[a] for a in pretrained]).statistic
    assert payload["values"][0][4] == pytest.approx(expected, abs=1e-6)
    assert payload["ci"]["lower"][0][4] <= payload["values"][0][4] <= payload["ci"]["upper"][0][4]
    again = json.loads(concur(*args).stdout)
    assert again["ci"] == payload["ci"]  # seeded


def test_missing_cells_are_reported_and_counted(tmp_path):
    mine = tmp_path / "mine.csv"
    # a new approach, run locally on two of the six benchmarks only
    mine.write_text("approach,benchmark,hparam_id,seed,em,f1\nminilm-l6,squad,0,0,70.5,80.1\nminilm-l6,qamr,0,0,55.0,66.0\n")
    result = concur("matrix", "--results", f"liu2023+{mine}", "--benches", ",".join(HUMAN), "--format", "json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert "minilm-l6" in payload["approaches"] and len(payload["approaches"]) == 21
    squad, qamr, newsqa = HUMAN.index("squad"), HUMAN.index("qamr"), HUMAN.index("mrqa-newsqa")
    assert payload["counts"][squad][qamr] == 21 and payload["counts"][squad][newsqa] == 20
    assert "4 of 126 cells missing" in result.stderr and "minilm-l6×mrqa-newsqa" in result.stderr
    with_mine = {**reference_em("squad"), "minilm-l6": 70.5}
    assert payload["values"][squad][qamr] == pytest.approx(kendall(with_mine, {**reference_em("qamr"), "minilm-l6": 55.0}), abs=1e-6)
    table = concur("matrix", "--results", f"liu2023+{mine}", "--benches", "squad,qamr,mrqa-nq")
    assert "(n=20)" in table.stdout and "(n=21)" in table.stdout


def test_later_results_replace_cells_and_say_so(tmp_path):
    mine = tmp_path / "mine.csv"
    mine.write_text("approach,benchmark,em\nbidaf,squad,99.0\n")
    result = concur("results", "--results", "liu2023", "--results", str(mine))
    assert result.returncode == 0, result.stderr
    assert f"{mine} replaces 1 cell(s) of earlier results: bidaf×squad" in result.stderr
    rows = [row for row in csv.DictReader(io.StringIO(result.stdout)) if row["approach"] == "bidaf" and row["benchmark"] == "squad"]
    assert [row["em"] for row in rows] == ["99.0"]


def test_store_results_from_a_real_job(tmp_path, tiny_registry):
    spec, bench, workspace, store = _setup(tmp_path, tiny_registry)
    outcome = _run(spec, bench, workspace, store)
    result = concur("--runs-dir", str(workspace.root), "results", "--results", "store")
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 1
    assert (rows[0]["approach"], rows[0]["benchmark"], rows[0]["hparam_id"], rows[0]["seed"]) == ("tiny-bert", "tiny-babi", "0", "0")
    assert float(rows[0]["em"]) == pytest.approx(outcome.result["scores"]["exact_match"])
    empty = concur("--runs-dir", str(tmp_path / "nothing"), "matrix")
    assert empty.returncode == 2 and "no results store at" in empty.stderr and "--runs-dir" in empty.stderr


def test_bad_names_get_the_closest_valid_one():
    typo = concur("matrix", "--results", "liu2032")
    assert typo.returncode == 2 and "unknown results source 'liu2032'; did you mean 'liu2023'?" in typo.stderr
    bench = concur("matrix", "--results", "liu2023", "--benches", "squad,mrqa-newsq")
    assert bench.returncode == 2 and "did you mean 'mrqa-newsqa'?" in bench.stderr
    single = concur("matrix", "--results", "liu2023", "--benches", "squad")
    assert single.returncode == 2 and "at least two benchmarks" in single.stderr


def test_compare_prints_both_correlations_and_writes_the_scatter(tmp_path):
    stem = tmp_path / "squad-vs-qamr"
    result = concur(
        "compare",
        "squad",
        "qamr",
        "--results",
        "liu2023",
        "--resamples",
        "400",
        "--plot",
        str(stem),
        "--format",
        "json",
        "--reference",
        "mrqa-nq",
    )
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    squad, qamr = reference_em("squad"), reference_em("qamr")
    assert payload["kendall"]["value"] == pytest.approx(kendall(squad, qamr))
    assert payload["pearson"]["value"] == pytest.approx(stats.pearsonr(*zip(*[(squad[a], qamr[a]) for a in sorted(squad)])).statistic)
    assert payload["kendall"]["n"] == 20 and payload["kendall"]["lower"] < payload["kendall"]["value"] < payload["kendall"]["upper"]
    versus = payload["versus_mrqa-nq_kendall"]
    nq = reference_em("mrqa-nq")
    assert versus["difference"] == pytest.approx(kendall(squad, nq) - kendall(qamr, nq))
    assert 0.0 <= versus["p_value"] <= 1.0
    for suffix in ("pdf", "png"):
        assert stem.with_name(f"{stem.name}.{suffix}").stat().st_size > 10_000


def test_figures_regenerates_tables_and_figures_from_the_reference(tmp_path):
    out = tmp_path / "figures"
    result = concur(
        "figures",
        str(REPO / "analysis" / "table1.toml"),
        str(REPO / "analysis" / "figure5.toml"),
        "--results",
        "liu2023",
        "--out-dir",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    assert sorted(path.name for path in out.iterdir()) == [
        "figure5.csv",
        "figure5.pdf",
        "figure5.png",
        "table1.csv",
        "table1.md",
        "table1.tex",
    ]
    rows = {row["benchmark"]: row for row in csv.DictReader((out / "table1.csv").open())}
    assert sorted(rows) == sorted(HUMAN[1:])
    assert float(rows["qamr"]["kendall"]) == pytest.approx(round(kendall(reference_em("squad"), reference_em("qamr")), 4))
    assert all(row["n"] == "20" for row in rows.values())
    assert float(rows["qamr"]["kendall_lower"]) <= float(rows["qamr"]["kendall"]) <= float(rows["qamr"]["kendall_upper"])
    assert r"Kendall $\tau$" in (out / "table1.tex").read_text()
    counts = {row["task"]: row for row in csv.DictReader((out / "figure5.csv").open())}
    babi1 = np.array(list(reference_em("babi-1").values()))
    assert int(counts["babi-1"]["perfect"]) == int((babi1 >= 95).sum()) == 18


def test_every_recipe_in_analysis_parses():
    from concur.recipes.spec import load_recipe, recipe_paths

    recipes = [load_recipe(path) for path in recipe_paths(REPO / "analysis")]
    names = {recipe.name for recipe in recipes}
    assert {"table1", "table3", "table4", "figure2", "figure3", "figure4", "figure5", "figure7", "figure10", "figure12"} <= names


def test_a_bad_recipe_names_file_and_field(tmp_path):
    recipe = tmp_path / "broken.toml"
    recipe.write_text('kind = "heatmap"\ntitle = "x"\nmetod = "kendall"\n')
    result = concur("figures", str(recipe), "--results", "liu2023", "--out-dir", str(tmp_path / "out"))
    assert result.returncode == 2
    assert f"{recipe}, field 'metod': is not a known field; did you mean 'method'?" in result.stderr
    assert not (tmp_path / "out").exists()


def test_figures_skip_what_the_results_cannot_draw(tmp_path):
    mine = tmp_path / "two.csv"
    mine.write_text("approach,benchmark,em\na,squad,50\nb,squad,60\nc,squad,70\n")
    result = concur("figures", str(REPO / "analysis" / "table1.toml"), "--results", str(mine), "--out-dir", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "skipped: no benchmark besides 'squad' in the results" in result.stdout
    assert "no recipe could be drawn" in result.stderr
