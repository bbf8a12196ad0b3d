"""Length-grouped training batches, sorted prediction batches and dynamic padding (hf-span)."""

from __future__ import annotations

import numpy as np
import pytest

from concur.approaches.batches import MEGABATCH_FACTOR, length_grouped_batches, sorted_batches, split_batch, typical_batch_tokens
from concur.approaches.hf_span.batching import pad_batch, pad_multiple
from concur.approaches.hf_span.features import Windows


def test_every_window_is_in_exactly_one_batch_of_the_right_size():
    lengths = np.random.default_rng(0).integers(10, 200, size=1003)
    batches = length_grouped_batches(lengths, 16, np.random.default_rng(1))
    assert sorted(np.concatenate(batches).tolist()) == list(range(1003))
    sizes = sorted(len(batch) for batch in batches)
    assert sizes[1:] == [16] * (len(batches) - 1)  # only one short batch: the end of the last pool
    assert sizes[0] == 1003 % (16 * MEGABATCH_FACTOR) % 16


def test_batches_group_similar_lengths_and_are_seeded():
    lengths = np.random.default_rng(0).integers(10, 200, size=96)
    batches = length_grouped_batches(lengths, 8, np.random.default_rng(3))
    # one pool (96 < 8 * 50): the batches are consecutive runs of the length-sorted windows
    runs = sorted((sorted(lengths[batch].tolist(), reverse=True) for batch in batches), reverse=True)
    assert [length for run in runs for length in run] == sorted(lengths.tolist(), reverse=True)
    again = length_grouped_batches(lengths, 8, np.random.default_rng(3))
    assert all((a == b).all() for a, b in zip(batches, again))
    other = length_grouped_batches(lengths, 8, np.random.default_rng(4))
    assert any((a != b).any() for a, b in zip(batches, other) if len(a) == len(b))


def test_prediction_batches_are_sorted_longest_first():
    lengths = np.array([5, 9, 3, 9, 7])
    assert [batch.tolist() for batch in sorted_batches(lengths, 2)] == [[1, 3], [4, 0], [2]]


def test_prediction_batches_keep_a_long_tail_from_padding_whole_batches():
    lengths = np.array([10, 100, 12, 11, 9, 10])
    budget = typical_batch_tokens(lengths, 4)
    assert budget == 4 * 10  # 4 windows of the median length (10.5, in whole tokens)
    # the 100-token window alone (40 // 100 rounds up to one window), then 40 // 12 = 3 windows, then the rest
    assert [batch.tolist() for batch in sorted_batches(lengths, 4, budget)] == [[1], [2, 3, 0], [5, 4]]
    assert [batch.tolist() for batch in sorted_batches(lengths, 4)] == [[1, 2, 3, 0], [5, 4]]  # without it: padded to 100
    rng = np.random.default_rng(0)
    tailed = np.concatenate([rng.integers(60, 130, 190), rng.integers(300, 530, 10)])
    batches = sorted_batches(tailed, 100, typical_batch_tokens(tailed, 100))
    assert sorted(np.concatenate(batches).tolist()) == list(range(200))  # every window once
    assert all(len(batch) <= 100 and (len(batch) == 1 or len(batch) * tailed[batch].max() <= typical_batch_tokens(tailed, 100))
               for batch in batches)  # fmt: skip
    assert typical_batch_tokens(np.array([], dtype=int), 8) == 8


def test_split_batch_respects_the_per_device_cap():
    batch = np.arange(10)
    assert [piece.tolist() for piece in split_batch(batch, 4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [piece.tolist() for piece in split_batch(batch, None)] == [list(range(10))]
    assert [piece.tolist() for piece in split_batch(batch, 32)] == [list(range(10))]


def test_padding_goes_to_the_longest_window_of_the_batch():
    windows = Windows(
        [np.array([1, 2, 3]), np.array([4, 5, 6, 7, 8]), np.array([9])], [np.array([0, 1, 1]), np.array([0, 0, 1, 1, 1]), np.array([0])]
    )
    batch = pad_batch(windows, [0, 2], pad_id=0)
    assert batch["input_ids"].tolist() == [[1, 2, 3], [9, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["token_type_ids"].tolist() == [[0, 1, 1], [0, 0, 0]]
    rounded = pad_batch(windows, [1, 0], pad_id=99, multiple=pad_multiple("cuda"))
    assert rounded["input_ids"].shape == (2, 8)
    assert rounded["input_ids"][1].tolist() == [1, 2, 3] + [99] * 5
    assert pad_multiple("cpu") == 1


def test_windows_without_token_types_give_no_token_type_ids():
    batch = pad_batch(Windows([np.array([1, 2])]), [0], pad_id=1)
    assert set(batch) == {"input_ids", "attention_mask"}


def test_a_zero_batch_size_is_rejected():
    with pytest.raises(ValueError, match="batch_size must be positive"):
        length_grouped_batches(np.array([3, 4]), 0, np.random.default_rng(0))
