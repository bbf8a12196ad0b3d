"""hf-span's CUDA-graph training pieces (`--cuda-graphs`), checked on the CPU.

A CUDA graph cannot be recorded without a GPU, so these tests replace the recording with its
CPU stand-in, `run_again` (a "replay" runs the recorded function again), and check everything
around it: padding to a few widths, the 4D padding mask, inputs copied into each shape's fixed
tensors, warm-up runs that leave `.grad` alone, gradients kept and zeroed in place, one record per
shape. With dropout off, training this way must give the eager loop's losses and weights.
"""

from __future__ import annotations

from collections import Counter
from unittest import mock

import numpy as np
import pytest
import torch

from concur.approaches.base import RunContext
from concur.approaches.hf_span.attention import register
from concur.approaches.hf_span.batching import padded_width
from concur.approaches.hf_span.features import TrainFeatures, Windows
from concur.approaches.hf_span.graphs import GRAPH_WIDTH_STEP, GraphedPieceStep, graphs_problem
from concur.approaches.hf_span.hparams import HFSpanHParams
from concur.approaches.hf_span.loss import WindowObjective
from concur.approaches.hf_span.optimization import training_plan
from concur.approaches.training import EagerPieceStep, fit
from tests.conftest import TINY_HPARAMS

VOCAB = 60


def run_again(run):
    """The CPU stand-in for recording a CUDA graph: replaying runs the function again."""
    return run


def tiny_bert(seed: int = 0):
    from transformers import BertConfig, BertForQuestionAnswering

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        max_position_embeddings=160,
    )
    model = BertForQuestionAnswering(config)
    model.set_attn_implementation(register())
    return model


def features(lengths: list[int], seed: int = 0) -> TrainFeatures:
    rng = np.random.default_rng(seed)
    windows = Windows([rng.integers(1, VOCAB, size=n) for n in lengths])
    starts = np.array([rng.integers(0, n) for n in lengths])
    return TrainFeatures(windows, starts, np.minimum(starts + 2, np.array(lengths) - 1), n_questions=len(lengths), skipped=Counter())


def context(tmp_path) -> RunContext:
    return RunContext(device="cpu", seed=0, log=lambda line: None, cache_dir=tmp_path)


def grads(model) -> list[torch.Tensor]:
    return [p.grad.clone() for p in model.parameters()]


def test_widths_round_up_to_the_step_but_not_past_the_cap():
    assert padded_width(70, GRAPH_WIDTH_STEP, 384) == 128
    assert padded_width(128, GRAPH_WIDTH_STEP, 384) == 128
    assert padded_width(350, GRAPH_WIDTH_STEP, 384) == 384  # 384 is not a multiple of 64 * 7 = 448: the cap
    assert padded_width(400, GRAPH_WIDTH_STEP, 384) == 400  # never narrower than the longest window
    assert padded_width(13, 8) == 16 and padded_width(13, 1) == 13


def test_graphed_pieces_compute_the_eager_loss_and_gradients(tmp_path):
    """Two pieces of one batch (widths 9 and 30, both padded to 64): same loss and accumulated gradients as eager."""
    data = features([9, 7, 30, 12])
    eager_model, graphed_model = tiny_bert(), tiny_bert()
    eager = WindowObjective(data, 0, "cpu")
    bucketed = WindowObjective(data, 0, "cpu", multiple=GRAPH_WIDTH_STEP, cap=128)
    step = GraphedPieceStep(bucketed, context(tmp_path), capture=run_again)
    eager_step = EagerPieceStep(eager, context(tmp_path))
    eager_model.train(), graphed_model.train()
    pieces = [np.array([0, 1]), np.array([2, 3])]
    eager_losses = [eager_step(eager_model, eager.batch(piece), 0.5) for piece in pieces]
    graphed_losses = [step(graphed_model, bucketed.batch(piece), 0.5) for piece in pieces]
    assert [bucketed.batch(piece).inputs["input_ids"].shape[1] for piece in pieces] == [64, 64]
    assert [eager.batch(piece).inputs["input_ids"].shape[1] for piece in pieces] == [9, 30]
    assert step.shapes == [(2, 64)]  # one record serves both pieces
    for eager_loss, graphed_loss in zip(eager_losses, graphed_losses, strict=True):
        assert graphed_loss.item() == pytest.approx(eager_loss.item(), abs=1e-6)
    for eager_grad, graphed_grad in zip(grads(eager_model), grads(graphed_model), strict=True):
        torch.testing.assert_close(graphed_grad, eager_grad, atol=1e-6, rtol=1e-5)


def test_recording_warms_up_without_touching_gradients_and_allocates_every_one(tmp_path):
    data = features([9, 7])
    model = tiny_bert()
    model.train()
    recorded = []

    def record_only(run):  # records, never replays: what recording a CUDA graph does to the gradients
        recorded.append(run)
        return lambda: torch.zeros(())

    step = GraphedPieceStep(WindowObjective(data, 0, "cpu", multiple=GRAPH_WIDTH_STEP), context(tmp_path), capture=record_only)
    step(model, step.objective.batch(np.array([0, 1])), 1.0)
    assert len(recorded) == 1
    assert all(p.grad is not None and not p.grad.any() for p in model.parameters())  # allocated, still zero


def test_a_recorded_piece_reads_nothing_back_to_the_host(tmp_path):
    """On a GPU every read of a tensor's value by Python waits for the GPU, which a recording refuses. With a 2D
    mask transformers reads one per forward pass (`padding_mask.all()`, to skip the mask); the 4D mask avoids it."""
    model = tiny_bert()
    model.train()
    objective = WindowObjective(features([9, 7, 30, 12]), 0, "cpu", multiple=GRAPH_WIDTH_STEP)
    recorded = []

    def keep(run):
        recorded.append(run)
        return run

    step = GraphedPieceStep(objective, context(tmp_path), capture=keep)
    step(model, objective.batch(np.arange(4)), 0.5)
    reads = []

    def counted(name):
        original = getattr(torch.Tensor, name)

        def read(self, *args, **kwargs):
            reads.append(name)
            return original(self, *args, **kwargs)

        return read

    host_reads = ("__bool__", "item", "tolist", "__int__", "__float__", "__index__")
    with mock.patch.multiple(torch.Tensor, **{name: counted(name) for name in host_reads}):
        loss = recorded[0]()  # forward, span loss and backward, as recorded
    assert reads == [] and loss.shape == ()


def test_training_with_graphed_pieces_follows_the_eager_loop(tmp_path):
    """The whole loop: 3 steps of 4 windows (per-device cap 2: two pieces a step); gradients zeroed in place, not dropped."""
    data = features([9, 7, 30, 12, 20, 5, 17, 11, 25, 8, 14, 6])
    # Adam's epsilon well above rounding noise: the gradients of the span head's bias and of the last layer norm's
    # bias are exactly 0 (softmax probabilities sum to 1), so in float32 they are noise that Adam would scale to lr
    recipe = {"learning_rate": 1e-2, "train_batch_size": 4, "warmup_ratio": 0.0, "adam_epsilon": 1e-3}
    hparams = HFSpanHParams(**{**TINY_HPARAMS, **recipe})
    runs = {}
    for name in ("eager", "graphed"):
        model = tiny_bert()
        ctx = RunContext(device="cpu", seed=0, log=lambda line: None, per_device_batch_size=2, cache_dir=tmp_path)
        if name == "graphed":
            objective = WindowObjective(data, 0, "cpu", multiple=GRAPH_WIDTH_STEP, cap=128)
            step = GraphedPieceStep(objective, ctx, capture=run_again)
        else:
            objective, step = WindowObjective(data, 0, "cpu"), None
        losses = fit(model, objective, training_plan(model, hparams, total_steps=3), ctx, name, step)
        runs[name] = (losses, [p.detach().clone() for p in model.parameters()], model, step)
    (eager_losses, eager_weights, _, _), (graphed_losses, graphed_weights, graphed_model, step) = runs["eager"], runs["graphed"]
    assert graphed_losses == pytest.approx(eager_losses, abs=1e-5)
    for eager_weight, graphed_weight in zip(eager_weights, graphed_weights, strict=True):
        torch.testing.assert_close(graphed_weight, eager_weight, atol=1e-5, rtol=1e-4)
    assert all(p.grad is not None and not p.grad.any() for p in graphed_model.parameters())  # zeroed in place after the last step
    assert step.shapes and all(width == GRAPH_WIDTH_STEP for _, width in step.shapes)
    shapes = list(step.shapes)
    step.release(graphed_model)  # after training: graphs and gradients go, the record of the shapes stays
    assert step.recorded == {} and step.shapes == shapes and all(p.grad is None for p in graphed_model.parameters())


def test_cuda_graphs_refuse_the_cpu_and_eager_attention():
    assert graphs_problem("cpu", "concur_sdpa", "tiny") == "--cuda-graphs needs a CUDA device; this job runs on cpu"
    assert graphs_problem("cuda", "eager", "tiny") == "--cuda-graphs needs SDPA attention, and tiny runs eager attention"
    assert graphs_problem("cuda:1", "concur_sdpa", "tiny") is None


def test_cuda_graphs_on_the_cpu_stop_the_grid_before_anything_runs(concur, tmp_path, tiny_registry):
    runs = tmp_path / "runs"
    common = ["--registry", str(tiny_registry), "--runs-dir", str(runs)]
    for device in ("cpu",) if torch.cuda.is_available() else ("cpu", "auto"):  # without a GPU, auto is the CPU
        ran = concur(*common, "run", "-a", "tiny-bert", "-b", "tiny-babi", "--device", device, "--cuda-graphs")
        assert ran.returncode != 0
        assert ran.stderr.strip() == (
            "error: --cuda-graphs records CUDA graphs, which needs a GPU; this grid runs on the CPU (leave --cuda-graphs out)"
        ), ran.stderr
    assert not (runs / "jobs").exists() and not (runs / "data").exists()
