"""Study files: checked fields, `concur study plan|run|collect`, and `concur status --cost`."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from concur.errors import SpecError
from concur.runner.planning.study import load_study
from concur.runner.records.store import Store
from tests.conftest import write_tiny_reader

REPO = Path(__file__).resolve().parents[1]


def test_a_study_file_is_checked_field_by_field(tmp_path):
    study = tmp_path / "tiny.toml"
    study.write_text('approaches = ["tiny-*", "family:pretrained"]\nbenches = "tiny-babi"\nhparams = 3\nseeds = [0, 1]\n')
    loaded = load_study(study)
    assert (loaded.name, loaded.grid.approaches, loaded.grid.benches) == ("tiny", "tiny-*,family:pretrained", "tiny-babi")
    assert (loaded.grid.hparams, loaded.grid.seeds, loaded.grid.hparam_seed) == (3, (0, 1), 0)
    for body, message in [
        ('approaches = "a"\nbenches = "b"\nhparam = 2\n', "hparam"),
        ('approaches = "a"\nbenches = "b"\nhparams = 0\n', "field 'hparams': must be at least 1"),
        ('approaches = "a"\nbenches = "b"\nseeds = ["0"]\n', "field 'seeds': must be a non-empty list of integers"),
        ('benches = "b"\n', "field 'approaches': must be a comma-separated string or a list"),
        ("approaches = [\n", r"tiny.toml, line 2 column 1: invalid TOML"),
    ]:
        study.write_text(body)
        with pytest.raises(SpecError, match=message):
            load_study(study)


def test_the_reference_grid_has_5280_jobs(concur, tmp_path):
    result = concur("--runs-dir", str(tmp_path / "runs"), "study", "plan", str(REPO / "analysis" / "studies" / "liu2023.toml"))
    assert result.returncode == 0, result.stderr
    assert "liu2023: 5,280 jobs (20 approaches x 44 benchmarks x 6 settings x 1 seed): 5,280 not prepared" in result.stdout


@pytest.mark.slow
def test_a_study_runs_once_and_its_plan_and_cost_show_what_was_spent(concur, tmp_path, tiny_registry):
    write_tiny_reader(tiny_registry, "tiny-reader", {"epochs": 1.0}, "learning_rate = { log_uniform = [1e-4, 1e-2] }")
    study = tmp_path / "tiny.toml"
    study.write_text('name = "tiny"\napproaches = "tiny-reader"\nbenches = ["tiny-babi"]\nhparams = 2\n')
    common = ["--registry", str(tiny_registry), "--runs-dir", str(tmp_path / "runs")]
    before = concur(*common, "study", "plan", str(study), "--format", "json")
    assert json.loads(before.stdout)["counts"] == {"not prepared": 2}
    ran = concur(*common, "study", "run", str(study), "--device", "cpu", "--source-dir", str(tmp_path / "data-root"))
    assert ran.returncode == 0, ran.stderr
    assert "2 jobs, 2 run now: 2 done" in ran.stdout
    plan = concur(*common, "study", "collect", str(study), "--format", "json")
    assert plan.returncode == 0, plan.stderr
    planned = json.loads(plan.stdout)
    assert planned["counts"] == {"done": 2}
    results = list((tmp_path / "runs" / "jobs").glob("*/result.json"))
    spent = {path.parent.name: json.loads(path.read_text())["accounting"]["device_seconds"] for path in results}
    assert {job["key"]: job["device_seconds"] for job in planned["jobs"]} == spent
    table = concur(*common, "study", "plan", str(study))
    assert "tiny: 2 jobs (1 approaches x 1 benchmarks x 2 settings x 1 seed): 2 done" in table.stdout
    cost = concur(*common, "status", "--cost", "--format", "json")
    assert cost.returncode == 0, cost.stderr
    total = json.loads(cost.stdout)["total"]
    assert total["jobs"] == 2 and total["cpu_hours"] == pytest.approx(sum(spent.values()) / 3600)
    again = concur(*common, "study", "run", str(study), "--device", "cpu")
    assert "2 jobs, 0 run now: 2 done" in again.stdout
    # the same grid with another seed: its jobs are estimated from the throughputs the first two stored
    rows = Store(tmp_path / "runs" / "concur.sqlite").rows()
    assert all(row["implementation"] == "rasor" and 0 < row["fit_seconds"] < row["wall_seconds"] for row in rows)
    reseeded = tmp_path / "reseeded.toml"
    reseeded.write_text(study.read_text() + "seeds = [1]\n")
    ahead = json.loads(concur(*common, "study", "plan", str(reseeded), "--parallel", "2", "--format", "json").stdout)
    walls = [job["estimate_wall_seconds"] for job in ahead["jobs"]]
    assert ahead["counts"] == {"pending": 2} and all(wall > 0 for wall in walls)
    # and a run waits once for its warm workers' zygote: the median of what the forked jobs recorded
    start = statistics.median(row["pool_start_seconds"] for row in rows)
    assert start > 0 and ahead["run_start_seconds"] == pytest.approx(start)
    assert ahead["parallel"] == 2 and ahead["estimate_wall_seconds"] == pytest.approx(start + max(walls))
    assert [job["estimate_from"] for job in ahead["jobs"]] == ["cell", "cell"]  # each job's own cell ran with seed 0
    text = concur(*common, "study", "plan", str(reseeded)).stdout
    wall = f"{(start + sum(walls)) / 60:,.1f} min ({start:,.0f} s of it starting the warm workers)"
    assert f"wall time to go, 1 job at a time: {wall}" in text
    assert "estimates of the" not in text  # said only where some estimate does not come from its own cell


def test_the_plan_says_how_many_estimates_come_from_the_model_or_the_approach_alone():
    from concur.cli.study_cmds import _bases_line
    from concur.runner.planning.study import Plan, PlannedJob

    def planned(state: str, basis: str | None) -> PlannedJob:
        return PlannedJob(None, None, state, None if basis is None else 60.0, estimate_basis=basis)  # type: ignore[arg-type]

    jobs = [planned("pending", "cell")] * 3 + [planned("pending", "model")] * 2 + [planned("pending", "approach")]
    jobs += [planned("done", "model"), planned("pending", None)]  # finished, and never measured: neither counts
    assert _bases_line(Plan(jobs)) == (
        "estimates of the 6 jobs to run that have one: 3 from their own cell's finished jobs, "
        "2 from the approach x benchmark model, 1 from their approach's medians alone"
    )
    assert _bases_line(Plan([planned("pending", "cell")])) == "" and _bases_line(Plan([])) == ""
