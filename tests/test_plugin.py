"""A package installed beside concur adds an approach and a figure kind through entry points; a study runs
the approach and `concur figures` draws the study with the kind.

The plugin is built and installed for real (pip, hatchling, no network) into its own target
directory; concur then runs in a fresh interpreter that sees it, as a user's would after
`pip install`. Its approach answers every question with the `rank`-th most frequent answer
of the training split, so the EM of each job is computed here from the data files; its figure
kind writes each approach's rank on each benchmark.
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from concur.data.babi import read_babi
from tests.conftest import write_babi_like

REPO = Path(__file__).resolve().parents[1]

PLUGIN_PYPROJECT = """
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "concur-plugin-majority"
version = "0.1.0"

[project.entry-points."concur.approaches"]
majority = "concur_plugin_majority:KIND"

[project.entry-points."concur.figures"]
rank-table = "concur_plugin_majority.figures:KIND"

[tool.hatch.build.targets.wheel]
packages = ["concur_plugin_majority"]
"""

PLUGIN_INIT = '''
"""The component definition: light (no model code), as concur loads it to check specs."""
from dataclasses import dataclass

from concur.components import ApproachKind


@dataclass(frozen=True)
class MajorityHParams:
    rank: int  # 0: the most frequent training answer, 1: the next, ...
    batch_size: int

    def problem(self):
        return ("rank", "must be at least 0") if self.rank < 0 else None


KIND = ApproachKind(hparams=MajorityHParams, approach="concur_plugin_majority.approach:MajorityApproach")
'''

PLUGIN_APPROACH = '''
"""Answer every question with one of the training split's most frequent answers."""
import time
from collections import Counter

from concur.approaches.base import TrainReport


class MajorityApproach:
    def __init__(self, spec, hparams):
        self.hparams = hparams
        self.answer = None

    def train(self, train, context):
        started = time.perf_counter()
        counts = Counter(question.answers[0] for _, question in train.questions())
        ranked = sorted(counts, key=lambda answer: (-counts[answer], answer))
        self.answer = ranked[self.hparams.rank]
        context.log(f"majority: answering {self.answer!r}")
        total = sum(counts.values())
        return TrainReport(optimizer_steps=0, train_features=total, train_questions=total, skipped_questions=0,
                           seconds=time.perf_counter() - started)

    def predict(self, test, context):
        return {question.qid: self.answer for _, question in test.questions()}
'''

PLUGIN_FIGURES = '''
"""A figure kind: each approach's rank on each benchmark (1 = the best EM), as a CSV."""
from dataclasses import dataclass

from concur.components import FigureKind
from concur.recipes.drawing import write_text


@dataclass(frozen=True)
class RankOptions:
    best_first: bool = True


def draw(recipe, table, stem, output):
    ranks = table.wide.rank(ascending=not recipe.options.best_first, method="min").astype(int)
    write_text(stem.with_suffix(".csv"), ranks.sort_index().to_csv(index_label="approach"), output)


KIND = FigureKind(options=RankOptions, draw=draw)
'''

RANK_RECIPE = 'kind = "rank-table"\ntitle = "Ranks of the plugin approaches"\nbest_first = true\n'

STUDY = """
name = "plugin-study"
description = "two ranks of the plugin's majority answer on two bAbI-like benchmarks"
approaches = ["plugin-first", "plugin-second"]
benches = ["babi-like-a", "babi-like-b"]
seeds = [0]

[hparams]
count = 1
"""


def _approach_spec(name: str, rank: int) -> str:
    return f'id = "{name}"\nfamily = "non-pretrained"\nimplementation = "majority"\n[hparams]\nrank = {rank}\nbatch_size = 1\n'


def _benchmark_spec(name: str) -> str:
    return (
        f'id = "{name}"\nfamily = "synthetic"\n'
        f'[sources.train]\nreader = "babi"\npath = "{name}/train.txt"\n'
        f'[sources.test]\nreader = "babi"\npath = "{name}/test.txt"\n'
    )


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    """The plugin, built with hatchling and installed by pip into a directory of its own."""
    root = tmp_path_factory.mktemp("plugin")
    source = root / "source"
    (source / "concur_plugin_majority").mkdir(parents=True)
    (source / "pyproject.toml").write_text(PLUGIN_PYPROJECT)
    (source / "concur_plugin_majority" / "__init__.py").write_text(textwrap.dedent(PLUGIN_INIT))
    (source / "concur_plugin_majority" / "approach.py").write_text(textwrap.dedent(PLUGIN_APPROACH))
    (source / "concur_plugin_majority" / "figures.py").write_text(textwrap.dedent(PLUGIN_FIGURES))
    site = root / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(site),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    return site


def _concur(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    return subprocess.run([sys.executable, "-m", "concur", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_an_installed_plugin_approach_runs_in_a_study_and_its_figure_kind_draws_it(plugin_site, tmp_path):
    registry = tmp_path / "registry"
    (registry / "approaches").mkdir(parents=True)
    (registry / "benchmarks").mkdir()
    (registry / "approaches" / "plugin-first.toml").write_text(_approach_spec("plugin-first", 0))
    (registry / "approaches" / "plugin-second.toml").write_text(_approach_spec("plugin-second", 1))
    data = tmp_path / "data"
    for number, name in enumerate(("babi-like-a", "babi-like-b")):
        (registry / "benchmarks" / f"{name}.toml").write_text(_benchmark_spec(name))
        (data / name).mkdir(parents=True)
        write_babi_like(data / name / "train.txt", stories=30, seed=10 + number)
        write_babi_like(data / name / "test.txt", stories=12, seed=20 + number)
    study = tmp_path / "study.toml"
    study.write_text(STUDY)
    common = ("--registry", str(registry), "--runs-dir", str(tmp_path / "runs"))

    listed = _concur(plugin_site, *common, "approaches", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "plugin-first" in listed.stdout and "plugin-second" in listed.stdout

    ran = _concur(plugin_site, *common, "study", "run", str(study), "--device", "cpu", "--source-dir", str(data), cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "Traceback" not in ran.stderr

    results = _concur(plugin_site, *common, "results", cwd=tmp_path)
    assert results.returncode == 0, results.stderr
    measured = {(row["approach"], row["benchmark"]): float(row["em"]) for row in csv.DictReader(io.StringIO(results.stdout))}
    expected = {}
    for bench in ("babi-like-a", "babi-like-b"):
        train = read_babi(data / bench / "train.txt", "train")
        test = read_babi(data / bench / "test.txt", "test")
        counts = Counter(question.answers[0] for _, question in train.questions())
        ranked = sorted(counts, key=lambda answer: (-counts[answer], answer))
        gold = [question.answers for _, question in test.questions()]
        for approach, rank in (("plugin-first", 0), ("plugin-second", 1)):
            expected[approach, bench] = 100.0 * sum(ranked[rank] in answers for answers in gold) / len(gold)
    assert measured == pytest.approx(expected)
    assert len(set(expected.values())) > 1  # the two ranks score differently, so the study compares something

    (tmp_path / "ranks.toml").write_text(RANK_RECIPE)
    out = tmp_path / "figures"
    drawn = _concur(plugin_site, *common, "figures", "ranks.toml", "--results", f"study:{study}", "--out-dir", str(out), cwd=tmp_path)
    assert drawn.returncode == 0, drawn.stdout + drawn.stderr
    with (out / "ranks.csv").open() as handle:
        rows = {row["approach"]: row for row in csv.DictReader(handle)}
    for bench in ("babi-like-a", "babi-like-b"):
        scores = {approach: expected[approach, bench] for approach in ("plugin-first", "plugin-second")}
        assert {approach: int(rows[approach][bench]) for approach in scores} == {
            approach: 1 + sum(other > score for other in scores.values()) for approach, score in scores.items()
        }


def test_a_spec_naming_a_missing_plugin_is_one_line_with_the_installed_names(tmp_path):
    registry = tmp_path / "registry"
    (registry / "approaches").mkdir(parents=True)
    (registry / "approaches" / "plugin-first.toml").write_text(_approach_spec("plugin-first", 0))
    listed = _concur(tmp_path / "no-site", "--registry", str(registry), "approaches", cwd=tmp_path)
    assert listed.returncode == 2
    assert listed.stderr.count("\n") == 1 and "Traceback" not in listed.stderr
    assert "plugin-first.toml" in listed.stderr and "'majority' is not one of" in listed.stderr and "hf-span" in listed.stderr
