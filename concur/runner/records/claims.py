"""Claims: one job, one execution, across any number of drivers and hosts sharing a runs dir.

Before a job runs, its driver claims it by creating `runs/claims/<key>.json` with a hard link
from a complete temporary file: `link` is atomic and fails when the name exists, on local
filesystems and on NFS alike, so of many drivers exactly one gets the claim. The claim names
its owner (host, process, and once submitted, its Slurm job) and a token; its modification
time is the owner's heartbeat, refreshed while the job runs.

A claim is stale when its owner is gone: a process on this host that no longer runs, a Slurm
job no longer in the queue, or, for owners this host cannot ask about, a heartbeat older
than `STALE_SECONDS`. A stale claim is taken over under a short takeover lock (a directory,
`mkdir` being atomic too), so two drivers never both take over one claim. A worker checks
that the claim still holds its token before it writes a result, and a taken-over owner
writes nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from concur.fsutil import FILE_MODE, OWNER_SEPARATOR, atomic_write_json, default_permissions, owned_name, remove_abandoned
from concur.processes import process_gone, process_start
from concur.runner.records.slurm_queue import is_queued

CLAIMS_DIR = "claims"
HEARTBEAT_SECONDS = 30.0  # how often an owner refreshes its claim's modification time
STALE_SECONDS = 600.0  # a claim not refreshed for this long has lost its owner (ten missed heartbeats)
TAKEOVER_LOCK_STALE_SECONDS = 60.0  # a takeover is a few file operations; a lock this old was left by a killed process

QueueCheck = Callable[[str], bool | None]  # Slurm job id -> still queued or running (None: cannot tell)


@dataclass(frozen=True)
class Claim:
    key: str
    token: str
    host: str
    pid: int
    pid_started: str | None
    claimed_at: float
    slurm_id: str | None = None  # set once the job is submitted: the Slurm job then owns the claim

    def describe(self) -> str:
        if self.slurm_id:
            return f"Slurm job {self.slurm_id}"
        return f"process {self.pid} on {self.host}"


class ClaimBook:
    """The claims of one runs dir."""

    def __init__(self, runs_dir: Path, queue_check: QueueCheck | None = is_queued) -> None:
        self.directory = runs_dir / CLAIMS_DIR
        self.queue_check = queue_check

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def acquire(self, key: str) -> Claim | None:
        """Claim `key` for this process; None when a live owner holds it. A stale claim is taken over."""
        claim = Claim(key, uuid.uuid4().hex, socket.gethostname(), os.getpid(), process_start(os.getpid()), time.time())
        return claim if self._create(claim) or self._take_over(claim) else None

    def _take_over(self, claim: Claim) -> bool:
        """Replace a stale claim on `claim.key` by `claim`, under the takeover lock; False when its owner lives."""
        key = claim.key
        held = self.holder(key)
        if held is not None and not self.is_stale(held):
            return False
        with self._takeover_lock(key) as locked:
            if not locked:
                return False
            current = self.holder(key)
            if current is not None and (current.token != (held.token if held else None) or not self.is_stale(current)):
                return False  # someone else claimed it meanwhile
            self.path(key).unlink(missing_ok=True)
            return self._create(claim)

    def holder(self, key: str) -> Claim | None:
        """The claim on `key`, if any (a claim file that cannot be read counts as a claim by nobody alive)."""
        try:
            record = json.loads(self.path(key).read_text(encoding="utf-8"))
            return Claim(**record)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError):
            return Claim(key, "", "", 0, None, 0.0)  # damaged: stale at once

    def holds(self, claim: Claim) -> bool:
        """Whether `claim` is still the claim on its key (not released, not taken over)."""
        current = self.holder(claim.key)
        return current is not None and current.token == claim.token

    def is_stale(self, claim: Claim) -> bool:
        """Whether the claim's owner is gone (a damaged claim has none: claims are only ever written whole)."""
        return self.why_stale(claim) is not None

    def why_stale(self, claim: Claim) -> str | None:
        """Why the claim's owner is gone, in words (its process died or is a zombie, its Slurm job left the queue,
        its heartbeat stopped); None while the owner lives."""
        if not claim.token:
            return "its claim file is damaged"
        heartbeat_age = time.time() - self._heartbeat(claim.key, claim.claimed_at)
        if claim.slurm_id:
            queued = self.queue_check(claim.slurm_id) if self.queue_check else None
            if queued is not None:  # sbatch returns once the controller knows the job, so a queued job is always listed
                return None if queued else f"its owner, Slurm job {claim.slurm_id}, left the queue"
        elif claim.host == socket.gethostname() and claim.pid:
            gone = process_gone(claim.pid, claim.pid_started)
            return None if gone is None else f"its owner, {claim.describe()}, {gone}"
        if heartbeat_age <= STALE_SECONDS:
            return None
        return f"its owner, {claim.describe()}, has not refreshed its claim for {heartbeat_age / 60:.0f} min"

    def hand_to_slurm(self, claim: Claim, slurm_id: str) -> Claim:
        """Record that the Slurm job `slurm_id` now runs the claimed job (the claim keeps its token)."""
        handed = replace(claim, slurm_id=slurm_id)
        if self.holds(claim):
            atomic_write_json(self.path(claim.key), asdict(handed))
        return handed

    def heartbeat(self, claim: Claim) -> bool:
        """Refresh the claim's heartbeat; False when it is no longer ours."""
        if not self.holds(claim):
            return False
        with contextlib.suppress(FileNotFoundError):
            os.utime(self.path(claim.key))
        return True

    def release(self, claim: Claim) -> None:
        """Give the claim up, unless it was taken over (then it is not ours to remove)."""
        if self.holds(claim):
            self.path(claim.key).unlink(missing_ok=True)

    def sweep(self, finished: Iterable[str] = ()) -> None:
        """Remove what killed claimers left: the temporary claim files of those that died between writing one and
        linking it, and the claims on `finished` jobs (keys with a result) whose owners died between writing the
        result and giving the claim up. What a driver does once its grid is over, so a killed driver leaves nothing
        behind; a claim whose owner is alive is its owner's to remove."""
        if not self.directory.is_dir():
            return
        stems = {entry.name.split(OWNER_SEPARATOR, 1)[0] for entry in self.directory.iterdir() if OWNER_SEPARATOR in entry.name}
        for stem in stems:
            remove_abandoned(self.directory, stem)
        for key in finished:
            self.clear_if_stale(key)

    def clear_if_stale(self, key: str) -> None:
        """Remove a claim its owner left behind (killed after the job finished), so no stale claim lingers."""
        if self.path(key).exists():
            claim = self.acquire(key)
            if claim is not None:
                self.release(claim)

    def keys(self) -> list[str]:
        """The keys claimed now, by anyone."""
        if not self.directory.is_dir():
            return []
        return sorted(path.stem for path in self.directory.glob("*.json") if not path.name.startswith("."))

    def _create(self, claim: Claim) -> bool:
        self.directory.mkdir(parents=True, exist_ok=True)
        temporary = self.directory / f"{owned_name(f'.{claim.key}')}.{claim.token}.tmp"
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, default_permissions(FILE_MODE))
        try:  # the temporary file goes whatever happens, a full disk included
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                json.dump(asdict(claim), handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.link(temporary, self.path(claim.key))
            return True
        except FileExistsError:
            return False
        finally:
            temporary.unlink(missing_ok=True)

    def _heartbeat(self, key: str, default: float) -> float:
        try:
            return self.path(key).stat().st_mtime
        except FileNotFoundError:
            return default

    @contextlib.contextmanager
    def _takeover_lock(self, key: str) -> Iterator[bool]:
        """A lock directory held for the few operations of a takeover; yields whether this process got it."""
        lock = self.directory / f".{key}.takeover"
        locked = _make_lock(lock)
        try:
            yield locked
        finally:
            if locked:
                with contextlib.suppress(FileNotFoundError):
                    lock.rmdir()


def _make_lock(lock: Path) -> bool:
    """Create the lock directory; one left by a process killed mid-takeover is removed first."""
    with contextlib.suppress(FileNotFoundError):  # no lock (or its taker just finished): take it
        if time.time() - lock.stat().st_mtime < TAKEOVER_LOCK_STALE_SECONDS:
            return False
        lock.rmdir()
    try:
        lock.mkdir()
        return True
    except FileExistsError:
        return False


class Heartbeat:
    """A daemon thread refreshing claims while their jobs run; `lost` collects claims taken over meanwhile."""

    def __init__(self, book: ClaimBook, interval: float = HEARTBEAT_SECONDS) -> None:
        self.book, self.interval = book, interval
        self._claims: dict[str, Claim] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost: set[str] = set()

    def add(self, claim: Claim) -> None:
        with self._lock:
            self._claims[claim.key] = claim

    def remove(self, key: str) -> None:
        with self._lock:
            self._claims.pop(key, None)

    def __enter__(self) -> Heartbeat:
        self._thread = threading.Thread(target=self._beat, name="concur-claims-heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                claims = list(self._claims.values())
            for claim in claims:
                with contextlib.suppress(OSError):
                    if not self.book.heartbeat(claim):
                        self.lost.add(claim.key)
