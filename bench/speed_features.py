"""Seconds an hf-span job spends making its windows: the first job of a cell, and the others (from the cache).

Run: `python -m bench.speed_features [--approach minilm-l6] [--benchmark squad-dev-carved] [--source-dir DATA]`.
Data: the benchmark's two sides (by default `squad-dev-carved`'s 8,414 training and 2,093 test
questions of the MRQA SQuAD dev file, carved by passage). Each side is windowed three times with the approach's tokenizer
and geometry: without a cache (what every job did before), into an empty cache (the first job
of a cell: windows plus writing them), and from that cache (every other job of the cell).
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

from bench.benchmark_sides import DEFAULT_BENCHMARK, benchmark_sides
from concur.approaches.hf_span.feature_cache import predict_features, train_features
from concur.approaches.hf_span.hparams import HFSpanHParams
from concur.approaches.hf_span.loading import load_pretrained
from concur.registry.registry import default_registry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--approach", default="minilm-l6")
    parser.add_argument("--benchmark", default=DEFAULT_BENCHMARK)
    parser.add_argument("--source-dir", type=Path, action="append", default=[])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        train, test = benchmark_sides(args.benchmark, args.source_dir, Path(data_dir))
    spec = default_registry().approach(args.approach)
    hparams = HFSpanHParams(**spec.hparams)
    tokenizer = load_pretrained(spec, None, lambda line: None).tokenizer
    print(f"machine: {platform.processor() or platform.machine()}; {args.approach} windows of {hparams.max_seq_length} tokens")
    print(f"{'side':6s} {'questions':>9s} {'windows':>8s} {'no cache (s)':>13s} {'first job (s)':>14s} {'later jobs (s)':>15s}")
    for name, split, make in (("train", train, train_features), ("test", test, predict_features)):
        with tempfile.TemporaryDirectory() as cache:
            seconds = []
            for cache_dir in (None, Path(cache), Path(cache)):
                started = time.perf_counter()
                features, _ = make(split, tokenizer, hparams, cache_dir)
                seconds.append(time.perf_counter() - started)
        print(f"{name:6s} {split.n_questions:9,d} {len(features.windows):8,d} {seconds[0]:13.2f} {seconds[1]:14.2f} {seconds[2]:15.2f}")


if __name__ == "__main__":
    main()
