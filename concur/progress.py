"""Progress bars for long loops (downloads, training, prediction), drawn on stderr with rich.

They stay silent when stderr is not a terminal unless `CONCUR_PROGRESS=1`, so logs and CI
output are not flooded; `CONCUR_PROGRESS=0` silences them everywhere.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

PROGRESS_ENV = "CONCUR_PROGRESS"


def progress_enabled() -> bool:
    setting = os.environ.get(PROGRESS_ENV)
    if setting is not None:
        return setting not in ("0", "", "false", "no")
    return sys.stderr.isatty()


# One console for everything written to stderr, so log lines printed while a bar is live
# appear above the bar instead of tearing it.
STDERR = Console(stderr=True, highlight=False, soft_wrap=True)


def task_progress() -> Progress:
    """A bar for counted work: `label  ━━━━  12/40  0:00:03 < 0:00:09  loss 1.23`."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("<"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[status]}"),
        console=STDERR,
        disable=not progress_enabled(),
        transient=False,
    )


def download_progress() -> Progress:
    """A bar for byte transfers."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=STDERR,
        disable=not progress_enabled(),
    )
