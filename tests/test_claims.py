"""Claims: of many processes claiming one job at once exactly one wins; stale claims are taken over once."""

from __future__ import annotations

import json
import multiprocessing
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from concur.processes import process_start
from concur.runner.records.claims import STALE_SECONDS, TAKEOVER_LOCK_STALE_SECONDS, Claim, ClaimBook, Heartbeat
from concur.runner.records.slurm_queue import is_alive

KEY = "0123456789abcdef"
CLAIMERS = 16


def _claim_at(runs: str, start: float, results: multiprocessing.Queue, done: multiprocessing.Event) -> None:
    while time.time() < start:
        time.sleep(0.001)
    claim = ClaimBook(Path(runs)).acquire(KEY)
    results.put(claim.token if claim else None)
    done.wait(60)  # a winner stays alive while the others try: a dead owner's claim is rightly taken over


def _race(runs: Path) -> list[str | None]:
    """CLAIMERS processes claiming KEY at the same instant; each one's token or None."""
    context = multiprocessing.get_context("fork")
    results, done = context.Queue(), context.Event()
    start = time.time() + 0.5
    processes = [context.Process(target=_claim_at, args=(str(runs), start, results, done)) for _ in range(CLAIMERS)]
    for process in processes:
        process.start()
    tokens = [results.get(timeout=60) for _ in processes]
    done.set()
    for process in processes:
        process.join(timeout=60)
    return tokens


def _write_claim(book: ClaimBook, **fields) -> Claim:
    claim = Claim(**{"key": KEY, "token": "old", "host": socket.gethostname(), "pid": 0, "pid_started": None, "claimed_at": 0.0, **fields})
    book.directory.mkdir(parents=True, exist_ok=True)
    book.path(KEY).write_text(json.dumps(claim.__dict__))
    return claim


def test_of_processes_claiming_at_once_exactly_one_wins(tmp_path):
    for _ in range(5):
        runs = tmp_path / f"runs-{_}"
        tokens = _race(runs)
        winners = [token for token in tokens if token]
        assert len(winners) == 1
        assert json.loads(ClaimBook(runs).path(KEY).read_text())["token"] == winners[0]
        assert sorted(path.name for path in (runs / "claims").iterdir()) == [f"{KEY}.json"]  # no temporary left


def test_a_claim_of_a_live_process_holds_and_is_released_only_by_its_owner(tmp_path):
    book = ClaimBook(tmp_path)
    claim = book.acquire(KEY)
    assert claim is not None and claim.pid == os.getpid()
    assert book.acquire(KEY) is None  # this process is alive: not stale
    assert book.holds(claim) and book.holder(KEY).describe() == f"process {os.getpid()} on {socket.gethostname()}"
    other = Claim(KEY, "someone-else", claim.host, claim.pid, claim.pid_started, claim.claimed_at)
    book.release(other)
    assert book.holds(claim)
    book.release(claim)
    assert book.holder(KEY) is None and book.keys() == []


def test_a_claim_whose_process_died_here_is_taken_over_at_once(tmp_path):
    book = ClaimBook(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = process_start(child.pid)
    child.wait()
    _write_claim(book, pid=child.pid, pid_started=started, claimed_at=time.time())
    taken = book.acquire(KEY)
    assert taken is not None and taken.token != "old" and book.holds(taken)


def test_a_claim_from_another_host_is_stale_only_after_its_heartbeat_stops(tmp_path):
    book = ClaimBook(tmp_path)
    _write_claim(book, host="node-17", pid=4242, claimed_at=time.time())
    assert book.acquire(KEY) is None  # fresh heartbeat: its owner may be alive
    old = time.time() - STALE_SECONDS - 1
    os.utime(book.path(KEY), (old, old))
    taken = book.acquire(KEY)
    assert taken is not None and taken.host == socket.gethostname()


def test_a_slurm_claim_lives_while_the_job_is_queued(tmp_path):
    queued = {"77_3": True}
    book = ClaimBook(tmp_path, queue_check=lambda slurm_id: queued.get(slurm_id, False))
    _write_claim(book, host="login-1", pid=1, slurm_id="77_3")
    old = time.time() - STALE_SECONDS * 10
    os.utime(book.path(KEY), (old, old))  # pending for hours: nobody heartbeats
    assert book.acquire(KEY) is None
    queued["77_3"] = False  # it left the queue without a result
    assert book.acquire(KEY) is not None


@pytest.mark.parametrize(
    ("state", "alive"),
    [
        ("PENDING", True), ("RUNNING", True), ("COMPLETING", True), ("REQUEUED", True), ("SUSPENDED", True),
        ("SIGNALING", True), ("STOPPED", True), ("REQUEUE_HOLD", True), ("SPECIAL_EXIT", True), ("RESV_DEL_HOLD", True),
        ("COMPLETED", False), ("CANCELLED", False), ("TIMEOUT", False), ("FAILED", False), ("NODE_FAIL", False),
        ("OUT_OF_MEMORY", False), ("PREEMPTED", False), ("", False),
    ],
)  # fmt: skip
def test_a_job_squeue_lists_under_a_flag_is_alive_and_only_an_ended_or_unlisted_one_is_not(state, alive):
    """squeue shows a flag in place of the base state: SIGNALING while a signal is on its way (submitit's USR2
    before the time limit), STOPPED after SIGSTOP. Such a job still runs, so it must neither be collected as a
    failure nor lose its claim."""
    assert is_alive(state) is alive


def test_a_damaged_claim_is_stale_and_a_takeover_lock_blocks_a_second_taker(tmp_path):
    book = ClaimBook(tmp_path)
    book.directory.mkdir()
    book.path(KEY).write_text('{"key": "012')  # truncated by a crash of a filesystem without atomic links
    lock = book.directory / f".{KEY}.takeover"
    lock.mkdir()  # another driver is taking it over now
    assert book.acquire(KEY) is None
    old = time.time() - TAKEOVER_LOCK_STALE_SECONDS - 1
    os.utime(lock, (old, old))  # that driver was killed mid-takeover
    taken = book.acquire(KEY)
    assert taken is not None and book.holds(taken) and not lock.exists()


def test_the_heartbeat_refreshes_claims_and_notices_a_takeover(tmp_path):
    book = ClaimBook(tmp_path)
    claim = book.acquire(KEY)
    old = time.time() - 100
    os.utime(book.path(KEY), (old, old))
    with Heartbeat(book, interval=0.05) as heartbeat:
        heartbeat.add(claim)
        deadline = time.monotonic() + 10
        while book.path(KEY).stat().st_mtime < time.time() - 5:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        _write_claim(book, token="thief", claimed_at=time.time(), pid=1)
        while KEY not in heartbeat.lost:
            assert time.monotonic() < deadline
            time.sleep(0.02)


@pytest.mark.slow
@pytest.mark.parametrize("rounds", [20])
def test_twenty_rounds_of_racing_takeovers_of_one_stale_claim_give_one_owner(tmp_path, rounds):
    for round_ in range(rounds):
        runs = tmp_path / f"runs-{round_}"
        book = ClaimBook(runs)
        _write_claim(book, host="dead-node", pid=9, claimed_at=0.0)
        old = time.time() - STALE_SECONDS - 1
        os.utime(book.path(KEY), (old, old))
        winners = [token for token in _race(runs) if token]
        assert len(winners) == 1 and book.holder(KEY).token == winners[0]
        assert sorted(path.name for path in book.directory.iterdir()) == [f"{KEY}.json"]  # no lock or temporary left


def test_the_temporary_files_of_claimers_killed_mid_way_are_swept_and_no_live_claimers(tmp_path):
    """A driver killed between writing its claim's temporary file and removing it leaves `.KEY@HOST@PID.TOKEN.tmp`;
    a driver's sweep at the end of its grid removes those whose process is gone, and nothing else."""
    book = ClaimBook(tmp_path)
    book.directory.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = socket.gethostname()
    left = [book.directory / f".k1@{host}@{dead.pid}.0123abcd.tmp", book.directory / f".k2@{host}@{dead.pid}.89abcdef.tmp"]
    live = book.directory / f".k1@{host}@{os.getpid()}.4567ef01.tmp"
    for path in (*left, live):
        path.write_text("{}")
    claim = book.acquire("k3")
    assert claim is not None and claim.pid == os.getpid() and book.holds(claim)
    book.sweep()
    assert sorted(path.name for path in book.directory.iterdir()) == sorted(["k3.json", live.name])


def test_the_sweep_removes_a_finished_jobs_claim_only_when_its_owner_is_gone(tmp_path):
    """A driver killed between writing a result and giving its claim up leaves the claim; the sweep at the end of a
    grid removes it for the finished keys it is given, and leaves a live owner's claim and unfinished keys alone."""
    book = ClaimBook(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    _write_claim(book, pid=dead.pid, claimed_at=time.time())  # heartbeat fresh: only the owner's death makes it stale
    book.sweep()  # no finished keys given: the claim stays
    assert book.path(KEY).exists()
    book.sweep(finished=[KEY])
    assert not book.path(KEY).exists()
    live = _write_claim(book, pid=os.getpid(), pid_started=process_start(os.getpid()), claimed_at=time.time())
    book.sweep(finished=[KEY])
    assert book.holder(KEY) == live
