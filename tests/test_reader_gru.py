"""The CPU's fused bidirectional GRU layer computes a packed bidirectional `nn.GRU`'s values and gradients."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from concur.approaches.reader.gru import bidirectional_gru


def _directions(inputs: int, hidden: int) -> tuple[nn.GRU, nn.GRU, nn.GRU]:
    """Two one-way fp64 GRUs and the bidirectional `nn.GRU` with the same weights."""
    ahead, behind = (nn.GRU(inputs, hidden, batch_first=True).double() for _ in range(2))
    reference = nn.GRU(inputs, hidden, batch_first=True, bidirectional=True).double()
    with torch.no_grad():
        for name, parameter in ahead.named_parameters():
            getattr(reference, name).copy_(parameter)
            getattr(reference, f"{name}_reverse").copy_(getattr(behind, name))
    return ahead, behind, reference


def _packed(reference: nn.GRU, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    return pad_packed_sequence(reference(packed)[0], batch_first=True, total_length=x.shape[1])[0]


def _gradients(outputs: torch.Tensor, weights: torch.Tensor, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    return list(torch.autograd.grad((outputs * weights).sum(), tensors))


def test_values_and_gradients_equal_a_packed_bidirectional_gru():
    torch.manual_seed(0)
    ahead, behind, reference = _directions(6, 5)
    lengths = torch.tensor([7, 3, 1, 5])
    x = torch.randn(4, 7, 6, dtype=torch.float64)
    x[1, 3:] = 1e3  # junk in the padding changes nothing
    x.requires_grad_()
    ours = bidirectional_gru(ahead, behind, x, lengths)
    theirs = _packed(reference, x, lengths)
    assert ours.shape == (4, 7, 10)
    torch.testing.assert_close(ours, theirs, atol=1e-12, rtol=1e-12)
    assert ours[1, 3:].abs().sum() == 0 and ours[2, 1:].abs().sum() == 0
    weights = torch.randn(4, 7, 10, dtype=torch.float64)
    mine = _gradients(ours, weights, [x, *ahead.parameters(), *behind.parameters()])
    expected = _gradients(theirs, weights, [x, *reference.parameters()])
    # reference.parameters(): the forward direction's four, then the reverse direction's four
    for a, b in zip(mine, expected, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-12)
    assert mine[0][1, 3:].abs().sum() == 0  # no gradient reaches the padding


def test_saturated_gates_keep_finite_exact_gradients():
    torch.manual_seed(1)
    ahead, behind, reference = _directions(2, 3)
    with torch.no_grad():
        for gru in (ahead, behind, reference):
            for name, parameter in gru.named_parameters():
                if name.startswith("weight_ih"):
                    parameter.mul_(60.0)  # pre-activations of hundreds: sigmoid and tanh at 0 or 1
    x = torch.randn(2, 4, 2, dtype=torch.float64, requires_grad=True)
    lengths = torch.tensor([4, 2])
    weights = torch.randn(2, 4, 6, dtype=torch.float64)
    ours = _gradients(bidirectional_gru(ahead, behind, x, lengths), weights, [x, *ahead.parameters(), *behind.parameters()])
    theirs = _gradients(_packed(reference, x, lengths), weights, [x, *reference.parameters()])
    assert all(torch.isfinite(g).all() for g in ours)
    for mine, expected in zip(ours, theirs, strict=True):
        torch.testing.assert_close(mine, expected, atol=1e-12, rtol=1e-12)


def test_under_bf16_autocast_the_projections_are_bf16_and_the_recurrence_fp32():
    torch.manual_seed(2)
    ahead, behind = nn.GRU(16, 8, batch_first=True), nn.GRU(16, 8, batch_first=True)
    reference = nn.GRU(16, 8, batch_first=True, bidirectional=True)
    with torch.no_grad():
        for name, parameter in ahead.named_parameters():
            getattr(reference, name).copy_(parameter)
            getattr(reference, f"{name}_reverse").copy_(getattr(behind, name))
    x = torch.randn(4, 9, 16, requires_grad=True)
    lengths = torch.tensor([9, 9, 4, 2])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = bidirectional_gru(ahead, behind, x, lengths)
    assert out.dtype == torch.float32
    expected = _packed(reference, x.detach().bfloat16().float(), lengths)  # bf16 rounding of the inputs is most of the difference
    assert (out - expected).abs().max() < 0.01
    out.sum().backward()
    assert x.grad.dtype == torch.float32 and ahead.weight_hh_l0.grad.dtype == torch.float32
    assert torch.isfinite(ahead.weight_ih_l0.grad).all() and torch.isfinite(behind.weight_ih_l0.grad).all()
