"""Speed of the synthetic-benchmark generators: seconds to generate each full benchmark.

Run: `python -m bench.speed_generators --source-dir ../shared/data [--bench 'fuzzy-*'] [--repeats 1]`.
Each registered generated benchmark matching `--bench` is generated in memory from its spec
(its inputs found under the data roots, never downloaded); one whose input is not on the
machine is reported and skipped, unless `--input SOURCE=PATH` supplies a file for that source
(e.g. `--input ptb-wsj=wsj.mrg`). Prints the machine and its load, the time to load the
offline word space alone (part of every fuzzy run), and per benchmark the median seconds and
the questions/passages made per split.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from concur.data.generators import run_generator
from concur.data.neighbours import load_word_space
from concur.data.sources import SourceLocator
from concur.registry import default_registry
from concur.workspace import data_roots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source-dir", type=Path, action="append", default=[], help="data root (repeatable); also $CONCUR_DATA_ROOT")
    parser.add_argument("--bench", default="fuzzy-*", help="glob over benchmark ids (default fuzzy-*)")
    parser.add_argument("--input", action="append", default=[], metavar="SOURCE=PATH", help="use PATH for a source not on this machine")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    overrides = {name: Path(path) for name, path in (item.split("=", 1) for item in args.input)}
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, load average {load}")
    started = time.perf_counter()
    space = load_word_space(None)
    print(f"offline word space: {len(space.words):,} words x {space.unit.shape[1]}, loaded in {time.perf_counter() - started:.2f} s")
    registry = default_registry()
    with tempfile.TemporaryDirectory() as cache:
        locator = SourceLocator(tuple(data_roots(tuple(args.source_dir))), Path(cache))
        for spec in registry.benchmarks():
            if spec.generator is None or not fnmatch.fnmatch(spec.id, args.bench):
                continue
            inputs = {}
            for name in spec.generator.inputs:
                source = spec.sources[name]
                if name in overrides:
                    inputs[name] = overrides[name]
                elif locator.availability(source) in ("local", "cache"):
                    inputs[name] = locator.locate(source).path
            missing = [name for name in spec.generator.inputs if name not in inputs]
            if missing:
                print(f"{spec.id:18s} skipped: {', '.join(missing)} not on this machine (give --input SOURCE=PATH)")
                continue
            times = []
            for _ in range(args.repeats):
                started = time.perf_counter()
                splits = run_generator(spec.generator.name, spec.generator.seed, spec.generator.options, inputs)
                times.append(time.perf_counter() - started)
            sizes = ", ".join(f"{split.split} {split.n_questions:,}/{split.n_passages:,}" for split in splits)
            print(f"{spec.id:18s} {statistics.median(times):6.2f} s  (questions/passages: {sizes}; {args.repeats} runs)")


if __name__ == "__main__":
    main()
