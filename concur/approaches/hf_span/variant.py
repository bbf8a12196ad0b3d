"""Departures from hf-span's own training, for comparisons with another trainer.

No job sets one: `concur run` trains with `TrainingVariant()`, which is hf-span's training as its spec and
hyperparameters say, and a variant enters no job key, spec or result. Two callers pass another:
concur's benchmark tooling (`python -m bench.speed_training --systems concur-stock-kernels` times concur
with PyTorch's kernels, `python -m bench.speed_compile` with its model compiled), and the test that
concur's optimiser steps are transformers' `Trainer`'s, to the bit (tests/test_hf_span_trainer_lockstep.py),
which gives concur Trainer's kernels and random draws.
"""

from __future__ import annotations

from dataclasses import dataclass

from concur.approaches.batches import BatchOrder, length_grouped_batches


@dataclass(frozen=True)
class TrainingVariant:
    """What `HFSpanApproach.train` does otherwise than a job; the default departs from nothing."""

    # transformers' SDPA attention and PyTorch's dropout modules in place of concur's CPU attention
    # (concur.approaches.hf_span.attention) and bulk dropout masks (concur.approaches.dropout): what concur's own
    # kernels buy, and dropout masks drawn from the random stream where a transformers model draws them
    stock_kernels: bool = False
    # each epoch's batches in place of concur's shuffled length-grouped ones (`fit`'s `batch_order`): another
    # trainer's batch order and random draws
    batch_order: BatchOrder = length_grouped_batches
    # the model under `torch.compile(dynamic=True)` as soon as it is loaded, for training and prediction alike: what
    # compiling would buy a job (it changes the numerics, so a job setting for it would have to enter the job key)
    compiled: bool = False


HF_SPAN_TRAINING = TrainingVariant()
