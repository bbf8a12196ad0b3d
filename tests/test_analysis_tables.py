"""The tidy table, policies, selection, the bundled reference and the CSV contract."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from concur.analysis.concurrence import concurrence_matrix
from concur.analysis.policy import reduce_runs
from concur.analysis.reference import liu2023, liu2023_published_squad
from concur.analysis.render import matrix_csv
from concur.analysis.tidy import read_tidy_csv, tidy_frame
from concur.errors import ConcurError, DataFormatError, UnknownNameError
from concur.registry.selection import select
from tests.conftest import REPO

REFERENCE_DIR = REPO.parent / "shared" / "reference"


def write(path, text):
    path.write_text(text)
    return path


def test_csv_errors_name_file_line_and_column(tmp_path):
    good = write(tmp_path / "ok.csv", "approach,benchmark,hparam_id,seed,em,f1\nbidaf,squad,0,1,67.5,77.1\nbidaf,squad,0,2,68.5,\n")
    frame = read_tidy_csv(good)
    assert frame["em"].tolist() == [67.5, 68.5] and frame["seed"].tolist() == [1, 2] and np.isnan(frame["f1"].iloc[1])
    cases = {
        "approach,em\nbidaf,50\n": "missing column(s) benchmark",
        "approach,benchmark,em\nbidaf,squad,50\nqanet,squad,fifty\n": "line 3: column 'em' must be a number",
        "approach,benchmark,em\nbidaf,squad,0.5\nqanet,squad,150\n": "line 3: column 'em' must be a number from 0 to 100",
        "approach,benchmark,em,seed\nbidaf,squad,50,1\nbidaf,squad,51,1.5\n": "line 3: column 'seed' must be a whole number",
        "approach,benchmark,em,seed\nbidaf,squad,50,1\nbidaf,squad,51,1\n": (
            "line 3: the run (approach=bidaf, benchmark=squad, hparam_id=<none>, seed=1) appears more than once (lines 2, 3)"
        ),
        "approach,benchmark,em\n,squad,50\n": "line 2: column 'approach' must be a non-empty name",
        "approach,benchmark,em\nbidaf,squad,\n": "line 2: column 'em' is missing",
    }
    for number, (text, message) in enumerate(cases.items()):
        path = write(tmp_path / f"bad{number}.csv", text)
        with pytest.raises(DataFormatError) as caught:
            read_tidy_csv(path)
        assert str(path) in str(caught.value) and message in str(caught.value), str(caught.value)


def runs() -> pd.DataFrame:
    rows = [
        # approach, benchmark, hparam_id, seed, em, f1
        ("a", "x", 0, 0, 50, 60),
        ("a", "x", 0, 1, 60, 70),
        ("a", "x", 1, 0, 70, 80),
        ("a", "x", 2, 0, 40, 50),
        ("b", "x", 1, 0, 30, 35),
        ("b", "x", 2, 0, 20, 25),  # no default setting
        ("c", "x", None, None, 45, None),  # already reduced (published)
    ]
    return tidy_frame(pd.DataFrame(rows, columns=["approach", "benchmark", "hparam_id", "seed", "em", "f1"]), "runs")


def cell(cells, approach):
    return cells.table.set_index("approach").loc[approach]


def test_policies_hand_computed():
    default = reduce_runs(runs(), "default")
    assert cell(default, "a")["em"] == 55 and cell(default, "a")["f1"] == 65  # mean of seeds 0 and 1 of setting 0
    assert cell(default, "c")["em"] == 45
    assert "b" not in default.table["approach"].tolist()
    assert default.excluded[["approach", "benchmark"]].values.tolist() == [["b", "x"]]
    best = reduce_runs(runs(), "best")
    assert cell(best, "a")["em"] == 70 and cell(best, "a")["f1"] == 80 and cell(best, "b")["em"] == 30
    assert best.excluded.empty
    mean = reduce_runs(runs(), "mean")
    assert cell(mean, "a")["em"] == pytest.approx((55 + 70 + 40) / 3)
    assert cell(mean, "a")["em_sd"] == pytest.approx(np.std([55, 70, 40], ddof=1))
    assert (cell(mean, "a")["em_min"], cell(mean, "a")["em_max"], cell(mean, "a")["runs"]) == (40, 70, 4)
    assert cell(mean, "b")["em"] == 25
    assert best.wide().loc["b", "x"] == 30


def test_selection_by_id_family_glob_and_typos():
    available = ["squad", "babi-11", "babi-2", "qamr", "squad-10k", "squad-1k"]
    families = {
        "squad": "human",
        "qamr": "human",
        "babi-2": "synthetic",
        "babi-11": "synthetic",
        "squad-1k": "downsampled",
        "squad-10k": "downsampled",
    }
    rank = ("human", "downsampled", "cloze", "synthetic")
    assert select(available, None, families, rank, "benchmark") == ["qamr", "squad", "squad-1k", "squad-10k", "babi-2", "babi-11"]
    assert select(available, "squad,synthetic", families, rank, "benchmark") == ["squad", "babi-2", "babi-11"]
    assert select(available, "babi-*,qamr,babi-2", families, rank, "benchmark") == ["babi-2", "babi-11", "qamr"]
    with pytest.raises(UnknownNameError, match="did you mean 'squad-10k'"):
        select(available, "squad-10", families, rank, "benchmark")
    with pytest.raises(ConcurError, match="no benchmark in these results is of family 'cloze'"):
        select(available, "cloze", families, rank, "benchmark")
    assert select(available, "family:downsampled,squad", families, rank, "benchmark") == ["squad-1k", "squad-10k", "squad"]
    with pytest.raises(UnknownNameError, match=r"unknown benchmark family \(in these results\) 'humn'; did you mean 'human'"):
        select(available, "family:humn", families, rank, "benchmark")
    with pytest.raises(UnknownNameError, match="unknown benchmark family 'humn'"):
        select(available, "family:humn", families, rank, "benchmark", scope="")
    with pytest.raises(ConcurError, match="pattern 'fuzzy-\\*' matches no benchmark"):
        select(available, "fuzzy-*", families, rank, "benchmark")
    skipped: list[str] = []
    assert select(available, "squad,cloze,lambada", families, rank, "benchmark", skipped=skipped) == ["squad"]
    assert skipped == ["cloze", "lambada"]


def test_csv_contract():
    wide = pd.DataFrame({"b1": [1.0, 2, 3, 4], "b2": [1.0, 3, 2, 4], "b3": [5.0, 5, 5, 5]})
    text = matrix_csv(concurrence_matrix(wide, "kendall").values)
    lines = text.splitlines()
    assert lines[0] == "benchmark,b1,b2,b3"
    assert lines[1] == "b1,1.0000,0.6667,"  # tau = (5 - 1) / 6; constant b3: undefined, empty
    assert lines[3] == "b3,,,"
    assert len(lines) == 4


def test_bundled_reference_is_the_shared_table():
    frame = liu2023()
    assert len(frame) == 880
    assert frame["approach"].nunique() == 20 and frame["benchmark"].nunique() == 44
    assert frame[["approach_family", "benchmark_family"]].notna().all().all()
    assert frame.groupby("approach_family")["approach"].nunique().to_dict() == {"non-pretrained": 10, "pretrained": 10}
    assert frame.groupby("benchmark_family")["benchmark"].nunique().to_dict() == {"cloze": 5, "downsampled": 5, "human": 6, "synthetic": 28}
    row = frame[(frame["approach"] == "rasor") & (frame["benchmark"] == "mrqa-newsqa")].iloc[0]
    assert row["em"] == 44.68 and row["approach_name"] == "RaSoR"
    published = liu2023_published_squad()
    assert len(published) == 15  # 5 approaches have no published SQuAD number
    assert published.set_index("approach").loc["bert-base", "em"] == 80.8


def test_bundled_reference_is_byte_identical_to_the_shared_copy():
    shared = REFERENCE_DIR / "liu2023_em.csv"
    if not shared.is_file():
        pytest.skip(f"shared reference not on this machine: {shared}")
    for name in ("liu2023_em.csv", "liu2023_published_squad_em.csv"):
        assert (REPO / "concur" / "analysis" / "data" / name).read_bytes() == (REFERENCE_DIR / name).read_bytes()
