"""`python -m concur.runner.execution.worker REQUEST.json`: run one job in this process, for a driver that watches it.

Executors start one worker per job (a local subprocess pinned to a GPU, or a Slurm task).
The worker writes only its job directory; the driver indexes the result. It exits 0 when a
result was written (even a failed one), STORAGE_EXIT when the disk stopped it (its last line
names the path and the free space); any other exit means it died, and the driver records why.
What the job says is logged as plain lines on stdout, which the driver keeps (a `.out` file
beside the request, or the terminal for a single job) and quotes when the worker dies.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import os
import signal
import sys
from pathlib import Path

DRIVER_PID_ENV = "CONCUR_DRIVER_PID"  # set by a local driver: the worker dies with it
STORAGE_EXIT = 75  # EX_TEMPFAIL: a full disk or an I/O error stopped the job; no result, its last output line says where
PACKAGE_LOGGER = "concur"  # every concur module logs below it
WORKER_HANDLER = "concur-worker"  # the name of the handler `log_lines_to_stdout` adds, so it is added once
_PR_SET_PDEATHSIG = 1

logger = logging.getLogger(f"{PACKAGE_LOGGER}.runner.worker")  # not __name__, which is __main__ when run with -m


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m concur.runner.execution.worker", description="Run the job of one request file.")
    parser.add_argument("request", type=Path, metavar="REQUEST.json")
    request_path = parser.parse_args(argv).request
    die_with_parent()
    log_lines_to_stdout()
    from concur.oserrors import is_storage_error, os_error_message, with_path
    from concur.runner.execution.request import JobRequest, run_request  # after the death signal is armed: imports take seconds
    from concur.workspace import Workspace

    request = JobRequest.read(request_path)
    try:
        run_request(request, echo=logger.info)
    except OSError as error:
        if not is_storage_error(error):
            raise
        with contextlib.suppress(OSError):  # the line goes to the driver's .out file, which may be on the full disk too
            print(os_error_message(with_path(error, Workspace(Path(request.runs_dir)).jobs_dir / request.key)), flush=True)
        return STORAGE_EXIT
    return 0


def log_lines_to_stdout() -> None:
    """Send concur's log records to stdout as bare lines, flushed one by one: a worker's output is a log
    file read by people and by the driver (the last lines of a dead worker become its failure reason)."""
    package = logging.getLogger(PACKAGE_LOGGER)
    if any(handler.name == WORKER_HANDLER for handler in package.handlers):
        return
    handler = logging.StreamHandler(sys.stdout)
    handler.name = WORKER_HANDLER
    handler.setFormatter(logging.Formatter("%(message)s"))
    package.addHandler(handler)
    package.setLevel(logging.INFO)


def die_with_parent() -> None:
    """Be killed when the process named by DRIVER_PID_ENV, our parent (the local driver, or the zygote that forked us),
    dies (Linux), so no orphan writes a result nobody indexes."""
    driver = os.environ.get(DRIVER_PID_ENV)
    if not driver or not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != int(driver):  # the driver died before the signal was armed
        os._exit(1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
