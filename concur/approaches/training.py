"""The one optimisation loop every approach trains with.

hf-span and the readers differ only in how a batch of examples becomes a loss (an
`Objective`) and in their optimiser, schedule, clipping and weight average (a `Plan`, built
from each approach's hyperparameters). Everything else is written here once, so speed work
lands for every approach at the same time: seeded length-grouped batches, gradient
accumulation under the device's per-forward cap, mixed precision, the loss curve and its
progress bar, and the non-finite-loss fault (raised by the curve). How one piece of a batch goes
forward and backward is a `PieceStep`: eager by default, replayed CUDA graphs for hf-span with
`--cuda-graphs` (`concur.approaches.hf_span.graphs`).
"""

from __future__ import annotations

import math
from contextlib import closing
from dataclasses import dataclass
from itertools import chain, count, islice
from typing import Any, Protocol, TypeVar

import numpy as np
import torch
from torch import nn

from concur.approaches.base import RunContext
from concur.approaches.batches import BatchOrder, length_grouped_batches, split_batch
from concur.approaches.loss_curve import LossCurve
from concur.approaches.precision import autocast
from concur.approaches.prefetch import prefetch_depth, prefetched
from concur.progress import task_progress

# TensorFlow's ExponentialMovingAverage(num_updates=step) warms the decay up as (1 + step) / (10 + step),
# which BiDAF's and QANet's code use; without it the average starts from the random initialisation.
EMA_WARMUP_OFFSET = 10

Batch = TypeVar("Batch")


class Objective(Protocol[Batch]):
    """How an approach turns its training examples into a loss. Examples are numbered by `lengths()`."""

    def lengths(self) -> np.ndarray:
        """Length of every training example: batches group examples of similar length."""

    def batch(self, indices: np.ndarray) -> Batch:
        """Model inputs and targets of the examples `indices`, on the device."""

    def forward(self, model: nn.Module, batch: Batch) -> Any:
        """The model's outputs on `batch` (the loop runs this under mixed precision)."""

    def loss(self, outputs: Any, batch: Batch) -> torch.Tensor:
        """The mean loss over the batch's examples, in fp32 (outside mixed precision)."""


@dataclass(frozen=True)
class Plan:
    """An approach's optimisation recipe, as its hyperparameters specify it."""

    batch_size: int  # examples per optimiser step, however many pieces the device needs
    steps: int  # optimiser steps
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler  # stepped after every optimiser step
    max_grad_norm: float  # global gradient-norm clip; 0 = none
    ema_decay: float  # moving average of the weights that replaces them after training; 0 = none


class PieceStep(Protocol):
    """Forward, loss and backward of one piece of a batch, its gradients added into the parameters' `.grad`."""

    # True when the step adds into `.grad` tensors it holds on to (a captured CUDA graph writes to fixed
    # addresses), so the loop zeroes them in place instead of letting them go
    keeps_grads: bool

    def __call__(self, model: nn.Module, inputs: Any, share: float) -> torch.Tensor:
        """The piece's loss times `share` (its part of the batch), after its backward pass."""


class EagerPieceStep:
    """A piece as PyTorch runs it op by op: forward under the job's mixed precision, loss in fp32, backward."""

    keeps_grads = False

    def __init__(self, objective: Objective[Any], context: RunContext) -> None:
        self.objective, self.context = objective, context

    def __call__(self, model: nn.Module, inputs: Any, share: float) -> torch.Tensor:
        with autocast(self.context.device, self.context.precision):
            outputs = self.objective.forward(model, inputs)
        scaled = self.objective.loss(outputs, inputs) * share
        scaled.backward()
        return scaled


def epoch_steps(n_examples: int, batch_size: int, epochs: float) -> int:
    """Optimiser steps of `epochs` passes over `n_examples` (a last, smaller batch counts as a step); at least one."""
    return max(1, math.ceil(epochs * math.ceil(n_examples / batch_size)))


class WeightAverage:
    """Exponential moving average of the trainable weights, copied into the model after training."""

    def __init__(self, model: nn.Module, decay: float) -> None:
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.shadow = [p.detach().clone().float() for p in self.params]
        self.decay = decay

    def update(self, step: int) -> None:
        decay = min(self.decay, (1 + step) / (EMA_WARMUP_OFFSET + step))
        torch._foreach_lerp_(self.shadow, [p.detach().float() for p in self.params], 1 - decay)

    def copy_to_model(self) -> None:
        with torch.no_grad():
            for param, shadow in zip(self.params, self.shadow):
                param.copy_(shadow)


def fit(
    model: nn.Module,
    objective: Objective[Any],
    plan: Plan,
    context: RunContext,
    name: str,
    piece_step: PieceStep | None = None,
    batch_order: BatchOrder = length_grouped_batches,
) -> list[float]:
    """Train `model` for `plan.steps` optimiser steps; returns the mean loss of each logging interval.

    Batches are reshuffled every epoch from `context.seed` by `batch_order` (every job's is `length_grouped_batches`;
    only a comparison with another trainer gives another, through hf-span's `TrainingVariant`). Each is cut into pieces of at most
    `context.per_device_batch_size` examples whose gradients accumulate, each piece's loss weighted
    by its share of the batch, so a step follows the batch's mean loss however the device splits it.
    Each piece runs through `piece_step` (default: eager). The model is left in eval mode (with the
    averaged weights, if the plan keeps an average).
    """
    average = WeightAverage(model, plan.ema_decay) if plan.ema_decay > 0 else None
    piece_step = piece_step or EagerPieceStep(objective, context)
    rng = np.random.default_rng(context.seed)
    lengths = objective.lengths()
    epochs = (batch_order(lengths, plan.batch_size, rng) for _ in count())
    batches = islice(chain.from_iterable(epochs), plan.steps)
    # each step's pieces, as (share of the batch, inputs on the device), collated ahead of the step that needs them
    per_device = context.per_device_batch_size
    pieces = ([(len(piece) / len(batch), objective.batch(piece)) for piece in split_batch(batch, per_device)] for batch in batches)
    model.train()
    with closing(prefetched(pieces, prefetch_depth(context.device))) as steps, task_progress() as progress:
        task = progress.add_task(f"train {name}", total=plan.steps, status="")
        curve = LossCurve(plan.steps, context.device, context.log, progress, task)
        for step, step_pieces in enumerate(steps, start=1):
            for share, inputs in step_pieces:
                curve.add(piece_step(model, inputs, share))
            if plan.max_grad_norm > 0:
                nn.utils.clip_grad_norm_(model.parameters(), plan.max_grad_norm)
            # the full rate of this step (layer-wise decay lowers the others); a group's rate may be held as a tensor
            rate = max(float(group_rate) for group_rate in plan.scheduler.get_last_lr())
            plan.optimizer.step()
            plan.scheduler.step()
            plan.optimizer.zero_grad(set_to_none=not piece_step.keeps_grads)
            if average is not None:
                average.update(step)
            curve.step_done(step, rate)
    if average is not None:
        average.copy_to_model()
    model.eval()
    return curve.points
