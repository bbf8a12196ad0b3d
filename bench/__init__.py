"""concur's own benchmark tooling: speed, parity with transformers' `Trainer`, and checks of the readers.

Each module is one command, run from the repository root as `python -m bench.NAME` (bench/README.md lists
them, what each measures and the result file it writes). The package is not part of concur: it is not in the
wheel, and it imports concur only through the interfaces any user code has, so a change to those interfaces
fails its tests (tests/test_bench.py), not the next measurement.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository, which holds bench/ beside concur/


def module_command(module: str, *args: str) -> list[str]:
    """The command line that runs `module` (`bench.NAME`) in a child process with this interpreter."""
    return [sys.executable, "-m", module, *args]


def child_environment() -> dict[str, str]:
    """This process's environment with the repository first on the import path: a child started with
    `module_command` finds `bench` whatever its working directory."""
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
