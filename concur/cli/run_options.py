"""The options `concur run` and `concur study run` share: how a grid's jobs run (`concur.runner.scheduling.executor`)."""

from __future__ import annotations

import typer

from concur.devices import DEVICE_CHOICES
from concur.runner.scheduling.executor import Executor
from concur.runner.scheduling.worker_pool import DEFAULT_JOBS_PER_GPU

DEVICE_OPTION = typer.Option("auto", "--device", help=f"One of {', '.join(DEVICE_CHOICES)} or cuda:N.")
THREADS_OPTION = typer.Option(
    None, "--threads", min=1, help="CPU threads per job (default: a share of the cores; on a GPU at most the spec's cpus)."
)
PER_DEVICE_OPTION = typer.Option(
    None, "--per-device-batch-size", min=1, help="Cap examples per forward pass; gradients accumulate to the spec's batch."
)
MODEL_PATH_OPTION = typer.Option(None, "--model-path", help="Local copy of the approach's pretrained weights.")
RETRY_OPTION = typer.Option(False, "--retry-failed", help="Run again jobs that failed before.")
WORKERS_OPTION = typer.Option(1, "--workers", min=1, help="Jobs run at once without a GPU (each gets an equal share of the cores).")
JOBS_PER_GPU_OPTION = typer.Option(
    DEFAULT_JOBS_PER_GPU, "--jobs-per-gpu", min=1, help="Small jobs ([resources] small = true) sharing one GPU at most."
)
ATTEMPTS_OPTION = typer.Option(3, "--max-attempts", min=1, help="Runs of a job whose worker dies without a result.")
TIME_LIMIT_OPTION = typer.Option(None, "--time-limit", min=0.01, help="Minutes a job may run (default: its spec's time_limit_hours).")
EXECUTOR_OPTION = typer.Option(Executor.local, "--executor", help="local: worker processes here; slurm: job arrays through submitit.")
SLURM_CONFIG_OPTION = typer.Option(
    None, "--slurm-config", help="TOML with partition, account, qos, array_parallelism (default: ~/.config/concur/slurm.toml)."
)
WAIT_OPTION = typer.Option(True, "--wait/--no-wait", help="With Slurm: wait for the jobs, or submit and exit (collect later).")
CUDA_GRAPHS_OPTION = typer.Option(
    False, "--cuda-graphs", help="hf-span on CUDA: record each batch shape's training step once and replay it (fewer kernel launches)."
)
