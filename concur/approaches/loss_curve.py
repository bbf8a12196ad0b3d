"""The loss curve the training loop (concur.approaches.training) reports: the mean loss per logging interval, logged and shown live."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from concur.errors import NonFiniteLossError

# Points on the loss curve per run (TrainReport.losses and log lines): enough to see it
# fall, few enough to read in a log.
LOSS_POINTS = 50


class LossCurve:
    """Accumulates each optimiser step's loss on the device (no sync per step) and closes an interval every
    `total_steps / LOSS_POINTS` steps: one log line, one progress-bar status, one point in `points`. A NaN or
    infinite interval stops training with NonFiniteLossError (checked where the loss is read anyway)."""

    def __init__(self, total_steps: int, device: str, log: Callable[[str], None], progress: Any, task: Any) -> None:
        import torch

        self.total_steps, self.log, self.progress, self.task = total_steps, log, progress, task
        self.interval = max(1, math.ceil(total_steps / LOSS_POINTS))
        self.running = torch.zeros((), device=device)
        self.in_interval = 0
        self.points: list[float] = []

    def add(self, loss: Any) -> None:
        """Add a (piece of a) step's loss; pieces of one step must sum to the step's mean loss."""
        self.running += loss.detach().float()

    def step_done(self, step: int, rate: float) -> None:
        """Close optimiser step `step` (from 1), trained at learning rate `rate`."""
        self.in_interval += 1
        if self.in_interval == self.interval or step == self.total_steps:
            mean = self.running.item() / self.in_interval
            if not math.isfinite(mean):
                first = step - self.in_interval + 1
                raise NonFiniteLossError(
                    f"the training loss became {mean} by step {step} of {self.total_steps} (mean of steps {first}-{step})"
                )
            self.points.append(mean)
            self.running.zero_()
            self.in_interval = 0
            self.progress.update(self.task, status=f"loss {mean:.4f}")
            self.log(f"step {step}/{self.total_steps}  loss {mean:.4f}  lr {rate:.3g}")
        self.progress.advance(self.task)
