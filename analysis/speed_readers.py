"""Training and inference speed of the non-pretrained readers, in questions per second.

Run: `python analysis/speed_readers.py [--device cuda] [--steps 30] [--approaches bidaf,qanet]`.
Data: real SQuAD questions (the MRQA SQuAD dev file from ../shared/data or --source-dir), the
first `--questions` of them. Training speed counts the optimisation loop only (forward,
backward, optimiser step; TrainReport.details["fit_seconds"]) over `--steps` steps of each
spec's batch size; inference speed is the whole predict() call (tokenising, batching,
decoding) over the same questions. Prints the machine it ran on.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import torch

from concur.approaches.base import RunContext, build_approach
from concur.data.mrqa import read_mrqa
from concur.data.transforms import downsample
from concur.registry.registry import default_registry
from concur.workspace import data_roots

SQUAD_DEV = "mrqa/dev/SQuAD.jsonl.gz"
READERS = "rasor,bidaf,docreader-nofeat,bidaf-pp,mnemonic-reader-nofeat,qanet,fusionnet-nofeat"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--approaches", default=READERS, help="comma-separated approach ids")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--steps", type=int, default=30, help="optimiser steps timed per approach")
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--source-dir", type=Path, action="append", default=[])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    path = next((root / SQUAD_DEV for root in data_roots(tuple(args.source_dir)) if (root / SQUAD_DEV).is_file()), None)
    if path is None:
        raise SystemExit(f"{SQUAD_DEV} not found under {', '.join(map(str, data_roots(tuple(args.source_dir))))}; pass --source-dir")
    data = downsample(read_mrqa(path), questions=args.questions, seed=0)
    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else f"{platform.processor() or platform.machine()}"
    print(f"machine: {device}, {args.threads} CPU threads, torch {torch.__version__}; data: {data.n_questions} SQuAD dev questions")
    print(f"{'approach':24s} {'batch':>5s} {'train q/s':>10s} {'predict q/s':>12s} {'params':>11s}")
    registry = default_registry()
    for approach_id in args.approaches.split(","):
        spec = registry.approach(approach_id)
        batch = spec.hparams["batch_size"]
        epochs = args.steps * batch / data.n_questions
        approach = build_approach(spec, {**spec.hparams, "epochs": epochs})
        context = RunContext(device=args.device, seed=0, log=lambda line: None, work_dir=Path("."))
        report = approach.train(data, context)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        train_rate = report.optimizer_steps * batch / report.details["fit_seconds"]
        started = time.perf_counter()
        approach.predict(data, context)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        predict_rate = data.n_questions / (time.perf_counter() - started)
        print(f"{approach_id:24s} {batch:5d} {train_rate:10.1f} {predict_rate:12.1f} {report.details['parameters']:11,d}", flush=True)


if __name__ == "__main__":
    main()
