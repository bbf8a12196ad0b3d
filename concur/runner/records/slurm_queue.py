"""What Slurm's queue says of submitted jobs (squeue), for the Slurm executor and for claims held by Slurm jobs."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterable

from concur.errors import ConcurError

SQUEUE_TIMEOUT_SECONDS = 60
LISTING_FRESH_SECONDS = 5.0  # a listing answers every claim check for this long: one squeue per status, not one per job
# The base states of a job that has ended (https://slurm.schedmd.com/job_state_codes.html). squeue shows a set
# flag in place of the base state (SIGNALING while a signal is on its way, STOPPED after SIGSTOP, REQUEUE_HOLD,
# ...), so a listed job in any other state may still run; an unlisted one has ended (or was purged).
QUEUE_STATES_ENDED = frozenset(
    {"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "REVOKED", "TIMEOUT"}
)

QueueStates = dict[str, tuple[str, str]]  # Slurm job id -> (state, reason), as squeue lists them

_listing: tuple[float, QueueStates] | None = None


def queue_states(slurm_ids: Iterable[str]) -> QueueStates:
    """Slurm's (state, reason) of each job or array task it still knows (ended ones stay listed for MinJobAge).

    A fresh answer makes the listing `is_queued` keeps stale: a process that asks both (a status
    in a long-lived driver or notebook) must not hear that a job ended and, from the older
    listing, that its claim is still held.
    """
    global _listing
    arrays = ",".join(sorted({slurm_id.split("_")[0] for slurm_id in slurm_ids}))
    if not arrays:
        return {}
    _listing = None
    return _squeue(["--jobs", arrays])


def is_queued(slurm_id: str) -> bool | None:
    """Whether Slurm will still run (or runs now) `slurm_id`; None where there is no Slurm to ask."""
    global _listing
    if shutil.which("squeue") is None:
        return None
    if _listing is None or time.monotonic() - _listing[0] > LISTING_FRESH_SECONDS:
        try:
            _listing = (time.monotonic(), _squeue([]))
        except ConcurError:
            return None
    return is_alive(_listing[1].get(slurm_id, ("", ""))[0])


def is_alive(state: str) -> bool:
    """Whether a job squeue lists in `state` ("" where it lists none) may still run or runs now."""
    return bool(state) and state not in QUEUE_STATES_ENDED


def _squeue(selection: list[str]) -> QueueStates:
    try:
        listing = subprocess.run(
            ["squeue", "-h", "-r", "-t", "all", "-o", "%i %T %r", *selection],
            capture_output=True,
            text=True,
            timeout=SQUEUE_TIMEOUT_SECONDS,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ConcurError(f"cannot ask Slurm for the state of the submitted jobs (squeue: {error})") from error
    if listing.returncode != 0 and "Invalid job id" not in listing.stderr:
        raise ConcurError(f"squeue failed: {listing.stderr.strip()}")
    states = {}
    for line in listing.stdout.splitlines():
        slurm_id, state, reason = (line.split(None, 2) + ["", ""])[:3]
        if slurm_id:
            states[slurm_id] = (state, reason.strip())
    return states
