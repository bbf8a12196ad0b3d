"""A study's jobs per hour and device use, and `concur study plan`'s estimate against the actual time.

Run: `python -m bench.speed_study STUDY --out-dir OUT [--device cuda] [--source-dir DATA] [--registry DIR]
[--workers N | --jobs-per-gpu N] [--threads N] [--pilot TRAIN,TEST]`, e.g. the quick start on one GPU:
`python -m bench.speed_study analysis/studies/quickstart.toml --device cuda --source-dir DATA --out-dir runs/speed-study`.

1. `concur study run` of a first study into a new runs dir, OUT/runs: every job runs, so every
   approach's throughput is measured and stored. Timed as one command; on CUDA, nvidia-smi samples
   the GPU's busy time every 500 ms meanwhile. The first study is STUDY itself, or with `--pilot`
   OUT/NAME-pilot.toml: STUDY with its budget cut to TRAIN training and TEST test questions per
   benchmark, as a researcher pilots a study before paying for it.
2. The second study: OUT/NAME-next.toml, STUDY with every seed moved up by one (new jobs of the same
   sizes), or with `--pilot` STUDY itself (jobs of other sizes than those measured).
3. `concur study plan SECOND --parallel P` estimates it from the stored throughputs, P being the
   jobs that run at once (--workers on the CPU, GPUs x --jobs-per-gpu on CUDA).
4. `concur study run SECOND`, timed likewise.

Prints a table and writes OUT/speed-study.json: per run its jobs, how many of them ran in workers forked
warm (the others started new processes: a GPU worker whose zygote found CUDA initialised), wall seconds,
jobs per hour and mean GPU busy time, the plan's estimate over the second run's actual time (the speed issue asks for
the estimate within 30% of it), and per approach its jobs' estimated against measured device-seconds.
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
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from concur.runner.records.store import Store
from concur.workspace import Workspace

SAMPLE_MS = 500  # nvidia-smi's sampling period
NVIDIA_SMI = "nvidia-smi"  # counts the GPUs and samples their busy time
SEEDS_LINE = re.compile(r"^seeds\s*=\s*\[([^\]]*)\]", re.MULTILINE)
NAME_LINE = re.compile(r'^name\s*=\s*"([^"]*)"', re.MULTILINE)
BUDGET_HEADER = re.compile(r"^\[budget\][ \t]*(#.*)?$", re.MULTILINE)
NEXT_TABLE = re.compile(r"^\[", re.MULTILINE)
QUESTIONS_LINE = re.compile(r"^(train|test)_questions\s*=.*\n?", re.MULTILINE)


@dataclass(frozen=True)
class StudyRun:
    """One timed `concur study run`."""

    study: str
    jobs: int
    wall_seconds: float
    gpu_busy_percent: float | None  # mean of nvidia-smi's samples; None without a GPU
    forked_jobs: int  # of `jobs`, those whose worker was forked warm (the rest started new processes)

    @property
    def jobs_per_hour(self) -> float:
        return self.jobs * 3600 / self.wall_seconds


def renamed(text: str, path: Path, suffix: str) -> str:
    """The study file's text with its name suffixed `-suffix`, so its runs show apart from the study's."""
    name = NAME_LINE.search(text)
    if name is None:
        raise SystemExit(f'{path}: needs a `name = "..."` line for its {suffix} run')
    return NAME_LINE.sub(f'name = "{name.group(1)}-{suffix}"', text, count=1)


def next_seeds(text: str, path: Path) -> str:
    """The study file's text with its name suffixed `-next` and every seed moved up by one."""
    seeds = SEEDS_LINE.search(text)
    if seeds is None:
        raise SystemExit(f"{path}: needs a `seeds = [...]` line for its second run")
    moved = ", ".join(str(int(seed) + 1) for seed in seeds.group(1).split(",") if seed.strip())
    return renamed(SEEDS_LINE.sub(f"seeds = [{moved}]", text, count=1), path, "next")


def pilot_budget(text: str, path: Path, train: int, test: int) -> str:
    """The study file's text with its name suffixed `-pilot` and its budget set to `train` and `test` questions."""
    text = renamed(text, path, "pilot")
    questions = f"train_questions = {train}\ntest_questions = {test}\n"
    header = BUDGET_HEADER.search(text)
    if header is None:
        text = f"{text.rstrip()}\n\n[budget]\n{questions}"
    else:
        start = header.end() + 1
        following = NEXT_TABLE.search(text, start)
        end = following.start() if following else len(text)
        text = text[:start] + questions + QUESTIONS_LINE.sub("", text[start:end]) + text[end:]
    failure = f"{path}: could not set its [budget] to {train} training and {test} test questions for a pilot"
    try:
        budget = tomllib.loads(text).get("budget", {})
    except tomllib.TOMLDecodeError as error:  # e.g. a budget written inline, now declared twice
        raise SystemExit(f"{failure}: {error}") from None
    if (budget.get("train_questions"), budget.get("test_questions")) != (train, test):
        raise SystemExit(failure)
    return text


def questions_pair(value: str) -> tuple[int, int]:
    """`--pilot TRAIN,TEST`: two positive question counts."""
    parts = value.split(",")
    if len(parts) != 2 or not all(part.strip().isdigit() and int(part) > 0 for part in parts):
        raise argparse.ArgumentTypeError(f"expected TRAIN,TEST: two positive question counts, e.g. 100,100; got {value!r}")
    return int(parts[0]), int(parts[1])


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
    before = stored_results(args)
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
    forked = sum(1 for key, row in stored_results(args).items() if key not in before and row.get("pool_start_seconds") is not None)
    return StudyRun(study.stem, jobs, wall, busy, forked)


def stored_results(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The results in OUT/runs's index by job key (none before the first run). A job forked warm carries its zygote's
    start-up time (`pool_start_seconds`); a job's key is only known once its benchmark is prepared, so the jobs of a
    run are those new in the index after it."""
    db_path = Workspace.resolve(args.out_dir / "runs").db_path
    if not db_path.exists():
        return {}
    with Store.open_for_reading(db_path) as store:
        return {row["key"]: row for row in store.rows()}


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


def estimates_by_approach(planned: dict[str, Any], measured: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per approach, the device-seconds its jobs were planned at before they ran against those they measured.

    `planned` and `measured` are `concur study plan --format json` of the same study before and after its run;
    only jobs planned with an estimate and finished since count.
    """
    estimates = {job["key"]: job["estimate_seconds"] for job in planned["jobs"] if job["state"] != "done" and job.get("estimate_seconds")}
    sums: dict[str, list[float]] = {}
    for job in measured["jobs"]:
        if job["key"] in estimates and job.get("device_seconds"):
            totals = sums.setdefault(job["approach"], [0, 0.0, 0.0])
            totals[0] += 1
            totals[1] += estimates[job["key"]]
            totals[2] += job["device_seconds"]
    return {
        approach: {"jobs": int(jobs), "estimate_seconds": planned_s, "actual_seconds": actual, "estimate_over_actual": planned_s / actual}
        for approach, (jobs, planned_s, actual) in sums.items()
    }


def write_result(
    args: argparse.Namespace,
    runs: list[StudyRun],
    parallel: int | None = None,
    estimate: float | None = None,
    approaches: dict[str, dict[str, float]] | None = None,
) -> None:
    """OUT/speed-study.json: the runs so far, and the plan's estimate of the second against its actual time."""
    result: dict[str, object] = {
        "machine": platform.node(),
        "device": args.device,
        "runs": [{**asdict(run), "jobs_per_hour": run.jobs_per_hour} for run in runs],
    }
    if estimate is not None:
        result |= {"parallel": parallel, "plan_estimate_seconds": estimate, "plan_over_actual": estimate / runs[-1].wall_seconds}
    if args.pilot:
        result["pilot"] = {"train_questions": args.pilot[0], "test_questions": args.pilot[1]}
    if approaches is not None:
        result["by_approach"] = approaches
    (args.out_dir / "speed-study.json").write_text(json.dumps(result, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", type=Path)
    parser.add_argument("--out-dir", type=Path, required=True, help="a new directory: its runs/ holds both runs' jobs")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--source-dir", type=Path)
    parser.add_argument("--registry", type=Path, help="a registry directory beside the built-in one (e.g. bench/checks)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--jobs-per-gpu", type=int, default=4)
    parser.add_argument("--threads", type=int)
    parser.add_argument("--pilot", type=questions_pair, metavar="TRAIN,TEST",
                        help="first run a pilot of the study at this budget, then plan and run the study itself")  # fmt: skip
    args = parser.parse_args()
    if not args.study.is_file():
        raise SystemExit(f"no study file {args.study}")
    if args.device.startswith("cuda") and shutil.which(NVIDIA_SMI) is None:
        raise SystemExit(f"--device {args.device} needs {NVIDIA_SMI} on the PATH, to count the GPUs and sample their busy time")
    if (args.out_dir / "runs").exists():
        raise SystemExit(f"{args.out_dir / 'runs'} exists: the first run must measure every job, so give a new --out-dir")
    text = args.study.read_text()
    if args.pilot:
        first_study, second_study = args.out_dir / f"{args.study.stem}-pilot.toml", args.study
        first_text = pilot_budget(text, args.study, *args.pilot)
    else:
        first_study, second_study = args.study, args.out_dir / f"{args.study.stem}-next.toml"
        first_text = next_seeds(text, args.study)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (first_study if args.pilot else second_study).write_text(first_text)

    first = timed_run(args, first_study, args.out_dir / "first.log")
    write_result(args, [first])  # kept should the second run be cut short
    parallel = parallel_slots(args)
    planned = study_plan(args, second_study, parallel)
    estimate = float(planned["estimate_wall_seconds"])
    second = timed_run(args, second_study, args.out_dir / "second.log")
    approaches = estimates_by_approach(planned, study_plan(args, second_study, parallel))
    write_result(args, [first, second], parallel, estimate, approaches)
    print(f"{'run':<24} {'jobs':>5} {'forked':>7} {'wall (s)':>9} {'jobs/hour':>10} {'GPU busy':>9}")
    for run in (first, second):
        busy = f"{run.gpu_busy_percent:.0f}%" if run.gpu_busy_percent is not None else "-"
        print(f"{run.study:<24} {run.jobs:>5} {run.forked_jobs:>7} {run.wall_seconds:>9.1f} {run.jobs_per_hour:>10.0f} {busy:>9}")
    print(f"\n{'approach':<24} {'jobs':>5} {'planned (s)':>12} {'measured (s)':>13} {'ratio':>6}")
    for approach, sums in approaches.items():
        planned_s, actual, over = sums["estimate_seconds"], sums["actual_seconds"], sums["estimate_over_actual"]
        print(f"{approach:<24} {sums['jobs']:>5} {planned_s:>12.1f} {actual:>13.1f} {over:>6.2f}")
    ratio = estimate / second.wall_seconds
    print(f"\nplan for {second.study}, {parallel} at a time: {estimate:.1f} s against {second.wall_seconds:.1f} s ({ratio:.2f}x)")


if __name__ == "__main__":
    main()
