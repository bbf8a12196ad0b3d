"""Many drivers on one runs dir, and SIGKILL at every write point of a job: real processes, real SQLite.

Every job must end with exactly one result, indexed, its claim released, and must have been
executed once (its log has one start line per execution). The rounds of the concurrent-driver
test are $CONCUR_DRIVER_ROUNDS (1 by default; the closing evidence of issue 27 ran 20).
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from concur.runner.faults import FAULT_ENV, FaultPoint

pytestmark = pytest.mark.slow

DRIVERS = 4
SEEDS = "0,1,2,3,4,5"  # six jobs: more than the drivers, so they must share the grid
ROUNDS = int(os.environ.get("CONCUR_DRIVER_ROUNDS", "1"))
TIMEOUT_SECONDS = 600
# Executions of the job per fault point: a kill before the result costs one more run; after it, none.
EXECUTIONS = {
    FaultPoint.CLAIMED: 1,  # the driver died before starting the worker
    FaultPoint.STARTED: 1,  # job.json written, killed before training began
    FaultPoint.TRAINED: 2,
    FaultPoint.PREDICTED: 2,
    FaultPoint.RESULT_WRITTEN: 1,
    FaultPoint.UNINDEXED: 1,
    FaultPoint.INDEXED: 1,
}
DRIVER_POINTS = {FaultPoint.CLAIMED, FaultPoint.UNINDEXED, FaultPoint.INDEXED}  # the others kill the worker


def _driver(tmp_path: Path, registry: Path, runs: Path, seeds: str, environment: dict[str, str] | None = None) -> subprocess.Popen:
    command = [sys.executable, "-m", "concur", "--registry", str(registry), "--runs-dir", str(runs), "run", "-a", "tiny-reader"]
    command += ["-b", "tiny-babi", "--seeds", seeds, "--device", "cpu", "--workers", "1", "--source-dir", str(tmp_path / "data-root")]
    env = {**os.environ, "CONCUR_PROGRESS": "0", **(environment or {})}
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _executions(job_dir: Path) -> int:
    """How many times the job started training: its log keeps one start line per execution."""
    log = job_dir / "log"
    return sum(f" job {job_dir.name}: " in line for line in log.read_text().splitlines()) if log.is_file() else 0


def _indexed(runs: Path) -> dict[str, str]:
    with sqlite3.connect(runs / "concur.sqlite") as connection:
        return dict(connection.execute("SELECT key, status FROM jobs"))


def _settled(runs: Path, jobs: int) -> dict[str, int]:
    """Check the runs dir holds `jobs` finished jobs, each indexed once, no claim left; returns executions per job."""
    job_dirs = sorted(path for path in (runs / "jobs").iterdir() if path.is_dir())
    assert len(job_dirs) == jobs
    for job_dir in job_dirs:
        assert json.loads((job_dir / "result.json").read_text())["status"] == "ok"
        assert not (job_dir / "previous").exists()
    assert _indexed(runs) == {job_dir.name: "ok" for job_dir in job_dirs}
    assert list((runs / "claims").iterdir()) == []
    return {job_dir.name: _executions(job_dir) for job_dir in job_dirs}


def test_four_drivers_started_together_run_each_job_of_one_grid_once(tmp_path, tiny_registry):
    counts = {"rounds": 0, "driver runs": 0, "driver errors": 0, "jobs": 0, "results": 0, "executed twice": 0}
    for round_ in range(ROUNDS):
        runs = tmp_path / f"runs-{round_}"
        drivers = [_driver(tmp_path, tiny_registry, runs, SEEDS) for _ in range(DRIVERS)]
        outputs = [driver.communicate(timeout=TIMEOUT_SECONDS) for driver in drivers]
        failed = [stderr for driver, (_, stderr) in zip(drivers, outputs) if driver.returncode != 0 or "Traceback" in stderr]
        counts["driver errors"] += len(failed) + sum("database is locked" in stderr for _, stderr in outputs)
        counts["driver runs"] += len(drivers)
        job_dirs = [path for path in (runs / "jobs").iterdir() if path.is_dir()]
        counts["jobs"] += len(job_dirs)
        counts["results"] += sum((path / "result.json").is_file() for path in job_dirs)
        counts["executed twice"] += sum(_executions(path) > 1 for path in job_dirs)
        counts["rounds"] += 1
        assert not failed, failed[0]
        # a job another driver is running is said to be running there, never reported FAILED here
        assert not [stderr for _, stderr in outputs if "FAILED" in stderr], outputs
        executions = _settled(runs, jobs=6)
        assert sorted(executions.values()) == [1] * 6, executions
    print(f"\nconcurrent drivers: {counts}")
    assert counts["jobs"] == counts["results"] == 6 * ROUNDS and counts["executed twice"] == counts["driver errors"] == 0


@pytest.mark.parametrize("point", list(FaultPoint), ids=[point.value for point in FaultPoint])
def test_sigkill_at_every_write_point_loses_nothing_and_the_rerun_finishes_the_job(tmp_path, tiny_registry, point):
    runs = tmp_path / "runs"
    marker = tmp_path / "fault-fired"
    first = _driver(tmp_path, tiny_registry, runs, "0", {FAULT_ENV: f"{point.value}:{marker}"})
    _, stderr = first.communicate(timeout=TIMEOUT_SECONDS)
    assert marker.exists(), f"the fault at {point.value} never fired: {stderr}"
    if point in DRIVER_POINTS:
        assert first.returncode == -9  # the driver itself was killed
    else:
        assert first.returncode == 0, stderr  # the worker was killed; its driver ran the job again, or took its result
        assert ("worker died (killed by SIGKILL); retrying" in stderr) is (point is not FaultPoint.RESULT_WRITTEN)
    (job_dir,) = (runs / "jobs").iterdir() if (runs / "jobs").is_dir() else [None]
    result_before = (job_dir / "result.json").stat().st_mtime_ns if job_dir and (job_dir / "result.json").exists() else None
    rerun = _driver(tmp_path, tiny_registry, runs, "0")
    stdout, stderr = rerun.communicate(timeout=TIMEOUT_SECONDS)
    assert rerun.returncode == 0, stderr
    assert "Traceback" not in stderr
    executions = _settled(runs, jobs=1)
    assert list(executions.values()) == [EXECUTIONS[point]]
    (job_dir,) = (runs / "jobs").iterdir()
    if result_before is not None:  # a finished result is never rewritten
        assert (job_dir / "result.json").stat().st_mtime_ns == result_before
        assert "already done, nothing to run" in stdout


@pytest.mark.parametrize(("umask", "file_mode", "directory_mode"), [(0o002, 0o664, 0o775), (0o077, 0o600, 0o700)])
def test_every_file_of_a_run_honours_the_umask(tmp_path, tiny_registry, umask, file_mode, directory_mode):
    """A group shares a runs dir by its umask: results, predictions, logs, claims, index and data alike."""
    runs = tmp_path / "runs"
    previous = os.umask(umask)
    try:
        driver = _driver(tmp_path, tiny_registry, runs, "0")
    finally:
        os.umask(previous)
    _, stderr = driver.communicate(timeout=TIMEOUT_SECONDS)
    assert driver.returncode == 0, stderr
    modes = {path.relative_to(runs).as_posix(): stat.S_IMODE(path.stat().st_mode) for path in runs.rglob("*")}
    (job,) = (runs / "jobs").iterdir()
    for name in ("result.json", "predictions.json.gz", "log", "job.json"):
        assert modes[f"jobs/{job.name}/{name}"] == file_mode
    assert modes["data/tiny-babi/test.jsonl.gz"] == file_mode and modes["concur.sqlite"] == file_mode
    wrong = {name: oct(mode) for name, mode in modes.items() if mode != (directory_mode if (runs / name).is_dir() else file_mode)}
    assert wrong == {}


def test_a_grid_reports_a_damaged_result_and_runs_its_other_jobs(tmp_path, tiny_registry):
    runs = tmp_path / "runs"
    first = _driver(tmp_path, tiny_registry, runs, "0")
    assert first.wait(timeout=TIMEOUT_SECONDS) == 0
    (job_dir,) = (runs / "jobs").iterdir()
    result = job_dir / "result.json"
    damaged = result.read_bytes()[:40]
    result.write_bytes(damaged)
    grid = _driver(tmp_path, tiny_registry, runs, "0,1")
    stdout, stderr = grid.communicate(timeout=TIMEOUT_SECONDS)
    assert grid.returncode == 2 and "Traceback" not in stderr
    (warning,) = [line for line in stderr.splitlines() if str(result) in line]
    assert warning.startswith(f"warning: job {job_dir.name} (tiny-reader on tiny-babi (hparams 0, seed 0)) is not run: {result} is damaged")
    assert "1 of 2 jobs failed" in stderr
    assert result.read_bytes() == damaged  # left for `concur store rebuild`, never overwritten
    (other,) = [path for path in (runs / "jobs").iterdir() if path != job_dir]
    assert json.loads((other / "result.json").read_text())["status"] == "ok"
