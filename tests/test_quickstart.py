"""The quick start's studies: the grid the README promises, and every source it needs on these machines."""

from __future__ import annotations

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
    carved_human = [bench for bench in benches.values() if bench.family == "human" and bench.carve is not None]
    assert len(carved_human) == 4
    assert {"babi-1", "babi-2", "fuzzy-uniform", "wikidata-synthetic"} <= set(benches)
    assert (study.grid.budget.train_questions, study.grid.budget.test_questions) == (300, 200)
    for point in points:  # one epoch everywhere, each approach's overrides checked against its implementation
        assert point.setting.values["epochs"] == 1.0, point.describe()


def test_every_source_of_the_quickstart_is_in_the_shared_data():
    shared_file("mrqa/dev/SQuAD.jsonl.gz")
    study = load_study(STUDIES / "quickstart.toml")
    benches = {point.bench.id: point.bench for point in expand_grid(default_registry([]), study.grid)}
    locator = SourceLocator((SHARED_DATA,), REPO / "no-cache")
    assert missing_sources(benches.values(), locator, REPO / "no-runs") == []


def test_the_gpu_sibling_is_the_same_comparison_at_full_size():
    quick, full = (load_study(STUDIES / name) for name in ("quickstart.toml", "quickstart-gpu.toml"))
    registry = default_registry([])
    quick_points, full_points = expand_grid(registry, quick.grid), expand_grid(registry, full.grid)
    assert {point.approach.id for point in quick_points} < {point.approach.id for point in full_points}
    assert {point.bench.id for point in quick_points} < {point.bench.id for point in full_points}
    assert full.grid.budget is None and full.grid.hparams == 3 and len(full_points) == 13 * 18 * 3
    assert full.reference == quick.reference
