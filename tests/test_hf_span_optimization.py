"""AdamW parameter groups, layer-wise learning-rate decay and the schedule of the hf-span approach."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import torch
from torch import nn
from transformers import BertConfig, BertForQuestionAnswering

from concur.approaches.hf_span.hparams import HFSpanHParams
from concur.approaches.hf_span.optimization import build_optimizer, build_scheduler, layer_of, lr_factor, no_decay_names
from tests.conftest import TINY_HPARAMS

HPARAMS = HFSpanHParams(**{**TINY_HPARAMS, "train_batch_size": 8, "warmup_ratio": 0.25, "n_best_size": 5, "eval_batch_size": 8})


@pytest.fixture(scope="module")
def model():
    config = BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=3, num_attention_heads=2, intermediate_size=16)
    return BertForQuestionAnswering(config)


def rate_of(optimizer, parameter) -> tuple[float, float]:
    for group in optimizer.param_groups:
        if any(p is parameter for p in group["params"]):
            return group["lr"], group["weight_decay"]
    raise AssertionError("parameter in no group")


def test_biases_and_layer_norms_are_not_decayed(model):
    exempt = no_decay_names(model)
    assert "bert.embeddings.LayerNorm.weight" in exempt
    assert "bert.encoder.layer.0.attention.self.query.bias" in exempt
    assert "qa_outputs.bias" in exempt
    assert "bert.encoder.layer.0.attention.self.query.weight" not in exempt
    assert "qa_outputs.weight" not in exempt
    optimizer = build_optimizer(model, HPARAMS)
    assert rate_of(optimizer, model.qa_outputs.weight) == (1e-3, 0.01)
    assert rate_of(optimizer, model.qa_outputs.bias) == (1e-3, 0.0)
    assert sum(len(group["params"]) for group in optimizer.param_groups) == len(list(model.parameters()))


def test_layerwise_decay_follows_electras_depths(model):
    # ELECTRA's _get_layer_lrs: embeddings depth 0, encoder layer i depth i + 1, task head depth L + 2
    assert layer_of("bert.embeddings.word_embeddings.weight", 3) == 0
    assert layer_of("electra.embeddings_project.weight", 3) == 0
    assert layer_of("bert.encoder.layer.0.output.dense.weight", 3) == 1
    assert layer_of("bert.encoder.layer.2.output.dense.weight", 3) == 3
    assert layer_of("qa_outputs.weight", 3) == 5
    optimizer = build_optimizer(model, replace(HPARAMS, layerwise_lr_decay=0.5))
    bert = model.bert
    assert rate_of(optimizer, bert.embeddings.word_embeddings.weight)[0] == pytest.approx(1e-3 * 0.5**5)
    assert rate_of(optimizer, bert.encoder.layer[0].output.dense.weight)[0] == pytest.approx(1e-3 * 0.5**4)
    assert rate_of(optimizer, bert.encoder.layer[2].output.dense.weight)[0] == pytest.approx(1e-3 * 0.5**2)
    assert rate_of(optimizer, bert.encoder.layer[2].output.dense.bias) == (pytest.approx(1e-3 * 0.5**2), 0.0)
    assert rate_of(optimizer, model.qa_outputs.weight)[0] == pytest.approx(1e-3)


def test_linear_schedule_warms_up_then_decays_to_zero():
    factors = [lr_factor(step, 2, 6, "linear") for step in range(6)]
    assert factors == pytest.approx([0.0, 0.5, 1.0, 0.75, 0.5, 0.25])
    assert [lr_factor(step, 2, 6, "constant") for step in range(6)] == pytest.approx([0.0, 0.5, 1.0, 1.0, 1.0, 1.0])
    assert lr_factor(0, 0, 4, "linear") == 1.0


def test_scheduler_drives_every_group(model):
    optimizer = build_optimizer(model, replace(HPARAMS, layerwise_lr_decay=0.5))
    scheduler = build_scheduler(optimizer, HPARAMS, total_steps=8)  # warm-up ceil(0.25 * 8) = 2 steps
    seen = []
    for _ in range(8):
        seen.append(scheduler.get_last_lr()[-1])
        optimizer.step()
        scheduler.step()
    assert seen == pytest.approx([0.0, 5e-4, 1e-3, 5e-4 * 5 / 3, 5e-4 * 4 / 3, 5e-4, 5e-4 * 2 / 3, 5e-4 / 3])
    assert scheduler.get_last_lr()[0] == pytest.approx(0.0)


def test_the_fused_update_moves_every_parameter_as_the_per_parameter_loop_does():
    torch.manual_seed(0)
    config = BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16)
    fused_model = BertForQuestionAnswering(config).eval()  # no dropout: both models see the same function
    looped_model = copy.deepcopy(fused_model)
    # epsilon 1e-3: with a tiny one Adam turns a near-zero gradient into a full step of either sign, so float rounding
    # in the backward pass (which the two optimisers do not share after the first step) could flip an update
    hparams = replace(HPARAMS, layerwise_lr_decay=0.5, adam_epsilon=1e-3)
    fused = build_optimizer(fused_model, hparams)
    assert fused.defaults["fused"] is True  # on the CPU too
    looped = build_optimizer(looped_model, hparams)
    for group in looped.param_groups:
        group["fused"], group["foreach"] = False, False  # PyTorch's default on the CPU: one parameter at a time
    initial = nn.utils.parameters_to_vector(fused_model.parameters()).detach().clone()
    for ids in torch.randint(0, 50, (10, 3, 6)):
        for model, optimizer in ((fused_model, fused), (looped_model, looped)):
            optimizer.zero_grad()
            outputs = model(input_ids=ids, start_positions=torch.tensor([0, 2, 5]), end_positions=torch.tensor([1, 4, 5]))
            outputs.loss.backward()
            optimizer.step()
    updated = nn.utils.parameters_to_vector(fused_model.parameters())
    expected = nn.utils.parameters_to_vector(looped_model.parameters())
    assert (updated - initial).abs().max() > 1e-4  # ten steps at 1e-3 moved the weights
    torch.testing.assert_close(updated, expected, rtol=0, atol=1e-6)
