"""The readers' training recipe for the shared loop, and batched span prediction.

Per paper, the spec chooses the optimiser (Adam, Adamax, AdaDelta or SGD) and its rate,
QANet's inverse-exponential warm-up, RaSoR's step decay, gradient clipping, and an
exponential moving average of the weights that replaces them after training (BiDAF, QANet).
Batches are length-grouped and padded to their longest passage; on CUDA the forward pass
runs under bf16 autocast with fp32 weights.
"""

from __future__ import annotations

import math
from contextlib import closing
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from concur.approaches.base import RunContext
from concur.approaches.batches import sorted_batches, typical_batch_tokens
from concur.approaches.precision import autocast
from concur.approaches.prefetch import prefetch_depth, prefetched
from concur.approaches.reader.batch import Batch, BatchContents, collate
from concur.approaches.reader.encode import EncodedSplit
from concur.approaches.reader.hparams.base import ReaderHParams
from concur.approaches.reader.layers import SpanLogits, best_spans, span_grid, span_loss
from concur.approaches.training import Plan, epoch_steps, fit
from concur.progress import task_progress


def build_optimizer(model: nn.Module, hp: ReaderHParams) -> torch.optim.Optimizer:
    """The spec's optimiser, updating every parameter in one call: PyTorch's fused kernels for Adam and SGD
    (on the CPU its default is a Python loop over the parameters, which shows in small-batch steps), its
    multi-tensor (foreach) path for Adamax and Adadelta, which have no fused kernel. Both agree with the
    loop to float rounding (tests/test_reader_training.py)."""
    params = [p for p in model.parameters() if p.requires_grad]
    rate, decay = hp.learning_rate, hp.weight_decay
    if hp.optimizer == "adam":
        return torch.optim.Adam(params, rate, betas=(hp.beta1, hp.beta2), eps=hp.epsilon, weight_decay=decay, fused=True)
    if hp.optimizer == "adamax":
        return torch.optim.Adamax(params, rate, betas=(hp.beta1, hp.beta2), eps=hp.epsilon, weight_decay=decay, foreach=True)
    if hp.optimizer == "adadelta":
        return torch.optim.Adadelta(params, rate, rho=hp.beta2, eps=hp.epsilon, weight_decay=decay, foreach=True)
    if hp.optimizer == "sgd":
        return torch.optim.SGD(params, rate, momentum=hp.beta1, weight_decay=decay, fused=True)
    raise ValueError(f"unknown optimizer {hp.optimizer!r}")


def lr_factor(step: int, hp: ReaderHParams) -> float:
    """Multiplier of the rate at optimiser step `step` (from 0): log warm-up, then step decay."""
    warm = min(1.0, math.log(step + 1) / math.log(hp.warmup_steps)) if hp.warmup_steps > 1 else 1.0
    return warm * hp.lr_decay ** (step // hp.lr_decay_every_steps)


def total_steps(n_examples: int, hp: ReaderHParams) -> int:
    """The training budget: `steps` when the spec counts steps, else `epochs` passes over the examples."""
    if hp.steps > 0:
        return hp.steps
    return epoch_steps(n_examples, hp.batch_size, hp.epochs)


def training_plan(model: nn.Module, hp: ReaderHParams, n_examples: int) -> Plan:
    """The spec's optimiser, warm-up and decay, clipping and weight average over its budget of steps."""
    optimizer = build_optimizer(model, hp)
    return Plan(
        batch_size=hp.batch_size,
        steps=total_steps(n_examples, hp),
        optimizer=optimizer,
        scheduler=torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(step, hp)),
        max_grad_norm=hp.grad_clip,
        ema_decay=hp.ema_decay,
    )


@dataclass(frozen=True)
class ReaderObjective:
    """The span loss of a reader (the shared loop's `Objective`) on the questions of `data` with an answer span."""

    data: EncodedSplit
    examples: np.ndarray  # indices of the trainable questions of `data`
    hp: ReaderHParams
    linguistic: bool
    device: str
    contents: BatchContents  # what the model reads

    def lengths(self) -> np.ndarray:
        return np.array([len(self.data.contexts[self.data.context_of[i]].words) for i in self.examples])

    def batch(self, indices: np.ndarray) -> Batch:
        return collate(self.data, self.examples[indices], self.linguistic, self.hp.max_passage_tokens, self.contents).to(self.device)

    def forward(self, model: nn.Module, batch: Batch) -> SpanLogits:
        return model(batch)

    def loss(self, outputs: SpanLogits, batch: Batch) -> torch.Tensor:
        return span_loss(outputs, batch.c_mask, batch.starts, batch.ends, self.hp.max_answer_length)


def batch_contents(model: nn.Module) -> BatchContents:
    """The inputs `model` reads (its class's `batch_contents`); a model that does not say gets them all."""
    return getattr(model, "batch_contents", BatchContents())


def fit_reader(model: nn.Module, data: EncodedSplit, hp: ReaderHParams, context: RunContext, name: str, linguistic: bool) -> list[float]:
    """Train `model` on the questions of `data` with an answer span; returns the mean loss per logging interval."""
    examples = data.trainable()
    objective = ReaderObjective(data, examples, hp, linguistic, context.device, batch_contents(model))
    return fit(model, objective, training_plan(model, hp, len(examples)), context, name)


def predict_spans(model: nn.Module, data: EncodedSplit, hp: ReaderHParams, context: RunContext, name: str, linguistic: bool) -> np.ndarray:
    """`(questions, 2)` token start and end of each question's best span of at most `max_answer_length` tokens."""
    lengths = np.array([len(data.contexts[i].words) for i in data.context_of])
    batch_size = min(hp.eval_batch_size, context.per_device_batch_size or hp.eval_batch_size)
    batches = sorted_batches(lengths, batch_size, typical_batch_tokens(lengths, batch_size))
    spans = np.zeros((len(lengths), 2), dtype=np.int64)
    model.eval()
    contents = batch_contents(model)
    collated = ((indices, collate(data, indices, linguistic, contents=contents).to(context.device)) for indices in batches)
    with torch.inference_mode(), closing(prefetched(collated, prefetch_depth(context.device))) as ready, task_progress() as progress:
        task = progress.add_task(f"predict {name}", total=len(batches), status="")
        for indices, batch in ready:
            with autocast(context.device, context.precision):
                logits = model(batch)
            start, end = best_spans(span_grid(logits, batch.c_mask, hp.max_answer_length))
            spans[indices, 0] = start.cpu().numpy()
            spans[indices, 1] = end.cpu().numpy()
            progress.advance(task)
    return spans
