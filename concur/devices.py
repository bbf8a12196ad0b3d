"""Pick the compute device and describe the software a result was computed with."""

from __future__ import annotations

import os
import platform
import re
import sys
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from concur import __version__
from concur.errors import ConcurError, closest

DEVICE_CHOICES = ("auto", "cpu", "cuda")
CUDA_INDEX = re.compile(r"cuda:[0-9]+")  # one GPU by its index


def device_problem(requested: str) -> str | None:
    """What is wrong with a device name (auto, cpu, cuda or cuda:N), None when nothing: checked before any work starts."""
    if requested in DEVICE_CHOICES or CUDA_INDEX.fullmatch(requested):
        return None
    hint = closest(requested, DEVICE_CHOICES)
    fix = f"did you mean {hint!r}?" if hint else f"use one of {', '.join(DEVICE_CHOICES)} (or cuda:N)"
    return f"unknown device {requested!r}; {fix}"


def resolve_device(requested: str) -> str:
    """'auto' -> 'cuda' when a GPU is visible, else 'cpu'; 'cuda' without a GPU is an error.

    'cpu' is answered without importing torch (a second per process), which a driver that only
    starts CPU workers never needs.
    """
    problem = device_problem(requested)
    if problem is not None:
        raise ConcurError(problem)
    if requested == "cpu":
        return "cpu"
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available():
        raise ConcurError(f"--device {requested}: no CUDA GPU is visible to PyTorch {torch.__version__} here; use --device cpu")
    return requested


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity (a Slurm or cgroup cpuset, taskset), not the machine's count.

    On a shared node the machine has more cores than the job was given; threads beyond the
    given ones only take turns on them, and spinning OpenMP threads make that many times slower.
    """
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@dataclass(frozen=True)
class Gpu:
    visible_id: str  # what CUDA_VISIBLE_DEVICES names it by in this process's environment
    memory_gb: float


def visible_gpus(requested: str) -> tuple[Gpu, ...]:
    """The GPUs workers may use: all visible ones for 'auto' and 'cuda', one for 'cuda:N', none for 'cpu'."""
    device = resolve_device(requested)
    if device == "cpu":
        return ()
    import torch

    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    names = [name.strip() for name in given.split(",")] if given else [str(i) for i in range(torch.cuda.device_count())]
    indices = [int(device.split(":", 1)[1])] if ":" in device else range(torch.cuda.device_count())
    return tuple(Gpu(names[i], torch.cuda.get_device_properties(i).total_memory / 2**30) for i in indices)


def device_description(device: str) -> str:
    """A human-readable name of the device, e.g. 'NVIDIA H100 80GB HBM3' or 'cpu (2 threads)'."""
    import torch

    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return f"cpu ({torch.get_num_threads()} threads, {platform.processor() or platform.machine()})"


def software_versions() -> dict[str, Any]:
    """Versions that can change a result, stored with every job.

    transformers' version is read from its installed metadata: importing it costs half a second
    in every job, and a reader job never uses it.
    """
    import torch

    versions: dict[str, Any] = {
        "concur": __version__,
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": metadata.version("transformers"),
        "platform": platform.platform(),
    }
    if torch.cuda.is_available():
        versions["cuda"] = torch.version.cuda
        versions["cudnn"] = torch.backends.cudnn.version()  # type: ignore[no-untyped-call]  # torch leaves it unannotated
    return versions
