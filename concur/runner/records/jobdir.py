"""The files of one job directory, `runs/jobs/<key>/`, and the state they imply.

```
job.json              written when the job starts: its definition, host, pid, start time
log                   what the job printed while it ran (every attempt)
interrupted.json      written when a signal stopped the last attempt (preemption, time limit)
previous/             failed results of earlier attempts, set aside by --retry-failed
predictions.json.gz   {qid: answer}, written before the result
result.json           written last and atomically: status "ok" (with EM/F1) or "failed"
```

A job is finished only when `result.json` exists, and a finished result is never removed.
A directory with `job.json` and no result is a job that is running (a live owner holds its
claim, `concur.runner.records.claims`) or was interrupted (killed, crashed host, full disk), and an
interrupted job simply runs again.
"""

from __future__ import annotations

import json
import os
import re
import socket
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from concur.errors import ConcurError, DamagedFileError
from concur.fsutil import UNREADABLE, atomic_write_json, read_json
from concur.processes import process_start
from concur.runner.records.claims import ClaimBook
from concur.runner.records.result import JobResult

JOB_FILE = "job.json"
LOG_FILE = "log"
PREDICTIONS_FILE = "predictions.json.gz"
RESULT_FILE = "result.json"
INTERRUPTED_FILE = "interrupted.json"  # a job stopped by a signal (preemption, time limit): which, when, where
PREDICTIONS_GZIP_LEVEL = 6

TRUNCATED_STRING = "Unterminated string"  # json's message for a file cut inside a string
# What json stops at when a file is cut inside a number or a literal: the rest of the file is one partial token.
PARTIAL_TOKEN = re.compile(r"[0-9.eE+\-]+|t(?:r(?:ue?)?)?|f(?:a(?:l(?:se?)?)?)?|n(?:u(?:ll?)?)?")

PREVIOUS_DIR = "previous"  # failed results set aside when a job is run again (--retry-failed)


class JobState(StrEnum):
    PENDING = "pending"  # never started
    RUNNING = "running"  # claimed by a live owner (a driver on any host, or a Slurm job)
    INTERRUPTED = "interrupted"  # started, no result, and nobody alive holds its claim
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True)
class JobDir:
    path: Path

    @property
    def result_path(self) -> Path:
        return self.path / RESULT_FILE

    def result(self) -> JobResult | None:
        """The job's result, None while it has none; a damaged one raises DamagedFileError, never reads as None
        (a runner that took it for "no result" would run the job again and overwrite it)."""
        data = read_job_file(self.result_path)
        if data is None:
            return None
        try:
            return JobResult.from_json(data)
        except ValueError as problem:
            raise DamagedFileError(self.result_path, str(problem)) from None

    def started(self) -> dict[str, Any] | None:
        """What job.json recorded when the job started, None before; a damaged one raises DamagedFileError."""
        return read_job_file(self.path / JOB_FILE)

    def state(self) -> JobState:
        result = self.result()
        if result is not None:
            return JobState.DONE if result.ok else JobState.FAILED
        claims = ClaimBook(self.path.parent.parent)
        claim = claims.holder(self.path.name)
        if claim is not None and not claims.is_stale(claim):
            return JobState.RUNNING
        return JobState.INTERRUPTED if (self.path / JOB_FILE).is_file() else JobState.PENDING

    def reset(self) -> None:
        """Clear what an unfinished attempt left, so a rerun starts clean; the caller holds the job's claim.

        A finished result is never removed: an ok one stops the reset, a failed one (run again
        with --retry-failed) is set aside under `previous/`. The log keeps every attempt.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        result = self.result()
        if result is not None and result.ok:
            raise ConcurError(f"job {self.path.name} already finished ({self.result_path}); its result is never replaced")
        if result is not None:
            previous = self.path / PREVIOUS_DIR
            previous.mkdir(exist_ok=True)
            os.replace(self.result_path, previous / f"result-{len(list(previous.iterdir())) + 1}.json")
        for name in (JOB_FILE, PREDICTIONS_FILE, INTERRUPTED_FILE):
            (self.path / name).unlink(missing_ok=True)

    def write_started(self, definition: dict[str, Any], started_at: str) -> None:
        identity = {"host": socket.gethostname(), "pid": os.getpid(), "pid_started": process_start(os.getpid())}
        atomic_write_json(self.path / JOB_FILE, {**definition, **identity, "started_at": started_at})

    def write_predictions(self, predictions: dict[str, str]) -> None:
        atomic_write_json(self.path / PREDICTIONS_FILE, predictions, gzip_level=PREDICTIONS_GZIP_LEVEL)

    def write_interrupted(self, record: dict[str, Any]) -> None:
        atomic_write_json(self.path / INTERRUPTED_FILE, record)

    def interrupted(self) -> dict[str, Any] | None:
        """Why the last attempt stopped without a result, when a signal stopped it."""
        path = self.path / INTERRUPTED_FILE
        try:
            return read_json(path) if path.is_file() else None
        except (OSError, ValueError, *UNREADABLE):
            return {"signal": "a signal (its record is damaged)"}

    def write_result(self, result: JobResult) -> None:
        atomic_write_json(self.result_path, result.to_json())

    def log_path(self) -> Path:
        return self.path / LOG_FILE


def job_dir_names(jobs_dir: Path) -> list[str]:
    """The names (job keys) of the directories under `runs/jobs/`, sorted, from one listing: scandir knows
    which entries are directories without a stat each, which counts with 100,000 jobs on a network disk."""
    try:
        with os.scandir(jobs_dir) as entries:
            return sorted(entry.name for entry in entries if not entry.name.startswith(".") and entry.is_dir())
    except (FileNotFoundError, NotADirectoryError):
        return []


def result_stamps(jobs_dir: Path) -> dict[str, str]:
    """{key: stamp} of every job directory holding a result.json, by one stat per directory and no read:
    how a reader finds the results the index does not hold yet, or holds from an older file."""
    stamps = {}
    for name in job_dir_names(jobs_dir):
        stamp = file_stamp(jobs_dir / name / RESULT_FILE)
        if stamp is not None:
            stamps[name] = stamp
    return stamps


def file_stamp(path: Path) -> str | None:
    """`mtime_ns:size` of a file, None when there is none: a rewritten or truncated file gets another stamp."""
    try:
        stat = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return f"{stat.st_mtime_ns}:{stat.st_size}"


def read_job_file(path: Path) -> dict[str, Any] | None:
    """A job directory's JSON object, None when the file does not exist; DamagedFileError says what is wrong
    with one that exists (empty, truncated, not JSON, not an object)."""
    try:
        payload = read_json(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except json.JSONDecodeError as error:
        raise DamagedFileError(path, json_problem(error)) from error
    except UNREADABLE as error:
        raise DamagedFileError(path, f"unreadable: {error}") from error
    if not isinstance(payload, dict):
        raise DamagedFileError(path, f"a JSON {type(payload).__name__}, not an object")
    return payload


def json_problem(error: json.JSONDecodeError) -> str:
    """What a JSON parse error means for a file written whole and atomically: empty, cut short, or not JSON."""
    where = f"at line {error.lineno} column {error.colno}"
    if not error.doc.strip():
        return "empty file"
    cut_inside_a_token = PARTIAL_TOKEN.fullmatch(error.doc[error.pos :].rstrip()) is not None  # "0." or "1e" or "tr" at the end
    if error.pos >= len(error.doc.rstrip()) or error.msg.startswith(TRUNCATED_STRING) or cut_inside_a_token:
        return f"truncated JSON {where}"
    return f"not JSON: {error.msg} {where}"


