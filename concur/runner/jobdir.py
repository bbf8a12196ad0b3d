"""The files of one job directory, `runs/jobs/<key>/`, and the state they imply.

```
job.json              written when the job starts: its definition, host, pid, start time
log                   what the job printed while it ran
predictions.json.gz   {qid: answer}, written before the result
result.json           written last and atomically: status "ok" (with EM/F1) or "failed"
```

A job is finished only when `result.json` exists; a directory with `job.json` and no
result is a job that is running or was interrupted (killed, crashed host, full disk), and
such a job simply runs again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from concur.fsutil import atomic_write_json, read_json

JOB_FILE = "job.json"
LOG_FILE = "log"
PREDICTIONS_FILE = "predictions.json.gz"
RESULT_FILE = "result.json"
PREDICTIONS_GZIP_LEVEL = 6

_RUNNING_HERE: set[Path] = set()  # job directories this process is executing right now


class JobState(StrEnum):
    PENDING = "pending"  # never started
    RUNNING = "running"  # started by a live process on this host
    INTERRUPTED = "interrupted"  # started, no result, its process is gone
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True)
class JobDir:
    path: Path

    @property
    def result_path(self) -> Path:
        return self.path / RESULT_FILE

    def result(self) -> dict[str, Any] | None:
        return read_json(self.result_path) if self.result_path.is_file() else None

    def started(self) -> dict[str, Any] | None:
        job_file = self.path / JOB_FILE
        return read_json(job_file) if job_file.is_file() else None

    def state(self) -> JobState:
        result = self.result()
        if result is not None:
            return JobState.DONE if result.get("status") == "ok" else JobState.FAILED
        started = self.started()
        if started is None:
            return JobState.PENDING
        if started.get("host") != socket.gethostname():
            return JobState.INTERRUPTED
        if started.get("pid") == os.getpid():  # this process wrote it: is it still at it?
            return JobState.RUNNING if self.path in _RUNNING_HERE else JobState.INTERRUPTED
        return JobState.RUNNING if _alive(started.get("pid"), started.get("pid_started")) else JobState.INTERRUPTED

    @contextlib.contextmanager
    def running_here(self) -> Iterator[None]:
        """Mark the job as executing in this process for as long as the block runs."""
        _RUNNING_HERE.add(self.path)
        try:
            yield
        finally:
            _RUNNING_HERE.discard(self.path)

    def reset(self) -> None:
        """Remove everything a previous attempt left, so a rerun starts clean."""
        if self.path.exists():
            shutil.rmtree(self.path)
        self.path.mkdir(parents=True)

    def write_started(self, definition: dict[str, Any], started_at: str) -> None:
        identity = {"host": socket.gethostname(), "pid": os.getpid(), "pid_started": _process_start(os.getpid())}
        atomic_write_json(self.path / JOB_FILE, {**definition, **identity, "started_at": started_at})

    def write_predictions(self, predictions: dict[str, str]) -> None:
        atomic_write_json(self.path / PREDICTIONS_FILE, predictions, gzip_level=PREDICTIONS_GZIP_LEVEL)

    def write_result(self, result: dict[str, Any]) -> None:
        atomic_write_json(self.result_path, result)

    def log_path(self) -> Path:
        return self.path / LOG_FILE


def _process_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (Linux): [state, ppid, ...]."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()


def _process_start(pid: int) -> str | None:
    """The kernel's start time of a process (Linux), which tells a reused pid apart."""
    fields = _process_stat(pid)
    return fields[19] if fields else None


def _alive(pid: Any, started: str | None) -> bool:
    """Whether the process that wrote job.json still runs (not a reused pid, nor a zombie nobody reaped)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        with contextlib.suppress(PermissionError):  # it exists, owned by another user
            os.kill(pid, 0)
    except ProcessLookupError:
        return False
    fields = _process_stat(pid)
    if fields is None:  # no /proc: trust kill(0)
        return True
    return fields[0] != "Z" and (started is None or fields[19] == started)


def job_dirs(jobs_dir: Path) -> list[JobDir]:
    """Every job directory under `runs/jobs/`."""
    if not jobs_dir.is_dir():
        return []
    return [JobDir(path) for path in sorted(jobs_dir.iterdir()) if path.is_dir() and not path.name.startswith(".")]
