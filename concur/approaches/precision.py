"""Mixed precision, the same for every approach, chosen per job (`RunContext.precision`).

- `auto`: bf16 autocast on CUDA over fp32 weights, plain fp32 on the CPU, so CPU runs are
  exactly reproducible and a study's default results do not depend on the host's CPU.
- `bf16`: bf16 autocast on every device. On CPUs with AVX-512 BF16 or AMX this trains
  faster than fp32 (docs/performance.md); it changes the numerics, so it is
  part of the job's key. A CPU without them is refused (`device_precision_problem`).
- `fp32`: no autocast anywhere (PyTorch's TF32 defaults stay off).
"""

from __future__ import annotations

import contextlib
from typing import Any

AUTO = "auto"
PRECISIONS = (AUTO, "fp32", "bf16")


def precision_problem(precision: str) -> str | None:
    """Why `precision` is not one concur runs with, or None."""
    if precision in PRECISIONS:
        return None
    return f"unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}"


def device_precision_problem(device: str, precision: str) -> str | None:
    """Why `precision` cannot run on `device` on this machine, or None: bf16 on a CPU whose oneDNN has no bf16 kernels
    (no AVX-512 BF16 or AMX) would be emulated, slower than fp32, and PyTorch has no bf16 LSTM for it at all."""
    if precision != "bf16" or device.startswith("cuda"):
        return None
    import torch

    if torch.ops.mkldnn._is_mkldnn_bf16_supported():
        return None
    return (
        f"bf16 needs a CPU with AVX-512 BF16 or AMX (this one has {torch.backends.cpu.get_cpu_capability()}: bf16 would be emulated, "
        "slower than fp32, and PyTorch has no bf16 LSTM for it) or a GPU; use precision fp32 or auto here"
    )


def numerics(device: str, precision: str = AUTO) -> str:
    """What a job's forward passes compute in, as its result records it: "bf16" (autocast over fp32 weights) or "fp32"."""
    return "fp32" if autocast_dtype(device, precision) is None else "bf16"


def autocast_dtype(device: str, precision: str = AUTO) -> str | None:
    """The autocast dtype (`"bfloat16"`) a forward pass on `device` runs under, or None for fp32."""
    problem = precision_problem(precision)
    if problem is not None:
        raise ValueError(problem)
    if precision == "bf16" or (precision == AUTO and device.startswith("cuda")):
        return "bfloat16"
    return None


def autocast(device: str, precision: str = AUTO, cache: bool = True) -> contextlib.AbstractContextManager[Any]:
    """The autocast context of a forward pass on `device` under `precision`; without `cache` each use of a
    weight casts it anew (what a recorded CUDA graph needs: cached casts are freed after recording)."""
    dtype = autocast_dtype(device, precision)
    if dtype is None:
        return contextlib.nullcontext()
    import torch

    return torch.autocast(device_type="cuda" if device.startswith("cuda") else "cpu", dtype=getattr(torch, dtype), cache_enabled=cache)
