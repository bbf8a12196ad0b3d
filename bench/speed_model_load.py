"""Seconds an hf-span job spends loading its tokenizer and model, in a process that imported what a forked worker finds.

Run: `python -m bench.speed_model_load [--approach minilm-l6] [--model-path DIR] [--loads 3] [--threads N]`.
The process first imports what the local pool's zygote imports for the approach (`concur.runner.execution.zygote.PRELOAD`
and `concur.runner.scheduling.worker_pool.worker_modules`), so it starts where a forked job of a grid starts; then it loads the
approach's tokenizer and span model (`load_pretrained`, each load seeded alike) `--loads` times. The first load
is what that job spends: it also imports the model family's own code and the tokenizer's, and reads the files.
Each later load reads the files again (from the page cache by then) and builds the model: the most that keeping
a worker's model files in memory across its jobs could save each job after the first.
"""

from __future__ import annotations

import argparse
import importlib
import platform
import statistics
import time
from pathlib import Path

from concur.devices import usable_cores
from concur.errors import ConcurError
from concur.registry.registry import default_registry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--approach", default="minilm-l6")
    parser.add_argument("--model-path", type=Path, default=None, help="default: where the approach's spec finds its weights")
    parser.add_argument("--loads", type=int, default=3, help="at least 2: the first, as a forked job loads, and the later ones")
    parser.add_argument("--threads", type=int, default=usable_cores())
    args = parser.parse_args()
    if args.loads < 2:
        raise SystemExit(f"--loads {args.loads}: give at least 2 (the first load, then the ones it is compared with)")
    try:
        spec = default_registry().approach(args.approach)
    except ConcurError as error:
        raise SystemExit(str(error)) from None
    import torch  # after the options are checked: a refusal costs no import

    from concur.approaches.hf_span.loading import load_pretrained
    from concur.runner.execution.zygote import PRELOAD
    from concur.runner.scheduling.worker_pool import worker_modules

    torch.set_num_threads(args.threads)
    for module in (*PRELOAD, *worker_modules([spec])):
        importlib.import_module(module)
    seconds = []
    for _ in range(args.loads):
        torch.manual_seed(0)
        started = time.perf_counter()
        try:
            loaded = load_pretrained(spec, args.model_path, lambda line: None)
        except ConcurError as error:  # no such directory, no usable config, weights or tokenizer there
            raise SystemExit(str(error)) from None
        seconds.append(time.perf_counter() - started)
    parameters = sum(parameter.numel() for parameter in loaded.model.parameters())
    print(f"machine: {platform.processor() or platform.machine()}, {args.threads} threads; torch {torch.__version__}")
    print(f"{args.approach}: {type(loaded.model).__name__} from {loaded.origin}, {parameters:,} parameters")
    print(f"first load (a forked job's): {seconds[0]:.3f} s")
    print(f"later loads: {', '.join(f'{value:.3f}' for value in seconds[1:])} s; median {statistics.median(seconds[1:]):.3f} s")


if __name__ == "__main__":
    main()
