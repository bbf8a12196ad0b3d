"""The machine and the commit a measurement was taken on, as every result file and generated table names them."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

CPU_FEATURES = ("avx512f", "avx512_bf16", "amx_bf16")  # what bf16 on the CPU runs on, recorded with each result
CPUINFO = Path("/proc/cpuinfo")
MEMINFO = Path("/proc/meminfo")


def cpu_fields() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (empty where there is none)."""
    lines = CPUINFO.read_text().splitlines() if CPUINFO.is_file() else []
    return {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in lines)}


def cpu_name() -> str:
    return cpu_fields().get("model name") or platform.processor() or platform.machine()


def cpu_features() -> list[str]:
    """Which of CPU_FEATURES this CPU has."""
    flags = cpu_fields().get("flags", "").split()
    return [flag for flag in CPU_FEATURES if flag in flags]


def describe_cpu() -> str:
    """One line: cores, model, the bf16-relevant features, memory; e.g. `2-core AMD EPYC (AVX2 only), 24 GiB`."""
    features = cpu_features()
    kind = ", ".join(flag.upper().replace("_", "-") for flag in features) if features else "no AVX-512"
    memory = ""
    if MEMINFO.is_file():
        total = next((line.split()[1] for line in MEMINFO.read_text().splitlines() if line.startswith("MemTotal:")), None)
        memory = f", {round(int(total) / 2**20)} GiB" if total else ""
    return f"{os.cpu_count()}-core {cpu_name()} ({kind}){memory}"


def git_commit() -> str | None:
    """The checkout's short commit, or None outside a git checkout."""
    ran = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent)
    return ran.stdout.strip() or None
