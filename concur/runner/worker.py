"""`python -m concur.runner.worker REQUEST.json`: run one job in this process, for a driver that watches it.

Executors start one worker per job (a local subprocess pinned to a GPU, or a Slurm task).
The worker writes only its job directory; the driver indexes the result. It exits 0 when a
result was written (even a failed one); any other exit means it died, and the driver records why.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from pathlib import Path

DRIVER_PID_ENV = "CONCUR_DRIVER_PID"  # set by a local driver: the worker dies with it
_PR_SET_PDEATHSIG = 1


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m concur.runner.worker REQUEST.json", file=sys.stderr)
        return 2
    _die_with_driver()
    from concur.runner.request import JobRequest, run_request  # after the death signal is armed: imports take seconds

    run_request(JobRequest.read(Path(argv[0])), echo=lambda line: print(line, flush=True))
    return 0


def _die_with_driver() -> None:
    """Be killed when the local driver dies (Linux), so no orphan writes a result nobody indexes."""
    driver = os.environ.get(DRIVER_PID_ENV)
    if not driver or not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != int(driver):  # the driver died before the signal was armed
        os._exit(1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
