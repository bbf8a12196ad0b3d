"""Dropout whose mask costs a fraction of PyTorch's on the CPU.

PyTorch's CPU dropout draws a Mersenne-Twister number per element (`bernoulli_`), a large share of
a MiniLM training step, most of it for the attention probabilities (batch x heads x length^2
elements). Here each mask comes in bulk from
NumPy's SFC64 generator (a small chaotic counter generator that passes PractRand and
BigCrush), seeded by one draw from torch's global generator, so `torch.manual_seed` still fixes
every mask. An element is dropped when a 32-bit uniform number is below `p * 2^32`, so the keep
rate equals `1 - p` to within 2^-32 (finer than `torch.rand`'s 24-bit floats), and kept elements
are scaled by `1 / (1 - p)`, as in PyTorch. Drawing is most of a mask's cost, so each element
first gets 16 bits (64-bit words read as four 16-bit lanes), which settle the comparison unless
they equal the threshold's top 16 bits; only those elements (one in 65,536) get 16 more bits,
drawn after the lanes: half the draws of 32-bit lanes, and the same keep rate. The mask is compared in
NumPy and applied as a tensor of the input's dtype holding 0 or the scale: multiplying by a
boolean tensor converts it on every use (forward and backward), which cost as much as drawing
the mask; the price is the memory of the mask kept for the backward pass, 4 bytes per element
in fp32 instead of 1. On CUDA (Philox, fast already) and outside training, PyTorch's own dropout runs.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

_LANE_VALUES = 2**32  # a mask element's uniform number has 32 bits
_HALF_LANE_VALUES = 2**16  # drawn 16 at a time
_SEED_END = 2**62  # exclusive bound of the seed drawn from torch's generator
_UNSIGNED: dict[int, type[np.unsignedinteger]] = {2: np.uint16, 4: np.uint32, 8: np.uint64}  # by itemsize: the bits of a float mask
_SIGNED = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def keep_mask(shape: torch.Size | tuple[int, ...], p: float) -> torch.Tensor:
    """A boolean CPU mask of `shape`, True with probability `1 - p` (to within 2^-32), seeded from torch's generator."""
    return torch.from_numpy(_kept(shape, p))


def scaled_keep_mask(shape: torch.Size | tuple[int, ...], p: float, value: float, dtype: torch.dtype) -> torch.Tensor:
    """`keep_mask(shape, p).to(dtype) * value`, written in one NumPy pass as the bit pattern of `value` in `dtype`
    (converting the boolean mask and scaling it in torch costs about as much as drawing it)."""
    bits = _UNSIGNED[dtype.itemsize]
    pattern = torch.tensor(value, dtype=dtype).view(_SIGNED[dtype.itemsize]).item() % (1 << (8 * dtype.itemsize))
    return torch.from_numpy(np.multiply(_kept(shape, p), bits(pattern), dtype=bits)).view(dtype)


def _kept(shape: torch.Size | tuple[int, ...], p: float) -> np.ndarray:
    """The boolean keep mask as a NumPy array: 32-bit numbers at or above `p * 2^32`, settled 16 bits at a time."""
    n = math.prod(shape)
    threshold = round(p * _LANE_VALUES)  # drop where the 32-bit number is below it
    generator = np.random.SFC64(int(torch.randint(_SEED_END, (1,)).item()))
    if threshold >= _LANE_VALUES:
        return np.zeros(tuple(shape), dtype=bool)
    high, low = divmod(threshold, _HALF_LANE_VALUES)
    lanes = _lanes16(generator, n)
    kept = lanes > high
    ties = np.flatnonzero(lanes == high)
    kept[ties] = _lanes16(generator, len(ties)) >= low  # the lower 16 bits decide where the upper ones tie
    return kept.reshape(tuple(shape))


def _lanes16(generator: np.random.SFC64, n: int) -> np.ndarray:
    """n uniform 16-bit numbers: the four 16-bit lanes of each 64-bit draw."""
    return generator.random_raw((n + 3) // 4).view(np.uint16)[:n]


def dropout(x: torch.Tensor, p: float, training: bool, scale: float = 1.0) -> torch.Tensor:
    """`torch.nn.functional.dropout(x, p, training) * scale` (on the CPU from the bulk mask), in one product.

    `scale` lets a caller fold its own factor into the mask: QANet's stochastic depth divides a
    surviving sub-layer by its survival rate.
    """
    if training and 0.0 < p < 1.0 and x.device.type == "cpu":
        # autograd keeps the scaled mask (not x) for the backward pass, which multiplies by it again
        return x * scaled_keep_mask(x.shape, p, scale / (1.0 - p), x.dtype)
    out = nn.functional.dropout(x, p, training)
    return out if scale == 1.0 else out * scale


class FastDropout(nn.Dropout):
    """`nn.Dropout` (same `p`, same `inplace` attribute, ignored) with the bulk CPU mask."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)


def use_fast_dropout(model: nn.Module) -> int:
    """Replace every `nn.Dropout` module inside `model` by a FastDropout of the same rate; returns how many."""
    replaced = 0
    for parent in model.modules():
        for name, child in list(parent.named_children()):
            if type(child) is nn.Dropout:
                setattr(parent, name, FastDropout(child.p).train(child.training))
                replaced += 1
    return replaced
