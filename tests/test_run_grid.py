"""`concur run` over a grid: globs and families, drawn hyperparameter settings, seeds; a rerun does no work."""

from __future__ import annotations

import pytest

from concur.runner.records.store import Store
from tests.conftest import write_tiny_reader


@pytest.mark.slow
def test_a_grid_runs_every_job_once(concur, tmp_path, tiny_registry):
    write_tiny_reader(tiny_registry, "tiny-reader", {"epochs": 1.0}, "learning_rate = { log_uniform = [1e-4, 1e-2] }")
    write_tiny_reader(tiny_registry, "tiny-reader-2", {"epochs": 1.0}, "epochs = { choice = [1.0] }")
    common = ["--registry", str(tiny_registry), "--runs-dir", str(tmp_path / "runs")]
    grid = ["run", "-a", "tiny-reader*", "-b", "tiny-babi", "--hparams", "2", "--seeds", "0,1", "--device", "cpu"]
    first = concur(*common, *grid, "--source-dir", str(tmp_path / "data-root"))
    assert first.returncode == 0, first.stderr
    # tiny-reader-2's only drawn setting equals its published one: the same job, run once
    assert "6 jobs (2 grid points repeat another's settings), 6 run now: 6 done" in first.stdout
    assert first.stderr.count(" started ") == 6 and "[6/6] done " in first.stderr
    rows = Store(tmp_path / "runs" / "concur.sqlite").rows()
    assert len(rows) == 6
    by_setting = {(row["approach"], row["hparam_id"], row["seed"]): row for row in rows}
    assert set(by_setting) == {(approach, setting, seed) for approach in ("tiny-reader",) for setting in (0, 1) for seed in (0, 1)} | {
        ("tiny-reader-2", 0, 0),
        ("tiny-reader-2", 0, 1),
    }
    drawn = by_setting[("tiny-reader", 1, 0)]["hparams"]["learning_rate"]
    assert 1e-4 <= drawn <= 1e-2 and drawn != by_setting[("tiny-reader", 0, 0)]["hparams"]["learning_rate"]
    assert by_setting[("tiny-reader", 1, 1)]["hparams"]["learning_rate"] == drawn  # one setting, two seeds
    again = concur(*common, *grid)
    assert again.returncode == 0, again.stderr
    assert "6 jobs (2 grid points repeat another's settings), 0 run now: 6 done" in again.stdout
    assert "step " not in again.stderr  # nothing trained


def test_a_bad_seed_list_and_a_typo_stop_before_any_work(concur, tmp_path, tiny_registry):
    common = ["--registry", str(tiny_registry), "--runs-dir", str(tmp_path / "runs")]
    result = concur(*common, "run", "-a", "tiny-bert", "-b", "tiny-babi", "--seeds", "0,one")
    assert result.returncode == 2 and "--seeds must be comma-separated integers, got '0,one'" in result.stderr
    result = concur(*common, "run", "-a", "tiny-*", "-b", "family:synthtic")
    assert result.returncode == 2 and "did you mean 'synthetic'" in result.stderr
    assert not (tmp_path / "runs").exists()
