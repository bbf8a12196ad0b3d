"""Multi-head attention over padded keys for the CPU, with its backward pass written out.

PyTorch's CPU flash attention suits QANet's heads of 16 channels poorly, and its bf16 backward
pass takes 4x its fp32 one (forward and backward at 32 x 8 heads x 133 x 16: 58.8 ms in bf16,
20.7 ms in fp32). At that size attention is bound by passes over the (batch, heads, T, T) scores,
so this one makes as few as it can: the padding mask rides in the product (the queries get a
column of ones, the keys a column holding 0 or -inf, so Q'K'^T is the masked scores with no pass
to add it), the softmax and its gradient are PyTorch's fused kernels (fp32 arithmetic on bf16
tensors), and the probabilities are kept for the backward pass rather than recomputed. Under bf16
autocast the scores and probabilities are bf16, as in the eager attention of transformers' models;
the same function in fp32 or float64 computes SDPA's values.
"""

from __future__ import annotations

from typing import Any

import torch


def key_masked_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d) over the keys where `keys` is True) V, for (B, heads, T, d) tensors and a (B, T) mask.

    Every row of `keys` needs a True (a row with none has no distribution to take).
    """
    bias = torch.zeros(keys.shape, dtype=query.dtype, device=query.device).masked_fill_(~keys, float("-inf"))
    return _KeyMaskedAttention.apply(query, key, value, bias)


class _KeyMaskedAttention(torch.autograd.Function):
    """Attention with a (B, T) additive key bias; under autocast its inputs are cast to bf16, not recast inside."""

    @staticmethod
    @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.bfloat16)
    def forward(ctx: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        batch, heads, length, dim = key.shape
        scale = dim**-0.5
        query_ones = torch.cat([query * scale, query.new_ones(*query.shape[:-1], 1)], dim=-1)
        key_bias = torch.cat([key, bias.to(key.dtype).view(batch, 1, length, 1).expand(batch, heads, length, 1)], dim=-1)
        probabilities = torch.softmax(query_ones @ key_bias.transpose(-1, -2), dim=-1)
        ctx.save_for_backward(query_ones, key_bias, value, probabilities)
        ctx.scale = scale
        return probabilities @ value

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None]:
        query_ones, key_bias, value, probabilities = ctx.saved_tensors
        grad_out = grad_out.to(value.dtype)
        grad_value = probabilities.transpose(-1, -2) @ grad_out
        grad_scores = torch._softmax_backward_data(grad_out @ value.transpose(-1, -2), probabilities, -1, probabilities.dtype)
        grad_query = (grad_scores @ key_bias[..., :-1]).mul_(ctx.scale)
        grad_key = grad_scores.transpose(-1, -2) @ query_ones[..., :-1]
        return grad_query, grad_key, grad_value, None
