"""A study's jobs per hour and device use, and `concur study plan`'s estimate against the actual time.

Run: `python analysis/speed_study.py STUDY --out-dir OUT [--device cuda] [--source-dir DATA] [--registry DIR]
[--workers N | --jobs-per-gpu N] [--threads N]`, e.g. the quick start on one GPU:
`python analysis/speed_study.py analysis/studies/quickstart.toml --device cuda --source-dir DATA --out-dir runs/speed-study`.

1. `concur study run STUDY` into a new runs dir, OUT/runs: every job runs, so every approach's
   throughput is measured and stored. Timed as one command; on CUDA, nvidia-smi samples the GPU's
   busy time every 500 ms meanwhile.
2. OUT/NAME-next.toml: the same study with every seed moved up by one, i.e. new jobs of the same sizes.
3. `concur study plan NAME-next.toml --parallel P` estimates it from the stored throughputs, P being the
   jobs that run at once (--workers on the CPU, GPUs x --jobs-per-gpu on CUDA).
4. `concur study run NAME-next.toml`, timed likewise.

Prints a table and writes OUT/speed-study.json: per run its jobs, wall seconds, jobs per hour and mean
GPU busy time, and the plan's estimate over the second run's actual time (the speed issue asks for
the estimate within 30% of it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

SAMPLE_MS = 500  # nvidia-smi's sampling period
NVIDIA_SMI = "nvidia-smi"  # counts the GPUs and samples their busy time
SEEDS_LINE = re.compile(r"^seeds\s*=\s*\[([^\]]*)\]", re.MULTILINE)
NAME_LINE = re.compile(r'^name\s*=\s*"([^"]*)"', re.MULTILINE)


@dataclass(frozen=True)
class StudyRun:
    """One timed `concur study run`."""

    study: str
    jobs: int
    wall_seconds: float
    gpu_busy_percent: float | None  # mean of nvidia-smi's samples; None without a GPU

    @property
    def jobs_per_hour(self) -> float:
        return self.jobs * 3600 / self.wall_seconds


def next_seeds(text: str, path: Path) -> str:
    """The study file's text with its name suffixed `-next` and every seed moved up by one."""
    seeds, name = SEEDS_LINE.search(text), NAME_LINE.search(text)
    if seeds is None or name is None:
        missing = "a `seeds = [...]` line" if seeds is None else 'a `name = "..."` line'
        raise SystemExit(f"{path}: needs {missing} for its second run")
    moved = ", ".join(str(int(seed) + 1) for seed in seeds.group(1).split(",") if seed.strip())
    text = SEEDS_LINE.sub(f"seeds = [{moved}]", text, count=1)
    return NAME_LINE.sub(f'name = "{name.group(1)}-next"', text, count=1)


def concur_command(args: argparse.Namespace, *words: str) -> list[str]:
    """`python -m concur` with the global options, then `words`."""
    registry = ["--registry", str(args.registry)] if args.registry else []
    return [sys.executable, "-m", "concur", "--runs-dir", str(args.out_dir / "runs"), *registry, *words]


def source_options(args: argparse.Namespace) -> list[str]:
    return ["--source-dir", str(args.source_dir)] if args.source_dir else []


def run_options(args: argparse.Namespace) -> list[str]:
    options = ["--device", args.device, "--workers", str(args.workers), "--jobs-per-gpu", str(args.jobs_per_gpu)]
    return options + (["--threads", str(args.threads)] if args.threads else []) + source_options(args)


def study_plan(args: argparse.Namespace, study: Path, parallel: int) -> dict[str, Any]:
    """`concur study plan --format json` of `study`, `parallel` jobs at a time; concur's own one-line error if it fails."""
    command = concur_command(args, "study", "plan", str(study), "--format", "json", "--parallel", str(parallel), *source_options(args))
    planned = subprocess.run(command, capture_output=True, text=True)
    if planned.returncode != 0:
        raise SystemExit(f"`concur study plan {study}` failed: {planned.stderr.strip()}")
    return json.loads(planned.stdout)


def timed_run(args: argparse.Namespace, study: Path, log: Path) -> StudyRun:
    """Run every job of `study` (its output in `log`), sampling the GPU's busy time on CUDA."""
    jobs = sum(1 for job in study_plan(args, study, 1)["jobs"] if job["state"] != "done")
    sampler = None
    if args.device.startswith("cuda"):
        query = [NVIDIA_SMI, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", f"-lms={SAMPLE_MS}"]
        sampler = subprocess.Popen(query, stdout=subprocess.PIPE, text=True)
    started = time.perf_counter()
    with log.open("w") as output:
        ran = subprocess.run(concur_command(args, "study", "run", str(study), *run_options(args)), stdout=output, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - started
    busy = None
    if sampler is not None:
        sampler.terminate()
        samples = [float(value) for line in sampler.communicate()[0].splitlines() for value in line.split(",")[:1] if value.strip()]
        busy = statistics.fmean(samples) if samples else None
    if ran.returncode != 0:
        raise SystemExit(f"`concur study run {study}` failed (exit {ran.returncode}); its output: {log}")
    return StudyRun(study.stem, jobs, wall, busy)


def parallel_slots(args: argparse.Namespace) -> int:
    """Jobs that run at once: the CPU workers, or on CUDA one GPU's jobs (a study of small jobs) times the GPUs."""
    if not args.device.startswith("cuda"):
        return args.workers
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    gpus = 1 if args.device.startswith("cuda:") else len(visible.split(",")) if visible else _gpu_count()
    return gpus * args.jobs_per_gpu


def _gpu_count() -> int:
    listed = subprocess.run([NVIDIA_SMI, "--list-gpus"], capture_output=True, text=True, check=True).stdout
    return max(1, len(listed.splitlines()))


def write_result(args: argparse.Namespace, runs: list[StudyRun], parallel: int | None = None, estimate: float | None = None) -> None:
    """OUT/speed-study.json: the runs so far, and the plan's estimate of the second against its actual time."""
    result: dict[str, object] = {
        "machine": platform.node(),
        "device": args.device,
        "runs": [{**asdict(run), "jobs_per_hour": run.jobs_per_hour} for run in runs],
    }
    if estimate is not None:
        result |= {"parallel": parallel, "plan_estimate_seconds": estimate, "plan_over_actual": estimate / runs[-1].wall_seconds}
    (args.out_dir / "speed-study.json").write_text(json.dumps(result, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", type=Path)
    parser.add_argument("--out-dir", type=Path, required=True, help="a new directory: its runs/ holds both runs' jobs")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--source-dir", type=Path)
    parser.add_argument("--registry", type=Path, help="a registry directory beside the built-in one (e.g. analysis/checks)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--jobs-per-gpu", type=int, default=4)
    parser.add_argument("--threads", type=int)
    args = parser.parse_args()
    if not args.study.is_file():
        raise SystemExit(f"no study file {args.study}")
    if args.device.startswith("cuda") and shutil.which(NVIDIA_SMI) is None:
        raise SystemExit(f"--device {args.device} needs {NVIDIA_SMI} on the PATH, to count the GPUs and sample their busy time")
    if (args.out_dir / "runs").exists():
        raise SystemExit(f"{args.out_dir / 'runs'} exists: the first run must measure every job, so give a new --out-dir")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    following = args.out_dir / f"{args.study.stem}-next.toml"
    following.write_text(next_seeds(args.study.read_text(), args.study))

    first = timed_run(args, args.study, args.out_dir / "first.log")
    write_result(args, [first])  # kept should the second run be cut short
    parallel = parallel_slots(args)
    estimate = float(study_plan(args, following, parallel)["estimate_wall_seconds"])
    second = timed_run(args, following, args.out_dir / "second.log")
    write_result(args, [first, second], parallel, estimate)
    print(f"{'run':<24} {'jobs':>5} {'wall (s)':>9} {'jobs/hour':>10} {'GPU busy':>9}")
    for run in (first, second):
        busy = f"{run.gpu_busy_percent:.0f}%" if run.gpu_busy_percent is not None else "-"
        print(f"{run.study:<24} {run.jobs:>5} {run.wall_seconds:>9.1f} {run.jobs_per_hour:>10.0f} {busy:>9}")
    ratio = estimate / second.wall_seconds
    print(f"plan for {second.study}, {parallel} at a time: {estimate:.1f} s against {second.wall_seconds:.1f} s ({ratio:.2f}x)")


if __name__ == "__main__":
    main()
