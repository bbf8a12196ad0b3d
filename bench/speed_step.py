"""The training step and prediction pass of readers and hf-span approaches on fixed batches, without the data pipeline.

Run: `python -m bench.speed_step --approaches qanet [--batches 3] [--steps 3] [--warmup-steps 1]
[--precision bf16] [bench.speed_readers's data options]`. Each reader is trained for one step by its
approach's own `train()` (so the model and its optimiser are what a job builds: fast dropout, fused
optimiser and all), then timed on `--batches` fixed batches of its spec's batch size, each made of
questions of neighbouring passage lengths (as length-grouped training batches are) at evenly spaced
quantiles of the passage lengths, collated once: `--warmup-steps` untimed passes over the batches,
then `--steps` timed passes. A step is what the training loop does per batch (forward under the
run's autocast, loss, backward, gradient clipping, optimiser step) without the learning-rate
schedule and weight average; the prediction pass is the forward pass in eval mode without
gradients. The rates are the batches' questions over the sum of their median times (for an hf-span
approach, such as `minilm-l6`, its windows: a batch is `train_batch_size` windows of neighbouring lengths).

It only uses interfaces that every revision since 76871c9 has (the approach's `train`, the
reader's objective and plan, `concur.approaches.precision.autocast`), so that
`python -m bench.speed_readers_compare --fixed-batches` can run it against older revisions: same batches,
same steps, each revision's own model code. Prints `bench.speed_readers`'s row per reader, then each
batch's shape and median step and prediction milliseconds.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from bench.speed_readers import add_common_options, reader_specs, row, squad_sample
from concur.approaches.base import RunContext, build_approach
from concur.approaches.precision import autocast
from concur.data.model import Split
from concur.registry.specs import ApproachSpec
from concur.workspace import Workspace


class _Captured(BaseException):
    """Raised inside `fit` once the model, objective and plan are in hand (a BaseException: no approach catches it)."""


# Where an approach's training finds the shared loop: the readers look `fit` up in their training module at
# call time; hf-span imported it by name into its approach module.
FIT_MODULES = ("concur.approaches.reader.training", "concur.approaches.hf_span.approach")


def capture_training(train: Callable[[], Any]) -> tuple[nn.Module, Any, Any]:
    """(model, objective, plan) of the model that `train()` builds, after one optimiser step of its own loop.

    `fit` is replaced where the approaches find it; the wrapper runs the real loop (a one-step
    budget) and then stops `train()` before it does anything else.
    """
    captured: dict[str, Any] = {}
    patched = []
    for name in FIT_MODULES:
        module = importlib.import_module(name)
        real_fit = getattr(module, "fit", None)
        if real_fit is None:
            continue

        def fit(
            model: nn.Module, objective: Any, plan: Any, *rest: Any, real_fit: Callable[..., Any] = real_fit, **options: Any
        ) -> list[float]:
            real_fit(model, objective, plan, *rest, **options)
            captured.update(model=model, objective=objective, plan=plan)
            raise _Captured

        module.fit = fit
        patched.append((module, real_fit))
    try:
        train()
    except _Captured:
        pass
    finally:
        for module, real_fit in patched:
            module.fit = real_fit
    if not captured:
        raise SystemExit("the approach trained without calling concur's shared training loop: neither a reader nor hf-span")
    return captured["model"], captured["objective"], captured["plan"]


def fixed_batch_indices(lengths: np.ndarray, batch_size: int, batches: int) -> list[np.ndarray]:
    """`batches` windows of `batch_size` neighbouring examples in passage-length order, centred at the (i + 1/2) / batches quantiles."""
    order = np.argsort(lengths, kind="stable")
    size = min(batch_size, len(order))
    windows = []
    for i in range(batches):
        centre = int((i + 0.5) / batches * len(order))
        start = min(max(0, centre - size // 2), len(order) - size)
        windows.append(order[start : start + size])
    return windows


def median_ms(run: Callable[[], None], warmup: int, timed: int) -> float:
    for _ in range(warmup):
        run()
    times = []
    for _ in range(timed):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def measure_reader(spec: ApproachSpec, data: Split, args: argparse.Namespace) -> tuple[str, list[str]]:
    """`bench.speed_readers`'s row for one reader or hf-span approach on its fixed batches, and a line per batch: its shape,
    median step and prediction ms."""
    size = spec.hparams["batch_size"] if "batch_size" in spec.hparams else spec.hparams["train_batch_size"]
    cache_dir = Workspace.resolve().cache_dir
    context = RunContext(device=args.device, seed=0, log=lambda line: None, cache_dir=cache_dir, precision=args.precision)
    one_step = {**spec.hparams, "epochs": size / data.n_questions}
    if "steps" in one_step:
        one_step["steps"] = 0  # a reader's steps 0: the epochs rule
    model, objective, plan = capture_training(lambda: build_approach(spec, one_step).train(data, context))
    batches = [objective.batch(indices) for indices in fixed_batch_indices(objective.lengths(), size, args.batches)]
    parameters = [p for p in model.parameters() if p.requires_grad]

    def step(batch: Any) -> None:
        with autocast(args.device, args.precision):
            outputs = objective.forward(model, batch)
        objective.loss(outputs, batch).backward()
        if plan.max_grad_norm > 0:
            nn.utils.clip_grad_norm_(parameters, plan.max_grad_norm)
        plan.optimizer.step()
        plan.optimizer.zero_grad(set_to_none=True)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()

    def predict(batch: Any) -> None:
        with torch.no_grad(), autocast(args.device, args.precision):
            objective.forward(model, batch)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()

    model.train()
    step_ms = [median_ms(lambda b=b: step(b), args.warmup_steps, args.steps) for b in batches]
    model.eval()
    predict_ms = [median_ms(lambda b=b: predict(b), args.warmup_steps, args.steps) for b in batches]
    questions = sum(len(examples(b)) for b in batches)
    result = row(spec.id, size, questions / sum(step_ms) * 1000, questions / sum(predict_ms) * 1000, sum(p.numel() for p in parameters))
    lines = [
        f"  {spec.id} batch {'x'.join(map(str, examples(b).shape))}: step {train:.1f} ms, prediction {prediction:.1f} ms"
        for b, train, prediction in zip(batches, step_ms, predict_ms, strict=True)
    ]
    return result, lines


def examples(batch: Any) -> torch.Tensor:
    """A batch's examples by their tokens: (examples, tokens), of passages for a reader, of windows for hf-span."""
    return batch.c_words if hasattr(batch, "c_words") else batch.inputs["input_ids"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_options(parser)
    parser.add_argument("--batches", type=int, default=3, help="fixed batches, at evenly spaced passage-length quantiles")
    parser.add_argument("--steps", type=int, default=3, help="timed passes over the batches")
    parser.add_argument("--warmup-steps", type=int, default=1, help="untimed passes over the batches first")
    args = parser.parse_args()
    if args.batches < 1 or args.steps < 1 or args.warmup_steps < 0:
        parser.error("--batches and --steps must be at least 1, --warmup-steps at least 0")
    specs = reader_specs(args)
    data = squad_sample(args)
    details = []
    for spec in specs:
        result, lines = measure_reader(spec, data, args)
        print(result, flush=True)
        details += lines
    print("\n".join(details))


if __name__ == "__main__":
    main()
