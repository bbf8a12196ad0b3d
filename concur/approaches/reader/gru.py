"""One-way GRUs over padded batches, run side by side, whose backward pass is written out, for the CPU.

PyTorch has no oneDNN GRU on the CPU (its `mkldnn_rnn_layer` is LSTM-only), so `nn.GRU` runs step
by step and autograd records about a dozen small operations per step, and it runs a bidirectional
layer's two directions one after the other. Here the GRUs of a layer (its two directions) step
together as one batched product per step, the forward pass runs five operations per step into
preallocated time-major buffers, the backward pass three per step, with every factor that does not
depend on the incoming gradient computed for all steps at once and the recurrent weight gradient
as one product over all steps. The values are `nn.GRU`'s (PyTorch's gate order r, z, n;
n = tanh(W_in x + b_in + r * (W_hn h + b_hn))).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


def grus_over_time(grus: Sequence[nn.GRU], inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """`[gru(x)[0] for gru, x in zip(grus, inputs)]` for one-layer, one-way, batch-first GRUs with biases, from zero states.

    The inputs share their batch size and length; the GRUs their hidden size.
    """
    # (T, S, B, 3H): the input projections follow autocast (bf16 products under --precision bf16)
    projected = torch.stack([F.linear(x, gru.weight_ih_l0, gru.bias_ih_l0).transpose(0, 1) for gru, x in zip(grus, inputs)], dim=1)
    weights = torch.stack([gru.weight_hh_l0 for gru in grus])
    biases = torch.stack([gru.bias_hh_l0 for gru in grus])
    outputs = _Recurrence.apply(projected, weights, biases)  # (T, S, B, H)
    return [outputs[:, s].transpose(0, 1) for s in range(len(grus))]


class _Recurrence(torch.autograd.Function):
    """h_t of S GRUs from their input projections (T, S, B, 3H), h_0 = 0; returns (T, S, B, H). The recurrence runs in fp32.

    A step forward is five operations: one product whose added input carries the r and z parts of the
    input projection and both biases, so that it yields the r and z pre-activations and W_hn h + b_hn
    at once, then sigmoid, the candidate's addcmul, tanh and lerp. A step backward is three: the three
    pre-activation gradients as one product of the incoming gradient with factors computed for all
    steps beforehand, then the gradient of h_{t-1} as an addcmul and a product added in place.
    """

    @staticmethod
    @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
    def forward(ctx: Any, projected: torch.Tensor, weights: torch.Tensor, biases: torch.Tensor) -> torch.Tensor:
        steps, stack, batch, three_h = projected.shape
        hidden = three_h // 3
        # [r and z pre-activations; W_hn h + b_hn] per step: the product is added to b_h and the r, z input projections
        recurrent = biases.unsqueeze(1).expand(steps, stack, batch, three_h).clone()
        recurrent[..., : 2 * hidden] += projected[..., : 2 * hidden]
        gates = projected.new_empty(steps, stack, batch, 2 * hidden)  # r, z
        candidates = projected.new_empty(steps, stack, batch, hidden)  # n
        outputs = projected.new_empty(steps + 1, stack, batch, hidden)  # h_0 = 0, then h_1 ... h_T
        outputs[0].zero_()
        weights_t = weights.transpose(1, 2)
        for t in range(steps):
            h = outputs[t]
            recurrent[t].baddbmm_(h, weights_t)
            torch.sigmoid(recurrent[t, ..., : 2 * hidden], out=gates[t])
            n = torch.addcmul(projected[t, ..., 2 * hidden :], gates[t, ..., :hidden], recurrent[t, ..., 2 * hidden :])
            torch.tanh(n, out=candidates[t])
            torch.lerp(candidates[t], h, gates[t, ..., hidden:], out=outputs[t + 1])  # (1 - z) n + z h
        ctx.save_for_backward(weights, recurrent[..., 2 * hidden :], gates, candidates, outputs)
        return outputs[1:]

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx: Any, grad_outputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        weights, recurrent_n, gates, candidates, outputs = ctx.saved_tensors
        steps, stack, batch, hidden = candidates.shape
        r, z, n = gates[..., :hidden], gates[..., hidden:], candidates
        previous = outputs[:-1]
        to_n = (1 - z) * (1 - n * n)  # d pre-activation of n / d h_t
        # d (r pre-activation, z pre-activation, W_hn h + b_hn) / d h_t, for every step at once
        factors = torch.stack([to_n * recurrent_n * r * (1 - r), (previous - n) * z * (1 - z), to_n * r], dim=-2)
        grad_recurrent = grad_outputs.new_empty(steps, stack, batch, 3, hidden)
        grad_h = grad_outputs.new_empty(steps, stack, batch, hidden)  # d loss / d h_t, through h_t's output and h_{t+1}
        grad_h[-1] = grad_outputs[-1]
        for t in reversed(range(steps)):
            torch.mul(grad_h[t].unsqueeze(-2), factors[t], out=grad_recurrent[t])
            if t:
                torch.addcmul(grad_outputs[t - 1], grad_h[t], z[t], out=grad_h[t - 1])
                grad_h[t - 1].baddbmm_(grad_recurrent[t].view(stack, batch, 3 * hidden), weights)
        grad_recurrent = grad_recurrent.view(steps, stack, batch, 3 * hidden)
        grad_projected = torch.cat([grad_recurrent[..., : 2 * hidden], grad_h * to_n], dim=-1)
        # per GRU: sum over steps and batch rows, as one product
        per_gru = grad_recurrent.transpose(0, 1).reshape(stack, steps * batch, 3 * hidden)
        grad_weights = per_gru.transpose(1, 2) @ previous.transpose(0, 1).reshape(stack, steps * batch, hidden)
        return grad_projected, grad_weights, per_gru.sum(dim=1)
