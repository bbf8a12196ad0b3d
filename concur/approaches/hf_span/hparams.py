"""Hyperparameters of the Hugging Face span-extraction approach.

Every field is required in the approach's spec, so each spec states its paper's full
SQuAD fine-tuning setting and the code holds no hidden defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from concur.components import ApproachKind


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
    layerwise_lr_decay: float  # 1.0 = none; as ELECTRA's code, depth d trains at lr * decay**(L + 2 - d) (optimization.py)
    max_grad_norm: float  # global gradient-norm clip; 0 = none
    max_seq_length: int  # tokens per window: specials + question + context piece
    doc_stride: int  # tokens a window moves forward over the context (BERT's meaning)
    max_query_length: int  # question tokens kept
    max_answer_length: int  # longest span, in tokens, the decoder may return
    n_best_size: int  # start and end candidates considered per window
    eval_batch_size: int

    def problem(self) -> tuple[str, str] | None:
        """The first hyperparameter whose value the recipe cannot run with, and why."""
        rules = [
            ("learning_rate", self.learning_rate > 0, "must be positive"),
            ("train_batch_size", self.train_batch_size >= 1, "must be at least 1"),
            ("epochs", self.epochs > 0, "must be positive"),
            ("warmup_ratio", 0 <= self.warmup_ratio <= 1, "must be between 0 and 1"),
            ("weight_decay", self.weight_decay >= 0, "must not be negative"),
            ("adam_beta1", 0 <= self.adam_beta1 < 1, "must be in [0, 1)"),
            ("adam_beta2", 0 <= self.adam_beta2 < 1, "must be in [0, 1)"),
            ("adam_epsilon", self.adam_epsilon > 0, "must be positive"),
            ("layerwise_lr_decay", 0 < self.layerwise_lr_decay <= 1, "must be in (0, 1] (1.0 turns it off)"),
            ("max_grad_norm", self.max_grad_norm >= 0, "must not be negative (0 turns clipping off)"),
            ("max_seq_length", self.max_seq_length >= 1, "must be at least 1"),
            ("doc_stride", self.doc_stride >= 1, "must be at least 1"),
            ("max_query_length", self.max_query_length >= 1, "must be at least 1"),
            ("max_answer_length", self.max_answer_length >= 1, "must be at least 1"),
            ("n_best_size", self.n_best_size >= 1, "must be at least 1"),
            ("eval_batch_size", self.eval_batch_size >= 1, "must be at least 1"),
        ]
        for name, ok, message in rules:
            if not ok:
                return name, message
        return None


KIND = ApproachKind(
    hparams=HFSpanHParams,
    approach="concur.approaches.hf_span.approach:HFSpanApproach",
    batch_field="train_batch_size",
    preload=("transformers.modeling_utils",),  # every model class's base: most of a job's imports (seconds)
)
