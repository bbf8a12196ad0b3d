"""Study budgets (seeded subsets taken by the runner), hyperparameter overrides, a study's own results, and the
data check before a study runs."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from concur.analysis.results import Results, load_results
from concur.data.model import Passage, Question, Split
from concur.data.prepare import PreparedBenchmark, prepare
from concur.data.sources import SourceLocator
from concur.errors import ConcurError, MissingSourceError, SpecError
from concur.registry import default_registry
from concur.runner.planning.availability import check_sources, missing_sources
from concur.runner.planning.budget import Budget, apply_subset, take_subset
from concur.runner.planning.grid import expand_grid
from concur.runner.planning.hparams import hparam_settings
from concur.runner.planning.jobs import Job, make_job
from concur.runner.planning.study import load_study
from concur.runner.records.store import Store
from concur.workspace import Workspace
from tests.conftest import REPO, SHARED_DATA, shared_file, write_babi_like

CHECKS = REPO / "bench" / "checks"  # the tiny readers
BABI_ARCHIVE = "http://www.thespermwhale.com/jaseweston/babi/tasks_1-20_v1-2.tar.gz"
QA1 = "babi/tasks_1-20_v1-2/en/qa1_single-supporting-fact_{}.txt.gz"


def _toy_split(sizes: list[int]) -> Split:
    passages = [Passage(f"context {i}", [Question(f"p{i}q{j}", "where?", ["here"]) for j in range(n)]) for i, n in enumerate(sizes)]
    return Split("toy", "train", passages)


def _qids(split: Split) -> list[list[str]]:
    return [[question.qid for question in passage.qas] for passage in split.passages]


def test_a_subset_takes_whole_passages_in_a_seeded_order_and_cuts_at_most_one():
    split = _toy_split([3, 1, 4, 1, 5, 9, 2, 6])  # 31 questions
    subset = take_subset(split, 10, seed=0)
    # passages 4 and 1 whole, then the first 4 of passage 5's 9 questions; kept in their original order
    assert _qids(subset) == [["p1q0"], ["p4q0", "p4q1", "p4q2", "p4q3", "p4q4"], ["p5q0", "p5q1", "p5q2", "p5q3"]]
    assert _qids(take_subset(split, 10, seed=0)) == _qids(subset)
    assert _qids(take_subset(split, 10, seed=1)) == [["p1q0"], ["p3q0"], ["p5q0", "p5q1", "p5q2", "p5q3", "p5q4", "p5q5"], ["p6q0", "p6q1"]]
    assert take_subset(split, 31, seed=0) is split and take_subset(split, 40, seed=0) is split


def test_1500_training_questions_of_a_real_benchmark_are_the_same_in_every_run(tmp_path):
    shared_file("mrqa/dev/SQuAD.jsonl.gz")
    locator = SourceLocator((SHARED_DATA,), tmp_path / "cache")
    bench, _ = prepare(default_registry().benchmark("squad-dev-carved"), locator, tmp_path / "data")
    budget = Budget(train_questions=1500, test_questions=1000)
    assert budget.subset(bench.manifest) == {"train": {"questions": 1500, "seed": 0}, "test": {"questions": 1000, "seed": 0}}
    whole = {name: bench.load(name) for name in ("train", "test")}
    seen, record = apply_subset(whole, budget.subset(bench.manifest))
    assert record == {
        "train": {"questions": 1500, "contexts": 302, "seed": 0, "of_questions": 8414, "of_contexts": 1654},
        "test": {"questions": 1000, "contexts": 197, "seed": 0, "of_questions": 2093, "of_contexts": 413},
    }
    sizes = {passage.context: len(passage.qas) for passage in whole["train"].passages}
    assert sum(len(passage.qas) != sizes[passage.context] for passage in seen["train"].passages) == 1  # one passage cut, 301 whole
    qids = "\n".join(question.qid for _, question in seen["train"].questions())
    assert hashlib.sha256(qids.encode()).hexdigest()[:16] == "b9db732ab0f29ced"  # on every machine, in every process
    other = take_subset(whole["train"], 1500, seed=1)
    assert (other.n_questions, other.n_passages) == (1500, 294) and _qids(other) != _qids(seen["train"])


def _manifest_bench(train: int, test: int) -> PreparedBenchmark:
    splits = {"train": {"questions": train}, "test": {"questions": test}}
    return PreparedBenchmark(Path("/nonexistent"), {"benchmark": "babi-1", "data_hash": "0" * 64, "splits": splits})


def test_job_keys_change_with_a_budget_that_cuts_and_not_without_one():
    # the key of a job without a subset is the one it had before budgets existed
    unbudgeted = Job("tiny-rasor", "babi-1", 1, 0, {"epochs": 2.0, "learning_rate": 0.001}, "reader", {"kind": "rasor"}, "0" * 64)
    assert unbudgeted.key == "f7f10b794debd128"
    spec = default_registry([CHECKS]).approach("tiny-rasor")
    bench = _manifest_bench(1000, 1000)
    full = make_job(spec, bench, seed=0)
    assert "subset" not in full.definition() and Job.from_definition(full.definition()) == full
    assert make_job(spec, bench, seed=0, budget=Budget(train_questions=1000, test_questions=5000)).key == full.key  # nothing cut
    cut = make_job(spec, bench, seed=0, budget=Budget(train_questions=300))
    assert cut.subset == {"train": {"questions": 300, "seed": 0}} and cut.definition()["subset"] == cut.subset
    assert Job.from_definition(cut.definition()) == cut
    keys = {
        full.key,
        cut.key,
        make_job(spec, bench, seed=0, budget=Budget(train_questions=300, seed=1)).key,
        make_job(spec, bench, seed=0, budget=Budget(train_questions=301)).key,
        make_job(spec, bench, seed=0, budget=Budget(train_questions=300, test_questions=200)).key,
    }
    assert len(keys) == 5
    assert cut.describe() == "tiny-rasor on babi-1 (hparams 0, seed 0, 300 train questions)"


def test_a_benchmark_of_its_own_budget_gets_its_counts_and_the_others_keep_the_studys(tmp_path):
    path = _study(tmp_path, "[budget]\ntrain_questions = 300\ntest_questions = 200\nseed = 3\n[budget.babi-1]\ntrain_questions = 50\n")
    budget = load_study(path).grid.budget
    assert budget == Budget(train_questions=300, test_questions=200, seed=3, benches={"babi-1": {"train_questions": 50}})
    assert budget.for_bench("babi-1") == Budget(train_questions=50, test_questions=200, seed=3)
    assert budget.for_bench("babi-2") == Budget(train_questions=300, test_questions=200, seed=3)
    spec = default_registry([CHECKS]).approach("tiny-rasor")
    bench = _manifest_bench(1000, 1000)  # babi-1
    job = make_job(spec, bench, seed=0, budget=budget)
    assert job.subset == {"train": {"questions": 50, "seed": 3}, "test": {"questions": 200, "seed": 3}}
    assert job.key == make_job(spec, bench, seed=0, budget=Budget(train_questions=50, test_questions=200, seed=3)).key
    other = PreparedBenchmark(Path("/nonexistent"), {**bench.manifest, "benchmark": "babi-2"})
    assert make_job(spec, other, seed=0, budget=budget).subset == {
        "train": {"questions": 300, "seed": 3},
        "test": {"questions": 200, "seed": 3},
    }


def test_existing_studies_have_no_budget_and_no_overrides():
    for name in ("liu2023", "tiny-grid"):
        study = load_study(REPO / "analysis" / "studies" / f"{name}.toml")
        assert study.grid.budget is None and dict(study.grid.overrides) == {}


def _study(tmp_path: Path, body: str, approaches: str = '["tiny-rasor", "tiny-bidaf"]') -> Path:
    path = tmp_path / "study.toml"
    path.write_text(f'name = "budgeted"\napproaches = {approaches}\nbenches = ["babi-1"]\n{body}')
    return path


def test_overrides_apply_to_every_setting_and_leave_the_draws_alone(tmp_path):
    path = _study(
        tmp_path, "[budget]\ntrain_questions = 1500\n[hparams]\ncount = 3\n[hparams.tiny-rasor]\nepochs = 1.0\nhidden_size = 12\n"
    )
    study = load_study(path)
    assert study.grid.budget == Budget(train_questions=1500, test_questions=None, seed=0)
    assert study.grid.hparams == 3 and study.grid.overrides == {"tiny-rasor": {"epochs": 1.0, "hidden_size": 12}}
    registry = default_registry([CHECKS])
    points = expand_grid(registry, study.grid)
    settings = {(point.approach.id, point.setting.id): point.setting.values for point in points}
    for drawn in hparam_settings(registry.approach("tiny-rasor"), 3, 0):
        assert settings[("tiny-rasor", drawn.id)] == {**drawn.values, "epochs": 1.0, "hidden_size": 12}
    bidaf = hparam_settings(registry.approach("tiny-bidaf"), 3, 0)
    assert [settings[("tiny-bidaf", drawn.id)] for drawn in bidaf] == [drawn.values for drawn in bidaf]


@pytest.mark.parametrize(
    ("body", "field", "problem"),
    [
        ("[hparams.tiny-rasor]\nepoch = 1.0\n", "hparams.tiny-rasor.epoch", "is not a hyperparameter of 'rasor'; did you mean 'epochs'?"),
        ("[hparams.tiny-rasr]\nepochs = 1.0\n", "hparams.tiny-rasr", "unknown approach 'tiny-rasr'; did you mean 'tiny-rasor'?"),
        (
            "[hparams.rasor]\nepochs = 1.0\n",
            "hparams.rasor",
            "approach 'rasor' is not among this study's approaches (tiny-rasor, tiny-bidaf)",
        ),
        ('[hparams.tiny-rasor]\nepochs = "one"\n', "hparams.tiny-rasor.epochs", "must be a number, got 'one'"),
        ("[budget]\ntrain_question = 1500\n", "budget.train_question", "is not a known field; did you mean 'train_questions'?"),
        ("[budget]\ntrain_questions = 0\n", "budget.train_questions", "must be a positive number of questions, got 0"),
        ("[budget]\nseed = 1\n", "budget", "sets neither train_questions nor test_questions"),
        ("[hparams]\ncount = 0\n", "hparams.count", "must be at least 1"),
        (
            "[budget]\ntrain_questions = 9\n[budget.babi-l]\ntest_questions = 5\n",
            "budget.babi-l",
            "unknown benchmark 'babi-l'; did you mean 'babi-1'?",
        ),
        (
            "[budget]\ntrain_questions = 9\n[budget.babi-2]\ntest_questions = 5\n",
            "budget.babi-2",
            "benchmark 'babi-2' is not among this study's benches (babi-1)",
        ),
        (
            "[budget]\ntrain_questions = 9\n[budget.babi-1]\nseed = 5\n",
            "budget.babi-1.seed",
            "one seed takes every benchmark's subsets: set it under [budget]",
        ),
        ("[budget]\ntrain_questions = 9\n[budget.babi-1]\n", "budget.babi-1", "sets neither train_questions nor test_questions"),
        ("[budget]\ntrain_questions = 9\n[budget.babi-1]\ntest_questions = -2\n", "budget.babi-1.test_questions", "must be a positive"),
        ("[hparams]\ntiny-rasor = 3\n", "hparams.tiny-rasor", "must be a table, got 3"),
    ],
)
def test_a_bad_budget_or_override_names_the_file_the_field_and_the_closest_name(tmp_path, body, field, problem):
    path = _study(tmp_path, body)
    with pytest.raises(SpecError) as raised:
        expand_grid(default_registry([CHECKS]), load_study(path).grid)
    assert str(raised.value).startswith(f"{path}, field '{field}': {problem}")


def test_a_count_beside_override_tables_is_explained(tmp_path):
    path = _study(tmp_path, "hparams = 2\n[hparams.tiny-rasor]\nepochs = 1.0\n")
    with pytest.raises(SpecError, match=r"write the number as `count = N` under \[hparams\]"):
        load_study(path)


@pytest.mark.slow
def test_a_budgeted_study_runs_on_its_subsets_and_its_results_are_its_own_jobs(concur, tmp_path, monkeypatch):
    for split in ("train", "test"):
        shared_file(QA1.format(split))
    path = _study(tmp_path, "[budget]\ntrain_questions = 300\ntest_questions = 200\n[hparams.tiny-rasor]\nepochs = 1.0\n")
    runs = tmp_path / "runs"
    common = ["--registry", str(CHECKS), "--runs-dir", str(runs)]
    cpu = ["--device", "cpu", "--threads", "1"]
    report = tmp_path / "report"
    ran = concur(*common, "study", "run", str(path), *cpu, "--workers", "2", "--source-dir", str(SHARED_DATA), "--report", str(report))
    assert ran.returncode == 0, ran.stderr
    # not a terminal: one line per start and end, and the wall time last
    for approach in ("tiny-rasor", "tiny-bidaf"):
        assert f"started {approach} on babi-1 (hparams 0, seed 0, 300 train questions, 200 test questions) on CPU" in ran.stderr
        assert re.search(
            rf"\[[12]/2\] done {approach} on babi-1 \(hparams 0, seed 0, 300 train questions, 200 test questions\): EM ", ran.stderr
        )
    assert re.search(r"\n2 jobs ran \(2 done\) in \d+:\d\d:\d\d wall time\n", ran.stderr)
    results = {}
    for result_file in (runs / "jobs").glob("*/result.json"):
        result = json.loads(result_file.read_text())
        results[result["job"]["approach"]] = result
    assert set(results) == {"tiny-rasor", "tiny-bidaf"}
    # --report: the study's own results written up once its jobs are done
    assert f"wrote {report / 'index.html'}" in ran.stdout
    page = (report / "index.html").read_text()
    for approach, result in results.items():
        assert approach in page and f"{result['scores']['exact_match']:.2f}" in page
    for approach, epochs in (("tiny-rasor", 1.0), ("tiny-bidaf", 2.0)):  # the override; tiny-bidaf keeps its spec's
        result = results[approach]
        assert result["job"]["subset"] == {"train": {"questions": 300, "seed": 0}, "test": {"questions": 200, "seed": 0}}
        assert result["subset"]["train"] == {"questions": 300, "contexts": 300, "seed": 0, "of_questions": 1000, "of_contexts": 1000}
        assert result["train"]["train_questions"] == 300 and result["scores"]["n_questions"] == 200  # the approach saw the subset
        assert result["job"]["hparams"]["epochs"] == epochs
    # another job of the same approach and benchmark in the same store, with another budget (`concur run`'s options)
    other = concur(*common, "run", "-a", "tiny-rasor", "-b", "babi-1", *cpu, "--train-questions", "200", "--test-questions", "200")
    assert other.returncode == 0, other.stderr
    assert "done: tiny-rasor on babi-1 (hparams 0, seed 0, 200 train questions, 200 test questions)" in other.stdout
    store_path = Workspace(runs).db_path
    locator = SourceLocator((), runs / "cache")
    assert len(Store(store_path).rows()) == 3
    with pytest.raises(ConcurError) as whole_store:  # two runs of tiny-rasor x babi-1 (hparams 0, seed 0): the store cannot tell which
        load_results(["store"], store_path=store_path, locator=locator)
    keys = sorted(row["key"] for row in Store(store_path).rows() if row["approach"] == "tiny-rasor")
    assert str(whole_store.value) == (
        f"the store at {store_path} holds 2 runs of tiny-rasor on babi-1 (hparams 0, seed 0), jobs {', '.join(keys)} "
        "(another budget, overrides or spec version); choose one study's jobs with --results study:FILE.toml"
    )
    own = load_results([f"study:{path}"], store_path=store_path, locator=locator, registry=default_registry([CHECKS])).frame
    rows = {(row.approach, row.benchmark, row.hparam_id, row.seed): (row.em, row.f1) for row in own.itertuples()}
    assert rows == {
        (approach, "babi-1", 0, 0): (results[approach]["scores"]["exact_match"], results[approach]["scores"]["f1"])
        for approach in ("tiny-rasor", "tiny-bidaf")
    }
    monkeypatch.setenv("CONCUR_REGISTRY", str(CHECKS))
    printed = concur("--runs-dir", str(runs), "results", "--results", f"study:{path}")
    assert printed.returncode == 0, printed.stderr
    assert sorted(row["approach"] for row in csv.DictReader(io.StringIO(printed.stdout))) == ["tiny-bidaf", "tiny-rasor"]
    plan = concur(*common, "study", "plan", str(path))
    shape = "2 approaches x 1 benchmarks x 1 settings x 1 seed; budget: at most 300 train / 200 test questions, seed 0"
    assert f"budgeted: 2 jobs ({shape}): 2 done" in plan.stdout


def test_a_study_result_names_the_jobs_it_is_missing(tmp_path):
    path = _study(tmp_path, "[budget]\ntrain_questions = 300\n")
    runs = Workspace(tmp_path / "runs")

    def load() -> Results:
        return load_results(
            [f"study:{path}"], store_path=runs.db_path, locator=SourceLocator((), runs.cache_dir), registry=default_registry([CHECKS])
        )

    with pytest.raises(MissingSourceError, match=f"no runs directory at {runs.root}: no job of study budgeted has run there"):
        load()  # a runs dir that does not exist is a wrong path, not a study with nothing done
    runs.root.mkdir()
    loaded = load()
    assert loaded.frame.empty
    assert loaded.notes == (f"study budgeted: 0 of 2 jobs finished; left out: 2 not prepared (`concur study plan {path}`)",)


def _registry_with_missing_data(tmp_path: Path) -> Path:
    """Two user benchmarks: one file both read (no download URL), one file only one reads (with a URL)."""
    root = tmp_path / "registry"
    (root / "benchmarks").mkdir(parents=True)
    (root / "benchmarks" / "toy-a.toml").write_text(
        'id = "toy-a"\nfamily = "synthetic"\n'
        '[sources.train]\nreader = "babi"\npath = "toy/train.txt"\n'
        '[sources.test]\nreader = "babi"\npath = "toy/test.txt"\n'
    )
    (root / "benchmarks" / "toy-b.toml").write_text(
        'id = "toy-b"\nfamily = "synthetic"\n'
        '[sources.train]\nreader = "babi"\npath = "toy/train.txt"\n'
        '[sources.test]\nreader = "babi"\npath = "toy/other.txt"\nurl = "http://127.0.0.1:9/other.txt"\n'
    )
    data = tmp_path / "data-root" / "toy"
    data.mkdir(parents=True)
    write_babi_like(data / "train.txt", stories=4, seed=1)
    write_babi_like(data / "test.txt", stories=2, seed=2)
    return root


def test_missing_files_are_listed_once_with_the_benchmarks_needing_them(tmp_path):
    registry = default_registry([_registry_with_missing_data(tmp_path)])
    benches = [registry.benchmark("toy-a"), registry.benchmark("toy-b"), registry.benchmark("toy-a")]
    workspace = Workspace(tmp_path / "runs")
    nowhere = SourceLocator((), workspace.cache_dir)
    missing = missing_sources(benches, nowhere, workspace.data_dir)
    assert [(item.source.path, item.benchmarks, item.downloadable) for item in missing] == [
        ("toy/train.txt", ("toy-a", "toy-b"), False),
        ("toy/test.txt", ("toy-a",), False),
        ("toy/other.txt", ("toy-b",), True),
    ]
    with pytest.raises(MissingSourceError) as offline:
        check_sources(benches, nowhere, workspace.data_dir, download=False)
    assert str(offline.value).splitlines() == [
        "no job was started: 3 source files are not on this machine (data roots: none given (no --source-dir, $CONCUR_DATA_ROOT not set); "
        f"cache: {workspace.cache_dir / 'sources'}):",
        "  toy/train.txt  needed by toy-a, toy-b; no download URL (a local copy is the only way)",
        "  toy/test.txt  needed by toy-a; no download URL (a local copy is the only way)",
        "  toy/other.txt  needed by toy-b; download: http://127.0.0.1:9/other.txt (needs internet)",
        "Put each file at DIR/<path> (or DIR/<path>.gz) and pass --source-dir DIR or set CONCUR_DATA_ROOT=DIR.",
        "With internet access, add --download to fetch the files with a URL into the cache, or prepare first: concur data prepare toy-b",
    ]
    with pytest.raises(MissingSourceError) as online:  # with downloads, only the files without a URL stop the run
        check_sources(benches, nowhere, workspace.data_dir, download=True)
    assert "toy/train.txt" in str(online.value) and "toy/other.txt" not in str(online.value) and "--download" not in str(online.value)
    local = SourceLocator((tmp_path / "data-root",), workspace.cache_dir)
    assert [item.source.path for item in missing_sources(benches, local, workspace.data_dir)] == ["toy/other.txt"]
    prepare(registry.benchmark("toy-a"), local, workspace.data_dir)
    assert missing_sources([registry.benchmark("toy-a")], nowhere, workspace.data_dir) == []  # prepared: no source needed


def test_a_study_without_its_data_stops_before_any_job(concur, tmp_path):
    roots = tmp_path / "only-qa1"
    for split in ("train", "test"):
        target = roots / QA1.format(split)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(shared_file(QA1.format(split)), target)
    path = tmp_path / "study.toml"
    path.write_text('name = "two-tasks"\napproaches = "tiny-rasor"\nbenches = ["babi-1", "babi-2"]\n')
    common = ["--registry", str(CHECKS), "--runs-dir", str(tmp_path / "runs")]
    ran = concur(*common, "study", "run", str(path), "--device", "cpu", "--source-dir", str(roots))
    assert ran.returncode == 2
    assert f"error: no job was started: 2 source files are not on this machine (data roots: {roots};" in ran.stderr
    for split in ("train", "test"):
        member = f"tasks_1-20_v1-2/en/qa2_two-supporting-facts_{split}.txt"
        assert f"  babi/{member}  needed by babi-2; download: {BABI_ARCHIVE} ({member}) (needs internet)" in ran.stderr
    assert "pass --source-dir DIR or set CONCUR_DATA_ROOT=DIR" in ran.stderr and "add --download" in ran.stderr
    assert "qa1_" not in ran.stderr
    assert not (tmp_path / "runs" / "jobs").exists() and not (tmp_path / "runs" / "data" / "babi-1").exists()  # nothing prepared or run
    plan = concur(*common, "study", "plan", str(path), "--source-dir", str(roots), "--format", "json")
    assert plan.returncode == 0, plan.stderr
    assert [item["path"] for item in json.loads(plan.stdout)["missing_sources"]] == [
        "babi/tasks_1-20_v1-2/en/qa2_two-supporting-facts_train.txt",
        "babi/tasks_1-20_v1-2/en/qa2_two-supporting-facts_test.txt",
    ]
    assert "warning: `concur study run` would stop before any job: 2 source files are not on this machine" in plan.stderr


def test_an_override_of_a_programmatic_grid_is_a_plain_error():
    from concur.runner.planning.grid import GridRequest

    request = GridRequest("tiny-rasor", "babi-1", overrides={"tiny-rasor": {"epoch": 1.0}})
    with pytest.raises(ConcurError, match=r"hyperparameter override hparams.tiny-rasor.epoch: is not a hyperparameter of 'rasor'"):
        expand_grid(default_registry([CHECKS]), request)
