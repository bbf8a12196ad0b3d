"""The attention concur fine-tunes with: PyTorch's SDPA, except while training on the CPU.

With attention dropout, SDPA on the CPU takes its reference ("math") path: PyTorch's per-element
dropout over the batch x heads x length^2 probabilities, plus a NaN-safe softmax that checks
every row for -inf, all in fp32 even under bf16 autocast. Padding only ever masks keys, so no
row is fully masked, and the plain softmax with concur's bulk dropout
(concur.approaches.dropout), its products under autocast, computes the same function in less
time, most of all under bf16 autocast, where SDPA's reference path runs in fp32. Everywhere
else (CUDA, prediction, no dropout) this is transformers' SDPA attention, and masks are built as
for SDPA; on CUDA it keeps to the backends that need no per-shape set-up (flash, memory-efficient,
math): batches are padded only to their longest window, so a run meets dozens of lengths, and
cuDNN's attention builds an execution plan for every new one (`python -m bench.speed_attention`).
"""

from __future__ import annotations

from typing import Any

import torch

from concur.approaches.dropout import dropout as bulk_dropout

NAME = "concur_sdpa"
SHAPE_FREE_BACKENDS = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH")  # SDPBackend names


def attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' attention-function contract: (batch, heads, length, dim) in, (batch, length, heads, dim) out."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    plain = kwargs.get("position_bias") is None and getattr(module, "num_key_value_groups", 1) == 1
    if query.device.type == "cuda":
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel([getattr(SDPBackend, name) for name in SHAPE_FREE_BACKENDS]):
            return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)
    if dropout == 0.0 or query.device.type != "cpu" or not plain or getattr(module, "is_causal", False):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)
    scale = query.shape[-1] ** -0.5 if scaling is None else scaling
    probabilities = bulk_dropout(torch.softmax(masked_scores(query * scale, key, attention_mask), dim=-1), dropout, training=True)
    output = torch.matmul(probabilities.to(value.dtype), value)
    return output.transpose(1, 2).contiguous(), None


def masked_scores(query: torch.Tensor, key: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
    """Q K^T plus the mask as an additive bias, in one product (`baddbmm` starts from the bias).

    A product, then a pass to add the mask, would cost two more passes over the batch x heads x
    length^2 scores forward and two backward (the mask's and the scale's, which the caller puts on
    the smaller query instead).
    """
    batch, heads, length, dim = query.shape
    keys = key.shape[2]
    flat_query, flat_key_t = query.reshape(batch * heads, length, dim), key.reshape(batch * heads, keys, dim).transpose(1, 2)
    if attention_mask is None:
        return torch.bmm(flat_query, flat_key_t).view(batch, heads, length, keys)
    if attention_mask.dtype == torch.bool:
        bias = torch.zeros(attention_mask.shape, dtype=query.dtype, device=query.device)
        bias.masked_fill_(~attention_mask, torch.finfo(query.dtype).min)
    else:
        bias = attention_mask.to(query.dtype)
    flat_bias = bias.expand(batch, heads, length, keys).reshape(batch * heads, length, keys)
    return torch.baddbmm(flat_bias, flat_query, flat_key_t).view(batch, heads, length, keys)


def register() -> str:
    """Make `NAME` an attention implementation transformers models can load with; returns it."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    AttentionInterface.register(NAME, attention_forward)
    ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, sdpa_mask)
    return NAME
