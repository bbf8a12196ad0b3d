"""Jobs end to end with a real (tiny) Hugging Face model: keys, files, store, faults."""

import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

import concur
from concur.data.prepare import prepare
from concur.data.sources import SourceLocator
from concur.registry import default_registry
from concur.runner.execution.one_job import RunOptions
from concur.runner.planning.jobs import make_job
from concur.runner.records.jobdir import JobDir, JobState
from concur.runner.records.store import Store
from concur.runner.scheduling.outcomes import run_job
from concur.workspace import Workspace
from tests.conftest import TINY_HPARAMS, write_tiny_approach, write_tiny_reader

SLOW_EPOCHS = 50.0  # the tiny reader: long enough to be killed mid-training, short enough to rerun in a test


def _setup(tmp_path, registry_dir, approach="tiny-bert"):
    registry = default_registry([registry_dir])
    workspace = Workspace(tmp_path / "runs")
    locator = SourceLocator((tmp_path / "data-root",), workspace.cache_dir)
    bench, _ = prepare(registry.benchmark("tiny-babi"), locator, workspace.data_dir)
    spec = registry.approach(approach)
    return spec, bench, workspace, Store(workspace.db_path)


def _run(spec, bench, workspace, store, **options):
    job = make_job(spec, bench, seed=0)
    return run_job(job, spec, bench, workspace, store, RunOptions(device="cpu", **options), echo=lambda line: None)


def test_job_runs_writes_files_and_indexes(tmp_path, tiny_registry):
    spec, bench, workspace, store = _setup(tmp_path, tiny_registry)
    outcome = _run(spec, bench, workspace, store)
    assert outcome.ran and outcome.state is JobState.DONE
    job_dir = workspace.jobs_dir / outcome.job.key
    assert sorted(p.name for p in job_dir.iterdir()) == ["job.json", "log", "predictions.json.gz", "result.json"]
    result = json.loads((job_dir / "result.json").read_text())
    predictions = json.loads(gzip.open(job_dir / "predictions.json.gz", "rt").read())
    test_qids = set(bench.load("test").gold_answers())
    assert set(predictions) == test_qids and len(test_qids) == 30
    assert result["status"] == "ok" and result["scores"]["n_questions"] == 30 and result["scores"]["n_missing"] == 0
    assert 0.0 <= result["scores"]["exact_match"] <= result["scores"]["f1"] <= 100.0
    assert result["train"]["train_questions"] == 120 and result["train"]["losses"]
    assert result["versions"]["torch"] and result["device"].startswith("cpu")
    row = store.get(outcome.job.key)
    assert row["status"] == "ok" and row["em"] == result["scores"]["exact_match"] and row["f1"] == result["scores"]["f1"]
    assert row["hparams"] == TINY_HPARAMS and row["approach"] == "tiny-bert" and row["benchmark"] == "tiny-babi"
    assert "EM" in (job_dir / "log").read_text()


def test_finished_key_is_never_run_twice(tmp_path, tiny_registry):
    spec, bench, workspace, store = _setup(tmp_path, tiny_registry)
    first = _run(spec, bench, workspace, store)
    result_file = workspace.jobs_dir / first.job.key / "result.json"
    stamp = result_file.stat().st_mtime_ns
    second = _run(spec, bench, workspace, store)
    assert not second.ran and second.state is JobState.DONE
    assert second.result == first.result and result_file.stat().st_mtime_ns == stamp
    assert len(store.rows()) == 1


def test_job_key_follows_what_the_job_computes(tmp_path, tiny_registry, tiny_model_dir, monkeypatch):
    spec, bench, _, _ = _setup(tmp_path, tiny_registry)
    key = make_job(spec, bench, seed=0).key
    assert make_job(spec, bench, seed=0).key == key
    assert make_job(spec, bench, seed=1).key != key
    write_tiny_approach(tiny_registry, "tiny-bert", tiny_model_dir, {**TINY_HPARAMS, "learning_rate": 5e-4})
    assert make_job(default_registry([tiny_registry]).approach("tiny-bert"), bench, seed=0).key != key
    monkeypatch.setattr(concur.runner.planning.jobs, "RESULT_VERSION", concur.RESULT_VERSION + 1)
    assert make_job(spec, bench, seed=0).key != key


def test_failed_job_keeps_traceback_and_retries_on_request(tmp_path, tiny_registry):
    write_tiny_approach(tiny_registry, "broken", tmp_path / "no-such-model", TINY_HPARAMS)
    spec, bench, workspace, store = _setup(tmp_path, tiny_registry, approach="broken")
    outcome = _run(spec, bench, workspace, store)
    assert outcome.ran and outcome.state is JobState.FAILED
    row = store.get(outcome.job.key)
    assert row["status"] == "failed" and row["em"] is None
    assert "ModelUnavailableError" in row["error"] and "no-such-model" in row["error"]
    assert "Traceback (most recent call last)" in row["traceback"]
    assert not (workspace.jobs_dir / outcome.job.key / "predictions.json.gz").exists()
    again = _run(spec, bench, workspace, store)
    assert not again.ran and again.state is JobState.FAILED
    retried = _run(spec, bench, workspace, store, retry_failed=True)
    assert retried.ran and retried.result.started_at >= outcome.result.started_at


def test_full_disk_leaves_no_result_and_the_job_reruns(tmp_path, tiny_registry, monkeypatch):
    spec, bench, workspace, store = _setup(tmp_path, tiny_registry)

    def disk_full(self, payload):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(JobDir, "write_predictions", disk_full)
    monkeypatch.setattr(JobDir, "write_result", disk_full)
    with pytest.raises(OSError, match="No space left"):
        _run(spec, bench, workspace, store)
    job = make_job(spec, bench, seed=0)
    job_dir = JobDir(workspace.jobs_dir / job.key)
    assert job_dir.state() is JobState.INTERRUPTED
    assert not job_dir.result_path.exists() and store.rows() == []
    monkeypatch.undo()
    outcome = _run(spec, bench, workspace, store)
    assert outcome.ran and outcome.state is JobState.DONE and len(store.rows()) == 1


def _concur(*args, env=None, **kwargs):
    return subprocess.Popen(
        [sys.executable, "-m", "concur", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, **kwargs
    )


@pytest.mark.slow
def test_killed_job_leaves_no_row_and_reruns_cleanly(concur, tmp_path, tiny_registry):
    write_tiny_reader(tiny_registry, "slow-reader", {"epochs": SLOW_EPOCHS})
    common = ["--registry", str(tiny_registry), "--runs-dir", str(tmp_path / "runs")]
    run_args = [
        *common,
        "run",
        "--approach",
        "slow-reader",
        "--bench",
        "tiny-babi",
        "--device",
        "cpu",
        "--source-dir",
        str(tmp_path / "data-root"),
    ]
    env = {**os.environ, "CONCUR_PROGRESS": "0"}
    process = _concur(*run_args, env=env)
    jobs_dir = tmp_path / "runs" / "jobs"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        logs = list(jobs_dir.glob("*/log"))
        if logs and "step " in logs[0].read_text():  # the training loop is running
            break
        time.sleep(0.2)
    else:
        process.kill()
        pytest.fail("the job never started training: " + process.communicate()[1])
    process.send_signal(signal.SIGKILL)
    process.wait()
    (job_dir,) = jobs_dir.iterdir()
    assert not (job_dir / "result.json").exists()
    report = json.loads(concur(*common, "status", "--format", "json").stdout)
    assert report["summary"]["interrupted"] == 1 and report["summary"]["done"] == 0
    assert [job["state"] for job in report["jobs"]] == ["interrupted"]
    assert Store(tmp_path / "runs" / "concur.sqlite").rows() == []
    rerun = subprocess.run([sys.executable, "-m", "concur", *run_args], capture_output=True, text=True, env=env)
    assert rerun.returncode == 0, rerun.stderr
    assert f"job {job_dir.name} was interrupted before it finished; running it again" in rerun.stderr
    assert (job_dir / "result.json").exists()
    rows = Store(tmp_path / "runs" / "concur.sqlite").rows()
    assert [(row["key"], row["status"]) for row in rows] == [(job_dir.name, "ok")]


@pytest.mark.slow
def test_cli_run_twice_and_status(concur, tmp_path, tiny_registry):
    """hf-span end to end through the command line and a worker process, run twice; its status from the job directories."""
    common = ["--registry", str(tiny_registry), "--runs-dir", str(tmp_path / "runs")]
    run_args = [*common, "run", "-a", "tiny-bert", "-b", "tiny-babi", "--device", "cpu", "--source-dir", str(tmp_path / "data-root")]
    first = subprocess.run([sys.executable, "-m", "concur", *run_args], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("done: tiny-bert on tiny-babi (hparams 0, seed 0)")
    assert "EM " in first.stdout and "30 test questions" in first.stdout
    second = subprocess.run([sys.executable, "-m", "concur", *run_args], capture_output=True, text=True)
    assert second.stdout.startswith("already done, nothing to run: tiny-bert on tiny-babi")
    assert "epoch" not in second.stderr.lower()  # no training happened
    (tmp_path / "runs" / "concur.sqlite").unlink()  # the index is rebuilt from job directories
    status = concur(*common, "status", "--format", "json", "-a", "tiny-bert", "-a", "other", "-b", "tiny-babi")
    assert "unknown approach 'other'" in status.stderr
    status = concur(*common, "status", "--format", "json", "-a", "tiny-bert", "-b", "tiny-babi", "-b", "babi-1")
    report = json.loads(status.stdout)
    assert report["summary"] == {"done": 1, "failed": 0, "running": 0, "interrupted": 0, "pending": 1}
    done = [job for job in report["jobs"] if job["state"] == "done"][0]
    assert done["benchmark"] == "tiny-babi" and done["em"] is not None


def test_device_choice_is_checked():
    import torch

    from concur.devices import resolve_device
    from concur.errors import ConcurError

    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ConcurError, match="unknown device 'tpu'"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ConcurError, match="--device cuda: no CUDA GPU is visible"):
            resolve_device("cuda")


def test_a_job_claimed_by_an_unreaped_zombie_is_interrupted_not_running(tmp_path):
    from concur.processes import process_start
    from concur.runner.records.claims import ClaimBook

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = process_start(child.pid)
    job = JobDir(tmp_path / "runs" / "jobs" / "0123456789abcdef")
    job.path.mkdir(parents=True)
    (job.path / "job.json").write_text(json.dumps({"host": socket.gethostname(), "pid": child.pid, "pid_started": started}))
    book = ClaimBook(tmp_path / "runs")
    book.directory.mkdir()
    claim = {"key": job.path.name, "token": "t", "host": socket.gethostname(), "pid": child.pid, "pid_started": started, "claimed_at": 0.0}
    book.path(job.path.name).write_text(json.dumps(claim))
    assert job.state() is JobState.RUNNING  # its owner still runs
    deadline = time.monotonic() + 30
    while open(f"/proc/{child.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":  # exited, not yet reaped by us
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert job.state() is JobState.INTERRUPTED
    child.wait()


def test_a_signal_before_the_job_starts_leaves_it_interrupted_for_the_rerun_not_failed(tmp_path, monkeypatch):
    """A Slurm task with a time limit under submitit's warning gets SIGUSR2 while still loading the registry."""
    from concur.errors import JobInterrupted
    from concur.runner.execution import request as request_module
    from concur.runner.planning.jobs import Job
    from concur.runner.records.claims import Claim

    def signalled(*_: object) -> None:
        raise JobInterrupted("SIGUSR2")

    monkeypatch.setattr(request_module, "_resolve", signalled)
    monkeypatch.setenv("SLURM_JOB_ID", "172")
    job = Job("a", "b", 0, 0, {"epochs": 1.0}, "rasor", {}, "0" * 64)
    workspace = Workspace(tmp_path / "runs")
    request = request_module.JobRequest.make(job, [], workspace, RunOptions(device="cpu"))
    with pytest.raises(JobInterrupted):
        request_module.run_request(request)
    job_dir = JobDir(workspace.jobs_dir / job.key)
    record = job_dir.interrupted()
    assert (record["signal"], record["before_start"], record["scheduler"]["job_id"]) == ("SIGUSR2", True, "172")
    assert job_dir.state() is JobState.INTERRUPTED and job_dir.result() is None
    assert (job_dir.started()["key"], job_dir.started()["approach"]) == (job.key, "a")  # as `concur status` lists it
    # a run whose claim is no longer its own (another driver took the job over) records nothing
    other = Job("a", "b", 0, 1, {"epochs": 1.0}, "rasor", {}, "0" * 64)
    lost = Claim(other.key, "token", socket.gethostname(), os.getpid(), None, 0.0)
    with pytest.raises(JobInterrupted):
        request_module.run_request(request_module.JobRequest.make(other, [], workspace, RunOptions(device="cpu"), claim=lost))
    assert not (workspace.jobs_dir / other.key).exists()
