"""`python -m concur.runner.execution.zygote`: a warm parent that forks the local workers of a grid.

A worker started as a new Python process spends seconds before its job begins, importing
torch and transformers' model code (docs/performance.md), and every job of a grid pays it again. The
local pool starts one zygote per grid run, with the driver's environment and the modules its
approaches' jobs import (`ApproachKind.modules`: transformers' model code only for a grid with
pretrained models); the zygote imports those once, then forks a worker per job. Each child leads its own session (so a time
limit kills everything it started), takes the job's environment and output file, and runs
`concur.runner.execution.worker` exactly as a new process would. Workers on GPUs are forked too, each
initialising CUDA itself under its own CUDA_VISIBLE_DEVICES. That holds only while the zygote
has not initialised CUDA's driver: a child forked after that cannot use CUDA, and the driver also
fixes the device count it saw. Importing torch and transformers does not initialise it; should
something ever do so, the zygote refuses every GPU worker (`cuda_initialised`), and the pool
starts those as new processes.

Protocol, one JSON object per line. The driver writes `{"request": PATH, "output": PATH, "env":
{...}}` to the zygote's stdin; the zygote answers `{"pid": PID}` once the child is forked, and
`{"exited": PID, "code": CODE}` when a child ends (CODE as subprocess reports it: the exit
status, or minus the signal that killed it). A worker it will not fork is answered
`{"refused": REASON}`. The zygote dies with the driver (Linux's parent-death
signal) and leaves when its stdin closes; its children die with it the same way.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import select
import sys
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from concur.runner.execution.startup import POOL_START_ENV, process_age_seconds
from concur.runner.execution.worker import DRIVER_PID_ENV, die_with_parent

# What every job imports, heaviest first: imported here once, shared by every fork; the command line
# adds what the grid's approaches import. torch._dynamo (and sympy with it) comes in with a job's first
# optimiser step (torch._disable_dynamo imports it on first use): seconds, most of a tiny job's training.
PRELOAD = ("torch", "torch._dynamo", "concur.runner.execution.request")
REAP_SECONDS = 0.1  # how often exited children are looked for between requests
CUDA_DRIVER = "libcuda.so"  # the CUDA driver library's file name, before its version
CUDA_ERROR_NOT_INITIALIZED = 3  # the driver API's answer before cuInit


def main(argv: Sequence[str] | None = None) -> int:
    """Import PRELOAD and the modules named on the command line, then fork a worker per request."""
    die_with_parent()
    for module in (*PRELOAD, *(sys.argv[1:] if argv is None else argv)):
        with contextlib.suppress(ImportError):  # a job that needs a missing module reports it itself
            importlib.import_module(module)
    ready = process_age_seconds()  # what the run's first job waited for, besides its own start
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not corrupt the protocol
    running: set[int] = set()
    pending = b""
    while True:
        readable, _, _ = select.select([0], [], [], REAP_SECONDS)
        _reap(running, protocol)
        if not readable:
            continue
        chunk = os.read(0, 1 << 16)
        if not chunk:  # the driver closed the pipe: its grid is over
            return 0
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            order = json.loads(line)
            refusal = refusal_for(order["env"])
            if refusal is not None:
                _send(protocol, {"refused": refusal})
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                protocol.close()
                os._exit(_run_child(order, ready))
            running.add(pid)
            _send(protocol, {"pid": pid})


def refusal_for(environment: Mapping[str, str], maps: Path = Path("/proc/self/maps")) -> str | None:
    """Why a worker with `environment` cannot be forked from this process, or None: a worker
    that may use a GPU cannot inherit a CUDA driver already initialised here."""
    if not environment.get("CUDA_VISIBLE_DEVICES"):
        return None  # a CPU worker: the pool hides every GPU from it
    if cuda_initialised(maps):
        return "the worker zygote has initialised the CUDA driver, which a forked GPU worker cannot use"
    return None


def cuda_initialised(maps: Path = Path("/proc/self/maps")) -> bool:
    """Whether this process has initialised CUDA's driver (`maps`: its memory map).

    Importing torch can load the driver library without initialising it (seen with torch
    2.11+cu130); until cuInit, the driver answers cuDeviceGetCount with CUDA_ERROR_NOT_INITIALIZED,
    and asking does not initialise it. Whatever cannot be read or asked counts as initialised.
    """
    try:
        lines = maps.read_text().splitlines()
    except OSError:
        return True
    loaded = sorted({line.split()[-1] for line in lines if line.rsplit("/", 1)[-1].startswith(CUDA_DRIVER)})
    if not loaded:
        return False  # never loaded, so never initialised
    try:
        count = ctypes.c_int()
        status: int = ctypes.CDLL(loaded[0]).cuDeviceGetCount(ctypes.byref(count))
        return status != CUDA_ERROR_NOT_INITIALIZED
    except (OSError, AttributeError):  # not a CUDA driver after all
        return True


def _reap(running: set[int], protocol: Any) -> None:
    """Report every child that has exited since the last look."""
    for pid in list(running):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            running.discard(pid)
            _send(protocol, {"exited": pid, "code": os.waitstatus_to_exitcode(status)})


def _send(protocol: Any, message: dict[str, Any]) -> None:
    protocol.write(json.dumps(message) + "\n")


def _run_child(order: dict[str, Any], ready: float | None) -> int:
    """In the forked child: become the job's own process, then run the worker; returns its exit status.

    `ready`, the zygote's seconds from its start to the end of its imports, reaches the job's accounting.
    """
    os.setsid()
    environment = {**order["env"], DRIVER_PID_ENV: str(os.getppid())}  # the worker dies with this zygote
    if ready is not None:
        environment[POOL_START_ENV] = f"{ready:.3f}"
    os.environ.clear()
    os.environ.update(environment)
    output = os.open(order["output"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.close(output)
    os.close(nothing)
    from concur.runner.execution import worker

    try:
        code = worker.main([order["request"]])
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:  # as Python would on an uncaught exception: its traceback in the log, status 1
        traceback.print_exc()
        code = 1
    with contextlib.suppress(OSError):  # its output file on a full disk: the status still tells the driver
        sys.stdout.flush()
        sys.stderr.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
