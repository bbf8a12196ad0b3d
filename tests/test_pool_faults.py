"""Faults of a study, on CPU with tiny real models: a killed driver, a killed worker, a time limit,
CUDA out of memory, a NaN loss. Each ends with a clear record and nothing half-finished."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from concur.runner.execution.one_job import RunOptions, execute_job
from concur.runner.execution.startup import POOL_START_ENV, pool_start_seconds, process_age_seconds
from concur.runner.planning.jobs import make_job
from concur.runner.records.jobdir import JobDir, JobState
from concur.runner.records.store import Store
from tests.conftest import write_tiny_reader
from tests.test_runner import _setup

# The tiny reader trains about 100 optimiser steps a second on 2 cores; these budgets leave a job
# seconds of training in which to be killed.
SLOW = {"epochs": 50.0}
WAIT_SECONDS = 180


def _common(tmp_path: Path, registry: Path) -> list[str]:
    return ["--registry", str(registry), "--runs-dir", str(tmp_path / "runs")]


def _start(tmp_path: Path, args: list[str]) -> subprocess.Popen:
    environment = {**os.environ, "CONCUR_PROGRESS": "0"}
    return subprocess.Popen(
        [sys.executable, "-m", "concur", *args, "--source-dir", str(tmp_path / "data-root")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )


def _wait_for(condition, process: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if condition():
            return
        if process.poll() is not None:
            pytest.fail(f"the driver ended before {what}: {process.communicate()}")
        time.sleep(0.2)
    process.kill()
    pytest.fail(f"timed out waiting for {what}")


def _training(jobs_dir: Path) -> list[Path]:
    """Job directories whose training loop has logged a step."""
    return [log.parent for log in jobs_dir.glob("*/log") if "step " in log.read_text()]


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"  # a zombie has exited


@pytest.mark.slow
def test_a_killed_driver_leaves_only_whole_results_and_the_rerun_runs_the_rest(tmp_path, tiny_registry):
    write_tiny_reader(tiny_registry, "slow-reader", SLOW)
    grid = [*_common(tmp_path, tiny_registry), "run", "-a", "tiny-reader,slow-reader", "-b", "tiny-babi", "--seeds", "0,1"]
    driver = _start(tmp_path, [*grid, "--device", "cpu", "--workers", "2"])
    jobs_dir = tmp_path / "runs" / "jobs"
    _wait_for(lambda: any(jobs_dir.glob("*/result.json")) and _training(jobs_dir), driver, "one result and one job training")
    driver.send_signal(signal.SIGKILL)
    driver.wait()

    def workers() -> list[int]:  # read again each time: the driver may have started one just before it died
        return [json.loads((path / "job.json").read_text())["pid"] for path in jobs_dir.iterdir() if (path / "job.json").exists()]

    deadline = time.monotonic() + 30
    while not all(_pid_gone(pid) for pid in workers()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert all(_pid_gone(pid) for pid in workers()), "workers outlived their driver"
    states = {path.name: JobDir(path).state() for path in jobs_dir.iterdir()}
    finished = {key for key, state in states.items() if state is JobState.DONE}
    # a worker killed between creating its directory and writing job.json leaves it pending: also not finished
    assert finished and set(states.values()) <= {JobState.DONE, JobState.INTERRUPTED, JobState.PENDING}
    for key in finished:  # a result is whole or absent
        assert json.loads((jobs_dir / key / "result.json").read_text())["scores"]["n_questions"] == 30
    rerun = subprocess.run([sys.executable, "-m", "concur", *grid, "--device", "cpu", "--workers", "2"], capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert f"4 jobs, {4 - len(finished)} run now: 4 done" in rerun.stdout
    rows = Store(tmp_path / "runs" / "concur.sqlite").rows()
    assert len(rows) == len({row["key"] for row in rows}) == 4 and {row["status"] for row in rows} == {"ok"}


@pytest.mark.slow
def test_a_killed_worker_is_retried_and_its_death_recorded(tmp_path, tiny_registry):
    write_tiny_reader(tiny_registry, "slow-reader", {"epochs": 30.0})
    driver = _start(tmp_path, [*_common(tmp_path, tiny_registry), "run", "-a", "slow-reader", "-b", "tiny-babi", "--device", "cpu"])
    jobs_dir = tmp_path / "runs" / "jobs"
    _wait_for(lambda: _training(jobs_dir), driver, "the job to train")
    (job_dir,) = _training(jobs_dir)
    os.kill(json.loads((job_dir / "job.json").read_text())["pid"], signal.SIGKILL)
    stdout, stderr = driver.communicate(timeout=WAIT_SECONDS)
    assert driver.returncode == 0, stderr
    assert "worker died (killed by SIGKILL" in stderr and "retrying" in stderr
    result = json.loads((job_dir / "result.json").read_text())
    assert result["status"] == "ok"
    assert len(result["previous_attempts"]) == 1 and result["previous_attempts"][0]["error"].startswith("killed by SIGKILL")
    (row,) = Store(tmp_path / "runs" / "concur.sqlite").rows()
    assert row["attempts"] == 2 and row["status"] == "ok"


@pytest.mark.slow
def test_a_worker_killed_on_its_last_attempt_fails_with_the_reason(tmp_path, tiny_registry):
    write_tiny_reader(tiny_registry, "slow-reader", SLOW)
    args = [*_common(tmp_path, tiny_registry), "run", "-a", "slow-reader", "-b", "tiny-babi", "--device", "cpu", "--max-attempts", "1"]
    driver = _start(tmp_path, args)
    jobs_dir = tmp_path / "runs" / "jobs"
    _wait_for(lambda: _training(jobs_dir), driver, "the job to train")
    (job_dir,) = _training(jobs_dir)
    os.kill(json.loads((job_dir / "job.json").read_text())["pid"], signal.SIGKILL)
    _, stderr = driver.communicate(timeout=WAIT_SECONDS)
    assert driver.returncode == 2
    assert "WorkerDied: killed by SIGKILL" in stderr and "(attempt 1 of 1)" in stderr
    (row,) = Store(tmp_path / "runs" / "concur.sqlite").rows()
    assert row["status"] == "failed" and row["error"].startswith("WorkerDied: killed by SIGKILL") and row["em"] is None
    assert JobDir(job_dir).state() is JobState.FAILED and not (job_dir / "predictions.json.gz").exists()


@pytest.mark.slow
def test_a_job_over_its_time_limit_is_stopped_and_recorded(tmp_path, tiny_registry):
    write_tiny_reader(tiny_registry, "slow-reader", {"epochs": 1000.0})
    args = [*_common(tmp_path, tiny_registry), "run", "-a", "slow-reader", "-b", "tiny-babi", "--device", "cpu", "--time-limit", "0.1"]
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "concur", *args, "--source-dir", str(tmp_path / "data-root")], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 2
    assert "TimeLimitExceeded: stopped at its time limit of 6 s" in result.stderr
    assert time.monotonic() - started < 60  # 1,000 epochs would take more than a minute
    (row,) = Store(tmp_path / "runs" / "concur.sqlite").rows()
    assert row["status"] == "failed" and row["error"].startswith("TimeLimitExceeded") and row["attempts"] == 1


def test_cuda_out_of_memory_halves_the_per_device_batch_and_is_recorded(tmp_path, tiny_registry, monkeypatch):
    import torch

    from concur.approaches.hf_span.approach import HFSpanApproach

    original = HFSpanApproach.train

    def small_device(self, train, context):  # a device that fits 4 windows per forward pass
        if context.per_device_batch_size is None or context.per_device_batch_size > 4:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return original(self, train, context)

    monkeypatch.setattr(HFSpanApproach, "train", small_device)
    spec, bench, workspace, _ = _setup(tmp_path, tiny_registry)
    job = make_job(spec, bench, seed=0)
    result = execute_job(job, spec, bench, workspace, RunOptions(device="cpu"), echo=lambda line: None)
    assert result.status == "ok"
    assert [retry["per_device_batch_size"] for retry in result.oom_retries] == [16, 8]  # the spec's batch is 16
    assert result.per_device_batch_size == 4
    assert result.train["optimizer_steps"] == 16  # 2 epochs of 120 questions in batches of 16: the effective batch is kept
    assert "retrying with 8 (twice the accumulation)" in (workspace.jobs_dir / job.key / "log").read_text()


def test_a_nan_loss_fails_the_job_with_its_step(tmp_path, tiny_registry, monkeypatch):
    import torch

    import concur.approaches.hf_span.loss as hf_span

    real_loss = hf_span.span_loss
    calls = []

    def diverging(*args):
        calls.append(1)
        loss = real_loss(*args)
        return loss * torch.tensor(float("nan")) if len(calls) >= 3 else loss

    monkeypatch.setattr(hf_span, "span_loss", diverging)
    spec, bench, workspace, _ = _setup(tmp_path, tiny_registry)
    job = make_job(spec, bench, seed=0)
    result = execute_job(job, spec, bench, workspace, RunOptions(device="cpu"), echo=lambda line: None)
    assert result.status == "failed"
    assert result.error == "NonFiniteLossError: the training loss became nan by step 3 of 16 (mean of steps 3-3)"
    assert JobDir(workspace.jobs_dir / job.key).state() is JobState.FAILED


def test_every_result_is_accounted(tmp_path, tiny_registry):
    spec, bench, workspace, store = _setup(tmp_path, tiny_registry)
    job = make_job(spec, bench, seed=0)
    age, clock = process_age_seconds(), time.perf_counter()
    result = execute_job(job, spec, bench, workspace, RunOptions(device="cpu", threads=2), echo=lambda line: None)
    accounting = result.accounting
    # this process's age when the job's clock started
    assert age - 0.02 <= accounting.startup_seconds <= age + (time.perf_counter() - clock) + 0.02
    assert accounting.device_kind == "cpu" and accounting.devices == 2
    assert accounting.device_seconds == pytest.approx(2 * accounting.wall_seconds)
    assert accounting.wall_seconds >= result.train_seconds + result.eval_seconds
    assert accounting.peak_memory_bytes > 100 * 2**20  # a Python process with PyTorch loaded
    assert {"concur", "python", "torch", "transformers", "platform"} <= set(result.versions)
    store.record(result, workspace.jobs_dir / job.key)
    row = store.get(job.key)
    assert row["device_seconds"] == accounting.device_seconds and row["device_kind"] == "cpu" and row["attempts"] == 1
    assert row["startup_seconds"] == accounting.startup_seconds


def test_a_process_age_is_read_after_its_command_name_in_clock_ticks_since_boot():
    fields = ["S", *map(str, range(4, 22)), "500", *["0"] * 30]  # fields 3-21, then 22: started 500 ticks after boot
    stat = "4242 (odd) name (x) " + " ".join(fields)
    assert process_age_seconds(stat, boot_clock=12.5, ticks_per_second=100) == pytest.approx(7.5)
    assert process_age_seconds(stat, boot_clock=4.0, ticks_per_second=100) == 0.0  # never negative


def test_a_workers_pool_start_is_read_from_its_environment_and_junk_counts_as_unmeasured(monkeypatch):
    monkeypatch.setenv(POOL_START_ENV, "8.025")
    assert pool_start_seconds() == 8.025
    monkeypatch.setenv(POOL_START_ENV, "soon")  # not ours: no number to plan with, and no failed job either
    assert pool_start_seconds() is None
    monkeypatch.delenv(POOL_START_ENV)
    assert pool_start_seconds() is None  # a new process: nothing waited once
