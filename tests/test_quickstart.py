"""The quick start's studies: the grid the README promises, and every source it needs on these machines."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pandas as pd
import pytest

from concur.data.sources import SourceLocator
from concur.registry import default_registry
from concur.runner.planning.availability import missing_sources
from concur.runner.planning.grid import expand_grid
from concur.runner.planning.study import load_study
from tests.conftest import REPO, SHARED_DATA, shared_file

STUDIES = REPO / "analysis" / "studies"


def test_the_quickstart_is_six_approaches_on_eight_benchmarks_with_a_cpu_budget():
    study = load_study(STUDIES / "quickstart.toml")
    registry = default_registry([])
    points = expand_grid(registry, study.grid)
    assert len(points) == 48 and study.reference == "squad-dev-carved"
    approaches = {point.approach.id: point.approach.family for point in points}
    assert approaches["minilm-l6"] == "pretrained" and sum(family == "non-pretrained" for family in approaches.values()) == 5
    benches = {point.bench.id: point.bench for point in points}
    human = [bench.id for bench in benches.values() if bench.family == "human" and bench.carve is not None]
    assert len(human) == 3
    assert {"babi-1", "babi-2", "babi-4", "fuzzy-uniform", "wikidata-synthetic"} <= set(benches)
    budget = study.grid.budget
    for bench in human:  # the human-constructed sets get the study's budget, the synthetic ones their own
        assert (budget.for_bench(bench).train_questions, budget.for_bench(bench).test_questions) == (1800, 800)
    assert (budget.for_bench("wikidata-synthetic").train_questions, budget.for_bench("babi-1").train_questions) == (100, 300)
    epochs = {point.approach.id: point.setting.values["epochs"] for point in points}
    assert epochs == {
        "minilm-l6": 0.75, "rasor": 1.0, "bidaf": 1.0, "docreader-nofeat": 0.75, "bidaf-pp": 1.0, "mnemonic-reader-nofeat": 1.5
    }  # fmt: skip


def test_every_source_of_the_quickstart_is_in_the_shared_data():
    shared_file("mrqa/dev/SQuAD.jsonl.gz")
    study = load_study(STUDIES / "quickstart.toml")
    benches = {point.bench.id: point.bench for point in expand_grid(default_registry([]), study.grid)}
    locator = SourceLocator((SHARED_DATA,), REPO / "no-cache")
    assert missing_sources(benches.values(), locator, REPO / "no-runs") == []


def test_the_longer_cpu_study_runs_the_quickstarts_approaches_on_every_benchmark_whose_data_is_here():
    shared_file("mrqa/dev/SQuAD.jsonl.gz")
    registry = default_registry([])
    locator = SourceLocator((SHARED_DATA,), REPO / "no-cache")
    offline = {bench.id for bench in registry.benchmarks() if not missing_sources([bench], locator, REPO / "no-runs")}
    quick, full = (load_study(STUDIES / name) for name in ("quickstart.toml", "cpu-full.toml"))
    quick_points, full_points = expand_grid(registry, quick.grid), expand_grid(registry, full.grid)
    assert {point.bench.id for point in full_points} == offline and len(offline) == 30
    assert len(full_points) == 6 * 30 and full.reference == quick.reference
    settings = {point.approach.id: point.setting.values for point in quick_points}
    assert {point.approach.id: point.setting.values for point in full_points} == settings  # the quick start's overrides
    budget = full.grid.budget
    assert (budget.for_bench("qamr-devtest").train_questions, budget.for_bench("qamr-devtest").test_questions) == (1800, 800)
    assert (budget.for_bench("babi-3").train_questions, budget.for_bench("babi-1-10k").train_questions) == (300, 600)
    assert budget.for_bench("babi-16-10k").test_questions == 1000


def test_the_gpu_sibling_is_the_same_comparison_at_full_size():
    quick, full = (load_study(STUDIES / name) for name in ("quickstart.toml", "quickstart-gpu.toml"))
    registry = default_registry([])
    quick_points, full_points = expand_grid(registry, quick.grid), expand_grid(registry, full.grid)
    assert {point.approach.id for point in quick_points} < {point.approach.id for point in full_points}
    assert {point.bench.id for point in quick_points} < {point.bench.id for point in full_points}
    assert full.grid.budget is None and full.grid.hparams == 3 and len(full_points) == 13 * 18 * 3
    assert full.reference == quick.reference


def _small_quickstart(tmp_path: Path) -> Path:
    """The quick start's study file (its approaches and their overrides) on two benchmarks at a tiny budget."""
    text = (STUDIES / "quickstart.toml").read_text()
    text = re.sub(r"^benches = \[.*?\]", 'benches = ["babi-1", "squad-dev-carved"]', text, count=1, flags=re.MULTILINE | re.DOTALL)
    text = re.sub(r"^\[budget\.[^\]]+\]\n(?:[a-z_]+ = .*\n)+", "", text, flags=re.MULTILINE)
    text = re.sub(r"^train_questions = \d+", "train_questions = 48", text, count=1, flags=re.MULTILINE)
    text = re.sub(r"^test_questions = \d+", "test_questions = 40", text, count=1, flags=re.MULTILINE)
    path = tmp_path / "small-quickstart.toml"
    path.write_text(text)
    return path


@pytest.mark.slow
def test_the_same_study_file_gives_the_same_em_table_in_two_runs(concur, tmp_path):
    shared_file("mrqa/dev/SQuAD.jsonl.gz")
    study = _small_quickstart(tmp_path)
    tables = []
    for run in ("first", "second"):
        runs = tmp_path / run
        ran = concur("--runs-dir", runs, "study", "run", study, "--device", "cpu", "--workers", "2", "--source-dir", SHARED_DATA)
        assert ran.returncode == 0, ran.stderr
        out = tmp_path / f"{run}.csv"
        assert concur("--runs-dir", runs, "results", "--results", f"study:{study}", "--out", out).returncode == 0
        tables.append(pd.read_csv(out).sort_values(["approach", "benchmark"]).reset_index(drop=True))
    first, second = tables
    assert len(first) == 12 and set(first["approach"]) == set(load_study(study).grid.approaches.split(","))
    assert first["em"].nunique() > 3  # the jobs learned different things: a table of zeros would agree trivially
    pd.testing.assert_frame_equal(first[["approach", "benchmark", "em", "f1"]], second[["approach", "benchmark", "em", "f1"]])


@pytest.mark.parametrize(
    ("page", "block", "script"),
    [
        ("README.md", "quickstart-results", "bench.quickstart_readme"),
        ("docs/running.md", "cpu-full-results", "bench.cpu_full_docs"),
    ],
)
def test_a_generated_study_block_was_generated_from_the_study_file_as_it_is(page, block, script):
    text = (REPO / page).read_text()
    stamp = re.search(rf"<!-- {block}:begin study=(\S+) sha256=([0-9a-f]{{64}}) -->", text)
    assert stamp is not None, f"{page} has no generated {block} block"
    study = REPO / stamp.group(1)
    digest = hashlib.sha256(study.read_bytes()).hexdigest()
    assert stamp.group(2) == digest, (
        f"{stamp.group(1)} changed since {page}'s {block} block was generated from it; "
        f"regenerate it with `python -m {script} --source-dir DATA --runs-dir NEW_DIR`"
    )
