"""Whether a process recorded in a file (a job's worker, a claim's owner) still runs on this host (Linux /proc)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any


def process_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (Linux): [state, ppid, ...]."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()


def process_start(pid: int) -> str | None:
    """The kernel's start time of a process (Linux), which tells a reused pid apart."""
    fields = process_stat(pid)
    return fields[19] if fields else None


def process_gone(pid: Any, started: str | None) -> str | None:
    """Why the process no longer runs ("no longer runs", "is a zombie": dead, not yet reaped by its parent), None while it runs.

    A reused pid (another start time) counts as gone; without /proc, `kill(pid, 0)` is trusted.
    """
    if not isinstance(pid, int) or pid <= 0:
        return "no longer runs"
    try:
        with contextlib.suppress(PermissionError):  # it exists, owned by another user
            os.kill(pid, 0)
    except ProcessLookupError:
        return "no longer runs"
    fields = process_stat(pid)
    if fields is None:  # no /proc: trust kill(0)
        return None
    if started is not None and fields[19] != started:
        return "no longer runs"
    return "is a zombie" if fields[0] == "Z" else None
