"""Multi-head attention over padded keys for the CPU, with its backward pass written out.

PyTorch's CPU flash attention suits QANet's heads of 16 channels poorly, and its bf16 backward
pass is several times slower than its fp32 one. At that head size attention is bound by passes over the (batch, heads, T, T)
scores, so this one makes few and keeps them in cache: it runs over chunks of (batch x head) rows
whose scores fit a core's L2 cache; the padding mask rides in the product (the queries get a
column of ones, the keys a column holding 0 or -inf, so Q'K'^T is the masked scores with no pass
to add it); the softmax and its gradient are PyTorch's fused kernels (fp32 arithmetic on bf16
tensors); the probabilities are kept for the backward pass rather than recomputed. Under bf16
autocast the scores and probabilities are bf16, as in the eager attention of transformers'
models; the same function in fp32 or float64 computes SDPA's values.

PyTorch's CPU softmax runs over a row in vectors of 32 bf16 values and handles the rest of a row
one value at a time, at several times the cost per value. So where it adds at most a tenth more
columns, the keys are padded to a multiple of 32 with masked keys (zero key and value, bias -inf), which take no weight and get no gradient.
"""

from __future__ import annotations

from typing import Any

import torch

# A chunk's scores take at most this many bytes: a Zen 4 or recent Xeon core has 1-2 MiB of L2,
# and scores that leave the cache (the whole batch's at once) make wide batches slower than SDPA.
SCORES_BYTES_PER_CHUNK = 2**20
# Score rows are padded to a multiple of this many keys (the bf16 values of one 512-bit vector)...
SCORE_COLUMNS_MULTIPLE = 32
# ...where that adds at most this fraction of columns: a few padded columns cost less than the scalar tail
# they remove, while a fifth or more extra columns cost more than they save
SCORE_COLUMNS_MAX_PADDING = 0.1


def key_masked_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d) over the keys where `keys` is True) V, for (B, heads, T, d) tensors and a (B, T) mask.

    Every row of `keys` needs a True (a row with none has no distribution to take).
    """
    bias = torch.zeros(keys.shape, dtype=query.dtype, device=query.device).masked_fill_(~keys, float("-inf"))
    if torch.is_grad_enabled():
        return _KeyMaskedAttention.apply(query, key, value, bias)
    # prediction: nothing to keep for a backward pass (at 100 x 400 tokens the probabilities are 256 MB a layer)
    if torch.is_autocast_enabled("cpu"):
        query, key, value = (tensor.to(torch.get_autocast_dtype("cpu")) for tensor in (query, key, value))
    with torch.autocast("cpu", enabled=False):
        return _attend(query, key, value, bias, keep=False)[0]


def _attend(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, bias: torch.Tensor, keep: bool) -> tuple[torch.Tensor, ...]:
    """The attention's output, then, if `keep`, what its backward pass needs.

    That is the query with its column of ones, the key with its bias column and the values, each
    flattened to (batch x heads, ., .), the last two over the padded keys, and each chunk's probabilities.
    """
    batch, heads, length, dim = key.shape
    columns = score_columns(length)
    # (batch x heads, T, d + 1), (batch x heads, columns, d + 1), (batch x heads, columns, d)
    query_ones = torch.cat([query * dim**-0.5, query.new_ones(*query.shape[:-1], 1)], dim=-1).flatten(0, 1)
    key_bias = key.new_empty(batch, heads, columns, dim + 1)
    key_bias[:, :, :length, :dim] = key
    key_bias[:, :, :length, dim] = bias.to(key.dtype).view(batch, 1, length)
    key_bias[:, :, length:, :dim] = 0
    key_bias[:, :, length:, dim] = float("-inf")
    values = value.new_empty(batch, heads, columns, dim)
    values[:, :, :length] = value
    values[:, :, length:] = 0
    key_bias, values = key_bias.flatten(0, 1), values.flatten(0, 1)
    out = value.new_empty(batch * heads, length, dim)
    probabilities = []
    for chunk in _chunks(len(values), length, columns, values.element_size()):
        chunk_probabilities = torch.softmax(query_ones[chunk] @ key_bias[chunk].transpose(-1, -2), dim=-1)
        torch.matmul(chunk_probabilities, values[chunk], out=out[chunk])
        if keep:
            probabilities.append(chunk_probabilities)
    return (out.view_as(value), query_ones, key_bias, values, *probabilities) if keep else (out.view_as(value),)


def score_columns(length: int) -> int:
    """How many keys a row of scores over `length` keys spans: `length`, or the next multiple of 32 where that is close."""
    padded = -(-length // SCORE_COLUMNS_MULTIPLE) * SCORE_COLUMNS_MULTIPLE
    return padded if padded <= length * (1 + SCORE_COLUMNS_MAX_PADDING) else length


class _KeyMaskedAttention(torch.autograd.Function):
    """Attention with a (B, T) additive key bias; under autocast its inputs are cast to bf16, not recast inside."""

    @staticmethod
    @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.bfloat16)
    def forward(ctx: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        out, *kept = _attend(query, key, value, bias, keep=True)
        ctx.save_for_backward(*kept)
        ctx.scale = key.shape[-1] ** -0.5
        return out

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None]:
        query_ones, key_bias, values, *probabilities = ctx.saved_tensors
        grads = grad_out.to(values.dtype).flatten(0, 1)
        rows, length, dim = grads.shape
        columns = values.shape[1]
        grad_query = torch.empty_like(grads)
        grad_key, grad_value = torch.empty_like(values), torch.empty_like(values)  # over the padded keys
        for chunk, chunk_probabilities in zip(_chunks(rows, length, columns, values.element_size()), probabilities, strict=True):
            torch.matmul(chunk_probabilities.transpose(-1, -2), grads[chunk], out=grad_value[chunk])
            grad_scores = torch._softmax_backward_data(
                grads[chunk] @ values[chunk].transpose(-1, -2), chunk_probabilities, -1, chunk_probabilities.dtype
            )
            torch.matmul(grad_scores, key_bias[chunk, :, :-1], out=grad_query[chunk])
            torch.matmul(grad_scores.transpose(-1, -2), query_ones[chunk, :, :-1], out=grad_key[chunk])
        shape = grad_out.shape
        unpadded = (*shape[:2], columns, dim)
        return (
            grad_query.mul_(ctx.scale).view(shape),
            grad_key.view(unpadded)[:, :, :length],
            grad_value.view(unpadded)[:, :, :length],
            None,
        )


def _chunks(total: int, length: int, columns: int, element_size: int) -> list[slice]:
    """Slices of `total` (batch x head) rows whose scores, `length` by `columns`, fit `SCORES_BYTES_PER_CHUNK`."""
    rows = max(1, SCORES_BYTES_PER_CHUNK // (length * columns * element_size))
    return [slice(start, start + rows) for start in range(0, total, rows)]
