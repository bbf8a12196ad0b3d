"""Errors a user can act on.

The CLI prints a `ConcurError` as one clear message (no traceback); anything else is a bug.
Each error names what is wrong and where: the file, line, field, or the closest valid name.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

NAMES_SHOWN = 12  # known names an error lists when none is close to the one given


class ConcurError(Exception):
    """Base class of every error caused by input the user can fix."""


class UnknownNameError(ConcurError):
    """A benchmark, approach, reader or option name that is not registered."""

    def __init__(self, kind: str, name: str, known: Iterable[str]) -> None:
        self.kind, self.name = kind, name
        self.known = sorted(known)
        message = f"unknown {kind} {name!r}"
        hint = closest(name, self.known)
        if hint:
            message += f"; did you mean {hint!r}?"
        elif self.known:
            message += f"; known: {some_names(self.known)}"
        super().__init__(message)


class SpecError(ConcurError):
    """A TOML spec that cannot be used: names the file, the line (where known) and the field."""

    def __init__(self, path: Path | str, field: str | None, problem: str, *, line: int | None = None, column: int | None = None) -> None:
        self.path, self.field, self.problem, self.line, self.column = Path(path), field, problem, line, column
        where = location(path, line, column) + (f", field {field!r}" if field else "")
        super().__init__(f"{where}: {problem}")


class DataFormatError(ConcurError):
    """A data file that does not have the format it should: names the file, line and column."""

    def __init__(self, path: Path | str, problem: str, line: int | None = None, column: int | None = None) -> None:
        self.path, self.problem, self.line, self.column = Path(path), problem, line, column
        super().__init__(f"{location(path, line, column)}: {problem}")


class JobsFailedError(ConcurError):
    """Some jobs of a grid failed; the others' results stand (and a report can still be written)."""


class JobsUnfinishedError(ConcurError):
    """Some jobs of a grid have no result yet (left to other drivers or to Slurm, or interrupted): not done, not failed."""

    exit_status = 3


class StorageError(ConcurError):
    """A full disk or an I/O error stopped a job's worker: no job is at fault, and none is recorded as failed."""


class ClaimLostError(ConcurError):
    """A job's claim was taken over while it ran (its owner stopped heartbeating), so its result was not written."""


class JobInterrupted(BaseException):  # noqa: N818 - like KeyboardInterrupt, which it parallels
    """A job stopped by a signal (preemption, a time limit): no result, to be run again. Not an Exception,
    so that no `except Exception` records it as the job's failure."""


class DownloadError(ConcurError):
    """A download that failed or delivered the wrong bytes."""


class MissingSourceError(ConcurError):
    """A source file that is neither found locally nor downloadable."""


class ModelUnavailableError(ConcurError):
    """Pretrained weights that cannot be loaded (offline, missing extra, bad path)."""


class NonFiniteLossError(ConcurError):
    """Training diverged: the loss became NaN or infinite (the job fails with the step, not a meaningless score)."""


def location(path: Path | str, line: int | None = None, column: int | None = None) -> str:
    """`FILE`, `FILE, line L` or `FILE, line L column C`: where a problem is, as every error says it."""
    where = f"{path}"
    if line is not None:
        where += f", line {line}" + (f" column {column}" if column is not None else "")
    return where


def some_names(names: Iterable[str], limit: int = NAMES_SHOWN) -> str:
    """The first `limit` names, comma-separated, with "..." when there are more: a hint that fits on one line."""
    listed = list(names)
    return ", ".join(listed[:limit]) + (", ..." if len(listed) > limit else "")


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate most similar to `name`, if any is similar enough to suggest."""
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


REBUILD_FIX = "`concur store rebuild` moves it aside and reindexes (nothing is deleted)"


class DamagedFileError(ConcurError):
    """A file of the runs directory (result.json, job.json, the index) that cannot be read as what it should be.

    Never treated as "no file": a runner that took a damaged result for a missing one would run
    the job again and overwrite it. The message names the file, what is wrong and the fix.
    """

    def __init__(self, path: Path | str, problem: str, fix: str = REBUILD_FIX) -> None:
        self.path, self.problem = Path(path), problem
        super().__init__(f"{path} is damaged ({problem}); {fix}")
