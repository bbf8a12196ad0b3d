"""Pick the compute device and describe the software a result was computed with."""

from __future__ import annotations

import platform
import sys
from typing import Any

from concur import __version__
from concur.errors import ConcurError

DEVICE_CHOICES = ("auto", "cpu", "cuda")


def resolve_device(requested: str) -> str:
    """'auto' -> 'cuda' when a GPU is visible, else 'cpu'; 'cuda' without a GPU is an error."""
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConcurError(f"--device {requested}: no CUDA GPU is visible to PyTorch {torch.__version__} here; use --device cpu")
        return requested
    if requested == "cpu":
        return "cpu"
    raise ConcurError(f"unknown device {requested!r}; use one of {', '.join(DEVICE_CHOICES)} (or cuda:N)")


def device_description(device: str) -> str:
    """A human-readable name of the device, e.g. 'NVIDIA H100 80GB HBM3' or 'cpu (2 threads)'."""
    import torch

    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return f"cpu ({torch.get_num_threads()} threads, {platform.processor() or platform.machine()})"


def software_versions() -> dict[str, Any]:
    """Versions that can change a result, stored with every job."""
    import torch
    import transformers

    versions: dict[str, Any] = {
        "concur": __version__,
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "platform": platform.platform(),
    }
    if torch.cuda.is_available():
        versions["cuda"] = torch.version.cuda
        versions["cudnn"] = torch.backends.cudnn.version()
    return versions
