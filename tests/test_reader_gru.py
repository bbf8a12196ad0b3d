"""The CPU GRUs stepping side by side, with a written-out backward pass, compute `nn.GRU`'s values and gradients."""

from __future__ import annotations

import torch
from torch import nn

from concur.approaches.reader.gru import grus_over_time


def _gradients(outputs: torch.Tensor, weights: torch.Tensor, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    return list(torch.autograd.grad((outputs * weights).sum(), tensors))


def test_values_and_gradients_equal_pytorchs_grus_run_one_by_one():
    torch.manual_seed(0)
    grus = [nn.GRU(6, 5, batch_first=True).double() for _ in range(2)]
    inputs = [torch.randn(3, 7, 6, dtype=torch.float64, requires_grad=True) for _ in range(2)]
    weights = torch.randn(2, 3, 7, 5, dtype=torch.float64)
    ours = grus_over_time(grus, inputs)
    theirs = [gru(x)[0] for gru, x in zip(grus, inputs)]
    for mine, reference in zip(ours, theirs, strict=True):
        torch.testing.assert_close(mine, reference, atol=1e-12, rtol=1e-12)
    tensors = [*inputs, *(p for gru in grus for p in gru.parameters())]
    mine = _gradients(torch.stack(ours), weights, tensors)
    reference = _gradients(torch.stack(theirs), weights, tensors)
    for a, b in zip(mine, reference, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-12)


def test_saturated_gates_keep_finite_exact_gradients():
    torch.manual_seed(1)
    gru = nn.GRU(2, 3, batch_first=True).double()
    with torch.no_grad():
        gru.weight_ih_l0.mul_(60.0)  # pre-activations of hundreds: sigmoid and tanh at 0 or 1
    x = torch.randn(2, 4, 2, dtype=torch.float64, requires_grad=True)
    weights = torch.randn(2, 4, 3, dtype=torch.float64)
    (out,) = grus_over_time([gru], [x])
    ours = _gradients(out, weights, [x, *gru.parameters()])
    theirs = _gradients(gru(x)[0], weights, [x, *gru.parameters()])
    assert all(torch.isfinite(g).all() for g in ours)
    for mine, reference in zip(ours, theirs, strict=True):
        torch.testing.assert_close(mine, reference, atol=1e-12, rtol=1e-12)


def test_under_bf16_autocast_the_projections_are_bf16_and_the_recurrence_fp32():
    torch.manual_seed(2)
    gru = nn.GRU(16, 8, batch_first=True)
    x = torch.randn(4, 9, 16, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        (out,) = grus_over_time([gru], [x])
    assert out.dtype == torch.float32
    reference = gru(x.detach().bfloat16().float())[0]  # bf16 rounding of the inputs is most of the difference
    assert (out - reference).abs().max() < 0.01
    out.sum().backward()
    assert x.grad.dtype == torch.float32 and gru.weight_hh_l0.grad.dtype == torch.float32
    assert torch.isfinite(gru.weight_ih_l0.grad).all()
