"""Padded tensors for batches of windows (the batch order itself is in concur.approaches.batches)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from concur.approaches.hf_span.features import Windows

# Tensor cores work on tiles of 8 (bf16); padding GPU batches to a multiple of 8 keeps them busy.
CUDA_PAD_MULTIPLE = 8


def pad_batch(
    windows: Windows, indices: Sequence[int] | np.ndarray, pad_id: int, multiple: int = 1, cap: int | None = None
) -> dict[str, Any]:
    """`input_ids`, `attention_mask` (and `token_type_ids`) tensors padded to the longest window, rounded up to
    `multiple` but not past `cap` (CUDA graphs: a few widths up to max_seq_length)."""
    import torch

    width = padded_width(max(len(windows.input_ids[i]) for i in indices), multiple, cap)
    input_ids = np.full((len(indices), width), pad_id, dtype=np.int64)
    attention = np.zeros((len(indices), width), dtype=np.int64)
    token_types = windows.token_type_ids
    types = np.zeros((len(indices), width), dtype=np.int64) if token_types is not None else None
    for row, index in enumerate(indices):
        ids = windows.input_ids[index]
        input_ids[row, : len(ids)] = ids
        attention[row, : len(ids)] = 1
        if types is not None and token_types is not None:
            types[row, : len(ids)] = token_types[index]
    batch = {"input_ids": torch.from_numpy(input_ids), "attention_mask": torch.from_numpy(attention)}
    if types is not None:
        batch["token_type_ids"] = torch.from_numpy(types)
    return batch


def pad_multiple(device: str) -> int:
    """How far batches are padded on `device`: a multiple of 8 on CUDA, exact elsewhere."""
    return CUDA_PAD_MULTIPLE if device.startswith("cuda") else 1


def padded_width(longest: int, multiple: int, cap: int | None = None) -> int:
    """`longest` rounded up to a multiple of `multiple`, at most `cap` unless `longest` itself is longer."""
    rounded = -(-longest // multiple) * multiple
    return max(longest, min(rounded, cap)) if cap is not None else rounded
