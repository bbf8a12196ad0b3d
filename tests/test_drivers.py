"""Many drivers on one runs dir, and SIGKILL at every write point of a job: real processes, real SQLite.

Every job must end with exactly one result, indexed, its claim released, and must have been
executed once (its log has one start line per execution). The rounds of the concurrent-driver
test are $CONCUR_DRIVER_ROUNDS (1 by default), those of the killed-driver test $CONCUR_KILL_ROUNDS
(2 by default). A driver that returns 0 has a result for every job: it waits for the jobs
other drivers hold, and takes over those whose owner dies (gone, or a zombie).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from concur.runner.execution.faults import FAULT_ENV, FaultPoint

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


def _driver(
    tmp_path: Path, registry: Path, runs: Path, seeds: str, environment: dict[str, str] | None = None, extra: list[str] | None = None
) -> subprocess.Popen:
    command = [sys.executable, "-m", "concur", "--registry", str(registry), "--runs-dir", str(runs), "run", "-a", "tiny-reader"]
    command += ["-b", "tiny-babi", "--seeds", seeds, "--device", "cpu", "--workers", "1", "--source-dir", str(tmp_path / "data-root")]
    command += extra or []
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
    assert stderr.strip().splitlines()[-1].startswith("error: 1 of 2 jobs have no usable result: 1 has a damaged result file (named above)")
    assert result.read_bytes() == damaged  # left for `concur store rebuild`, never overwritten
    (other,) = [path for path in (runs / "jobs").iterdir() if path != job_dir]
    assert json.loads((other / "result.json").read_text())["status"] == "ok"


# ---- a grid that returns is complete: jobs other drivers hold are waited for ----

KILL_ROUNDS = int(os.environ.get("CONCUR_KILL_ROUNDS", "2"))
KILL_SEEDS = "0,1,2,3"  # four jobs: each driver runs some, and the one killed leaves one started


def _kill_at_result(driver: subprocess.Popen, k: int) -> bool:
    """SIGKILL `driver` right after it reports its k-th result; False when it finished with fewer."""
    results = 0
    for line in driver.stderr:
        results += "] done " in line
        if results == k:
            driver.send_signal(signal.SIGKILL)
            return True
    return False


def test_a_driver_waits_for_the_jobs_another_holds_and_takes_over_those_of_one_killed(tmp_path, tiny_registry):
    """Two drivers share a grid; one is killed right after its k-th result, holding the claim of the job it started
    next. The other waits for that job and takes it over once its owner is gone: dead and reaped in even rounds, a
    zombie its parent has not reaped in odd ones. It exits 0 only with a result for every job."""
    tally = {"rounds": 0, "kills": 0, "survivor exits": [], "results": 0, "claims left": 0, "taken over": 0}
    for round_ in range(KILL_ROUNDS):
        runs = tmp_path / f"runs-{round_}"
        victim = _driver(tmp_path, tiny_registry, runs, KILL_SEEDS)
        survivor = _driver(tmp_path, tiny_registry, runs, KILL_SEEDS)
        killed = _kill_at_result(victim, 1 + round_ % 2)
        if round_ % 2 == 0:
            victim.wait()
        stdout, stderr = survivor.communicate(timeout=TIMEOUT_SECONDS)
        victim.wait()  # reaped only now in odd rounds: until the survivor ended, the victim was a zombie
        tally["rounds"] += 1
        tally["kills"] += killed
        tally["survivor exits"].append(survivor.returncode)
        tally["taken over"] += stderr.count("this driver takes it over") + stderr.count("was interrupted before it finished")
        tally["claims left"] += len(list((runs / "claims").iterdir()))
        assert survivor.returncode == 0, stderr
        assert "Traceback" not in stderr and "running in" not in stdout
        assert re.search(r"^4 jobs, \d run now: 4 done\b", stdout, re.MULTILINE), stdout
        executions = _settled(runs, jobs=4)  # every job one ok result, indexed, no claim left
        tally["results"] += len(executions)
        assert set(executions.values()) <= {1, 2}  # a job the victim had started ran once more
    print(f"\nwaiting drivers: {tally}")
    assert tally["kills"] >= 1 and tally["results"] == 4 * KILL_ROUNDS


def _job_key(tmp_path: Path, registry: Path, runs: Path) -> str:
    """The key of tiny-reader on tiny-babi (seed 0), its data prepared as a driver would."""
    from concur.data.prepare import prepare
    from concur.data.sources import SourceLocator
    from concur.registry import default_registry
    from concur.runner.planning.grid import GridRequest, expand_grid
    from concur.runner.planning.jobs import make_job
    from concur.workspace import Workspace

    registry_specs = default_registry([registry])
    (point,) = expand_grid(registry_specs, GridRequest("tiny-reader", "tiny-babi"))
    workspace = Workspace(runs)
    bench, _ = prepare(point.bench, SourceLocator((tmp_path / "data-root",), workspace.cache_dir), workspace.data_dir)
    return make_job(point.approach, bench, seed=0, setting=point.setting).key


def _claim_for(runs: Path, key: str, pid: int) -> None:
    """Write the claim on `key` as the process `pid` of this host would hold it."""
    from concur.processes import process_start
    from concur.runner.records.claims import CLAIMS_DIR, Claim

    claim = Claim(key, "owner-token", socket.gethostname(), pid, process_start(pid), time.time())
    (runs / CLAIMS_DIR).mkdir(parents=True, exist_ok=True)
    (runs / CLAIMS_DIR / f"{key}.json").write_text(json.dumps(dataclasses.asdict(claim)))


def _wait_for_line(driver: subprocess.Popen, text: str) -> list[str]:
    """Read the driver's stderr until a line holds `text`; the lines read (`_rest` reads what follows)."""
    lines = []
    for line in driver.stderr:
        lines.append(line)
        if text in line:
            return lines
    raise AssertionError(f"the driver ended without saying {text!r}: {''.join(lines)}")


def _rest(driver: subprocess.Popen, read: list[str]) -> tuple[str, str]:
    """The driver's stdout and its whole stderr once it ends, after `read` was read line by line: through the same
    buffered streams (`communicate` would read the pipes underneath them and miss what they hold already)."""
    assert driver.stdout is not None and driver.stderr is not None
    watchdog = threading.Timer(TIMEOUT_SECONDS, driver.kill)
    watchdog.start()
    try:
        stderr = "".join(read) + driver.stderr.read()
        stdout = driver.stdout.read()  # a few lines: it cannot fill its pipe while stderr is read first
        driver.wait()
    finally:
        watchdog.cancel()
    return stdout, stderr


def test_a_job_whose_owner_lives_is_left_with_no_wait_and_taken_over_once_the_owner_is_a_zombie(tmp_path, tiny_registry):
    runs = tmp_path / "runs"
    key = _job_key(tmp_path, tiny_registry, runs)
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        _claim_for(runs, key, owner.pid)
        where = f"process {owner.pid} on {socket.gethostname()}"
        left = _driver(tmp_path, tiny_registry, runs, "0", extra=["--no-wait"])
        stdout, stderr = left.communicate(timeout=TIMEOUT_SECONDS)
        assert left.returncode == 3, stderr  # neither done nor failed: left to its owner
        assert stderr.strip().splitlines()[-1] == (
            f"error: 1 of 1 jobs have no result yet: 1 running in {where}; run the same command again (without --no-wait) to "
            "wait for them (it runs only the jobs without a result), or `concur status` to see them"
        )
        assert not (runs / "jobs" / key / "result.json").exists()

        waiting = _driver(tmp_path, tiny_registry, runs, "0")
        read = _wait_for_line(waiting, f"is running in {where}; waiting for it")
        owner.send_signal(signal.SIGKILL)  # and not reaped: a zombie, whose pid still answers kill(0)
        deadline = time.monotonic() + 30
        while Path(f"/proc/{owner.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        stdout, stderr = _rest(waiting, read)
        assert waiting.returncode == 0, stderr
        took_over = f"job {key} (tiny-reader on tiny-babi (hparams 0, seed 0)): its owner, {where}, is a zombie; this driver takes it over"
        assert took_over in stderr
        assert stdout.startswith("done: tiny-reader on tiny-babi")
        assert Path(f"/proc/{owner.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"  # still unreaped throughout
        assert list(_settled(runs, jobs=1).values()) == [1]
    finally:
        owner.kill()
        owner.wait()


STOP_LINE = re.compile(
    r"^stopped by (SIGTERM|SIGINT): (\d) of 4 jobs done, (\d) not run; `concur .* run -a tiny-reader .*` continues it "
    r"\(it runs only the jobs without a result\)$"
)


def test_a_stopped_grid_says_so_last_with_what_is_left_and_exits_with_the_signals_status(tmp_path, tiny_registry):
    runs = tmp_path / "runs"
    for signum, status in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
        driver = _driver(tmp_path, tiny_registry, runs, KILL_SEEDS)
        read = _wait_for_line(driver, "] done ")
        driver.send_signal(signum)
        _, stderr = _rest(driver, read)
        assert driver.returncode == status, stderr
        last = stderr.strip().splitlines()[-1]
        stopped = STOP_LINE.match(last)
        assert stopped is not None, last
        done = sum((path / "result.json").is_file() for path in (runs / "jobs").iterdir())
        assert stopped.group(1) == signum.name and (int(stopped.group(2)), int(stopped.group(3))) == (done, 4 - done)
        assert list((runs / "claims").iterdir()) == []  # the stopped workers' claims released
    rerun = _driver(tmp_path, tiny_registry, runs, KILL_SEEDS)
    stdout, stderr = rerun.communicate(timeout=TIMEOUT_SECONDS)
    assert rerun.returncode == 0, stderr
    _settled(runs, jobs=4)
