"""The driver's side of the zygote (concur.runner.execution.zygote): workers forked from one warm process.

`Zygote.fork` asks for a worker and returns a `ForkedWorker`, which the pool watches and
stops as it would a subprocess: `pid` (the leader of the worker's own session), `poll()` and
`wait()`. A thread reads the zygote's reports. If the zygote dies, its workers die with it
(their parent-death signal); they are reported killed, and the next `fork` starts a new zygote.
A zygote that does not answer a fork in time is killed, so that a late answer is never taken
for a later request's worker; the pool then starts new processes instead (`ZygoteError`), as it
does when the zygote refuses a worker (a GPU worker, where the zygote has initialised CUDA's driver).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from concur.runner.execution.worker import DRIVER_PID_ENV

ANSWER_SECONDS = 120.0  # a zygote still importing torch answers its first request late; one that never does is broken


class ZygoteError(RuntimeError):
    """The zygote could not fork a worker; a new process can still run the job."""


class ForkedWorker:
    """A worker the zygote forked, watched like a `subprocess.Popen`."""

    def __init__(self, zygote: Zygote, pid: int) -> None:
        self.zygote, self.pid = zygote, pid

    def poll(self) -> int | None:
        """Its exit status (minus the signal that killed it), or None while it runs."""
        return self.zygote.exit_code(self.pid)

    def wait(self) -> int:
        return self.zygote.wait(self.pid)


class Zygote:
    """One warm parent process with `environment`, importing `modules`, started on the first `fork` and again whenever it has died."""

    command: tuple[str, ...] = (sys.executable, "-m", "concur.runner.execution.zygote")

    def __init__(self, environment: Mapping[str, str], modules: Sequence[str] = ()) -> None:
        self.environment = {**environment, DRIVER_PID_ENV: str(os.getpid())}
        self.modules = tuple(modules)  # what it imports before its first fork, besides `concur.runner.execution.zygote.PRELOAD`
        self.process: subprocess.Popen[bytes] | None = None
        self.changed = threading.Condition()
        self.codes: dict[int, int] = {}  # exited workers
        self.forked: list[int] = []  # pids the zygote answered with, in order, not yet taken by `fork`
        self.refused: list[str] = []  # the zygote's reasons for not forking, likewise
        self.alive: set[int] = set()  # workers of the zygote process now running
        self.forking = threading.Lock()  # one request at a time: answers come in the order of requests
        self.exited = threading.Event()  # set when a worker exits (or all die with the zygote): the pool's cue to look

    def fork(self, request: Path, output: Path, environment: Mapping[str, str]) -> ForkedWorker:
        """Start the worker of the job `request`, writing to `output`, with `environment` (as a new process would get it)."""
        with self.forking:
            if self.process is None or self.process.poll() is not None:
                self._start()
            process = self.process
            assert process is not None and process.stdin is not None
            order = {"request": str(request), "output": str(output), "env": dict(environment)}
            try:
                process.stdin.write((json.dumps(order) + "\n").encode())
                process.stdin.flush()
            except OSError as error:  # it died since the check above
                raise ZygoteError(f"the worker zygote died before it forked the worker ({error})") from error
            with self.changed:
                if not self.changed.wait_for(lambda: self.forked or self.refused or self.process is not process, ANSWER_SECONDS):
                    process.kill()  # broken; its workers die with it, and its late answer is not taken
                    raise ZygoteError(f"the worker zygote did not fork within {ANSWER_SECONDS:.0f} s")
                if self.refused:
                    raise ZygoteError(self.refused.pop(0))
                if not self.forked:
                    raise ZygoteError("the worker zygote died before it forked the worker")
                return ForkedWorker(self, self.forked.pop(0))

    def exit_code(self, pid: int) -> int | None:
        with self.changed:
            return self.codes.get(pid)

    def wait(self, pid: int) -> int:
        with self.changed:
            self.changed.wait_for(lambda: pid in self.codes)
            return self.codes[pid]

    def wait_for_exit(self, timeout: float) -> None:
        """Return when a worker has exited since the last call, or after `timeout` seconds.

        The pool looks for finished jobs after each wait, so a slot is refilled as soon as its worker exits
        rather than at the next tick of its clock; a worker that exited before the call returns it at once.
        """
        self.exited.wait(timeout)
        self.exited.clear()

    def close(self) -> None:
        """Let the zygote go (it leaves when its stdin closes); workers still running are the pool's to stop."""
        if self.process is None:
            return
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()

    def _start(self) -> None:
        self.process = subprocess.Popen(
            [*self.command, *self.modules],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=self.environment,
            start_new_session=True,
        )
        threading.Thread(target=self._read_reports, args=(self.process,), daemon=True).start()

    def _read_reports(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            report: dict[str, Any] = json.loads(line)
            with self.changed:
                if "pid" in report:
                    self.forked.append(report["pid"])
                    self.alive.add(report["pid"])
                elif "refused" in report:
                    self.refused.append(report["refused"])
                else:
                    self.alive.discard(report["exited"])
                    self.codes[report["exited"]] = report["code"]
                    self.exited.set()
                self.changed.notify_all()
        process.wait()
        with self.changed:  # the zygote is gone, and its workers with it
            for pid in self.alive:
                self.codes[pid] = -signal.SIGKILL
            self.exited.set()
            self.alive.clear()
            self.forked.clear()  # answers no fork took: those workers died too
            self.refused.clear()
            if self.process is process:
                self.process = None
            self.changed.notify_all()
