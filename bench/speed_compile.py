"""What `torch.compile` would buy hf-span's training: concur eager against its model compiled, each run in its own process.

Run: `python -m bench.speed_compile --device cuda --source-dir DATA --model-path MINILM_DIR --random-weights
[--modes eager,compiled,compiled] [--benchmark squad-dev-carved] [--train-questions 4096] [--test-questions 1000]
[--out bench/results/speed-compile.json]`.

`compiled` runs concur's hf-span job with `Module.compile(dynamic=True)` applied to the model as it is loaded (one graph
for every batch length); `eager` runs it as `concur run` does. The runs share one inductor cache directory, so a second
`compiled` run shows what compiling costs once the cache is warm, as it would be for the later jobs of a grid on one
machine. Per run: the steady training rate, windows per second over the optimiser steps after the first quarter (timed
from the training loop's loss log lines, each of which reads the loss and so waits for the device); the seconds from
the job's start to its first logged step (compilation included); the training loop's, prediction's and whole run's
seconds; EM. Model, data and hyperparameters are `bench.speed_training`'s (`--random-weights`: a bert-base-sized BERT).
Compilation is not part of concur's jobs: this measures whether it should be (docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bench import child_environment, module_command
from bench.benchmark_sides import DEFAULT_BENCHMARK
from bench.speed_training import STEP_LINE, config_from_args, import_before_the_clock, steady_rate, train_and_predict
from bench.training_runs import Config, gold_answers
from concur.approaches.hf_span.variant import TrainingVariant
from concur.devices import usable_cores

MODES = ("eager", "compiled")


@dataclass
class CompileRun:
    """One run's measures."""

    mode: str
    steady_windows_per_s: float
    first_logged_step_seconds: float  # from the job's start (loading and compiling included)
    fit_seconds: float
    predict_seconds: float
    total_seconds: float
    optimizer_steps: int
    em: float


def run_mode(mode: str, config: Config) -> CompileRun:
    """Train and predict with concur's hf-span, its model compiled when `mode` says so."""
    import torch

    from concur.metrics import evaluate

    torch.set_num_threads(config.threads)
    import_before_the_clock()
    run = train_and_predict(config, variant=TrainingVariant(compiled=mode == "compiled"))
    if config.device.startswith("cuda"):
        torch.cuda.synchronize()
    done = time.perf_counter()
    first_step = next(seconds for seconds, line in run.log if STEP_LINE.search(line))
    return CompileRun(
        mode=mode,
        steady_windows_per_s=steady_rate(run.log, config.hparams["train_batch_size"]),
        first_logged_step_seconds=first_step - run.started,
        fit_seconds=run.report.details["fit_seconds"],
        predict_seconds=done - run.predicting,
        total_seconds=done - run.started,
        optimizer_steps=run.report.optimizer_steps,
        em=evaluate(gold_answers(run.test), run.predictions).exact_match,
    )


def table(runs: list[CompileRun]) -> str:
    """The runs as a markdown table, each run's steady rate also as a ratio to the first eager run's."""
    eager = next((run.steady_windows_per_s for run in runs if run.mode == "eager"), None)
    head = "| run | steady train windows/s | vs eager | first logged step (s) | training (s) | prediction (s) | whole run (s) | EM |"
    rows = [
        f"| {run.mode} | {run.steady_windows_per_s:.1f} | {f'{run.steady_windows_per_s / eager:.2f}x' if eager else '-'} | "
        f"{run.first_logged_step_seconds:.1f} | {run.fit_seconds:.1f} | {run.predict_seconds:.1f} | {run.total_seconds:.1f} | "
        f"{run.em:.1f} |"
        for run in runs
    ]
    return "\n".join([head, "|" + "---|" * 8, *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="eager,compiled,compiled", help=f"comma-separated runs, in order, from {', '.join(MODES)}")
    parser.add_argument("--benchmark", default=DEFAULT_BENCHMARK, help="the registry benchmark whose sides are trained and tested on")
    parser.add_argument("--train-questions", type=int, default=4096)
    parser.add_argument("--test-questions", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=None, help="default: the approach spec's train_batch_size")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--threads", type=int, default=usable_cores())
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model-path", type=Path, default=None, help="default: the weights minilm-l6 ships with")
    parser.add_argument(
        "--random-weights", action="store_true", help="a bert-base-sized BERT of seeded random weights (as bench.speed_training's)"
    )
    parser.add_argument("--source-dir", type=Path, action="append", default=[])
    parser.add_argument("--out", type=Path, default=Path("bench/results/speed-compile.json"))
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    parser.set_defaults(epochs=1.0, learning_rate=None, precision="auto")  # `bench.speed_training`'s options this script fixes
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asdict(run_mode(args.child, Config(**json.loads(args.config))))))
        return
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    unknown = sorted(set(modes) - set(MODES))
    if not modes:
        raise SystemExit(f"--modes: give at least one of {', '.join(MODES)}")
    if unknown:
        raise SystemExit(f"--modes: unknown {', '.join(unknown)}; choose from {', '.join(MODES)}")
    with tempfile.TemporaryDirectory(prefix="speed-compile-") as scratch:
        config = config_from_args(args, Path(scratch))
        environment = {**child_environment(), "TORCHINDUCTOR_CACHE_DIR": str(Path(scratch) / "inductor")}
        runs = []
        for mode in modes:
            command = module_command(__spec__.name, "--child", mode, "--config", json.dumps(asdict(config)))
            child = subprocess.run(command, stdout=subprocess.PIPE, text=True, env=environment, check=False)
            if child.returncode != 0:
                raise SystemExit(f"the {mode} run failed (exit {child.returncode}); its output is above")
            runs.append(CompileRun(**json.loads(child.stdout.strip().splitlines()[-1])))
            run = runs[-1]
            steady, first = run.steady_windows_per_s, run.first_logged_step_seconds
            print(f"{mode}: {steady:.1f} windows/s steady, first step logged at {first:.1f} s", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"config": asdict(config), "runs": [asdict(run) for run in runs]}, indent=2) + "\n")
    print(table(runs))
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
