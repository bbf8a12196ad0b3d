"""Per-question results as data: the per-question CSV contract, the wide layout, combined sources, and our own jobs
scored again question by question from their stored predictions (values hand-computed)."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from concur.analysis.job_questions import CACHE_DIR
from concur.analysis.layouts import read_results_file
from concur.analysis.policy import reduce_runs
from concur.analysis.questions import QUESTION_COLUMNS, aggregate_questions, empty_questions, questions_csv
from concur.analysis.results import Results, load_results, store_results, study_results
from concur.data.model import Split
from concur.data.prepare import SPLITS, PreparedBenchmark, prepare
from concur.data.sources import SourceLocator
from concur.errors import DataFormatError
from concur.metrics import evaluate
from concur.registry import Registry, default_registry
from concur.runner.planning.budget import Budget, apply_subset
from concur.runner.planning.jobs import Job, make_job
from concur.runner.planning.study import load_study, plan_study
from concur.runner.records.jobdir import JobDir
from concur.runner.records.result import JobResult, Scores
from concur.workspace import Workspace
from tests.conftest import write_babi_like, write_tiny_reader

# Two runs on four questions: bidaf answers q1 and q3 exactly (EM 2/4 = 50%, F1 (1 + 0.5 + 1 + 0) / 4 = 62.5%),
# bert q1-q3 (EM 75%, F1 (1 + 1 + 1 + 0.25) / 4 = 81.25%).
QUESTIONS_CSV = """approach,benchmark,seed,question_id,em,f1
bidaf,squad,1,q1,1,1.0
bidaf,squad,1,q2,0,0.5
bidaf,squad,1,q3,1,1
bidaf,squad,1,q4,0,0
bert,squad,1,q1,1,1
bert,squad,1,q2,1,1
bert,squad,1,q3,1,1
bert,squad,1,q4,0,0.25
"""
WIDE_CSV = "model,squad,newsqa\nBiDAF,67.7,\nBERT,81.2,48.1\n"
TEST_QUESTIONS = 5  # the jobs' budget: 5 of the tiny benchmark's 30 test questions


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def load(*requests: str | Path, layout: str | None = None) -> Results:
    return load_results(
        [str(request) for request in requests],
        store_path=Path("runs/concur.sqlite"),
        locator=SourceLocator((), Path("cache")),
        layout=layout,
    )


def test_a_per_question_csv_is_its_runs_means_in_percent(tmp_path):
    loaded = load(write(tmp_path / "q.csv", QUESTIONS_CSV))
    runs = loaded.frame.set_index("approach")
    assert runs.loc["bidaf", "em"] == 50.0 and runs.loc["bert", "em"] == 75.0
    assert runs.loc["bidaf", "f1"] == 62.5 and runs.loc["bert", "f1"] == 81.25
    assert runs["seed"].tolist() == [1, 1] and runs["hparam_id"].isna().all()
    questions = loaded.questions
    assert tuple(questions.columns) == QUESTION_COLUMNS and len(questions) == 8
    assert str(questions["seed"].dtype) == "Int64" and str(questions["question_id"].dtype) == "string"
    assert questions.loc[questions["approach"] == "bert", "em"].tolist() == [1.0, 1.0, 1.0, 0.0]


def test_aggregating_gives_nan_f1_where_a_run_has_none_and_keeps_run_keys():
    questions = pd.DataFrame(
        {
            "approach": ["a", "a", "b"],
            "benchmark": ["x", "x", "x"],
            "hparam_id": [pd.NA, pd.NA, 2],
            "seed": [pd.NA, pd.NA, 0],
            "question_id": ["1", "2", "1"],
            "em": [1.0, 0.0, 1.0],
            "f1": [np.nan, np.nan, 0.5],
        }
    )
    runs = aggregate_questions(questions).set_index("approach")
    assert runs.loc["a", "em"] == 50.0 and np.isnan(runs.loc["a", "f1"]) and runs.loc["b", "f1"] == 50.0
    assert pd.isna(runs.loc["a", "seed"]) and runs.loc["b", "hparam_id"] == 2
    empty = aggregate_questions(empty_questions())
    assert empty.empty and list(empty.columns) == ["approach", "benchmark", "hparam_id", "seed", "em", "f1"]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            "approach,benchmark,question_id,em\nbidaf,squad,q1,1\nbidaf,squad,q2,0.5\n",
            3,
            "column 'em' must be 1 or 0 (answered exactly or not), got '0.5'",
        ),
        (
            "approach,benchmark,question_id,em,f1\nbidaf,squad,q1,1,1\nbidaf,squad,q2,0,73\n",
            3,
            "column 'f1' must be a number from 0 to 1 (the question's token F1) or empty, got '73'",
        ),
        (
            "approach,benchmark,question_id,seed,em\nbidaf,squad,q1,1,1\nbidaf,squad,q2,1,0\nbidaf,squad,q1,1,0\n",
            4,
            "question 'q1' of bidaf on squad (seed 1) appears more than once (lines 2, 4)",
        ),
        (
            "approach,benchmark,question_id,seed,em\nbert,squad,q1,1,1\nbert,squad,q2,1,1\nbert,squad,q3,1,0\n"
            "bidaf,squad,q1,1,1\nbidaf,squad,q3,1,0\n",
            5,
            "bidaf on squad (seed 1) lists 2 of the benchmark's 3 questions; every run of a benchmark must score the same questions "
            "(it lacks q2)",
        ),
        ("approach,benchmark,question_id,em\nbidaf,squad,q1,\n", 2, "column 'em' is missing"),
        ("approach,benchmark,question_id,em\nbidaf,squad,,1\n", 2, "column 'question_id' must not be empty"),
        ("approach,benchmark,question_id\nbidaf,squad,q1\n", None, "missing column(s) em; a per-question results table has"),
    ],
)
def test_per_question_errors_name_the_file_and_line(tmp_path, text, line, message):
    path = write(tmp_path / "q.csv", text)
    with pytest.raises(DataFormatError) as caught:
        read_results_file(path)
    where = f"{path}, line {line}: " if line else f"{path}: "
    assert str(caught.value).startswith(where + message) and "\n" not in str(caught.value), str(caught.value)


def test_a_wide_table_is_one_row_per_approach_and_one_column_per_benchmark(tmp_path):
    loaded = load(write(tmp_path / "wide.csv", WIDE_CSV))
    assert loaded.questions.empty
    rows = loaded.frame.set_index(["approach", "benchmark"])["em"]
    assert rows.to_dict() == {("BiDAF", "squad"): 67.7, ("BERT", "squad"): 81.2, ("BERT", "newsqa"): 48.1}
    assert loaded.frame["hparam_id"].isna().all() and loaded.frame["seed"].isna().all()
    wide = reduce_runs(loaded.frame, "best").wide()
    assert np.isnan(wide.loc["BiDAF", "newsqa"]) and wide.loc["BERT", "newsqa"] == 48.1
    # the name column: `approach`, or `model`, else the first column; label columns are not benchmarks
    named = load(write(tmp_path / "named.csv", "squad,approach_family,approach\n60,non-pretrained,bidaf\n")).frame
    assert named[["approach", "benchmark", "em", "approach_family"]].values.tolist() == [["bidaf", "squad", 60.0, "non-pretrained"]]
    first = load(write(tmp_path / "first.csv", "system,squad,qamr\nbidaf,60,\n")).frame
    assert first[["approach", "benchmark", "em"]].values.tolist() == [["bidaf", "squad", 60.0]]


def test_a_wide_table_is_checked_as_a_tidy_one_and_a_file_of_neither_layout_says_what_they_are(tmp_path):
    cases = {
        "model,squad,newsqa\nBiDAF,67.7,\nBERT,81.2,n/a\n": "line 3: column 'newsqa' (a benchmark in the wide layout) holds EMs",
        "model,squad,newsqa\nBiDAF,0.677,\nBERT,0.812,0.481\n": "column 'em' looks like a 0-1 scale",  # tidy's own check
        "model,squad\nBiDAF,67.7\nBiDAF,68.0\n": "appears more than once (lines 2, 3)",
        "model,notes\nBiDAF,good\n": (
            "neither layout: no column beside 'model' holds numbers; a results file is either tidy, one row per run"
        ),
    }
    for number, (text, message) in enumerate(cases.items()):
        path = write(tmp_path / f"bad{number}.csv", text)
        with pytest.raises(DataFormatError) as caught:
            read_results_file(path)
        assert str(path) in str(caught.value) and message in str(caught.value) and "\n" not in str(caught.value), str(caught.value)
    assert "wide, one row per approach" in str(caught.value)


def test_an_explicit_layout_overrides_detection(tmp_path):
    tidy = write(tmp_path / "tidy.csv", "approach,benchmark,em\nbidaf,squad,60\n")
    with pytest.raises(DataFormatError, match="'benchmark' .* holds EMs in percent or empty cells, not 'squad'"):
        load(tidy, layout="wide")
    with pytest.raises(DataFormatError, match="missing column.s. approach, benchmark, em"):
        load(write(tmp_path / "wide.csv", WIDE_CSV), layout="tidy")


def test_a_later_source_replaces_cells_with_their_questions(tmp_path):
    questions = write(tmp_path / "q.csv", QUESTIONS_CSV)
    mine = write(tmp_path / "mine.csv", "approach,benchmark,em\nbidaf,squad,99.0\n")
    loaded = load(questions, mine)
    assert set(loaded.questions["approach"]) == {"bert"} and len(loaded.questions) == 4
    assert loaded.frame.set_index("approach").loc["bidaf", "em"] == 99.0
    assert f"{mine} replaces 1 cell(s) of earlier results: bidaf×squad" in loaded.notes
    again = load(mine, questions)  # the other way round, the per-question source's cells and questions win
    assert len(again.questions) == 8 and again.frame.set_index("approach").loc["bidaf", "em"] == 50.0


# Our own jobs: a tiny generated bAbI-style benchmark, prepared for real; a budget's subset of its test split;
# predictions and results written as a worker writes them.


class Runs:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.root = tmp_path / "registry"
        (self.root / "benchmarks").mkdir(parents=True)
        (self.root / "approaches").mkdir()
        write_tiny_reader(self.root, "tiny-reader")
        data = tmp_path / "data-root" / "tiny"
        data.mkdir(parents=True)
        write_babi_like(data / "train.txt", stories=20, seed=1)
        write_babi_like(data / "test.txt", stories=10, seed=2)
        write_babi_like(data / "other.txt", stories=10, seed=3)
        self.write_spec("test.txt")
        self.workspace = Workspace(tmp_path / "runs")
        self.locator = SourceLocator((tmp_path / "data-root",), self.workspace.cache_dir)
        self.registry, self.bench = self.prepare()

    def write_spec(self, test_file: str) -> None:
        (self.root / "benchmarks" / "tiny-babi.toml").write_text(
            'id = "tiny-babi"\nfamily = "synthetic"\n'
            '[sources.train]\nreader = "babi"\npath = "tiny/train.txt"\n'
            f'[sources.test]\nreader = "babi"\npath = "tiny/{test_file}"\n'
        )

    def prepare(self) -> tuple[Registry, PreparedBenchmark]:
        registry = default_registry([self.root])
        return registry, prepare(registry.benchmark("tiny-babi"), self.locator, self.workspace.data_dir)[0]

    def job(self, seed: int) -> Job:
        return make_job(self.registry.approach("tiny-reader"), self.bench, seed=seed, budget=Budget(test_questions=TEST_QUESTIONS))

    def test_split(self, job: Job) -> Split:
        """The test questions the job is scored on, cut as the job cuts them."""
        return apply_subset({name: self.bench.load(name) for name in SPLITS}, job.subset)[0]["test"]

    def finish(self, job: Job, predictions: dict[str, str] | None) -> JobResult:
        """Write the job's predictions and result as the worker does (EM and F1 by the official metric)."""
        job_dir = JobDir(self.workspace.jobs_dir / job.key)
        job_dir.path.mkdir(parents=True)
        scored = evaluate(self.test_split(job).gold_answers(), predictions or {})
        if predictions is not None:
            job_dir.write_predictions(predictions)
        scores = Scores(scored.exact_match, scored.f1, scored.n_gold, scored.n_predicted, len(scored.missing), len(scored.extra))
        result = JobResult(
            job=job.definition(),
            status="ok",
            benchmark={key: self.bench.manifest[key] for key in ("spec_hash", "data_hash", "splits")},
            scores=scores,
        )
        job_dir.write_result(result)
        return result


def hand_predictions(split: Split) -> tuple[dict[str, str], list[float], list[float]]:
    """Predictions for the five questions, with the EM and F1 the official script gives each."""
    (q1, q2, q3, q4, q5) = [question for _, question in split.questions()]
    gold = {question.qid: question.answers[0] for question in (q1, q2, q3, q4, q5)}
    wrong = next(place for place in ("kitchen", "garden", "office") if place != gold[q3.qid])
    predictions = {
        q1.qid: f"the {gold[q1.qid]}",  # the article is dropped: exact
        q2.qid: f"{gold[q2.qid]} hallway today",  # 1 of 3 tokens right: precision 1/3, recall 1, F1 0.5
        q3.qid: wrong,  # another room: 0
        # q4: no prediction, 0 as in the official script
        q5.qid: f"{gold[q5.qid].upper()}.",  # case and punctuation do not count: exact
    }
    if gold[q2.qid] == "hallway":  # "hallway hallway today": overlap 1 of 3, the same F1
        predictions[q2.qid] = "hallway bathroom today"
    return predictions, [1.0, 0.0, 0.0, 0.0, 1.0], [1.0, 0.5, 0.0, 0.0, 1.0]


@pytest.fixture
def runs(tmp_path) -> Runs:
    return Runs(tmp_path)


def test_our_jobs_are_scored_again_per_question_from_their_predictions(runs):
    job = runs.job(seed=0)
    split = runs.test_split(job)
    assert split.n_questions == TEST_QUESTIONS
    predictions, em, f1 = hand_predictions(split)
    result = runs.finish(job, predictions)
    assert result.exact_match == pytest.approx(40.0)
    source = store_results(runs.workspace.db_path, runs.registry)
    assert source.notes == []
    questions = source.questions
    assert questions["question_id"].tolist() == [question.qid for _, question in split.questions()]
    assert questions["em"].tolist() == em and questions["f1"].tolist() == pytest.approx(f1)
    assert 100 * questions["em"].mean() == pytest.approx(result.exact_match, abs=1e-6)
    assert 100 * questions["f1"].mean() == pytest.approx(result.f1, abs=1e-6)
    assert (questions["approach"] == "tiny-reader").all() and (questions["seed"] == 0).all() and (questions["hparam_id"] == 0).all()
    # checked once, kept: the next load needs neither the scoring nor the prepared data
    assert (runs.workspace.cache_dir / CACHE_DIR).is_dir()
    shutil.rmtree(runs.workspace.data_dir)
    again = store_results(runs.workspace.db_path, runs.registry)
    assert again.notes == [] and again.questions.equals(questions)


def test_jobs_without_per_question_data_keep_their_em_with_a_note(runs):
    scored, unscored = runs.job(seed=0), runs.job(seed=1)
    runs.finish(scored, hand_predictions(runs.test_split(scored))[0])
    runs.finish(unscored, None)  # no predictions file
    runs.write_spec("other.txt")  # the benchmark prepared again from another spec: other test questions
    registry, bench = runs.prepare()
    assert bench.data_hash != scored.data_hash
    source = store_results(runs.workspace.db_path, registry)
    assert source.questions.empty and len(source.frame) == 2
    assert source.notes == [
        "store: 2 of 2 jobs have no per-question outcomes, so their intervals leave out test-question noise; "
        "1 job: tiny-babi was prepared again from other data since they ran "
        f"(data hash {bench.data_hash[:12]}, theirs {scored.data_hash[:12]}) "
        f"(job {scored.key}); 1 job: no stored predictions (job {unscored.key})"
    ]
    shutil.rmtree(runs.workspace.data_dir)
    gone = store_results(runs.workspace.db_path, registry).notes[0]
    assert "tiny-babi is not prepared from its current spec here; run `concur data prepare tiny-babi`" in gone


def test_a_study_gives_its_jobs_questions_under_its_own_setting_ids(runs, tmp_path):
    study_file = write(
        tmp_path / "mini.toml",
        f'name = "mini"\napproaches = ["tiny-reader"]\nbenches = ["tiny-babi"]\nseeds = [0]\n[budget]\ntest_questions = {TEST_QUESTIONS}\n',
    )
    (planned,) = plan_study(runs.registry, load_study(study_file), runs.workspace).jobs
    result = runs.finish(planned.job, hand_predictions(runs.test_split(planned.job))[0])
    source = study_results(study_file, runs.registry, runs.workspace)
    assert source.notes == [] and len(source.questions) == TEST_QUESTIONS
    assert 100 * source.questions["em"].mean() == pytest.approx(result.exact_match)
    assert aggregate_questions(source.questions)[["approach", "hparam_id", "seed"]].values.tolist() == [["tiny-reader", 0, 0]]


def test_results_command_prints_intervals_and_exports_the_questions(concur, tmp_path):
    path = write(tmp_path / "q.csv", QUESTIONS_CSV)
    exported = tmp_path / "out.csv"
    ran = concur("results", "--results", str(path), "--questions", str(exported))
    assert ran.returncode == 0, ran.stderr
    rows = {row["approach"]: row for row in csv.DictReader(io.StringIO(ran.stdout))}
    assert list(rows["bidaf"])[:9] == ["approach", "benchmark", "hparam_id", "seed", "em", "f1", "n_questions", "em_lower", "em_upper"]
    for approach, em in (("bidaf", 50.0), ("bert", 75.0)):
        row = rows[approach]
        assert float(row["em"]) == em and row["n_questions"] == "4"
        assert 0.0 <= float(row["em_lower"]) <= em <= float(row["em_upper"]) <= 100.0
    assert read_results_file(exported).questions.equals(load(path).questions)  # the export reads back as the same contract
    assert questions_csv(load(path).questions) == exported.read_text()


def test_results_command_reads_a_wide_table_without_intervals(concur, tmp_path):
    path = write(tmp_path / "paper.txt", WIDE_CSV)  # any name: the layout is given
    ran = concur("results", "--results", str(path), "--layout", "wide")
    assert ran.returncode == 0, ran.stderr
    rows = list(csv.DictReader(io.StringIO(ran.stdout)))
    assert [(row["approach"], row["benchmark"], row["em"]) for row in rows] == [
        ("BiDAF", "squad", "67.7"),
        ("BERT", "squad", "81.2"),
        ("BERT", "newsqa", "48.1"),
    ]
    assert "em_lower" not in rows[0]
    neither = concur("results", "--results", str(write(tmp_path / "n.csv", "model,notes\nx,y\n")))
    assert neither.returncode != 0 and "neither layout" in neither.stderr and len(neither.stderr.strip().splitlines()) == 1
