"""Errors a user can act on.

The CLI prints a `ConcurError` as one clear message (no traceback); anything else is a bug.
Each error names what is wrong and where: the file, line, field, or the closest valid name.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path


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
            shown = ", ".join(self.known[:12]) + (", ..." if len(self.known) > 12 else "")
            message += f"; known: {shown}"
        super().__init__(message)


class SpecError(ConcurError):
    """A TOML spec that cannot be used: names the file and the field."""

    def __init__(self, path: Path | str, field: str | None, problem: str) -> None:
        self.path, self.field = Path(path), field
        where = f"{path}" + (f", field {field!r}" if field else "")
        super().__init__(f"{where}: {problem}")


class DataFormatError(ConcurError):
    """A data file that does not have the format it should: names the file and line."""

    def __init__(self, path: Path | str, problem: str, line: int | None = None) -> None:
        self.path, self.line = Path(path), line
        where = f"{path}" + (f", line {line}" if line is not None else "")
        super().__init__(f"{where}: {problem}")


class JobsFailedError(ConcurError):
    """Some jobs of a grid failed; the others' results stand (and a report can still be written)."""


class DownloadError(ConcurError):
    """A download that failed or delivered the wrong bytes."""


class MissingSourceError(ConcurError):
    """A source file that is neither found locally nor downloadable."""


class NotRunnableError(ConcurError):
    """An approach that is registered but cannot run in this installation."""


class ModelUnavailableError(ConcurError):
    """Pretrained weights that cannot be loaded (offline, missing extra, bad path)."""


class NonFiniteLossError(ConcurError):
    """Training diverged: the loss became NaN or infinite (the job fails with the step, not a meaningless score)."""


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate most similar to `name`, if any is similar enough to suggest."""
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None
