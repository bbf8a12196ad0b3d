"""Host tensors onto the training device without making the host wait for the device."""

from __future__ import annotations

from typing import Any


def to_device(tensors: dict[str, Any], device: str) -> dict[str, Any]:
    """The tensors on `device`. CUDA copies from pinned memory, so they are asynchronous and the host goes on
    preparing the next batch while the GPU works: a copy from pageable memory waits until the GPU has finished
    everything queued before it."""
    if not device.startswith("cuda"):
        return {name: tensor.to(device) for name, tensor in tensors.items()}
    return {name: tensor.pin_memory().to(device, non_blocking=True) for name, tensor in tensors.items()}
