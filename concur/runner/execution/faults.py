"""Fault injection for the fault suite: `CONCUR_FAULT=POINT:MARKER` kills this process with SIGKILL at POINT.

Off by default (the variable unset costs one dictionary lookup per point). The marker file,
when given, is created exclusively when the fault fires, so a fault fires once per marker
even when the job is retried or its driver rerun: exactly the crash a power cut or an OOM killer would cause
at that point, and then recovery.
"""

from __future__ import annotations

import os
import signal
from enum import StrEnum
from pathlib import Path

FAULT_ENV = "CONCUR_FAULT"


class FaultPoint(StrEnum):
    """Every point between the writes of one job, in the order a job passes them."""

    CLAIMED = "claimed"  # driver: the claim is taken, nothing else written
    STARTED = "started"  # worker: job.json written
    TRAINED = "trained"  # worker: the model trained, nothing scored
    PREDICTED = "predicted"  # worker: predictions.json.gz written, no result
    RESULT_WRITTEN = "result-written"  # worker: result.json written, the worker not yet exited
    UNINDEXED = "unindexed"  # driver: the result seen, not yet in the index
    INDEXED = "indexed"  # driver: the result indexed, the claim not yet released


def fault_point(point: FaultPoint) -> None:
    """Die here with SIGKILL if the fault variable names this point and its marker does not exist yet."""
    setting = os.environ.get(FAULT_ENV)
    if not setting:
        return
    name, _, marker = setting.partition(":")
    if name != point.value:
        return
    if marker:
        try:
            Path(marker).touch(exist_ok=False)
        except FileExistsError:
            return
    os.kill(os.getpid(), signal.SIGKILL)
