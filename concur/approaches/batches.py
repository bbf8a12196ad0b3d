"""Batch orders shared by every approach: length-grouped and seeded for training, sorted for prediction.

Padding every example to the longest one wastes most of the compute on short passages
(bAbI, SQuAD's median passage); grouping examples of similar length and padding each batch
only to its longest member keeps the arithmetic on real tokens. Training batches stay
random: the grouping happens inside shuffled pools, and the batches are shuffled again.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# Batches per shuffled pool that is sorted by length before cutting: large enough to find
# windows of similar length, small enough that batch order and content stay random.
MEGABATCH_FACTOR = 50


# One epoch's training batches from (each example's length, the batch size, the loop's seeded generator), as
# `length_grouped_batches` gives them: what `concur.approaches.training.fit` takes another order as.
BatchOrder = Callable[[np.ndarray, int, np.random.Generator], list[np.ndarray]]


def length_grouped_batches(lengths: np.ndarray, batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """One epoch of training batches: shuffle, sort pools of ~50 batches by length, cut, shuffle the batches."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    pools = length_sorted_pools(lengths, rng.permutation(len(lengths)), batch_size * MEGABATCH_FACTOR)
    batches = [members[start : start + batch_size] for members in pools for start in range(0, len(members), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def length_sorted_pools(lengths: np.ndarray, order: np.ndarray, pool_size: int) -> list[np.ndarray]:
    """`order` cut into consecutive pools of `pool_size`, each sorted longest first (ties keep their order)."""
    pools = [order[first : first + pool_size] for first in range(0, len(order), pool_size)]
    return [members[np.argsort(-lengths[members], kind="stable")] for members in pools]


def sorted_batches(lengths: np.ndarray, batch_size: int, max_tokens: int | None = None) -> list[np.ndarray]:
    """Prediction batches of windows of similar length, longest first (so memory trouble shows at once): at most
    `batch_size` windows each and, given `max_tokens`, at most that many tokens once padded to the batch's longest
    (but at least one window)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    order = np.argsort(-lengths, kind="stable")
    if max_tokens is None:
        return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    batches, start = [], 0
    while start < len(order):
        size = min(batch_size, max(1, max_tokens // max(1, int(lengths[order[start]]))))
        batches.append(order[start : start + size])
        start += size
    return batches


def typical_batch_tokens(lengths: np.ndarray, batch_size: int) -> int:
    """A token budget for prediction batches: `batch_size` windows of the median length. A long tail of lengths
    (bAbI task 2's stories: 94 tokens on average, up to 527) otherwise pads a whole batch to its longest."""
    return batch_size * max(1, int(np.median(lengths))) if len(lengths) else batch_size


def split_batch(batch: np.ndarray, per_device: int | None) -> list[np.ndarray]:
    """Cut a batch into pieces of at most `per_device` windows (gradient accumulation, memory caps)."""
    if per_device is None or per_device >= len(batch):
        return [batch]
    if per_device < 1:
        raise ValueError(f"per-device batch size must be positive, got {per_device}")
    return [batch[start : start + per_device] for start in range(0, len(batch), per_device)]
