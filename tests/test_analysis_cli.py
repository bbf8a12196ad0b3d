"""`concur matrix`, `compare`, `results` and `figures` as a user runs them, on the bundled reference."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest
from scipy import stats

from concur.analysis.reference import liu2023
from tests.test_runner import _run, _setup

HUMAN = ["squad", "mrqa-newsqa", "mrqa-nq", "mrqa-drop", "mrqa-hotpotqa", "qamr"]
HUMAN_FAMILY_ORDER = ["mrqa-drop", "mrqa-hotpotqa", "mrqa-newsqa", "mrqa-nq", "qamr", "squad"]
# Five approaches; e has no value on b3. Kendall tau by hand: b1-b2 (9 - 1) / 10 = 0.8 over 5,
# b1-b3 -1 over 4 (a..d reversed), b2-b3 (1 - 5) / 6 = -2/3 over 4 (only b, c concordant).
# Pearson b1-b2 over 5: deviations (-20 -10 0 10 20), (-20 0 -10 10 20): 900 / 1000 = 0.9.
SMALL_N_CSV = "approach,benchmark,em\n" + "".join(
    f"{approach},{bench},{em}\n"
    for bench, ems in {"b1": [10, 20, 30, 40, 50], "b2": [10, 30, 20, 40, 50], "b3": [40, 30, 20, 10]}.items()
    for approach, em in zip("abcde", ems)
)


def concur_at(columns: int, *args: str) -> subprocess.CompletedProcess:
    """The CLI with its output folded to `columns`, as in a terminal that wide."""
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "concur", *args], capture_output=True, text=True, env=env, timeout=300)


def reference_em(bench: str) -> dict[str, float]:
    frame = liu2023()
    rows = frame[frame["benchmark"] == bench]
    return dict(zip(rows["approach"], rows["em"]))


def kendall(first: dict[str, float], second: dict[str, float]) -> float:
    shared = sorted(set(first) & set(second))
    return stats.kendalltau([first[a] for a in shared], [second[a] for a in shared]).statistic


def test_matrix_csv_contract_on_the_reference(concur):
    result = concur("matrix", "--results", "liu2023", "--benches", ",".join(HUMAN), "--format", "csv")
    assert result.returncode == 0, result.stderr
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == ["benchmark", *HUMAN]
    assert [row[0] for row in rows[1:]] == HUMAN
    for i, row in enumerate(rows[1:]):
        for j, value in enumerate(row[1:]):
            assert value == f"{round(kendall(reference_em(HUMAN[i]), reference_em(HUMAN[j])), 4):.4f}"
    assert "Kendall τ over 20 approaches" in result.stderr


def test_matrix_families_pearson_json_and_ci(concur):
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


def test_missing_cells_are_reported_and_counted(concur, tmp_path):
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


def test_later_results_replace_cells_and_say_so(concur, tmp_path):
    mine = tmp_path / "mine.csv"
    mine.write_text("approach,benchmark,em\nbidaf,squad,99.0\n")
    result = concur("results", "--results", "liu2023", "--results", str(mine))
    assert result.returncode == 0, result.stderr
    assert f"{mine} replaces 1 cell(s) of earlier results: bidaf×squad" in result.stderr
    rows = [row for row in csv.DictReader(io.StringIO(result.stdout)) if row["approach"] == "bidaf" and row["benchmark"] == "squad"]
    assert [row["em"] for row in rows] == ["99.0"]


def test_store_results_from_a_real_job(concur, tmp_path, tiny_registry):
    spec, bench, workspace, store = _setup(tmp_path, tiny_registry)
    outcome = _run(spec, bench, workspace, store)
    result = concur("--runs-dir", str(workspace.root), "results", "--results", "store")
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 1
    assert (rows[0]["approach"], rows[0]["benchmark"], rows[0]["hparam_id"], rows[0]["seed"]) == ("tiny-bert", "tiny-babi", "0", "0")
    assert float(rows[0]["em"]) == pytest.approx(outcome.result.exact_match)
    empty = concur("--runs-dir", str(tmp_path / "nothing"), "matrix")
    assert empty.returncode == 2 and "no results store at" in empty.stderr and "--runs-dir" in empty.stderr


def test_bad_names_get_the_closest_valid_one(concur):
    typo = concur("matrix", "--results", "liu2032")
    assert typo.returncode == 2 and "unknown results source 'liu2032'; did you mean 'liu2023'?" in typo.stderr
    bench = concur("matrix", "--results", "liu2023", "--benches", "squad,mrqa-newsq")
    assert bench.returncode == 2 and "did you mean 'mrqa-newsqa'?" in bench.stderr
    single = concur("matrix", "--results", "liu2023", "--benches", "squad")
    assert single.returncode == 2 and "at least two benchmarks" in single.stderr


def test_compare_prints_both_correlations_and_writes_the_scatter(concur, tmp_path):
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


def test_matrix_reads_in_a_narrow_terminal_one_row_per_pair():
    args = ("matrix", "--results", "liu2023", "--benches", "human")
    narrow = concur_at(80, *args)
    assert narrow.returncode == 0, narrow.stderr
    pairs = [(a, b) for i, a in enumerate(HUMAN_FAMILY_ORDER) for b in HUMAN_FAMILY_ORDER[i + 1 :]]
    rows = [f"│ {a:<13} │ {b:<13} │ {kendall(reference_em(a), reference_em(b)):.2f} │ 20 │" for a, b in pairs]
    assert narrow.stdout.splitlines() == [
        "┏━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┳━━━━━━┳━━━━┓",
        "┃ first         ┃ second        ┃ τ    ┃ n  ┃",
        "┡━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━╇━━━━━━╇━━━━┩",
        *rows,
        "└───────────────┴───────────────┴──────┴────┘",
        "Too wide for 80 columns: one row per pair.",
        "Full matrix: --format csv --out FILE",
    ]
    wide = concur_at(120, *args).stdout.splitlines()
    assert wide[1] == "┃ benchmark     ┃ mrqa-drop ┃ mrqa-hotpotqa ┃ mrqa-newsqa ┃ mrqa-nq ┃ qamr ┃ squad ┃"
    squad = [kendall(reference_em("squad"), reference_em(other)) for other in HUMAN_FAMILY_ORDER]
    assert (
        wide[8]
        == "│ squad         │ " + " │ ".join(f"{value:.2f}".ljust(width) for value, width in zip(squad, (9, 13, 11, 7, 4, 5))) + " │"
    )
    assert wide[10:] == ["n = 20 approaches in every cell"]


def test_narrow_matrix_keeps_the_cluster_order(concur):
    args = ("matrix", "--results", "liu2023", "--benches", "human", "--order", "cluster")
    order = next(csv.reader(io.StringIO(concur(*args, "--format", "csv").stdout)))[1:]
    assert sorted(order) == sorted(HUMAN) and order != HUMAN_FAMILY_ORDER
    lines = concur_at(80, *args).stdout.splitlines()
    listed = [tuple(cell.strip() for cell in line.split("│")[1:3]) for line in lines[3:18]]
    assert listed == [(a, b) for i, a in enumerate(order) for b in order[i + 1 :]]


def test_small_n_is_flagged_in_every_format(concur, tmp_path):
    tidy = tmp_path / "small.csv"
    tidy.write_text(SMALL_N_CSV)
    counts = tmp_path / "n.csv"
    result = concur("matrix", "--results", str(tidy), "--format", "csv", "--counts", str(counts))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "benchmark,b1,b2,b3",
        "b1,1.0000,0.8000,-1.0000",
        "b2,0.8000,1.0000,-0.6667",
        "b3,-1.0000,-0.6667,1.0000",
    ]
    assert counts.read_text().splitlines() == ["benchmark,b1,b2,b3", "b1,5,5,4", "b2,5,5,4", "b3,4,4,4"]
    assert "note: 2 of 3 pair(s) rest on fewer than 5 approaches (†): b1×b3 (n=4), b2×b3 (n=4)" in result.stderr
    payload = json.loads(concur("matrix", "--results", str(tidy), "--format", "json").stdout)
    assert payload["values"][0] == [1.0, 0.8, -1.0] and payload["counts"][0] == [5, 5, 4]
    assert payload["small_n"][0] == [False, False, True] and payload["min_approaches"] == 5
    table = concur_at(100, "matrix", "--results", str(tidy)).stdout.splitlines()
    assert table[3] == "│ b1        │ 1.00 (n=5)   │ 0.80 (n=5)   │ -1.00† (n=4) │"
    assert table[-1] == "† n < 5 approaches: an unstable estimate"


def test_compare_prints_n_and_flags_small_n(concur, tmp_path):
    tidy = tmp_path / "small.csv"
    tidy.write_text(SMALL_N_CSV)
    args = ("compare", "b1", "b2", "--results", str(tidy), "--reference", "b3", "--resamples", "200", "--plot", str(tmp_path / "s"))
    payload = json.loads(concur(*args, "--format", "json").stdout)
    assert payload["kendall"]["value"] == pytest.approx(0.8) and payload["pearson"]["value"] == pytest.approx(0.9)
    assert (payload["kendall"]["n"], payload["kendall"]["small_n"], payload["min_approaches"]) == (5, False, 5)
    versus = payload["versus_b3_kendall"]  # on a..d, the approaches with all three values
    assert (versus["n"], versus["small_n"]) == (4, True)
    assert (
        versus["first"] == pytest.approx(-1.0)
        and versus["second"] == pytest.approx(-2 / 3)
        and versus["difference"] == pytest.approx(-1 / 3)
    )
    table = concur_at(200, *args).stdout.splitlines()
    assert table[4].startswith("│ Pearson r  ") and table[4].split("│")[5].strip() == "5"
    assert table[4].split("│")[2].strip() == "0.900‡"  # its interval over 5 approaches spans 0: inconclusive
    assert table[6].startswith("│ Pearson r: (b1, b3) - (b2, b3) │") and table[6].split("│")[5].strip().startswith("4†  p = ")
    assert table[9] == "† n < 5 approaches: an unstable estimate"
    assert table[10] == "intervals resample: approaches"
    assert table[12] == "no ceiling or reliability: these results have no per-question outcomes for both benchmarks"


def test_compare_rejects_what_is_not_two_benchmark_ids(concur):
    same = concur("compare", "squad", "squad", "--results", "liu2023")
    assert same.returncode == 2 and "compare needs different benchmarks, got squad, squad" in same.stderr
    family = concur("compare", "human", "qamr", "--results", "liu2023")
    assert family.returncode == 2 and "compare takes benchmark ids, not families or patterns: human" in family.stderr
    assert "Traceback" not in same.stderr + family.stderr
