"""Speed of the vectorised concurrence bootstrap: 44 benchmarks x 20 approaches, BCa.

Run: `python -m bench.speed_bootstrap [--resamples 2000] [--repeats 5]`. Prints the
median wall time per full matrix with intervals, and the machine it ran on.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np
import pandas as pd

from concur.analysis.bootstrap import BootstrapSettings, Interval, bootstrap_matrix
from concur.analysis.reference import liu2023


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    reference = liu2023()
    wide = reference.pivot(index="approach", columns="benchmark", values="em")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, numpy {np.__version__}, pandas {pd.__version__}")
    print(f"table: {wide.shape[0]} approaches x {wide.shape[1]} benchmarks (liu2023), {args.resamples} resamples")
    for method in ("kendall", "pearson"):
        for interval in Interval:
            times = []
            for _ in range(args.repeats):
                started = time.perf_counter()
                bootstrap_matrix(wide, method, BootstrapSettings(args.resamples, 0, 0.95, interval))
                times.append(time.perf_counter() - started)
            spread = f"min {min(times):.3f}, max {max(times):.3f}, {args.repeats} runs"
            print(f"{method:8s} {interval:10s} median {statistics.median(times):.3f} s  ({spread})")


if __name__ == "__main__":
    main()
