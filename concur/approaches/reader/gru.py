"""A bidirectional GRU layer over a padded batch as one operation with a written-out backward pass, for the CPU.

PyTorch has no oneDNN GRU on the CPU (its `mkldnn_rnn_layer` is LSTM-only), so `nn.GRU` runs step
by step and autograd records about a dozen small operations per step, and it runs a bidirectional
layer's two directions one after the other. Here one layer's two directions step together as one
batched product per step, the forward pass runs five operations per step and the backward pass
three, with every factor that does not depend on the incoming gradient computed for all steps at
once and the recurrent weight gradient as one product over all steps. The steps work in place in
buffers that were written whole beforehand: a step writing into fresh memory would take the page
faults of mapping it, a few at every step (about a fifth of a layer's time).

The layer reads the padded batch as it is, without gathering each row reversed within its length:
both directions' input projections are one product, the backward direction steps over the time
axis flipped, and at a row's padding (which then comes first) its update gate is held at 1, so its
state stays exactly 0 until the row's last real token, where the packed sequence's backward
direction starts. Outputs at padding are 0, as `pad_packed_sequence` leaves them. The values are
`nn.GRU`'s (PyTorch's gate order r, z, n; n = tanh(W_in x + b_in + r * (W_hn h + b_hn))).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

# An update-gate pre-activation whose sigmoid is exactly 1 in fp32 and fp64 (so the state is carried
# unchanged and every gradient through the step's gates is exactly 0), and that stays finite.
HOLD_STATE = 1e4


def bidirectional_gru(ahead: nn.GRU, behind: nn.GRU, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """[ahead over x; behind over each row reversed within its length] (B, T, 2H), 0 at padding.

    `ahead` and `behind` are one-layer, one-way, batch-first GRUs with biases, started from zero
    states; `lengths` (B,) counts each row's real steps (at least 1). The input projections follow
    autocast (bf16 products under `--precision bf16`); the recurrence runs in fp32.
    """
    projected = F.linear(x, torch.cat(_both(ahead, behind, "weight_ih_l0")), torch.cat(_both(ahead, behind, "bias_ih_l0")))
    weights = torch.stack(_both(ahead, behind, "weight_hh_l0"))
    biases = torch.stack(_both(ahead, behind, "bias_hh_l0"))
    padding = torch.arange(x.shape[1], device=x.device) >= lengths.unsqueeze(1)  # (B, T)
    return _BidirectionalRecurrence.apply(projected, weights, biases, padding)


def _both(ahead: nn.GRU, behind: nn.GRU, name: str) -> list[torch.Tensor]:
    """The parameter `name` of both GRUs (`get_parameter`: nn.GRU sets its per-layer weights as untyped attributes)."""
    return [ahead.get_parameter(name), behind.get_parameter(name)]


def _time_major(directions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T, 2, D) -> the forward direction's (T, B, D) view and the backward direction's, flipped in time (a copy)."""
    return directions[:, :, 0].transpose(0, 1), directions[:, :, 1].flip(1).transpose(0, 1)


class _BidirectionalRecurrence(torch.autograd.Function):
    """The layer's outputs (B, T, 2H) from its input projections (B, T, 6H), recurrent weights (2, 3H, H) and biases (2, 3H).

    Buffers are time-major, (T, 2, B, ...), with the backward direction's time flipped, so a step is
    one contiguous slice [t] for both directions; the pre-activations' gradients are direction-major,
    (2, T, B, 3H), so that each direction's are one matrix for the weight gradient, without a copy.
    A step forward is five operations: one product whose added input carries the r and z parts of the
    input projection and both biases, so that it yields the r and z pre-activations and W_hn h + b_hn
    at once, then sigmoid (the gates overwrite their pre-activations), the candidate's addcmul onto
    its input projection, tanh and lerp. A step backward is three: the three pre-activation gradients
    as the incoming gradient times factors computed for all steps beforehand (in place of the
    factors), then the gradient of h_{t-1} as an addcmul and a product added in place onto the
    gradient reaching h_{t-1}'s output.
    """

    @staticmethod
    @torch.amp.custom_fwd(device_type="cpu")
    def forward(ctx: Any, projected: torch.Tensor, weights: torch.Tensor, biases: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", enabled=False):
            return _forward(ctx, projected, weights, biases, padding)

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx: Any, grad_result: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None]:
        with torch.autocast("cpu", enabled=False):
            return (*_backward(ctx, grad_result), None)


def _forward(ctx: Any, projected: torch.Tensor, weights: torch.Tensor, biases: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
    batch, steps, six_h = projected.shape
    hidden = six_h // 6
    dtype = weights.dtype
    per_direction = projected.view(batch, steps, 2, 3 * hidden)
    # per step, [r and z pre-activations; W_hn h + b_hn]: the product is added to b_h and the r, z input
    # projections; the sigmoid then overwrites the r and z pre-activations with the gates
    recurrent = projected.new_empty(steps, 2, batch, 3 * hidden, dtype=dtype)
    candidates = projected.new_empty(steps, 2, batch, hidden, dtype=dtype)  # W_in x + b_in, then n in place
    for d, source in enumerate(_time_major(per_direction)):
        torch.add(source[..., : 2 * hidden], biases[d, : 2 * hidden], out=recurrent[:, d, :, : 2 * hidden])
        recurrent[:, d, :, 2 * hidden :] = biases[d, 2 * hidden :]
        candidates[:, d] = source[..., 2 * hidden :]
    flipped_padding = padding.flip(1).t().unsqueeze(-1)  # (T, B, 1): the backward direction's padding, in its order
    recurrent[:, 1, :, hidden : 2 * hidden].masked_fill_(flipped_padding, HOLD_STATE)
    outputs = projected.new_empty(steps + 1, 2, batch, hidden, dtype=dtype)  # h_0 = 0, then h_1 ... h_T
    outputs[0].zero_()
    weights_t = weights.transpose(1, 2)
    # every step's views made at once (one call each, not eight tensor indexings a step); each step
    # writes only into buffers already written in bulk above, whose pages are mapped
    h, products, rz, r, z, recurrent_n, n = (
        outputs.unbind(),
        recurrent.unbind(),
        recurrent[..., : 2 * hidden].unbind(),
        recurrent[..., :hidden].unbind(),
        recurrent[..., hidden : 2 * hidden].unbind(),
        recurrent[..., 2 * hidden :].unbind(),
        candidates.unbind(),
    )
    for t in range(steps):
        products[t].baddbmm_(h[t], weights_t)
        rz[t].sigmoid_()
        n[t].addcmul_(r[t], recurrent_n[t]).tanh_()
        torch.lerp(n[t], h[t], z[t], out=h[t + 1])  # (1 - z) n + z h
    ctx.save_for_backward(weights, recurrent, candidates, outputs, padding)
    ctx.projected_dtype = projected.dtype
    result = projected.new_empty(batch, steps, 2, hidden, dtype=dtype)
    real = ~padding.t().unsqueeze(-1)  # (T, B, 1)
    torch.mul(outputs[1:, 0], real, out=result[:, :, 0].transpose(0, 1))
    result[:, :, 1] = outputs[1:, 1].flip(0).transpose(0, 1)  # 0 at padding: the held state
    return result.view(batch, steps, 2 * hidden)


def _backward(ctx: Any, grad_result: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    weights, recurrent, candidates, outputs, padding = ctx.saved_tensors
    steps, _, batch, hidden = candidates.shape
    # d loss / d h_t: first through h_t's output alone, then (in place, step by step) through h_{t+1} too
    grad_h = grad_result.new_empty(steps, 2, batch, hidden, dtype=weights.dtype)
    ahead, behind = _time_major(grad_result.reshape(batch, steps, 2, hidden))
    torch.mul(ahead, ~padding.t().unsqueeze(-1), out=grad_h[:, 0])  # the outputs at padding were set to 0
    grad_h[:, 1] = behind  # at the backward direction's padding every gate gradient is 0 already
    r, z, recurrent_n, n = recurrent[..., :hidden], recurrent[..., hidden : 2 * hidden], recurrent[..., 2 * hidden :], candidates
    previous = outputs[:-1]
    # d (r pre-activation, z pre-activation, W_hn h + b_hn) / d h_t, for every step at once, direction-major
    # (so that each direction's steps and rows are one matrix for the weight gradient); the loop then
    # multiplies them by d loss / d h_t in place, leaving the pre-activations' gradients
    keep = 1 - z
    to_n = torch.addcmul(keep, keep, n * n, value=-1)  # (1 - z)(1 - n^2): d pre-activation of n / d h_t
    grad_recurrent = grad_result.new_empty(2, steps, batch, 3, hidden, dtype=weights.dtype)
    factors = grad_recurrent.transpose(0, 1)  # (T, 2, B, 3, H) view
    torch.mul(torch.addcmul(r, r, r, value=-1).mul_(recurrent_n), to_n, out=factors[..., 0, :])  # r (1 - r) (W_hn h + b_hn) to_n
    torch.mul(previous - n, keep.mul_(z), out=factors[..., 1, :])  # (h_{t-1} - n) z (1 - z)
    torch.mul(to_n, r, out=factors[..., 2, :])
    g, to_pre, pre_flat, keep_z = (
        grad_h.unbind(),
        grad_recurrent.unbind(1),
        grad_recurrent.view(2, steps, batch, 3 * hidden).unbind(1),
        z.unbind(),
    )
    for t in reversed(range(steps)):
        to_pre[t].mul_(g[t].unsqueeze(-2))
        if t:
            g[t - 1].addcmul_(g[t], keep_z[t]).baddbmm_(pre_flat[t], weights)
    grad_recurrent = grad_recurrent.view(2, steps, batch, 3 * hidden)
    grad_projected = grad_result.new_empty(batch, steps, 2, 3 * hidden, dtype=ctx.projected_dtype)
    grad_inputs_n = grad_h.mul_(to_n)
    ahead = grad_projected[:, :, 0].transpose(0, 1)  # (T, B, 3H) views into the (B, T, 2, 3H) gradient
    ahead[..., : 2 * hidden] = grad_recurrent[0, ..., : 2 * hidden]
    ahead[..., 2 * hidden :] = grad_inputs_n[:, 0]
    grad_projected[:, :, 1, : 2 * hidden] = grad_recurrent[1, ..., : 2 * hidden].flip(0).transpose(0, 1)
    grad_projected[:, :, 1, 2 * hidden :] = grad_inputs_n[:, 1].flip(0).transpose(0, 1)
    per_direction = grad_recurrent.view(2, steps * batch, 3 * hidden)  # sums over steps and batch rows, as one product
    grad_weights = per_direction.transpose(1, 2) @ previous.transpose(0, 1).reshape(2, steps * batch, hidden)
    return grad_projected.view(batch, steps, 6 * hidden), grad_weights, per_direction.sum(dim=1)
