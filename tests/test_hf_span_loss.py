"""The span training objective of the hf-span approach."""

from __future__ import annotations

import math

import pytest
import torch

from concur.approaches.hf_span.loss import span_loss


def test_loss_is_the_mean_of_start_and_end_cross_entropy():
    start = torch.tensor([[0.0, math.log(3.0), 0.0]])  # softmax: 0.2, 0.6, 0.2
    end = torch.tensor([[0.0, 0.0, 0.0]])
    loss = span_loss(start, end, torch.ones(1, 3, dtype=torch.long), torch.tensor([1]), torch.tensor([2]))
    assert float(loss) == pytest.approx((-math.log(0.6) - math.log(1 / 3)) / 2)


def test_padding_does_not_change_a_windows_loss():
    torch.manual_seed(0)
    start, end = torch.randn(1, 5), torch.randn(1, 5)
    labels = (torch.tensor([3]), torch.tensor([4]))
    exact = span_loss(start, end, torch.ones(1, 5, dtype=torch.long), *labels)
    padded_start = torch.cat([start, torch.full((1, 3), 7.0)], dim=1)  # pad positions with large logits
    padded_end = torch.cat([end, torch.full((1, 3), 7.0)], dim=1)
    mask = torch.tensor([[1, 1, 1, 1, 1, 0, 0, 0]])
    assert float(span_loss(padded_start, padded_end, mask, *labels)) == pytest.approx(float(exact), abs=1e-6)
