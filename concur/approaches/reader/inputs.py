"""What a reader model is built from besides its hyperparameters: the sizes the training data fixed."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class ReaderInputs:
    vectors: torch.Tensor  # (words, dim) initial word vectors; row 0 is padding, row 1 unknown
    n_tuned: int  # rows [0, n_tuned) are trained, the rest stay fixed
    n_chars: int
    n_pos: int
    n_ner: int
    n_features: int  # per-token exact-match and term-frequency features (concur.approaches.reader.batch)
    linguistic: bool  # whether POS and NER ids (and the lemma match) are real
