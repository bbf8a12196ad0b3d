"""The training recipe every non-pretrained reader shares; each model's dataclass adds its architecture.

Every field is required in the approach's spec, so each spec states its paper's full SQuAD
setting and the model code holds no hidden defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Rule = tuple[str, bool, str]  # (field, holds, what the value must be)

# What a reader job imports once running, beyond its model's module: the MiniLM stand-in's tokenizer (concur.data.vectors)
READER_PRELOAD = ("transformers.models.auto.tokenization_auto",)


@dataclass(frozen=True)
class ReaderHParams:
    optimizer: Literal["adam", "adamax", "adadelta", "sgd"]
    learning_rate: float
    beta1: float  # Adam/Adamax beta1; SGD momentum; unused by AdaDelta
    beta2: float  # Adam/Adamax beta2; AdaDelta rho; unused by SGD
    epsilon: float  # Adam/Adamax/AdaDelta epsilon
    weight_decay: float  # L2 penalty added to the gradients (coupled, as the papers' optimisers)
    batch_size: int  # questions per optimiser step
    epochs: float
    steps: int  # optimiser steps; > 0 replaces `epochs` (BiDAF's official code trains 20,000 steps whatever the data size)
    warmup_steps: int  # QANet's inverse-exponential warm-up: rate * log(step + 1) / log(warmup_steps); 0 = none
    lr_decay: float  # multiply the rate by this every lr_decay_every_steps steps (RaSoR); 1.0 = none
    lr_decay_every_steps: int
    grad_clip: float  # global gradient-norm clip; 0 = none
    ema_decay: float  # exponential moving average of the weights, used for prediction; 0 = none
    tune_top_k: int  # fine-tune the vectors of the k most frequent question words (DrQA); -1 = all, 0 = none
    dropout: float
    max_passage_tokens: int  # training passages are cut to this many tokens (BiDAF: 400); 0 = no limit
    max_question_tokens: int  # question tokens kept; 0 = no limit
    max_answer_length: int  # longest span, in tokens, that training keeps and decoding may return
    max_word_chars: int  # characters of a word the character encoder reads (BiDAF: 16)
    eval_batch_size: int

    def rules(self) -> list[Rule]:
        """Value checks of the shared recipe; a model's dataclass appends its own."""
        return [
            ("learning_rate", self.learning_rate > 0, "must be positive"),
            ("beta1", 0 <= self.beta1 < 1, "must be in [0, 1)"),
            ("beta2", 0 <= self.beta2 < 1, "must be in [0, 1)"),
            ("epsilon", self.epsilon > 0, "must be positive"),
            ("weight_decay", self.weight_decay >= 0, "must not be negative"),
            ("batch_size", self.batch_size >= 1, "must be at least 1"),
            ("epochs", self.epochs > 0, "must be positive"),
            ("steps", self.steps >= 0, "must not be negative (0 trains for `epochs` instead)"),
            ("warmup_steps", self.warmup_steps >= 0, "must not be negative (0 turns warm-up off)"),
            ("lr_decay", 0 < self.lr_decay <= 1, "must be in (0, 1] (1.0 turns decay off)"),
            ("lr_decay_every_steps", self.lr_decay_every_steps >= 1, "must be at least 1"),
            ("grad_clip", self.grad_clip >= 0, "must not be negative (0 turns clipping off)"),
            ("ema_decay", 0 <= self.ema_decay < 1, "must be in [0, 1) (0 turns the average off)"),
            ("tune_top_k", self.tune_top_k >= -1, "must be -1 (all), 0 (none) or a positive count"),
            ("dropout", 0 <= self.dropout < 1, "must be in [0, 1)"),
            ("max_passage_tokens", self.max_passage_tokens >= 0, "must not be negative (0 = no limit)"),
            ("max_question_tokens", self.max_question_tokens >= 0, "must not be negative (0 = no limit)"),
            ("max_answer_length", self.max_answer_length >= 1, "must be at least 1"),
            ("max_word_chars", self.max_word_chars >= 1, "must be at least 1"),
            ("eval_batch_size", self.eval_batch_size >= 1, "must be at least 1"),
        ]

    def problem(self) -> tuple[str, str] | None:
        """The first hyperparameter whose value the recipe cannot run with, and why."""
        for name, ok, message in self.rules():
            if not ok:
                return name, message
        return None
