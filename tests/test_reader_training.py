"""The readers' optimisers: one call updates every parameter, and the updates are the per-parameter loop's."""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch
from torch import nn

from concur.approaches.base import build_hparams
from concur.approaches.reader.hparams.base import ReaderHParams
from concur.approaches.reader.training import build_optimizer
from concur.registry import default_registry

# (optimiser, the flag build_optimizer sets): fused kernels where PyTorch has them, foreach otherwise
OPTIMIZERS = [("adam", "fused"), ("sgd", "fused"), ("adamax", "foreach"), ("adadelta", "foreach")]


def _hparams(optimizer: str) -> ReaderHParams:  # the spec's recipe of RaSoR with another optimiser, momentum and an L2 term
    spec = default_registry().approach("rasor")
    hp = build_hparams(spec.implementation, spec.hparams)
    return dataclasses.replace(hp, optimizer=optimizer, learning_rate=0.05, beta1=0.8, weight_decay=3e-4)


@pytest.mark.parametrize(("optimizer", "flag"), OPTIMIZERS)
def test_a_readers_optimiser_updates_all_parameters_at_once_as_the_per_parameter_loop_does(optimizer, flag):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(50, 12), nn.LSTM(12, 10, batch_first=True))
    looped = copy.deepcopy(model)
    hp = _hparams(optimizer)
    ours = build_optimizer(model, hp)
    assert ours.defaults[flag] is True
    reference_class = type(ours)
    options = {name: value for name, value in ours.defaults.items() if name in ("lr", "betas", "eps", "rho", "momentum", "weight_decay")}
    reference = reference_class(looped.parameters(), **options, foreach=False)
    initial = nn.utils.parameters_to_vector(model.parameters()).detach().clone()
    for batch in torch.randint(0, 50, (20, 4, 7)):
        for net, step in ((model, ours), (looped, reference)):
            step.zero_grad()
            net[1](net[0](batch))[0].pow(2).mean().backward()
            step.step()
    updated, expected = nn.utils.parameters_to_vector(model.parameters()), nn.utils.parameters_to_vector(looped.parameters())
    assert (updated - initial).abs().max() > 1e-3  # 20 steps moved the weights
    assert torch.allclose(updated, expected, rtol=0, atol=1e-6)  # as the loop moved them, to float rounding
