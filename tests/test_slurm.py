"""The Slurm executor against a real single-node Slurm (Debian's slurm-wlm + munge, started by .ci/slurm-up).

Jobs are tiny BERTs on CPU with one core each; every test has its own runs directory, and
finds its Slurm jobs through the driver's ledger (runs/slurm/submissions.jsonl).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from concur.errors import ConcurError, SpecError
from concur.runner.records.store import Store
from concur.runner.scheduling.slurm import load_slurm_config
from tests.conftest import write_tiny_reader

REPO = Path(__file__).resolve().parents[1]
WAIT_SECONDS = 180
# One Slurm cluster: its tests run one after another, in one pytest-xdist worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("slurm")]


@pytest.fixture(scope="module")
def slurm() -> None:
    """A Slurm that answers: as root, the one .ci/slurm-up leaves (it starts one, restarts one whose node has fewer
    than this machine's cores, or else pins the running one's daemons to every online core); else the running one;
    skipped, with the reason, if neither."""
    if os.geteuid() != 0:
        if _slurm_answers():
            return
        pytest.skip("Slurm is not running and starting it needs root (.ci/slurm-up)")
    started = subprocess.run(["bash", str(REPO / ".ci" / "slurm-up")], capture_output=True, text=True, timeout=600)
    if started.returncode != 0:
        pytest.skip(f"Slurm could not be started by .ci/slurm-up: {started.stderr.strip()[-500:]}")


def _slurm_answers() -> bool:
    """Whether sinfo answers. With its controller gone (daemons killed with their machine's session) sinfo
    retries for tens of seconds instead of failing, so a timeout means no, and .ci/slurm-up restarts it."""
    if not shutil.which("sinfo"):
        return False
    try:
        return subprocess.run(["sinfo", "-h"], capture_output=True, timeout=10).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def _concur(runs: Path, registry: Path, *args: str) -> subprocess.CompletedProcess:
    common = ["--registry", str(registry), "--runs-dir", str(runs)]
    return subprocess.run([sys.executable, "-m", "concur", *common, *args], capture_output=True, text=True, timeout=600)


def _ledger(runs: Path) -> list[dict]:
    path = runs / "slurm" / "submissions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def _slurm_state(slurm_id: str) -> str:
    listing = subprocess.run(
        ["squeue", "-h", "-r", "-t", "all", "-j", slurm_id.split("_")[0], "-o", "%i %T"], capture_output=True, text=True
    )
    states = dict(line.split() for line in listing.stdout.splitlines() if line.strip())
    return states.get(slurm_id, "")


def _wait_for(slurm_id: str, state: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while _slurm_state(slurm_id) != state:
        assert time.monotonic() < deadline, f"Slurm job {slurm_id} never reached {state} (now {_slurm_state(slurm_id)!r})"
        time.sleep(0.5)


def _next_second() -> None:
    """Sleep into the next whole second of the clock.

    Slurm's job credentials carry whole-second times: a run launched in the same second as its job's previous
    run was killed is refused ("Killing non-startable batch JobId=N: Job credential revoked") and the job ends
    FAILED, so a driver rightly submits it again. Slurm delays a requeued job's start for this reason.
    """
    time.sleep(math.floor(time.time()) + 1 - time.time())


@pytest.fixture
def settled(concur):
    """`concur status --format json` (in this process) until no submitted job is queued any more."""

    def poll(runs: Path, registry: Path) -> dict:
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            status = concur("--registry", str(registry), "--runs-dir", str(runs), "status", "--format", "json")
            assert status.returncode == 0, status.stderr
            if ", 0 are still queued or running" in status.stderr:
                return json.loads(status.stdout)
            assert time.monotonic() < deadline, status.stderr
            time.sleep(0.5)

    return poll


def _slow_approach(registry: Path, name: str, epochs: float) -> None:
    write_tiny_reader(registry, name, {"epochs": epochs})


CPU = ["--executor", "slurm", "--device", "cpu", "--threads", "1"]


def test_the_cluster_slurm_up_leaves_has_every_online_core_whatever_the_callers_affinity(slurm):
    """This test's worker is pinned to its share of the cores (conftest); a cluster started from it had one core
    and ran the array jobs below one at a time, so .ci/slurm-up gives the node, and its daemons, all of them."""
    if os.geteuid() != 0:
        pytest.skip("the cluster is not one .ci/slurm-up started (that needs root)")
    online = _cpu_list(Path("/sys/devices/system/cpu/online").read_text())
    node_cpus = subprocess.run(["sinfo", "-h", "-N", "-o", "%c"], capture_output=True, text=True, check=True).stdout.split()
    assert node_cpus == [str(len(online))]
    daemons = subprocess.run(["pgrep", "-x", "slurmd"], capture_output=True, text=True, check=True).stdout.split()
    assert daemons and all(os.sched_getaffinity(int(pid)) == online for pid in daemons)


def _cpu_list(text: str) -> set[int]:
    """The CPUs of a kernel CPU list such as "0-3,6"."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def test_a_grid_runs_as_a_job_array_and_a_rerun_submits_nothing(slurm, tmp_path, tiny_registry):
    write_tiny_reader(tiny_registry, "tiny-reader", {"epochs": 1.0}, "learning_rate = { log_uniform = [1e-4, 1e-2] }")
    runs = tmp_path / "runs"
    grid = ["run", "-a", "tiny-reader", "-b", "tiny-babi", "--hparams", "2", *CPU]
    first = _concur(runs, tiny_registry, *grid, "--source-dir", str(tmp_path / "data-root"))
    assert first.returncode == 0, first.stderr
    assert "submitted 2 jobs as Slurm array" in first.stderr and "(0 GPU, 1 cores, 16 GB, 1440 min)" in first.stderr
    assert "2 jobs, 2 run now: 2 done" in first.stdout
    ledger = _ledger(runs)
    assert len(ledger) == 2 and len({entry["slurm_id"].split("_")[0] for entry in ledger}) == 1  # one array
    rows = Store(runs / "concur.sqlite").rows()
    assert sorted(row["hparam_id"] for row in rows) == [0, 1] and all(row["status"] == "ok" for row in rows)
    for entry in ledger:
        result = json.loads((runs / "jobs" / entry["key"] / "result.json").read_text())
        assert result["scheduler"] == {"system": "slurm", "job_id": entry["slurm_id"], "node": result["scheduler"]["node"], "restarts": 0}
        assert result["accounting"]["device_kind"] == "cpu" and result["accounting"]["device_seconds"] > 0
        assert Path(entry["log"]).is_file()
    again = _concur(runs, tiny_registry, *grid)
    assert again.returncode == 0, again.stderr
    assert "2 jobs, 0 run now: 2 done" in again.stdout and "submitted" not in again.stderr
    assert len(_ledger(runs)) == 2


def test_the_driver_can_leave_and_a_requeued_job_records_its_restart(slurm, settled, tmp_path, tiny_registry):
    _slow_approach(tiny_registry, "tiny-slow", 60.0)
    runs = tmp_path / "runs"
    submitted = _concur(
        runs, tiny_registry, "run", "-a", "tiny-slow", "-b", "tiny-babi", *CPU, "--no-wait", "--source-dir", str(tmp_path / "data-root")
    )
    assert submitted.returncode == 3, submitted.stderr  # not done, not failed: left to Slurm
    assert "error: 1 of 1 jobs have no result yet: 1 queued in Slurm; run the same command again (without --no-wait)" in submitted.stderr
    (entry,) = _ledger(runs)
    _wait_for(entry["slurm_id"], "RUNNING")
    # what preemption or a node failure does: Slurm puts the running job back in the queue
    subprocess.run(["scontrol", "requeue", entry["slurm_id"]], check=True)
    _wait_for(entry["slurm_id"], "PENDING")
    _next_second()  # slurmd refuses a launch in the second its job was killed; the requeue delay we skip avoids that
    subprocess.run(["scontrol", "update", f"jobid={entry['slurm_id']}", "StartTime=now"], check=True)  # skip the requeue delay
    again = _concur(runs, tiny_registry, "run", "-a", "tiny-slow", "-b", "tiny-babi", *CPU, "--no-wait")
    assert f"is queued as Slurm job {entry['slurm_id']}; not submitting it again" in again.stderr
    status = settled(runs, tiny_registry)
    assert status["summary"]["done"] == 1 and status["summary"]["failed"] == 0
    result = json.loads((runs / "jobs" / entry["key"] / "result.json").read_text())
    assert result["status"] == "ok" and result["scheduler"]["restarts"] == 1
    assert len(_ledger(runs)) == 1


def test_a_cancelled_job_is_recorded_failed_with_its_slurm_state_and_log(slurm, settled, tmp_path, tiny_registry):
    _slow_approach(tiny_registry, "tiny-endless", 10000.0)
    runs = tmp_path / "runs"
    args = ["run", "-a", "tiny-endless", "-b", "tiny-babi", *CPU, "--no-wait", "--source-dir", str(tmp_path / "data-root")]
    assert _concur(runs, tiny_registry, *args).returncode == 3
    (entry,) = _ledger(runs)
    _wait_for(entry["slurm_id"], "RUNNING")
    subprocess.run(["scancel", entry["slurm_id"]], check=True)
    status = settled(runs, tiny_registry)
    (job,) = status["jobs"]
    assert job["state"] == "failed" and job["key"] == entry["key"]
    assert job["error"].startswith(f"SlurmJobEnded: Slurm job {entry['slurm_id']} ended as CANCELLED without a result")
    assert entry["log"] in job["error"]
    rerun = _concur(runs, tiny_registry, *args)  # a failed job is not submitted again without --retry-failed
    assert rerun.returncode == 2 and "submitted" not in rerun.stderr and len(_ledger(runs)) == 1
    assert "(it failed before; rerun with --retry-failed)" in rerun.stderr


def test_a_job_slurm_would_never_start_is_cancelled_and_recorded_failed(slurm, tmp_path, tiny_registry):
    runs = tmp_path / "runs"
    result = _concur(runs, tiny_registry, "run", "-a", "tiny-reader", "-b", "tiny-babi", "--executor", "slurm", "--device", "cpu",
                     "--threads", "999", "--source-dir", str(tmp_path / "data-root"))  # fmt: skip
    assert result.returncode != 0
    (entry,) = _ledger(runs)
    assert "(0 GPU, 999 cores, 16 GB, 1440 min)" in result.stderr
    assert "SlurmJobRefused" in result.stderr
    _wait_for(entry["slurm_id"], "CANCELLED")
    stored = json.loads((runs / "jobs" / entry["key"] / "result.json").read_text())
    assert stored["status"] == "failed"
    assert stored["error"].startswith(f"SlurmJobRefused: Slurm would never start job {entry['slurm_id']} (pending: PartitionConfig)")
    assert "ask for fewer resources (--threads" in stored["error"]


def test_the_slurm_config_names_what_is_wrong(tmp_path, monkeypatch):
    monkeypatch.delenv("CONCUR_SLURM_CONFIG", raising=False)
    config = tmp_path / "slurm.toml"
    config.write_text('partition = "gpu"\naccount = "nlp"\narray_parallelism = 32\n[additional]\nconstraint = "h100"\n')
    loaded = load_slurm_config(config)
    assert (loaded.partition, loaded.account, loaded.array_parallelism, loaded.additional) == ("gpu", "nlp", 32, {"constraint": "h100"})
    config.write_text('partiton = "gpu"\n')
    with pytest.raises(SpecError, match="partiton"):
        load_slurm_config(config)
    config.write_text("array_parallelism = 0\n")
    with pytest.raises(SpecError, match="slurm.toml, field 'array_parallelism': must be at least 1, got 0"):
        load_slurm_config(config)
    with pytest.raises(ConcurError, match="Slurm config .*missing.toml does not exist"):
        load_slurm_config(tmp_path / "missing.toml")
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.config/concur/slurm.toml: the cluster's defaults
    assert load_slurm_config(None).partition is None


def _training_started(job_dir: Path) -> bool:
    log = job_dir / "log"
    return log.is_file() and "step " in log.read_text()


def _submitted_and_training(runs: Path, registry: Path, args: list[str]) -> tuple[dict, Path]:
    """Submit a one-job grid of a slow tiny reader (`args`), wait until its Slurm job trains; its ledger entry and job dir."""
    _slow_approach(registry, "tiny-slow", 60.0)
    assert _concur(runs, registry, *args).returncode == 3  # submitted, left to Slurm (--no-wait)
    (entry,) = _ledger(runs)
    job_dir = runs / "jobs" / entry["key"]
    deadline = time.monotonic() + WAIT_SECONDS
    while not _training_started(job_dir):
        assert time.monotonic() < deadline, "the job never started training"
        time.sleep(0.5)
    return entry, job_dir


@pytest.mark.parametrize("signal_name", ["TERM", "USR2"])
def test_a_job_stopped_by_a_signal_is_left_interrupted_and_the_rerun_finishes_it(slurm, settled, tmp_path, tiny_registry, signal_name):
    """SIGTERM (preemption without requeue, the time limit) and SIGUSR2 (submitit's warning before the time
    limit) stop the job without a result and without a failure: the next run of the grid runs it again."""
    runs = tmp_path / "runs"
    args = ["run", "-a", "tiny-slow", "-b", "tiny-babi", *CPU, "--no-wait", "--source-dir", str(tmp_path / "data-root")]
    entry, job_dir = _submitted_and_training(runs, tiny_registry, args)
    subprocess.run(["scancel", f"--signal={signal_name}", entry["slurm_id"]], check=True)
    status = settled(runs, tiny_registry)
    (job,) = status["jobs"]
    assert job["state"] == "interrupted" and not (job_dir / "result.json").exists()
    assert json.loads((job_dir / "interrupted.json").read_text())["signal"] == f"SIG{signal_name}"
    rerun = _concur(runs, tiny_registry, *args)
    assert rerun.returncode == 3 and "submitted 1 jobs" in rerun.stderr
    status = settled(runs, tiny_registry)
    assert status["summary"]["done"] == 1 and status["summary"]["failed"] == 0
    result = json.loads((job_dir / "result.json").read_text())
    assert result["status"] == "ok" and not (job_dir / "interrupted.json").exists()
    log = (job_dir / "log").read_text()
    assert f"interrupted by SIG{signal_name}; no result" in log
    assert log.count(f" job {entry['key']}: ") == 2  # two executions: the stopped one and the one that finished
    assert list((runs / "claims").iterdir()) == []


def test_a_job_past_its_slurm_time_limit_is_left_interrupted_not_failed(slurm, settled, tmp_path, tiny_registry):
    _slow_approach(tiny_registry, "tiny-endless", 10000.0)
    runs = tmp_path / "runs"
    args = ["run", "-a", "tiny-endless", "-b", "tiny-babi", *CPU, "--time-limit", "1", "--no-wait"]
    assert _concur(runs, tiny_registry, *args, "--source-dir", str(tmp_path / "data-root")).returncode == 3
    (entry,) = _ledger(runs)
    status = settled(runs, tiny_registry)
    (job,) = status["jobs"]
    job_dir = runs / "jobs" / entry["key"]
    assert job["state"] == "interrupted" and not (job_dir / "result.json").exists()
    assert json.loads((job_dir / "interrupted.json").read_text())["signal"] in ("SIGUSR2", "SIGTERM")


def test_a_job_stopped_with_sigstop_is_running_not_failed_and_finishes_once_continued(slurm, settled, concur, tmp_path, tiny_registry):
    """squeue lists a job stopped by SIGSTOP as STOPPED, a flag in place of RUNNING: it keeps its allocation
    and its claim, and once continued it finishes. Collecting it as ended would write a failure for a live job."""
    runs = tmp_path / "runs"
    args = ["run", "-a", "tiny-slow", "-b", "tiny-babi", *CPU, "--no-wait", "--source-dir", str(tmp_path / "data-root")]
    entry, job_dir = _submitted_and_training(runs, tiny_registry, args)
    subprocess.run(["scancel", "--signal=STOP", entry["slurm_id"]], check=True)
    _wait_for(entry["slurm_id"], "STOPPED")
    status = concur("--registry", str(tiny_registry), "--runs-dir", str(runs), "status", "--format", "json")
    assert "Slurm: 0 submitted jobs have ended, 1 are still queued or running" in status.stderr
    (job,) = json.loads(status.stdout)["jobs"]
    assert job["state"] == "running" and not (job_dir / "result.json").exists()
    subprocess.run(["scancel", "--signal=CONT", entry["slurm_id"]], check=True)
    status = settled(runs, tiny_registry)
    assert status["summary"]["done"] == 1 and status["summary"]["failed"] == 0
    assert json.loads((job_dir / "result.json").read_text())["status"] == "ok"


def test_drivers_submitting_one_grid_together_submit_each_job_once(slurm, settled, tmp_path, tiny_registry):
    runs = tmp_path / "runs"
    common = ["--registry", str(tiny_registry), "--runs-dir", str(runs)]
    args = ["run", "-a", "tiny-reader", "-b", "tiny-babi", "--seeds", "0,1,2,3", *CPU, "--no-wait"]
    _concur(runs, tiny_registry, "data", "prepare", "tiny-babi", "--source-dir", str(tmp_path / "data-root"))
    drivers = [
        subprocess.Popen([sys.executable, "-m", "concur", *common, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    for driver in drivers:
        _, stderr = driver.communicate(timeout=WAIT_SECONDS)
        assert driver.returncode in (0, 3), stderr  # 3: jobs left in Slurm's queue (--no-wait)
        assert "Traceback" not in stderr
    ledger = _ledger(runs)
    assert len(ledger) == 4 and len({entry["key"] for entry in ledger}) == 4  # no job submitted twice
    status = settled(runs, tiny_registry)
    assert status["summary"]["done"] == 4
    for entry in ledger:
        assert (runs / "jobs" / entry["key"] / "log").read_text().count(f" job {entry['key']}: ") == 1


def test_a_slurm_driver_waits_for_the_jobs_a_local_driver_holds(slurm, tmp_path, tiny_registry):
    """A local driver runs a job of the grid; a Slurm driver on the same grid submits the other job and waits for
    the local one too, taking its result once it is written: it exits 0 with both, and nothing ran twice."""
    _slow_approach(tiny_registry, "tiny-slow", 20.0)
    runs = tmp_path / "runs"
    grid = ["run", "-a", "tiny-slow", "-b", "tiny-babi", "--device", "cpu", "--threads", "1", "--source-dir", str(tmp_path / "data-root")]
    local = subprocess.Popen(
        [sys.executable, "-m", "concur", "--registry", str(tiny_registry), "--runs-dir", str(runs), *grid, "--seeds", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "CONCUR_PROGRESS": "0"},
    )  # fmt: skip
    deadline, claims = time.monotonic() + WAIT_SECONDS, runs / "claims"
    while not (claims.is_dir() and any(claims.glob("*.json"))):
        assert time.monotonic() < deadline and local.poll() is None, "the local driver never claimed its job"
        time.sleep(0.2)
    on_slurm = _concur(runs, tiny_registry, *grid, "--seeds", "0,1", "--executor", "slurm")
    local_out, local_err = local.communicate(timeout=WAIT_SECONDS)
    assert local.returncode == 0, local_err
    assert on_slurm.returncode == 0, on_slurm.stderr
    assert f"is running in process {local.pid} on {socket.gethostname()}; not submitting it" in on_slurm.stderr
    assert "(by another driver)" in on_slurm.stderr and "2 jobs, 1 run now: 2 done" in on_slurm.stdout
    (entry,) = _ledger(runs)  # only the other job went to Slurm
    for job_dir in (runs / "jobs").iterdir():
        assert (job_dir / "log").read_text().count(f" job {job_dir.name}: ") == 1
    assert list((runs / "claims").iterdir()) == []
