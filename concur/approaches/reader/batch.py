"""A padded batch of questions with their passages, as tensors, and its features.

Besides ids, characters and tags, each token carries the features DrQA introduced and the
later readers reuse: whether it occurs in the other text exactly, lower-cased and (with a
tagger) as a lemma, and its normalised term frequency in its own text. A batch holds only what
its reader reads (`BatchContents`): collating is on the training loop's path (in line on the
CPU, in a thread sharing the interpreter with the step's dispatch on a GPU), and the exact-match
features were most of the cost of collating a BiDAF batch, a model that never reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from concur.approaches.reader.encode import EncodedSplit, TextArrays
from concur.approaches.transfer import to_device


@dataclass(frozen=True)
class BatchContents:
    """Which of a batch's optional inputs a reader reads; the others are left None."""

    chars: bool = True  # c_chars, q_chars
    features: bool = True  # c_features, q_features


@dataclass
class Batch:
    """Tensors of shape (B, T[, ...]); masks are True on real tokens. Inputs the reader does not read are None."""

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
        present = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}
        return replace(self, **to_device(present, device))


def n_features(linguistic: bool) -> int:
    """Exact match (word, lower case[, lemma]) and term frequency."""
    return 4 if linguistic else 3


def collate(
    data: EncodedSplit,
    indices: Sequence[int] | np.ndarray,
    linguistic: bool,
    max_passage_tokens: int = 0,
    contents: BatchContents = BatchContents(),
) -> Batch:
    """Pad the questions `indices` and their passages (cut to `max_passage_tokens` when given) into a batch
    holding the inputs `contents` names."""
    import torch

    contexts = [_cut(data.contexts[data.context_of[i]], max_passage_tokens) for i in indices]
    questions = [data.questions[i] for i in indices]
    c_features, q_features = exact_match_features(contexts, questions, linguistic) if contents.features else (None, None)
    c = _pad(contexts, c_features, contents.chars)
    q = _pad(questions, q_features, contents.chars)
    tensors = {f"c_{name}": value for name, value in c.items()} | {f"q_{name}": value for name, value in q.items()}
    tensors["starts"] = data.starts[np.asarray(indices)]
    tensors["ends"] = data.ends[np.asarray(indices)]
    missing = {f.name: None for f in fields(Batch)}
    return Batch(**missing | {name: torch.from_numpy(np.ascontiguousarray(value)) for name, value in tensors.items()})


def exact_match_features(
    contexts: Sequence[TextArrays], questions: Sequence[TextArrays], linguistic: bool
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(n, n_features) float32 features of each passage's tokens against its question, and of each question's against
    its passage: whether the token's word, lower case [and lemma] occur in the other text, and its term frequency.
    All pairs at once: a key per (pair, column, match id), and one sorted search of each side's keys among the
    other side's, instead of an `np.isin` per pair and column."""
    columns = 3 if linguistic else 2
    n_ids = 1 + max(int(text.match_ids.max(initial=-1)) for text in (*contexts, *questions))
    context_keys, question_keys = _pair_keys(contexts, columns, n_ids), _pair_keys(questions, columns, n_ids)
    return _features(contexts, context_keys, question_keys), _features(questions, question_keys, context_keys)


def _pair_keys(texts: Sequence[TextArrays], columns: int, n_ids: int) -> np.ndarray:
    """(tokens, columns) keys unique to (pair, column, match id)."""
    pair = np.repeat(np.arange(len(texts)), [len(text.words) for text in texts])
    slot = pair[:, None] * columns + np.arange(columns)
    return slot * n_ids + np.concatenate([text.match_ids[:, :columns] for text in texts])


def _features(texts: Sequence[TextArrays], keys: np.ndarray, other_keys: np.ndarray) -> list[np.ndarray]:
    """Each text's (n, columns + 1) features: its tokens' keys found among `other_keys`, then its term frequencies."""
    theirs = np.sort(other_keys.ravel())
    found = np.searchsorted(theirs, keys).clip(max=max(len(theirs) - 1, 0))
    matches = theirs[found] == keys if len(theirs) else np.zeros(keys.shape, dtype=bool)
    features = np.column_stack([matches, np.concatenate([text.tf for text in texts])]).astype(np.float32)
    return np.split(features, np.cumsum([len(text.words) for text in texts])[:-1])


def _cut(text: TextArrays, limit: int) -> TextArrays:
    if not limit or len(text.words) <= limit:
        return text
    return TextArrays(*(getattr(text, f.name)[:limit] for f in fields(text)))


def _pad(texts: list[TextArrays], features: list[np.ndarray] | None, chars: bool) -> dict[str, np.ndarray]:
    width = max(1, max(len(text.words) for text in texts))
    size = len(texts)
    out = {
        "words": np.zeros((size, width), dtype=np.int64),
        "pos": np.zeros((size, width), dtype=np.int64),
        "ner": np.zeros((size, width), dtype=np.int64),
        "mask": np.zeros((size, width), dtype=bool),
    }
    if chars:
        out["chars"] = np.zeros((size, width, texts[0].chars.shape[1]), dtype=np.int64)
    if features is not None:
        out["features"] = np.zeros((size, width, features[0].shape[1]), dtype=np.float32)
    for row, text in enumerate(texts):
        n = len(text.words)
        out["words"][row, :n] = text.words
        out["pos"][row, :n] = text.pos
        out["ner"][row, :n] = text.ner
        out["mask"][row, :n] = True
        if chars:
            out["chars"][row, :n] = text.chars
        if features is not None:
            out["features"][row, :n] = features[row]
    return out
