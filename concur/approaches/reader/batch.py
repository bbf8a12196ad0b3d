"""A padded batch of questions with their passages, as tensors, and its features.

Besides ids, characters and tags, each token carries the features DrQA introduced and the
later readers reuse: whether it occurs in the other text exactly, lower-cased and (with a
tagger) as a lemma, and its normalised term frequency in its own text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from concur.approaches.reader.encode import EncodedSplit, TextArrays
from concur.approaches.transfer import to_device


@dataclass
class Batch:
    """Tensors of shape (B, T[, ...]); masks are True on real tokens."""

    c_words: Any
    c_chars: Any
    c_pos: Any
    c_ner: Any
    c_features: Any  # (B, Tc, n_features) float
    c_mask: Any
    q_words: Any
    q_chars: Any
    q_pos: Any
    q_ner: Any
    q_features: Any
    q_mask: Any
    starts: Any  # (B,) answer token positions (-1 at prediction time)
    ends: Any

    def to(self, device: str) -> Batch:
        return Batch(**to_device({f.name: getattr(self, f.name) for f in fields(self)}, device))


def n_features(linguistic: bool) -> int:
    """Exact match (word, lower case[, lemma]) and term frequency."""
    return 4 if linguistic else 3


def collate(data: EncodedSplit, indices: Sequence[int] | np.ndarray, linguistic: bool, max_passage_tokens: int = 0) -> Batch:
    """Pad the questions `indices` and their passages (cut to `max_passage_tokens` when given) into a batch."""
    import torch

    contexts = [_cut(data.contexts[data.context_of[i]], max_passage_tokens) for i in indices]
    questions = [data.questions[i] for i in indices]
    c_features = [_features(c, q, linguistic) for c, q in zip(contexts, questions)]
    q_features = [_features(q, c, linguistic) for c, q in zip(contexts, questions)]
    c = _pad(contexts, c_features)
    q = _pad(questions, q_features)
    tensors = {f"c_{name}": value for name, value in c.items()} | {f"q_{name}": value for name, value in q.items()}
    tensors["starts"] = data.starts[np.asarray(indices)]
    tensors["ends"] = data.ends[np.asarray(indices)]
    return Batch(**{name: torch.from_numpy(np.ascontiguousarray(value)) for name, value in tensors.items()})


def _cut(text: TextArrays, limit: int) -> TextArrays:
    if not limit or len(text.words) <= limit:
        return text
    return TextArrays(*(getattr(text, f.name)[:limit] for f in fields(text)))


def _features(text: TextArrays, other: TextArrays, linguistic: bool) -> np.ndarray:
    columns = 3 if linguistic else 2
    matches = [np.isin(text.hashes[:, k], other.hashes[:, k]) for k in range(columns)]
    return np.column_stack([*matches, text.tf]).astype(np.float32)


def _pad(texts: list[TextArrays], features: list[np.ndarray]) -> dict[str, np.ndarray]:
    width = max(1, max(len(text.words) for text in texts))
    size = len(texts)
    out = {
        "words": np.zeros((size, width), dtype=np.int64),
        "chars": np.zeros((size, width, texts[0].chars.shape[1]), dtype=np.int64),
        "pos": np.zeros((size, width), dtype=np.int64),
        "ner": np.zeros((size, width), dtype=np.int64),
        "features": np.zeros((size, width, features[0].shape[1]), dtype=np.float32),
        "mask": np.zeros((size, width), dtype=bool),
    }
    for row, (text, feature) in enumerate(zip(texts, features)):
        n = len(text.words)
        out["words"][row, :n] = text.words
        out["chars"][row, :n] = text.chars
        out["pos"][row, :n] = text.pos
        out["ner"][row, :n] = text.ner
        out["features"][row, :n] = feature
        out["mask"][row, :n] = True
    return out
