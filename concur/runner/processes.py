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


def alive(pid: Any, started: str | None) -> bool:
    """Whether the process still runs (not a reused pid, nor a zombie nobody reaped)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        with contextlib.suppress(PermissionError):  # it exists, owned by another user
            os.kill(pid, 0)
    except ProcessLookupError:
        return False
    fields = process_stat(pid)
    if fields is None:  # no /proc: trust kill(0)
        return True
    return fields[0] != "Z" and (started is None or fields[19] == started)
