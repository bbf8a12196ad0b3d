"""hf-span's training pieces replayed as CUDA graphs (`concur run --cuda-graphs`).

On a GPU, fine-tuning a BERT-sized model at batch 16 is bound by the host launching kernels one
by one (the GPU sits idle between them: docs/performance.md), not by the GPU's
arithmetic. A CUDA graph records the kernels of one piece's forward pass, span loss and backward
pass once per batch shape, then launches them all at once. Batches are padded to a few widths
(multiples of `GRAPH_WIDTH_STEP`), so a job records a handful of graphs; padding is masked out of the attention and
of the loss, so no window's loss depends on its batch's width.

What a recorded piece needs, and how it gets it:
- fixed input addresses: each shape's inputs are copied into tensors its graph reads;
- fixed gradient addresses: every trainable parameter's `.grad` exists before the first
  recording and is zeroed in place between steps, never dropped (`keeps_grads`); the recorded
  backward pass adds into it, so the pieces of a batch accumulate as in eager mode;
- no host synchronisation: the attention mask goes in as the 4D boolean mask SDPA reads, so
  transformers never asks the GPU whether a batch has padding;
- a warmed-up shape: `WARMUP_RUNS` forward and backward passes on a side stream before recording
  (cuBLAS and the attention kernels set themselves up), their gradients taken by
  `torch.autograd.grad` so that `.grad` is untouched;
- autocast without its cache of weight casts, which would hand a graph casts freed after recording.

All graphs of a job share one memory pool: pieces run one after another, and a piece's loss is
added to the loss curve before the next graph replays.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from concur.approaches.base import RunContext
from concur.approaches.hf_span.attention import NAME as ATTENTION_NAME
from concur.approaches.hf_span.loss import WindowBatch, WindowObjective
from concur.approaches.precision import autocast

# Batches are padded up to a multiple of this many tokens (at most max_seq_length): 6 widths for
# windows of 384 tokens, 2 batch sizes (full, and an epoch's last) -> at most 12 graphs a job.
GRAPH_WIDTH_STEP = 64
# Eager runs of a new shape before it is recorded; PyTorch's CUDA-graph notes warm up with 3.
WARMUP_RUNS = 3

Replay = Callable[[], torch.Tensor]
Capture = Callable[[Callable[[], torch.Tensor]], Replay]  # records a function, returns what replays it


def graphs_problem(device: str, attention: str, origin: str) -> str | None:
    """Why a model cannot train with --cuda-graphs here, or None: it needs a GPU, and SDPA attention (the graphs
    hand the model a 4D boolean padding mask, which eager attention would add to its scores)."""
    if not device.startswith("cuda"):
        return f"--cuda-graphs needs a CUDA device; this job runs on {device}"
    if attention != ATTENTION_NAME:
        return f"--cuda-graphs needs SDPA attention, and {origin} runs {attention} attention"
    return None


def cuda_capture(pool: Any) -> Capture:
    """Record into a CUDA graph that draws its memory from `pool`; the replay returns the recorded output.

    `thread_local`: the batch-prefetching thread pins and copies batches while a graph is recorded.
    """

    def capture(run: Callable[[], torch.Tensor]) -> Replay:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool, capture_error_mode="thread_local"):
            output = run()

        def replay() -> torch.Tensor:
            graph.replay()
            return output

        return replay

    return capture


@dataclass(frozen=True)
class StaticPiece:
    """The tensors one graph reads: a batch's inputs and targets, and the piece's share of its batch."""

    batch: WindowBatch
    share: torch.Tensor

    @classmethod
    def like(cls, batch: WindowBatch) -> StaticPiece:
        inputs = {name: tensor.clone() for name, tensor in batch.inputs.items()}
        share = torch.ones((), device=batch.starts.device)
        return cls(WindowBatch(inputs, batch.starts.clone(), batch.ends.clone()), share)

    def load(self, batch: WindowBatch, share: float) -> None:
        for name, tensor in batch.inputs.items():
            self.batch.inputs[name].copy_(tensor, non_blocking=True)
        self.batch.starts.copy_(batch.starts, non_blocking=True)
        self.batch.ends.copy_(batch.ends, non_blocking=True)
        self.share.fill_(share)

    def model_inputs(self) -> dict[str, torch.Tensor]:
        """The inputs with the padding mask as SDPA reads it, (batch, 1, 1, width), True where a key is a token."""
        inputs = dict(self.batch.inputs)
        inputs["attention_mask"] = inputs["attention_mask"].bool()[:, None, None, :]
        return inputs


class GraphedPieceStep:
    """Each piece's forward pass, loss and backward pass as a replayed CUDA graph, one per batch shape."""

    keeps_grads = True

    def __init__(self, objective: WindowObjective, context: RunContext, capture: Capture | None = None) -> None:
        self.objective, self.context = objective, context
        self.capture = capture if capture is not None else cuda_capture(torch.cuda.graph_pool_handle())
        self.recorded: dict[tuple[int, ...], tuple[StaticPiece, Replay]] = {}
        self.shapes: list[tuple[int, ...]] = []  # (windows, width) of each recording, in order

    def release(self, model: nn.Module) -> None:
        """Drop the graphs, their memory and the gradients they wrote into (after training: prediction needs none)."""
        self.recorded.clear()
        model.zero_grad(set_to_none=True)
        if self.context.device.startswith("cuda"):
            torch.cuda.empty_cache()

    def __call__(self, model: nn.Module, inputs: WindowBatch, share: float) -> torch.Tensor:
        shape = tuple(inputs.inputs["input_ids"].shape)
        if shape not in self.recorded:
            self.recorded[shape] = self._record(model, inputs)
            self.shapes.append(shape)
        static, replay = self.recorded[shape]
        static.load(inputs, share)
        return replay()

    def _record(self, model: nn.Module, batch: WindowBatch) -> tuple[StaticPiece, Replay]:
        static = StaticPiece.like(batch)
        params = [parameter for parameter in model.parameters() if parameter.requires_grad]

        def scaled_loss() -> torch.Tensor:
            with autocast(self.context.device, self.context.precision, cache=False):
                outputs = model(**static.model_inputs())
            return self.objective.loss(outputs, static.batch) * static.share

        self._warm_up(scaled_loss, params)
        for parameter in params:
            if parameter.grad is None:
                parameter.grad = torch.zeros_like(parameter)

        def piece() -> torch.Tensor:
            loss = scaled_loss()
            loss.backward()
            return loss.detach()

        return static, self.capture(piece)

    def _warm_up(self, scaled_loss: Callable[[], torch.Tensor], params: list[nn.Parameter]) -> None:
        side = torch.cuda.Stream() if self.context.device.startswith("cuda") else None
        if side is not None:
            side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side) if side is not None else nullcontext():
            for _ in range(WARMUP_RUNS):
                torch.autograd.grad(scaled_loss(), params, allow_unused=True)
        if side is not None:
            torch.cuda.current_stream().wait_stream(side)
