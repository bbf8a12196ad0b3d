"""The optimisation loop every reader shares, and batched span prediction.

Per paper, the spec chooses the optimiser (Adam, Adamax, AdaDelta or SGD) and its rate,
QANet's inverse-exponential warm-up, RaSoR's step decay, gradient clipping, and an
exponential moving average of the weights that replaces them after training (BiDAF, QANet).
Batches are length-grouped and padded to their longest passage; on CUDA the forward pass
runs under bf16 autocast with fp32 weights.
"""

from __future__ import annotations

import math
from itertools import chain, count, islice

import numpy as np
import torch
from torch import nn

from concur.approaches.base import RunContext
from concur.approaches.batches import length_grouped_batches, sorted_batches, split_batch
from concur.approaches.loss_curve import LossCurve
from concur.approaches.precision import autocast
from concur.approaches.reader.batch import collate
from concur.approaches.reader.encode import EncodedSplit
from concur.approaches.reader.hparams.base import ReaderHParams
from concur.approaches.reader.layers import best_spans, span_grid, span_loss
from concur.progress import task_progress

# TensorFlow's ExponentialMovingAverage(num_updates=step) warms the decay up as (1 + step) / (10 + step),
# which BiDAF's and QANet's code use; without it the average starts from the random initialisation.
EMA_WARMUP_OFFSET = 10


def build_optimizer(model: nn.Module, hp: ReaderHParams) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    if hp.optimizer == "adam":
        return torch.optim.Adam(params, hp.learning_rate, betas=(hp.beta1, hp.beta2), eps=hp.epsilon, weight_decay=hp.weight_decay)
    if hp.optimizer == "adamax":
        return torch.optim.Adamax(params, hp.learning_rate, betas=(hp.beta1, hp.beta2), eps=hp.epsilon, weight_decay=hp.weight_decay)
    if hp.optimizer == "adadelta":
        return torch.optim.Adadelta(params, hp.learning_rate, rho=hp.beta2, eps=hp.epsilon, weight_decay=hp.weight_decay)
    if hp.optimizer == "sgd":
        return torch.optim.SGD(params, hp.learning_rate, momentum=hp.beta1, weight_decay=hp.weight_decay)
    raise ValueError(f"unknown optimizer {hp.optimizer!r}")


def lr_factor(step: int, hp: ReaderHParams) -> float:
    """Multiplier of the rate at optimiser step `step` (from 0): log warm-up, then step decay."""
    warm = min(1.0, math.log(step + 1) / math.log(hp.warmup_steps)) if hp.warmup_steps > 1 else 1.0
    return warm * hp.lr_decay ** (step // hp.lr_decay_every_steps)


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


def total_steps(n_examples: int, hp: ReaderHParams) -> int:
    """The training budget: `steps` when the spec counts steps, else `epochs` passes over the examples."""
    if hp.steps > 0:
        return hp.steps
    return max(1, math.ceil(hp.epochs * math.ceil(n_examples / hp.batch_size)))


def fit(model: nn.Module, data: EncodedSplit, hp: ReaderHParams, context: RunContext, name: str, linguistic: bool) -> list[float]:
    """Train `model` on the questions of `data` with an answer span; returns the mean loss per logging interval."""
    examples = data.trainable()
    steps = total_steps(len(examples), hp)
    optimizer = build_optimizer(model, hp)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(step, hp))
    average = WeightAverage(model, hp.ema_decay) if hp.ema_decay > 0 else None
    lengths = np.array([len(data.contexts[data.context_of[i]].words) for i in examples])
    rng = np.random.default_rng(context.seed)
    epochs = (length_grouped_batches(lengths, hp.batch_size, rng) for _ in count())
    model.train()
    with task_progress() as progress:
        task = progress.add_task(f"train {name}", total=steps, status="")
        curve = LossCurve(steps, context.device, context.log, progress, task)
        for step, positions in enumerate(islice(chain.from_iterable(epochs), steps), start=1):
            batch_examples = examples[positions]
            for piece in split_batch(batch_examples, context.per_device_batch_size):
                batch = collate(data, piece, linguistic, hp.max_passage_tokens).to(context.device)
                with autocast(context.device):
                    logits = model(batch)
                loss = span_loss(logits, batch.c_mask, batch.starts, batch.ends, hp.max_answer_length)
                scaled = loss * (len(piece) / len(batch_examples))
                scaled.backward()
                curve.add(scaled)
            if hp.grad_clip > 0:
                nn.utils.clip_grad_norm_(model.parameters(), hp.grad_clip)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            if average is not None:
                average.update(step)
            curve.step_done(step, scheduler.get_last_lr()[0])
    if average is not None:
        average.copy_to_model()
    model.eval()
    return curve.points


def predict_spans(model: nn.Module, data: EncodedSplit, hp: ReaderHParams, context: RunContext, name: str, linguistic: bool) -> np.ndarray:
    """`(questions, 2)` token start and end of each question's best span of at most `max_answer_length` tokens."""
    lengths = np.array([len(data.contexts[i].words) for i in data.context_of])
    batch_size = min(hp.eval_batch_size, context.per_device_batch_size or hp.eval_batch_size)
    batches = sorted_batches(lengths, batch_size)
    spans = np.zeros((len(lengths), 2), dtype=np.int64)
    model.eval()
    with torch.inference_mode(), task_progress() as progress:
        task = progress.add_task(f"predict {name}", total=len(batches), status="")
        for indices in batches:
            batch = collate(data, indices, linguistic).to(context.device)
            with autocast(context.device):
                logits = model(batch)
            start, end = best_spans(span_grid(logits, batch.c_mask, hp.max_answer_length))
            spans[indices, 0] = start.cpu().numpy()
            spans[indices, 1] = end.cpu().numpy()
            progress.advance(task)
    return spans
