"""Readers' prediction with and without the token budget on its batches, on the same trained model.

Run: `python -m bench.speed_predict_batches --approaches bidaf-pp,rasor --benches babi-2,squad-dev-carved
[--train-questions 100] [--test-questions 200] [--rounds 3] [--threads 1] [--source-dir DATA]`.

Each reader is trained once per benchmark (one epoch of a seeded sample, passages cut at 256 tokens, as the
quick start trains them), then predicts the same seeded test sample `--rounds` times with each batching,
alternating which goes first: `count`, batches of `eval_batch_size` questions sorted by length (what readers
predicted with before), and `tokens`, the same batches also capped at `eval_batch_size` times the median passage length
in padded tokens (`concur.approaches.batches.typical_batch_tokens`, what readers predict with now). Prints the
median seconds of each, their ratio and how many predictions agree (padding never changes a reader's scores,
so all should).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import torch

import concur.approaches.reader.training as reader_training
from concur.approaches.base import RunContext, build_approach
from concur.data.prepare import prepare
from concur.data.sources import SourceLocator
from concur.data.transforms import downsample
from concur.errors import ConcurError
from concur.registry.registry import default_registry
from concur.workspace import Workspace, data_roots

BATCHINGS = {
    "count": lambda lengths, batch_size: None,  # no token budget: batch_size questions whatever their lengths
    "tokens": reader_training.typical_batch_tokens,
}
QUICKSTART_OVERRIDES = {"epochs": 1.0, "steps": 0, "max_passage_tokens": 256}  # as analysis/studies/quickstart.toml


def timed_predictions(approach: object, test: object, context: RunContext, batching: str) -> tuple[float, dict[str, str]]:
    """Seconds of one `predict` call with `batching`'s rule, and its predictions."""
    reader_training.typical_batch_tokens = BATCHINGS[batching]
    try:
        started = time.perf_counter()
        predictions = approach.predict(test, context)  # type: ignore[attr-defined]
        return time.perf_counter() - started, predictions
    finally:
        reader_training.typical_batch_tokens = BATCHINGS["tokens"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--approaches", default="bidaf-pp", help="comma-separated reader ids")
    parser.add_argument("--benches", default="babi-2,squad-dev-carved", help="comma-separated benchmark ids")
    parser.add_argument("--train-questions", type=int, default=100)
    parser.add_argument("--test-questions", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--source-dir", type=Path, action="append", default=[])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    registry = default_registry()
    try:
        specs = [registry.approach(name) for name in args.approaches.split(",")]
    except ConcurError as error:  # an unknown name: one line naming the closest one, no traceback
        raise SystemExit(f"--approaches: {error}") from None
    try:
        benches = [registry.benchmark(name) for name in args.benches.split(",")]
    except ConcurError as error:
        raise SystemExit(f"--benches: {error}") from None
    workspace = Workspace.resolve()
    locator = SourceLocator(tuple(data_roots(tuple(args.source_dir))), workspace.cache_dir)
    context = RunContext(device="cpu", seed=0, log=lambda line: None, cache_dir=workspace.cache_dir)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {args.threads} threads, torch {torch.__version__}")
    print(f"{'approach':24s} {'benchmark':26s} {'count (s)':>9s} {'tokens (s)':>10s} {'ratio':>6s}  same predictions")
    for bench_spec in benches:
        bench, _ = prepare(bench_spec, locator, workspace.data_dir)
        train = downsample(bench.load("train"), questions=args.train_questions, seed=0)
        test = downsample(bench.load("test"), questions=args.test_questions, seed=0)
        for spec in specs:
            approach = build_approach(spec, {**spec.hparams, **QUICKSTART_OVERRIDES})
            approach.train(train, context)
            seconds: dict[str, list[float]] = {name: [] for name in BATCHINGS}
            predictions: dict[str, dict[str, str]] = {}
            for round_ in range(args.rounds):
                for batching in sorted(BATCHINGS, reverse=bool(round_ % 2)):
                    elapsed, predictions[batching] = timed_predictions(approach, test, context, batching)
                    seconds[batching].append(elapsed)
            count, tokens = statistics.median(seconds["count"]), statistics.median(seconds["tokens"])
            same = sum(predictions["count"][qid] == answer for qid, answer in predictions["tokens"].items())
            agreeing = f"{same}/{len(predictions['tokens'])}"
            print(f"{spec.id:24s} {bench_spec.id:26s} {count:9.2f} {tokens:10.2f} {count / tokens:5.2f}x  {agreeing}")


if __name__ == "__main__":
    main()
