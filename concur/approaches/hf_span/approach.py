"""Fine-tune any Hugging Face encoder with a span head on a train split, then answer a test split.

The recipe is BERT's SQuAD v1.1 fine-tuning, with each paper's hyperparameters coming from
its spec: AdamW, warm-up then linear decay (or constant), gradient clipping, windows over
long passages. Batches are length-grouped and padded only to their longest window; the
effective batch stays `train_batch_size` when a device fits fewer windows at once (gradient
accumulation). On CUDA the forward pass runs in bf16 autocast over fp32 weights; on the CPU
everything is fp32 and a seed fixes every loss and prediction.
"""

from __future__ import annotations

import time
from contextlib import closing
from typing import Any

import numpy as np

from concur.approaches.base import RunContext, TrainReport
from concur.approaches.batches import sorted_batches
from concur.approaches.hf_span.batching import pad_batch, pad_multiple
from concur.approaches.hf_span.decoding import answers, best_window_spans, span_masks
from concur.approaches.hf_span.feature_cache import predict_features, train_features
from concur.approaches.hf_span.features import PredictFeatures
from concur.approaches.hf_span.graphs import GRAPH_WIDTH_STEP, GraphedPieceStep, graphs_problem
from concur.approaches.hf_span.hparams import HFSpanHParams
from concur.approaches.hf_span.loading import LoadedModel, load_pretrained, model_settings
from concur.approaches.hf_span.loss import WindowObjective
from concur.approaches.hf_span.optimization import training_plan, warmup_steps
from concur.approaches.hf_span.variant import HF_SPAN_TRAINING, TrainingVariant
from concur.approaches.precision import autocast
from concur.approaches.prefetch import prefetch_depth, prefetched
from concur.approaches.training import epoch_steps, fit
from concur.approaches.transfer import to_device
from concur.data.model import Split
from concur.errors import ConcurError
from concur.progress import task_progress
from concur.registry.specs import ApproachSpec


class HFSpanApproach:
    """`implementation = "hf-span"`: BERT, RoBERTa, ALBERT, ELECTRA, SpanBERT, MiniLM, ..."""

    def __init__(self, spec: ApproachSpec, hparams: HFSpanHParams) -> None:
        problem = hparams.problem()
        if problem is not None:
            name, message = problem
            raise ConcurError(f"approach {spec.id!r}: hyperparameter {name} = {getattr(hparams, name)!r} {message}")
        model_settings(spec)  # a malformed [model] table fails before any data is read
        self.spec, self.hparams = spec, hparams
        self._loaded: LoadedModel | None = None

    def train(self, train: Split, context: RunContext, variant: TrainingVariant = HF_SPAN_TRAINING) -> TrainReport:
        """Fine-tune on `train`; `variant` departs from hf-span's training only to compare it with another trainer
        (`concur.approaches.hf_span.variant`; jobs never pass one)."""
        import torch

        clock = time.perf_counter()
        hp = self.hparams
        torch.manual_seed(context.seed)  # before loading: the new span head is drawn from it
        loaded = load_pretrained(self.spec, context.model_path, context.log, stock_kernels=variant.stock_kernels)
        if variant.compiled:
            loaded.model.compile(dynamic=True)
        if hp.max_seq_length > loaded.max_tokens:
            raise ConcurError(
                f"approach {self.spec.id!r}: hyperparameter max_seq_length = {hp.max_seq_length} exceeds the "
                f"{loaded.max_tokens} tokens the model {loaded.origin} reads at once"
            )
        featuring = time.perf_counter()
        features, cached = train_features(train, loaded.tokenizer, hp, context.cache_dir)
        feature_seconds = time.perf_counter() - featuring
        n_windows = len(features.windows)
        skipped = sum(features.skipped.values())
        reasons = ", ".join(f"{reason}: {n}" for reason, n in features.skipped.items())
        if n_windows == 0:
            raise ConcurError(
                f"approach {self.spec.id!r}: the train split {train.dataset}:{train.split} has no question with an answer "
                f"span to train on ({skipped} skipped: {reasons or 'no questions'})"
            )
        total_steps = epoch_steps(n_windows, hp.train_batch_size, hp.epochs)
        context.log(
            f"train: {features.n_questions} questions -> {n_windows} windows"
            + (f"; skipped {skipped} ({reasons})" if skipped else "")
            + (" (windows from the cache)" if cached else "")
            + f"; {total_steps} optimiser steps of {hp.train_batch_size} windows ({hp.epochs:g} epochs)"
        )
        model = loaded.model.to(context.device)
        pad_id = _pad_id(loaded.tokenizer.pad_token_id)
        if context.cuda_graphs:
            problem = graphs_problem(context.device, loaded.attention, loaded.origin)
            if problem is not None:
                raise ConcurError(f"approach {self.spec.id!r}: {problem}")
            objective = WindowObjective(features, pad_id, context.device, multiple=GRAPH_WIDTH_STEP, cap=hp.max_seq_length)
            piece_step: GraphedPieceStep | None = GraphedPieceStep(objective, context)
        else:
            objective, piece_step = WindowObjective(features, pad_id, context.device), None
        fit_clock = time.perf_counter()
        plan = training_plan(model, hp, total_steps)
        losses = fit(model, objective, plan, context, self.spec.id, piece_step, batch_order=variant.batch_order)
        fit_seconds = time.perf_counter() - fit_clock
        if piece_step is not None:
            piece_step.release(model)
            shapes = ", ".join(f"{windows}x{width}" for windows, width in piece_step.shapes)
            context.log(f"CUDA graphs: {len(piece_step.shapes)} batch shapes recorded (windows x tokens: {shapes})")
        self._loaded = loaded
        return TrainReport(
            optimizer_steps=total_steps,
            train_features=n_windows,
            train_questions=features.n_questions,
            skipped_questions=skipped,
            seconds=time.perf_counter() - clock,
            losses=losses,
            details={
                "model": loaded.origin,
                "attention": loaded.attention,
                "new_weights": loaded.new_weights,
                "warmup_steps": warmup_steps(hp, total_steps),
                "per_device_batch_size": min(hp.train_batch_size, context.per_device_batch_size or hp.train_batch_size),
                "skipped": dict(features.skipped),
                "fit_seconds": fit_seconds,
                "feature_seconds": feature_seconds,
                "features_cached": cached,
                **({"cuda_graph_shapes": [list(shape) for shape in piece_step.shapes]} if piece_step is not None else {}),
            },
        )

    @property
    def fine_tuned(self) -> LoadedModel:
        """The model `train()` fine-tuned, with its tokenizer (for tools that read its outputs otherwise)."""
        if self._loaded is None:
            raise ConcurError(f"approach {self.spec.id!r}: there is no fine-tuned model before train() has run")
        return self._loaded

    def predict(self, test: Split, context: RunContext) -> dict[str, str]:
        import torch

        if self._loaded is None:
            raise ConcurError(f"approach {self.spec.id!r}: predict() needs a fine-tuned model; call train() first")
        hp = self.hparams
        model, tokenizer = self._loaded.model, self._loaded.tokenizer
        features, cached = predict_features(test, tokenizer, hp, context.cache_dir)
        n_windows = len(features.windows)
        scores = np.full(n_windows, -np.inf)
        starts = np.zeros(n_windows, dtype=np.int64)
        ends = np.zeros(n_windows, dtype=np.int64)
        batch_size = min(hp.eval_batch_size, context.per_device_batch_size or hp.eval_batch_size)
        batches = sorted_batches(features.windows.lengths(), batch_size)
        pad_id = _pad_id(tokenizer.pad_token_id)
        model.eval()
        prepared = ((indices, *prediction_inputs(features, indices, pad_id, context.device)) for indices in batches)
        with torch.inference_mode(), closing(prefetched(prepared, prefetch_depth(context.device))) as ready, task_progress() as progress:
            task = progress.add_task(f"predict {self.spec.id}", total=len(batches), status="")
            for indices, inputs, masks in ready:
                with autocast(context.device, context.precision):
                    output = model(**inputs)
                score, start, end = best_window_spans(
                    output.start_logits,
                    output.end_logits,
                    masks["start"],
                    masks["end"],
                    hp.n_best_size,
                    hp.max_answer_length,
                )
                scores[indices] = score.cpu().numpy()
                starts[indices] = start.cpu().numpy()
                ends[indices] = end.cpu().numpy()
                progress.advance(task)
        predictions = answers(features, scores, starts, ends)
        empty = sum(1 for text in predictions.values() if not text)
        context.log(
            f"predict: {len(predictions)} questions, {n_windows} windows"
            + (" (from the cache)" if cached else "")
            + (f"; {empty} without a valid span" if empty else "")
        )
        return predictions


def prediction_inputs(features: PredictFeatures, indices: np.ndarray, pad_id: int, device: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The padded inputs of the prediction windows `indices` and the masks of the tokens a span may use, on `device`."""
    inputs = to_device(pad_batch(features.windows, indices, pad_id, pad_multiple(device)), device)
    start_mask, end_mask = span_masks(features, indices, inputs["input_ids"].shape[1])
    return inputs, to_device({"start": start_mask, "end": end_mask}, device)


def _pad_id(pad_token_id: int | None) -> int:
    """The tokenizer's padding id; tokenizers without one pad with 0 (masked out by attention anyway)."""
    return 0 if pad_token_id is None else pad_token_id
