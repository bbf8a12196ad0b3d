"""Mixed precision, the same for every approach: bf16 autocast on CUDA over fp32 weights, fp32 elsewhere."""

from __future__ import annotations

import contextlib
from typing import Any


def autocast(device: str) -> contextlib.AbstractContextManager[Any]:
    """bf16 autocast on CUDA (fp32 master weights); plain fp32 elsewhere, so CPU runs are exactly reproducible."""
    import torch

    if device.startswith("cuda"):
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()
