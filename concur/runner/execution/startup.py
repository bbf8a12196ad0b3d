"""How long a worker waited before its job's clock started: its own process's start, and its pool's.

A job's own wall time leaves out what its process spent before the job began (a new Python
importing torch, or a forked worker settling in) and, for a forked worker, what its run spent
once getting the zygote ready (importing those modules once for every job). Plans count both
(`concur.runner.planning.estimate`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

POOL_START_ENV = "CONCUR_POOL_START_SECONDS"  # set by the zygote in each worker it forks: its start to the end of its imports


def process_age_seconds(stat: str | None = None, boot_clock: float | None = None, ticks_per_second: int | None = None) -> float | None:
    """Seconds since this process started (or was forked), from Linux's /proc/self/stat; None elsewhere.

    What a job spends before its clock starts (a new Python importing torch, or a forked worker
    settling in) is part of its cost that the job's own wall time leaves out.
    """
    try:
        stat = Path("/proc/self/stat").read_text() if stat is None else stat
        boot_clock = time.clock_gettime(time.CLOCK_BOOTTIME) if boot_clock is None else boot_clock
        ticks_per_second = os.sysconf("SC_CLK_TCK") if ticks_per_second is None else ticks_per_second
    except (OSError, AttributeError, ValueError):
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # after the command name, which may hold spaces: field 3 onwards
    return max(0.0, boot_clock - int(fields[22 - 3]) / ticks_per_second)  # field 22: start time, in ticks since boot


def pool_start_seconds() -> float | None:
    """What this forked worker's zygote recorded in POOL_START_ENV; None in a new process, or if the value is not a number."""
    try:
        return float(os.environ[POOL_START_ENV])
    except (KeyError, ValueError):
        return None
