"""Signals that stop a run: Ctrl-C (SIGINT) and SIGTERM (a scheduler, `kill`) both become `Stopped`.

A stopped study is not a failed one: its workers are stopped, their claims released, and
running the same command again continues it. The driver says how far the run got
(`Stopped.summary`), and the command line prints it last and exits with the shell's status
for the signal (128 + its number: 130 for SIGINT, 143 for SIGTERM), so a script or a batch
system can tell a stop from success and from failure.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

SIGNAL_EXIT_BASE = 128  # a process ended by signal N exits with 128 + N, as shells report it


class Stopped(KeyboardInterrupt):
    """A run stopped by a signal; `summary` (the driver's) says what it had done and what is left."""

    def __init__(self, signum: int = signal.SIGINT, summary: str | None = None) -> None:
        self.signum, self.summary = signal.Signals(signum), summary
        super().__init__(f"stopped by {self.signum.name}")

    @classmethod
    def of(cls, interrupt: KeyboardInterrupt, summary: str | None = None) -> Stopped:
        """The stop `interrupt` stands for (a plain KeyboardInterrupt is Ctrl-C), with the driver's `summary`."""
        return cls(interrupt.signum if isinstance(interrupt, Stopped) else signal.SIGINT, summary)

    @property
    def exit_status(self) -> int:
        return SIGNAL_EXIT_BASE + int(self.signum)


@contextlib.contextmanager
def terminate_as_stop() -> Iterator[None]:
    """While it lasts, SIGTERM raises Stopped in the main thread, as Ctrl-C raises KeyboardInterrupt (elsewhere: nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise Stopped(signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
