"""Training and inference speed of the non-pretrained readers, in questions per second.

Run: `python -m bench.speed_readers [--device cuda] [--steps 30 | --epoch-questions 87599] [--approaches bidaf,qanet]`.
Data: real SQuAD questions (the MRQA SQuAD dev file from ../shared/data or --source-dir), a
seeded sample of `--questions` of them. Training speed counts the optimisation loop only
(forward, backward, optimiser step; TrainReport.details["fit_seconds"]) over `--steps` steps
of each spec's batch size, after `--warmup-steps` untimed ones (cuDNN/cuBLAS set-up and
first-shape costs would otherwise dominate short runs on a GPU); inference speed is the whole predict() call (tokenising, tagging or
reading the annotation cache, batching, decoding) over the same questions. The with-features
readers need a spaCy pipeline (`--spacy-pipeline`) unless `concur data annotate` has cached
these texts. `--epoch-questions N` trains each reader for the steps of one epoch over N questions
at its batch size instead (87599: SQuAD v1.1 train; the sample is reshuffled each time it runs
out) and prints the seconds that epoch took, measured rather than extrapolated from a short run.
`--profile` runs the timed training under torch.profiler (slower: its rates are not comparable) and
prints where the whole loop's time went, per optimiser step: the host's operators by their own
time and, on a GPU, the kernels; set beside `bench.speed_step`'s fixed batches, it shows what the loop
adds to the model's step. Prints the machine it ran on.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
from contextlib import nullcontext
from pathlib import Path

import torch

from concur.approaches.base import RunContext, build_approach
from concur.approaches.precision import PRECISIONS
from concur.approaches.reader.settings import with_spacy_pipeline
from concur.data.model import Split
from concur.data.mrqa import read_mrqa
from concur.data.transforms import downsample
from concur.errors import ConcurError
from concur.registry.registry import default_registry
from concur.registry.specs import ApproachSpec
from concur.workspace import Workspace, data_roots

SQUAD_DEV = "mrqa/dev/SQuAD.jsonl.gz"
PROFILE_ROWS = 25  # operators shown in each --profile table


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """The options this script shares with `bench.speed_step`: which readers, where, how many questions, what numerics."""
    parser.add_argument("--approaches", default="", help="comma-separated approach ids (default: every non-pretrained one)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--precision", default="auto", choices=PRECISIONS, help="as `concur run --precision` (bf16: CPU autocast too)")
    parser.add_argument("--spacy-pipeline", default=None, help="spaCy pipeline (package or directory) for the with-features readers")
    parser.add_argument("--source-dir", type=Path, action="append", default=[])


def squad_sample(args: argparse.Namespace) -> Split:
    """The seeded sample of `--questions` MRQA SQuAD dev questions both scripts measure on, with the machine line printed."""
    torch.set_num_threads(args.threads)
    path = next((root / SQUAD_DEV for root in data_roots(tuple(args.source_dir)) if (root / SQUAD_DEV).is_file()), None)
    if path is None:
        raise SystemExit(f"{SQUAD_DEV} not found under {', '.join(map(str, data_roots(tuple(args.source_dir))))}; pass --source-dir")
    data = downsample(read_mrqa(path), questions=args.questions, seed=0)
    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else f"{platform.processor() or platform.machine()}"
    print(f"machine: {device}, {args.threads} CPU threads, torch {torch.__version__}, precision {args.precision}", end="; ")
    print(f"data: {data.n_questions} SQuAD dev questions")
    print(f"{'approach':24s} {'batch':>5s} {'train q/s':>10s} {'predict q/s':>12s} {'params':>11s}")
    return data


def reader_specs(args: argparse.Namespace) -> list[ApproachSpec]:
    """The `--approaches` specs (every non-pretrained reader by default), with `--spacy-pipeline` applied."""
    registry = default_registry()
    if args.approaches:
        try:
            specs = [registry.approach(name) for name in args.approaches.split(",")]
        except ConcurError as error:  # an unknown name: one line naming the closest one, no traceback
            raise SystemExit(f"--approaches: {error}") from None
    else:
        specs = [spec for spec in registry.approaches() if spec.family == "non-pretrained"]
    return [with_spacy_pipeline(spec, args.spacy_pipeline) for spec in specs]


def row(approach: str, batch: int, train_rate: float, predict_rate: float, parameters: int) -> str:
    """One result line, the format `bench.speed_readers_compare` reads back."""
    return f"{approach:24s} {batch:5d} {train_rate:10.1f} {predict_rate:12.1f} {parameters:11,d}"


def profiler_activities(device: str) -> list[torch.profiler.ProfilerActivity]:
    """What `--profile` records: the host's operators, and the GPU's kernels on CUDA."""
    cuda = [torch.profiler.ProfilerActivity.CUDA] if device.startswith("cuda") else []
    return [torch.profiler.ProfilerActivity.CPU, *cuda]


def profile_tables(profile: torch.profiler.profile, steps: int, device: str, wall_seconds: float) -> str:
    """The profile's per-step totals and its busiest operators: by host time, and by GPU time on a GPU.

    The profile spans the whole training call, model building included, so its operator time is set
    beside that call's wall time rather than the steps' alone.
    """
    averages = profile.key_averages()
    cpu_ms = sum(event.self_cpu_time_total for event in averages) / 1000 / steps
    lines = [f"profiled {steps} steps: {cpu_ms:.1f} ms of host operator time a step ({wall_seconds:.3f} s training call)"]
    tables = [averages.table(sort_by="self_cpu_time_total", row_limit=PROFILE_ROWS)]
    if device.startswith("cuda"):
        gpu_ms = sum(event.self_device_time_total for event in averages) / 1000 / steps
        lines[0] += f", {gpu_ms:.1f} ms of GPU time a step"
        tables.append(averages.table(sort_by="self_cuda_time_total", row_limit=PROFILE_ROWS))
    return "\n".join(lines + tables)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_options(parser)
    parser.add_argument("--steps", type=int, default=30, help="optimiser steps timed per approach")
    parser.add_argument("--warmup-steps", type=int, default=10, help="untimed optimiser steps before each approach's timed run")
    parser.add_argument("--epoch-questions", type=int, default=0, help="time one epoch over this many questions instead of --steps")
    parser.add_argument("--profile", action="store_true", help="profile the timed training with torch.profiler and print its tables")
    args = parser.parse_args()
    if args.steps < 1 or args.epoch_questions < 0:
        parser.error("--steps must be at least 1 and --epoch-questions at least 0")
    specs = reader_specs(args)
    data = squad_sample(args)
    cache_dir = Workspace.resolve().cache_dir
    for spec in specs:
        batch = spec.hparams["batch_size"]
        context = RunContext(device=args.device, seed=0, log=lambda line: None, cache_dir=cache_dir, precision=args.precision)
        if args.warmup_steps:
            warmup = {**spec.hparams, "epochs": args.warmup_steps * batch / data.n_questions, "steps": 0}  # steps 0: epochs rule
            build_approach(spec, warmup).train(data, context)
        if args.epoch_questions:  # exactly that many steps, however many questions the sample holds
            budget = {"steps": math.ceil(args.epoch_questions / batch)}
        else:
            budget = {"epochs": args.steps * batch / data.n_questions, "steps": 0}
        approach = build_approach(spec, {**spec.hparams, **budget})
        started = time.perf_counter()
        with torch.profiler.profile(activities=profiler_activities(args.device)) if args.profile else nullcontext() as profile:
            report = approach.train(data, context)
        train_call_seconds = time.perf_counter() - started
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        train_rate = report.optimizer_steps * batch / report.details["fit_seconds"]
        started = time.perf_counter()
        approach.predict(data, context)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        predict_rate = data.n_questions / (time.perf_counter() - started)
        print(row(spec.id, batch, train_rate, predict_rate, report.details["parameters"]), flush=True)
        if args.epoch_questions:
            print(
                f"{spec.id}: one epoch of {args.epoch_questions} questions ({report.optimizer_steps} steps of {batch}) "
                f"trained in {report.details['fit_seconds']:.1f} s"
            )
        if profile is not None:
            print(profile_tables(profile, report.optimizer_steps, args.device, train_call_seconds), flush=True)


if __name__ == "__main__":
    main()
