"""The span-extraction training objective: cross-entropy of the start and of the end position.

As in BERT, the loss is the mean of the two cross-entropies over the window's positions;
padding positions are left out of the softmax, so a window's loss does not depend on how
long the other windows of its batch are (batches are padded only to their longest window).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from concur.approaches.hf_span.batching import pad_batch, pad_multiple
from concur.approaches.hf_span.features import TrainFeatures
from concur.approaches.transfer import to_device


def span_loss(start_logits: Any, end_logits: Any, attention_mask: Any, start_positions: Any, end_positions: Any) -> Any:
    """Mean over the batch of (CE(start) + CE(end)) / 2, in fp32, with padding masked out."""
    import torch
    import torch.nn.functional as F

    padding = attention_mask == 0
    lowest = torch.finfo(torch.float32).min
    start = start_logits.float().masked_fill(padding, lowest)
    end = end_logits.float().masked_fill(padding, lowest)
    return (F.cross_entropy(start, start_positions) + F.cross_entropy(end, end_positions)) / 2


@dataclass(frozen=True)
class WindowBatch:
    """Padded model inputs of some windows and their answer positions, on the device."""

    inputs: dict[str, Any]
    starts: Any
    ends: Any


class WindowObjective:
    """The span loss of the training windows (the shared loop's `Objective`), batched as padded tensors on `device`."""

    def __init__(self, features: TrainFeatures, pad_id: int, device: str, multiple: int | None = None, cap: int | None = None) -> None:
        """Batches are padded to their longest window, rounded up to `multiple` (default: the device's) but not past `cap`."""
        import torch

        self.windows, self.pad_id, self.device = features.windows, pad_id, device
        self.multiple, self.cap = multiple or pad_multiple(device), cap
        self.starts = torch.from_numpy(features.start_positions)
        self.ends = torch.from_numpy(features.end_positions)

    def lengths(self) -> np.ndarray:
        return self.windows.lengths()

    def batch(self, indices: np.ndarray) -> WindowBatch:
        inputs = to_device(pad_batch(self.windows, indices, self.pad_id, self.multiple, self.cap), self.device)
        targets = to_device({"starts": self.starts[indices], "ends": self.ends[indices]}, self.device)
        return WindowBatch(inputs, targets["starts"], targets["ends"])

    def forward(self, model: Any, batch: WindowBatch) -> Any:
        return model(**batch.inputs)

    def loss(self, outputs: Any, batch: WindowBatch) -> Any:
        return span_loss(outputs.start_logits, outputs.end_logits, batch.inputs["attention_mask"], batch.starts, batch.ends)
