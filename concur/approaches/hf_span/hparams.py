"""Hyperparameters of the Hugging Face span-extraction approach.

Every field is required in the approach's spec, so each spec states its paper's full
SQuAD fine-tuning setting and the code holds no hidden defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class HFSpanHParams:
    learning_rate: float
    train_batch_size: int  # examples (windows) per optimiser step, after gradient accumulation
    epochs: float
    warmup_ratio: float  # fraction of optimiser steps with linear warm-up
    lr_schedule: Literal["linear", "constant"]
    weight_decay: float  # AdamW decoupled decay; never applied to biases and LayerNorm weights
    adam_beta1: float
    adam_beta2: float
    adam_epsilon: float
    layerwise_lr_decay: float  # 1.0 = none; ELECTRA scales layer l's rate by decay**(L - l)
    max_grad_norm: float
    max_seq_length: int  # tokens per window: specials + question + context piece
    doc_stride: int  # tokens a window moves forward over the context (BERT's meaning)
    max_query_length: int  # question tokens kept
    max_answer_length: int  # longest span, in tokens, the decoder may return
    n_best_size: int  # start and end candidates considered per window
    eval_batch_size: int
