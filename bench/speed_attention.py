"""What a new sequence length costs PyTorch's attention backends on a GPU, forward and backward.

Run: `python -m bench.speed_attention [--device cuda] [--batch 16] [--heads 12] [--dim 64]`.

concur pads each batch of windows only to its longest window (rounded up to 8 on CUDA), so a
fine-tuning run meets dozens of distinct lengths, and prediction more. A backend that builds an
execution plan per shape (cuDNN's attention does) pays that build at every new length. For each
backend setting this times bf16 SDPA with a key-padding mask, forward and backward, over every
length from --shortest to --longest in steps of 8 (shifted by one per setting, so no setting meets
a shape another has set up): once through (every length new), then again (every length seen).
It prints the backend PyTorch picks by default for such inputs and the milliseconds per call of
each pass.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.nn import functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SETTINGS = {
    "default": None,
    "no-cudnn": [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH],
    "efficient": [SDPBackend.EFFICIENT_ATTENTION],
    "cudnn": [SDPBackend.CUDNN_ATTENTION],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--shortest", type=int, default=64)
    parser.add_argument("--longest", type=int, default=384)
    args = parser.parse_args()
    lengths = list(range(args.shortest, args.longest + 1, 8))
    dtype = torch.bfloat16 if args.device.startswith("cuda") else torch.float32
    name = torch.cuda.get_device_name() if args.device.startswith("cuda") else args.device
    print(f"device: {name}, torch {torch.__version__}; batch {args.batch}, {args.heads} heads of {args.dim}, {len(lengths)} lengths")
    query, key, value, mask = _inputs(args, args.longest, dtype)
    choice = torch._fused_sdp_choice(query, key, value, mask)
    print(f"PyTorch's default choice with a padding mask: {SDPBackend(choice).name}")
    print(f"{'setting':10s} {'new lengths (ms/call)':>22s} {'seen lengths (ms/call)':>23s}")
    for index, (setting, backends) in enumerate(SETTINGS.items()):
        own = [length + index for length in lengths]  # lengths no other setting met: a backend caches its plans per shape
        try:
            passes = [_pass(args, own, dtype, backends) for _ in range(2)]
        except RuntimeError as error:  # a backend that cannot serve these inputs
            print(f"{setting:10s} unavailable: {str(error).splitlines()[0]}")
            continue
        print(f"{setting:10s} {passes[0]:22.2f} {passes[1]:23.2f}", flush=True)


def _inputs(args: argparse.Namespace, length: int, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """Query, key and value of one batch, and a boolean mask hiding the last quarter of every other row's keys."""
    shape = (args.batch, args.heads, length, args.dim)
    query, key, value = (torch.randn(shape, device=args.device, dtype=dtype, requires_grad=True) for _ in range(3))
    mask = torch.ones(args.batch, 1, 1, length, dtype=torch.bool, device=args.device)
    mask[::2, ..., length - length // 4 :] = False
    return query, key, value, mask


def _pass(args: argparse.Namespace, lengths: list[int], dtype: torch.dtype, backends: list[SDPBackend] | None) -> float:
    """Milliseconds per forward-and-backward call over `lengths`, each once."""
    batches = [_inputs(args, length, dtype) for length in lengths]
    _synchronize(args.device)
    started = time.perf_counter()
    for query, key, value, mask in batches:
        if backends is None:
            output = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)
        else:
            with sdpa_kernel(backends):
                output = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)
        output.sum().backward()
    _synchronize(args.device)
    return (time.perf_counter() - started) * 1000 / len(lengths)


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
