"""BiDAF++'s bidirectional GRU layer as two revisions have it, forward and backward, alternated in one process.

Run: `python -m bench.speed_gru_layer --revisions 6b90145,HEAD [--inputs 484,200] [--batch 45]
[--length 135] [--hidden 100] [--precision bf16] [--rounds 14] [--threads 2]`.

A change to `concur/approaches/reader/gru.py` moves a whole BiDAF++ run by less than this machine's
spread between runs, so this times the layer alone: it loads the file as each revision has it
(`git show`; `.` is the working tree) into a module of its own, builds one pair of seeded one-way
GRUs and, per input width, one seeded batch whose rows are between half the length and the length
long (the first at full length), checks that both revisions give the same gradients (it prints the
largest difference), then times forward and backward (under bf16 autocast with `--precision bf16`)
`--rounds` times, alternating which revision goes first. It prints the median and fastest
milliseconds of each and the ratio of the medians; the first two rounds are warm-up.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
import types
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

REPO = Path(__file__).resolve().parent.parent
LAYER = "concur/approaches/reader/gru.py"
WARMUP_ROUNDS = 2


def layer_module(revision: str) -> types.ModuleType:
    """`gru.py` as `revision` has it (`.`: the working tree), loaded as a module of its own."""
    if revision == ".":
        source = (REPO / LAYER).read_text()
    else:
        shown = subprocess.run(["git", "-C", str(REPO), "show", f"{revision}:{LAYER}"], capture_output=True, text=True)
        if shown.returncode:
            raise SystemExit(f"bench.speed_gru_layer: revision {revision!r} has no {LAYER} (git: {shown.stderr.strip().splitlines()[0]})")
        source = shown.stdout
    module = types.ModuleType(f"gru_at_{revision}")
    exec(compile(source, f"{revision}:{LAYER}", "exec"), module.__dict__)  # noqa: S102 (the repository's own file)
    return module


def layer_step(
    module: types.ModuleType, ahead: nn.GRU, behind: nn.GRU, x: torch.Tensor, lengths: torch.Tensor, bf16: bool
) -> Callable[[], list[torch.Tensor]]:
    """One forward and backward pass of `module`'s layer against fixed output weights; returns the gradients."""
    output_weights = torch.randn(x.shape[0], x.shape[1], 2 * ahead.hidden_size, generator=torch.Generator().manual_seed(1))
    tensors = [x, *ahead.parameters(), *behind.parameters()]

    def step() -> list[torch.Tensor]:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            outputs = module.bidirectional_gru(ahead, behind, x, lengths)
        return list(torch.autograd.grad((outputs.float() * output_weights).sum(), tensors))

    return step


def time_alternated(steps: list[Callable[[], list[torch.Tensor]]], rounds: int) -> list[list[float]]:
    """Milliseconds of each step per round after the warm-up, the order reversed every other round."""
    times: list[list[float]] = [[] for _ in steps]
    for round_ in range(rounds + WARMUP_ROUNDS):
        order = range(len(steps)) if round_ % 2 else reversed(range(len(steps)))
        for index in order:
            started = time.perf_counter()
            steps[index]()
            if round_ >= WARMUP_ROUNDS:
                times[index].append((time.perf_counter() - started) * 1000)
    return times


def widths(text: str) -> list[int]:
    """`--inputs`: positive integers, comma-separated."""
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive input widths, comma-separated, e.g. 484,200; got {text!r}")
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", required=True, help="two git revisions, comma-separated (`.`: the working tree)")
    parser.add_argument("--inputs", type=widths, default=[484, 200], help="input widths (BiDAF++'s first layer: 484, others 200)")
    parser.add_argument("--batch", type=int, default=45)
    parser.add_argument("--length", type=int, default=135)
    parser.add_argument("--hidden", type=int, default=100)
    parser.add_argument("--precision", default="bf16", choices=["fp32", "bf16"])
    parser.add_argument("--rounds", type=int, default=14)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    revisions = args.revisions.split(",")
    if len(revisions) != 2 or min(args.batch, args.length, args.hidden, args.rounds, args.threads) < 1:
        parser.error("--revisions takes two revisions; --batch, --length, --hidden, --rounds and --threads at least 1")
    modules = [layer_module(revision) for revision in revisions]
    torch.set_num_threads(args.threads)
    shape = f"batch {args.batch} x {args.length}, hidden {args.hidden}"
    print(f"torch {torch.__version__}, {args.threads} threads, {args.precision}; {shape}, {args.rounds} rounds")
    print(f"{'inputs':>6s}  {revisions[0]:>20s}  {revisions[1]:>20s}  ratio  largest gradient difference")
    for width in args.inputs:
        torch.manual_seed(0)
        ahead, behind = nn.GRU(width, args.hidden, batch_first=True), nn.GRU(width, args.hidden, batch_first=True)
        lengths = torch.randint(max(1, args.length // 2), args.length + 1, (args.batch,))
        lengths[0] = args.length
        x = torch.randn(args.batch, args.length, width, requires_grad=True)
        steps = [layer_step(module, ahead, behind, x, lengths, args.precision == "bf16") for module in modules]
        difference = max((a - b).abs().max().item() for a, b in zip(steps[0](), steps[1](), strict=True))
        times = time_alternated(steps, args.rounds)
        medians = [statistics.median(t) for t in times]
        cells = [f"{median:7.1f} (min {min(t):6.1f})" for median, t in zip(medians, times, strict=True)]
        print(f"{width:6d}  {cells[0]:>20s}  {cells[1]:>20s}  {medians[0] / medians[1]:4.2f}x  {difference:.3g}", flush=True)


if __name__ == "__main__":
    main()
