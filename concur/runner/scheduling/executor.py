"""Where and how a grid's jobs run: the executor (worker processes here, or Slurm) and its settings.

One value holds what `concur run` and `concur study run` share, so the two commands run
grids alike and the driver (`concur.runner.scheduling.driver`) takes a single argument for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from concur.runner.execution.one_job import RunOptions
from concur.runner.scheduling.worker_pool import DEFAULT_JOBS_PER_GPU

SECONDS_PER_MINUTE = 60


class Executor(StrEnum):
    local = "local"  # worker processes on this machine (concur.runner.scheduling.worker_pool)
    slurm = "slurm"  # job arrays through submitit (concur.runner.scheduling.slurm)


@dataclass(frozen=True)
class Execution:
    """How the jobs of a grid run."""

    device: str = "auto"
    threads: int | None = None
    per_device_batch_size: int | None = None
    model_path: Path | None = None
    retry_failed: bool = False
    workers: int = 1  # jobs at once without a GPU
    jobs_per_gpu: int = DEFAULT_JOBS_PER_GPU
    max_attempts: int = 3  # runs of a job whose worker dies without a result
    time_limit_minutes: float | None = None  # None: each spec's resources.time_limit_hours
    executor: Executor = Executor.local
    slurm_config: Path | None = None
    wait: bool = True  # with Slurm: wait for the jobs, or submit and return
    cuda_graphs: bool = False  # hf-span on CUDA: training pieces replayed as CUDA graphs

    def run_options(self) -> RunOptions:
        """What every job runs with, whichever executor starts it."""
        return RunOptions(self.device, self.threads, self.per_device_batch_size, self.model_path, self.retry_failed, self.cuda_graphs)

    def time_limit_seconds(self) -> float | None:
        return self.time_limit_minutes * SECONDS_PER_MINUTE if self.time_limit_minutes else None
