"""A live view of a grid being run: done / running / failed / pending, the running jobs, and an ETA.

In a terminal it is a table redrawn in place (rich); elsewhere (logs, CI) each start and end
is one line, so a log of a days-long study stays readable. Either way, the last line says how
many jobs ran and the wall time they took, the number a time budget is about.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from rich.live import Live
from rich.table import Table

from concur.progress import STDERR, progress_enabled
from concur.runner.planning.estimate import makespan
from concur.runner.records.jobdir import JobState
from concur.runner.scheduling.outcomes import Outcome

REFRESHES_PER_SECOND = 2


class GridProgress:
    """Told by the pool of each start and end; shows counts, running jobs and the remaining time."""

    def __init__(self, total: int, echo: Callable[[str], None]) -> None:
        self.total, self.echo = total, echo
        self.started_at: dict[str, float] = {}
        self.devices: dict[str, str] = {}
        self.counts: Counter[str] = Counter()
        self.ran: Counter[str] = Counter()  # outcomes of the jobs run by this driver, by state
        self.opened = time.monotonic()
        self.running: list[Any] = []
        self.pending: list[Any] = []
        self.held: list[tuple[Any, str]] = []  # (task, owner) of the jobs another driver runs
        self.live = Live(console=STDERR, refresh_per_second=REFRESHES_PER_SECOND, transient=True) if progress_enabled() else None

    def __enter__(self) -> GridProgress:
        self.opened = time.monotonic()
        if self.live is not None:
            self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.stop()
        if self.started_at or self.ran:
            self.echo(self.wall_line())

    def wall_line(self) -> str:
        """`4 jobs ran (3 done, 1 failed) in 0:12:31 wall time`."""
        states = ", ".join(f"{count} {state}" for state, count in sorted(self.ran.items()))
        ran = sum(self.ran.values())
        wall = timedelta(seconds=round(time.monotonic() - self.opened))
        return f"{ran} job{'s' if ran != 1 else ''} ran" + (f" ({states})" if states else "") + f" in {wall} wall time"

    def started(self, task: Any, gpu: str | None) -> None:
        key = task.job.key
        self.started_at[key] = time.monotonic()
        self.devices[key] = f"GPU {gpu}" if gpu is not None else "CPU"
        if self.live is None:
            self.echo(f"{self._position()} started {task.job.describe()} on {self.devices[key]}  job {key}")

    def finished(self, outcome: Outcome) -> None:
        self.counts[outcome.state.value] += 1
        self.ran[outcome.state.value] += 1
        if self.live is None:
            self.echo(f"{self._position()} {self._describe(outcome)}")

    def settled_elsewhere(self, outcome: Outcome) -> None:
        """A job another driver runs now (the pool has said so) or has just finished: counted for the position,
        not as a job this driver ran, and never described as failed for lack of a result."""
        self.counts[outcome.state.value] += 1
        if self.live is None and outcome.state is not JobState.RUNNING:
            self.echo(f"{self._position()} {self._describe(outcome)} (by another driver)")

    def update(self, running: Sequence[Any], pending: Sequence[Any], outcomes: Sequence[Any], held: Sequence[tuple[Any, str]] = ()) -> None:
        """The pool's state now; `held` are the jobs other drivers run, with their owners, which this driver waits for."""
        self.running, self.pending, self.held = list(running), list(pending), list(held)
        self.counts = Counter(outcome.state.value for outcome in outcomes)
        if self.live is not None:
            self.live.update(self._table())

    def eta_seconds(self) -> tuple[float, int]:
        """The pending jobs packed, longest first, onto as many slots as jobs run now, after what the running ones have
        left (their wall estimates); and how many jobs have no estimate."""
        now = time.monotonic()
        left = [max(0.0, task.estimate_seconds - (now - self.started_at.get(task.job.key, now))) for task in self.running]
        unknown = sum(1 for task in [*self.pending, *self.running] if not task.estimate_seconds)
        return makespan([task.estimate_seconds for task in self.pending], max(1, len(self.running)), left), unknown

    def _position(self) -> str:
        done = self.counts[JobState.DONE.value] + self.counts[JobState.FAILED.value]
        return f"[{done}/{self.total}]"

    def _describe(self, outcome: Outcome) -> str:
        job, result = outcome.job, outcome.result
        if outcome.state is JobState.DONE and result is not None:
            em, f1, seconds = result.exact_match or 0.0, result.f1 or 0.0, result.wall_seconds or 0.0
            return f"done {job.describe()}: EM {em:.2f}  F1 {f1:.2f}  ({seconds:.0f} s)"
        return f"FAILED {job.describe()}: {outcome.error}"

    def _table(self) -> Table:
        eta, unknown = self.eta_seconds()
        counts = self.counts
        elsewhere = f"  {len(self.held)} running elsewhere" if self.held else ""
        summary = (
            f"{counts[JobState.DONE.value]} done  {len(self.running)} running{elsewhere}  {counts[JobState.FAILED.value]} failed  "
            f"{len(self.pending)} pending  of {self.total}   ETA {timedelta(seconds=round(eta))}"
            + (f" (+ {unknown} jobs not yet measured)" if unknown else "")
        )
        table = Table(title=summary, title_justify="left")
        for column in ("running job", "device", "elapsed"):
            table.add_column(column)
        now = time.monotonic()
        for task in self.running:
            key = task.job.key
            elapsed = timedelta(seconds=round(now - self.started_at.get(key, now)))
            table.add_row(task.job.describe(), self.devices.get(key, ""), str(elapsed))
        for task, owner in self.held:
            table.add_row(task.job.describe(), f"elsewhere: {owner}", "")
        return table
