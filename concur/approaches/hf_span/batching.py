"""Batches of windows: length-grouped and seeded for training, sorted for prediction, padded to fit.

Padding every window to `max_seq_length` wastes most of the compute on short passages
(bAbI, SQuAD's median passage); grouping windows of similar length and padding each batch
only to its longest window keeps the arithmetic on real tokens. Training batches stay
random: the grouping happens inside shuffled pools, and the batches are shuffled again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from concur.approaches.hf_span.features import Windows

# Batches per shuffled pool that is sorted by length before cutting: large enough to find
# windows of similar length, small enough that batch order and content stay random.
MEGABATCH_FACTOR = 50
# Tensor cores work on tiles of 8 (bf16); padding GPU batches to a multiple of 8 keeps them busy.
CUDA_PAD_MULTIPLE = 8


def length_grouped_batches(lengths: np.ndarray, batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """One epoch of training batches: shuffle, sort pools of ~50 batches by length, cut, shuffle the batches."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    order = rng.permutation(len(lengths))
    pool = batch_size * MEGABATCH_FACTOR
    batches: list[np.ndarray] = []
    for first in range(0, len(order), pool):
        members = order[first : first + pool]
        members = members[np.argsort(-lengths[members], kind="stable")]
        batches.extend(members[start : start + batch_size] for start in range(0, len(members), batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


def sorted_batches(lengths: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Prediction batches of windows of similar length, longest first (so memory trouble shows at once)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    order = np.argsort(-lengths, kind="stable")
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def split_batch(batch: np.ndarray, per_device: int | None) -> list[np.ndarray]:
    """Cut a batch into pieces of at most `per_device` windows (gradient accumulation, memory caps)."""
    if per_device is None or per_device >= len(batch):
        return [batch]
    if per_device < 1:
        raise ValueError(f"per-device batch size must be positive, got {per_device}")
    return [batch[start : start + per_device] for start in range(0, len(batch), per_device)]


def pad_batch(windows: Windows, indices: Sequence[int] | np.ndarray, pad_id: int, multiple: int = 1) -> dict[str, Any]:
    """`input_ids`, `attention_mask` (and `token_type_ids`) tensors padded to the longest window, rounded up to `multiple`."""
    import torch

    longest = max(len(windows.input_ids[i]) for i in indices)
    width = -(-longest // multiple) * multiple
    input_ids = np.full((len(indices), width), pad_id, dtype=np.int64)
    attention = np.zeros((len(indices), width), dtype=np.int64)
    types = np.zeros((len(indices), width), dtype=np.int64) if windows.token_type_ids is not None else None
    for row, index in enumerate(indices):
        ids = windows.input_ids[index]
        input_ids[row, : len(ids)] = ids
        attention[row, : len(ids)] = 1
        if types is not None:
            types[row, : len(ids)] = windows.token_type_ids[index]
    batch = {"input_ids": torch.from_numpy(input_ids), "attention_mask": torch.from_numpy(attention)}
    if types is not None:
        batch["token_type_ids"] = torch.from_numpy(types)
    return batch


def pad_multiple(device: str) -> int:
    """How far batches are padded on `device`: a multiple of 8 on CUDA, exact elsewhere."""
    return CUDA_PAD_MULTIPLE if device.startswith("cuda") else 1
