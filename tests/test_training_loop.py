"""The one training loop of hf-span and the readers, checked by value on tiny problems.

A regression network shows the loop itself (loss, accumulation, clipping, the weight
average, the step budget, a non-finite loss); hf-span's and the readers' own plans show that
the rates the loop trains at are their schedules' hand-computed values.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from concur.approaches.base import RunContext
from concur.approaches.reader.hparams.base import ReaderHParams
from concur.approaches.training import Plan, epoch_steps, fit
from concur.errors import NonFiniteLossError

N_EXAMPLES = 60


class Regression:
    """An `Objective`: mean squared error of a network on a seeded linear problem; it records every batch it builds."""

    def __init__(self, n: int = N_EXAMPLES) -> None:
        generator = torch.Generator().manual_seed(1)
        self.x = torch.randn(n, 3, generator=generator)
        self.y = self.x @ torch.tensor([1.5, -2.0, 0.5]) + 0.1 * torch.randn(n, generator=generator)
        self.batches: list[np.ndarray] = []

    def lengths(self) -> np.ndarray:
        return np.arange(len(self.x)) % 7  # any lengths: batches group them

    def batch(self, indices: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        self.batches.append(indices.copy())
        return self.x[indices], self.y[indices]

    def forward(self, model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return model(batch[0]).squeeze(-1)

    def loss(self, outputs: torch.Tensor, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return F.mse_loss(outputs, batch[1])


def network() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))


def sgd_plan(
    model: nn.Module, steps: int, batch_size: int = 12, lr: float = 0.1, max_grad_norm: float = 0.0, ema_decay: float = 0.0
) -> Plan:
    optimizer = torch.optim.SGD(model.parameters(), lr)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    return Plan(batch_size, steps, optimizer, scheduler, max_grad_norm, ema_decay)


def context(tmp_path: Path, lines: list[str] | None = None, per_device: int | None = None) -> RunContext:
    log = lines.append if lines is not None else (lambda line: None)
    return RunContext(device="cpu", seed=0, log=log, per_device_batch_size=per_device)


def weights(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_loss_falls_on_a_tiny_regression(tmp_path):
    model = network()
    lines: list[str] = []
    losses = fit(model, Regression(), sgd_plan(model, steps=40), context(tmp_path, lines), "regression")
    assert len(losses) == 40  # one point per step below 50 steps
    assert losses[0] > 1.0 and sum(losses[-5:]) / 5 < 0.1 * losses[0]
    assert not model.training  # left ready for prediction
    assert lines[-1].startswith("step 40/40  loss ") and lines[-1].endswith("lr 0.1")


def test_the_step_budget_is_whole_batches_per_epoch_times_epochs(tmp_path):
    assert epoch_steps(60, 16, 2.0) == 8  # 4 batches an epoch (the last one of 12)
    assert epoch_steps(64, 8, 0.5) == 4
    assert epoch_steps(10, 4, 1.5) == 5  # ceil(1.5 * 3)
    assert epoch_steps(5, 8, 0.1) == 1  # at least one step
    model, objective = network(), Regression()
    fit(model, objective, sgd_plan(model, steps=epoch_steps(N_EXAMPLES, 16, 2.0), batch_size=16), context(tmp_path), "regression")
    assert len(objective.batches) == 8  # one batch per step without a per-device cap
    for epoch in (objective.batches[:4], objective.batches[4:]):
        assert sorted(np.concatenate(epoch).tolist()) == list(range(N_EXAMPLES))  # each epoch sees every example once
        assert sorted(len(batch) for batch in epoch) == [12, 16, 16, 16]


@pytest.mark.parametrize("per_device", [4, 5])  # 3 equal pieces; pieces of 5, 5 and 2
def test_gradient_accumulation_makes_the_update_of_one_whole_batch(tmp_path, per_device):
    whole_model, split_model = network(), network()
    before = weights(whole_model)
    whole_objective, split_objective = Regression(), Regression()
    whole = fit(whole_model, whole_objective, sgd_plan(whole_model, steps=1, lr=0.5), context(tmp_path), "whole")
    split = fit(split_model, split_objective, sgd_plan(split_model, steps=1, lr=0.5), context(tmp_path, per_device=per_device), "split")
    assert [len(piece) for piece in split_objective.batches] == ([4, 4, 4] if per_device == 4 else [5, 5, 2])
    assert np.array_equal(np.concatenate(split_objective.batches), whole_objective.batches[0])
    assert (weights(whole_model) - before).abs().max() > 1e-2  # the step moved the weights
    torch.testing.assert_close(weights(split_model), weights(whole_model), rtol=0, atol=1e-6)
    assert split == pytest.approx(whole, abs=1e-6)  # the curve shows the whole batch's mean loss


def test_gradient_clipping_bounds_the_update(tmp_path):
    model = network()
    before = weights(model)
    fit(model, Regression(), sgd_plan(model, steps=1, lr=1.0, max_grad_norm=1e-3), context(tmp_path), "clipped")
    assert (weights(model) - before).norm().item() == pytest.approx(1e-3, rel=1e-4)  # SGD at rate 1: the clipped gradient


def test_the_weight_average_replaces_the_trained_weights(tmp_path):
    plain, averaged = network(), network()
    start = weights(plain)
    fit(plain, Regression(), sgd_plan(plain, steps=1), context(tmp_path), "plain")
    fit(averaged, Regression(), sgd_plan(averaged, steps=1, ema_decay=0.9), context(tmp_path), "averaged")
    decay = (1 + 1) / (10 + 1)  # TensorFlow's warm-up of the decay at step 1, below the spec's 0.9
    torch.testing.assert_close(weights(averaged), decay * start + (1 - decay) * weights(plain), rtol=0, atol=1e-6)


def test_a_non_finite_loss_stops_training_at_its_step(tmp_path):
    class Diverging(Regression):
        losses = 0  # batches are built ahead of their steps, so the step is counted by the losses taken

        def loss(self, outputs, batch):
            self.losses += 1
            return super().loss(outputs, batch) * (math.nan if self.losses == 3 else 1.0)

    model = network()
    with pytest.raises(NonFiniteLossError, match=r"became nan by step 3 of 5 \(mean of steps 3-3\)"):
        fit(model, Diverging(), sgd_plan(model, steps=5), context(tmp_path), "diverging")


class RecordingRates:
    """Wraps an objective; notes the rate of every parameter group when a step's forward pass runs."""

    def __init__(self, objective, optimizer: torch.optim.Optimizer) -> None:
        self.objective, self.optimizer, self.rates = objective, optimizer, []

    def lengths(self):
        return self.objective.lengths()

    def batch(self, indices):
        return self.objective.batch(indices)

    def forward(self, model, batch):
        self.rates.append([group["lr"] for group in self.optimizer.param_groups])
        return self.objective.forward(model, batch)

    def loss(self, outputs, batch):
        return self.objective.loss(outputs, batch)


def test_hf_span_trains_at_warm_up_then_linear_decay(tmp_path):
    from transformers import BertConfig, BertForQuestionAnswering

    from concur.approaches.hf_span.features import TrainFeatures, Windows
    from concur.approaches.hf_span.hparams import HFSpanHParams
    from concur.approaches.hf_span.loss import WindowObjective
    from concur.approaches.hf_span.optimization import training_plan
    from tests.conftest import TINY_HPARAMS

    torch.manual_seed(0)
    model = BertForQuestionAnswering(
        BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16)
    )
    rng = np.random.default_rng(0)
    windows = Windows([rng.integers(1, 50, size=n) for n in rng.integers(6, 12, size=16)])
    features = TrainFeatures(windows, rng.integers(0, 6, size=16), rng.integers(0, 6, size=16), n_questions=16, skipped=Counter())
    hparams = HFSpanHParams(
        **{**TINY_HPARAMS, "learning_rate": 1e-3, "train_batch_size": 4, "warmup_ratio": 0.25, "layerwise_lr_decay": 0.5}
    )
    plan = training_plan(model, hparams, total_steps=8)  # warm-up: ceil(0.25 * 8) = 2 steps
    objective = RecordingRates(WindowObjective(features, 0, "cpu"), plan.optimizer)
    lines: list[str] = []
    losses = fit(model, objective, plan, context(tmp_path, lines), "tiny-bert")
    head = [rates[-1] for rates in objective.rates]  # the span head's group trains at the full rate
    assert head == pytest.approx([0.0, 5e-4, 1e-3, 1e-3 * 5 / 6, 1e-3 * 4 / 6, 1e-3 * 3 / 6, 1e-3 * 2 / 6, 1e-3 * 1 / 6])
    embeddings = objective.rates[2][0]  # depth 0 of L = 2 layers: lr * 0.5 ** (L + 2)
    assert embeddings == pytest.approx(1e-3 * 0.5**4)
    assert len(losses) == 8 and all(math.isfinite(loss) for loss in losses)
    assert lines[1].startswith("step 2/8 ") and lines[1].endswith("lr 0.0005")  # the log names the rate the step trained at


def reader_hparams(**changes) -> ReaderHParams:
    recipe = dict(
        optimizer="adam",
        learning_rate=0.1,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-8,
        weight_decay=0.0,
        batch_size=12,
        epochs=2.0,
        steps=0,
        warmup_steps=0,
        lr_decay=1.0,
        lr_decay_every_steps=1,
        grad_clip=0.0,
        ema_decay=0.0,
        tune_top_k=0,
        dropout=0.0,
        max_passage_tokens=0,
        max_question_tokens=0,
        max_answer_length=5,
        max_word_chars=1,
        eval_batch_size=12,
    )
    return ReaderHParams(**{**recipe, **changes})


def test_reader_plans_follow_log_warm_up_and_step_decay(tmp_path):
    from concur.approaches.reader.training import training_plan

    hp = reader_hparams(warmup_steps=4, lr_decay=0.5, lr_decay_every_steps=3, grad_clip=5.0, ema_decay=0.999, steps=7)
    model = network()
    plan = training_plan(model, hp, N_EXAMPLES)
    assert isinstance(plan.optimizer, torch.optim.Adam)
    assert (plan.batch_size, plan.steps, plan.max_grad_norm, plan.ema_decay) == (12, 7, 5.0, 0.999)  # `steps` replaces the epochs
    objective = RecordingRates(Regression(), plan.optimizer)
    fit(model, objective, plan, context(tmp_path), "reader")
    # QANet's warm-up rate * log(step + 1) / log(4) up to step 3, times RaSoR's 0.5 every 3 steps
    warm = [0.0, 0.1 * math.log(2) / math.log(4), 0.1 * math.log(3) / math.log(4)]
    assert [rates[0] for rates in objective.rates] == pytest.approx([*warm, 0.05, 0.05, 0.05, 0.025])
    assert training_plan(network(), reader_hparams(), N_EXAMPLES).steps == 10  # 2 epochs of 5 batches of 12
