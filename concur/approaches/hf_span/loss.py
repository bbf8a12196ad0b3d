"""The span-extraction training objective: cross-entropy of the start and of the end position.

As in BERT, the loss is the mean of the two cross-entropies over the window's positions;
padding positions are left out of the softmax, so a window's loss does not depend on how
long the other windows of its batch are (batches are padded only to their longest window).
"""

from __future__ import annotations

from typing import Any


def span_loss(start_logits: Any, end_logits: Any, attention_mask: Any, start_positions: Any, end_positions: Any) -> Any:
    """Mean over the batch of (CE(start) + CE(end)) / 2, in fp32, with padding masked out."""
    import torch
    import torch.nn.functional as F

    padding = attention_mask == 0
    lowest = torch.finfo(torch.float32).min
    start = start_logits.float().masked_fill(padding, lowest)
    end = end_logits.float().masked_fill(padding, lowest)
    return (F.cross_entropy(start, start_positions) + F.cross_entropy(end, end_positions)) / 2
