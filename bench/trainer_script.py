"""The plain transformers `Trainer` script that `bench.speed_training` sets beside concur, as one writes it from the
transformers docs: the QA example's windows (the tokenizer's overlapping windows) and labels, `Trainer` with the
spec's hyperparameters and either its fast settings (dynamic padding, length-grouped batches, fused AdamW, SDPA
attention) or the QA example's (every window padded to `max_seq_length`, random batches), and the QA example's
answer post-processing; `speed_training`'s `concur-trainer-decoding` decodes concur's model with the last."""

from __future__ import annotations

import tempfile
import time
from typing import Any

from bench.training_runs import Config, Measured, benchmark_splits, measure_run, synchronize


def run_trainer(config: Config, pad_to_max: bool) -> Measured:
    """A plain Trainer script, as one writes it from the transformers docs; `pad_to_max` gives the QA example's padding."""
    import torch
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    torch.set_num_threads(config.threads)
    hp = config.hparams
    train, test = benchmark_splits(config)
    started = time.perf_counter()
    torch.manual_seed(config.seed)
    tokenizer = AutoTokenizer.from_pretrained(config.model_path)
    model = AutoModelForQuestionAnswering.from_pretrained(config.model_path, attn_implementation="sdpa", dtype=torch.float32)
    padding = "max_length" if pad_to_max else False
    train_features = labelled_windows(train, tokenizer, hp, padding)
    with tempfile.TemporaryDirectory() as output_dir:
        trainer = build_trainer(model, tokenizer, config, output_dir, pad_to_max, train_features)
        training = time.perf_counter()
        outcome = trainer.train()
        synchronize(config.device)
        predicting = time.perf_counter()
        predictions = predict_with_trainer(trainer, test, tokenizer, hp, padding)
        measured = measure_run(
            "trainer-pad384" if pad_to_max else "trainer-fast",
            config,
            test,
            predictions,
            (round(len(train_features) * hp["epochs"]), outcome.global_step, predicting - training),
            started,
            predicting,
        )
    return measured


def build_trainer(model: Any, tokenizer: Any, config: Config, output_dir: str, pad_to_max: bool, train_features: Any) -> Any:
    """The script's `Trainer`: the spec's hyperparameters, its fast settings (or with `pad_to_max` the QA example's)."""
    from transformers import DataCollatorWithPadding, Trainer, TrainingArguments, default_data_collator

    hp = config.hparams
    on_cuda = config.device.startswith("cuda")
    arguments = TrainingArguments(
        output_dir=output_dir,
        per_device_train_batch_size=hp["train_batch_size"],
        per_device_eval_batch_size=hp["eval_batch_size"],
        learning_rate=hp["learning_rate"],
        num_train_epochs=hp["epochs"],
        warmup_steps=hp["warmup_ratio"],  # a float below 1 is a ratio of the steps
        lr_scheduler_type=hp["lr_schedule"],
        weight_decay=hp["weight_decay"],
        adam_beta1=hp["adam_beta1"],
        adam_beta2=hp["adam_beta2"],
        adam_epsilon=hp["adam_epsilon"],
        max_grad_norm=hp["max_grad_norm"],
        optim="adamw_torch_fused",
        train_sampling_strategy="random" if pad_to_max else "group_by_length",
        bf16=config.precision == "bf16" or (config.precision == "auto" and on_cuda),
        use_cpu=not on_cuda,
        seed=config.seed,
        report_to="none",
        save_strategy="no",
        logging_strategy="no",
        disable_tqdm=True,
    )
    collator = default_data_collator if pad_to_max else DataCollatorWithPadding(tokenizer)
    return Trainer(model=model, args=arguments, train_dataset=train_features, data_collator=collator, processing_class=tokenizer)


def encode_windows(questions: list[str], contexts: list[str], tokenizer: Any, hp: dict[str, Any], padding: str | bool) -> Any:
    """The QA example's windows: question then context, overflowing context in windows overlapping by `doc_stride`."""
    return tokenizer(
        [question.lstrip() for question in questions],
        contexts,
        truncation="only_second",
        max_length=hp["max_seq_length"],
        stride=hp["doc_stride"],
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding=padding,
    )


def labelled_windows(split: Any, tokenizer: Any, hp: dict[str, Any], padding: str | bool) -> list[dict[str, Any]]:
    """Windows labelled with the answer's first and last token, or the CLS token when the answer is outside."""
    pairs = [(passage, question) for passage, question in split.questions() if question.first_span is not None]
    encoded = encode_windows([q.question for _, q in pairs], [p.context for p, _ in pairs], tokenizer, hp, padding)
    features = []
    for index, sample in enumerate(encoded["overflow_to_sample_mapping"]):
        first_char, last_char = pairs[sample][1].first_span
        sequence = encoded.sequence_ids(index)
        offsets = encoded["offset_mapping"][index]
        context = [position for position, part in enumerate(sequence) if part == 1]
        start = end = 0
        if offsets[context[0]][0] <= first_char and offsets[context[-1]][1] > last_char:
            start = next(p for p in context if offsets[p][1] > first_char)
            end = next(p for p in reversed(context) if offsets[p][0] <= last_char)
        item = {name: encoded[name][index] for name in encoded if name not in ("offset_mapping", "overflow_to_sample_mapping")}
        features.append({**item, "start_positions": start, "end_positions": end})
    return features


def predict_with_trainer(trainer: Any, split: Any, tokenizer: Any, hp: dict[str, Any], padding: str | bool) -> dict[str, str]:
    """The QA example's windows through `trainer.predict`, then its post-processing (`trainer_style_answers`)."""
    import numpy as np

    pairs, encoded, features = eval_windows(split, tokenizer, hp, padding)
    # With length grouping, Trainer (transformers 5) evaluates in a length-grouped order too and predict()
    # returns the logits in that order; the sampler is seeded, so asking it again gives the order to undo
    order = np.asarray(list(trainer._get_eval_sampler(features)))
    output = trainer.predict(features)
    start_logits, end_logits = (np.empty_like(logits) for logits in output.predictions)
    start_logits[order], end_logits[order] = output.predictions
    return trainer_style_answers(pairs, encoded, list(start_logits), list(end_logits), hp)


def eval_windows(split: Any, tokenizer: Any, hp: dict[str, Any], padding: str | bool) -> tuple[list[Any], Any, list[dict[str, Any]]]:
    """`(passage and question pairs, the tokenizer's encoding, one model-input dict per window)` of a test split."""
    pairs = list(split.questions())
    encoded = encode_windows([q.question for _, q in pairs], [p.context for p, _ in pairs], tokenizer, hp, padding)
    names = [name for name in encoded if name not in ("offset_mapping", "overflow_to_sample_mapping")]
    return pairs, encoded, [{name: encoded[name][index] for name in names} for index in range(len(encoded["input_ids"]))]


def trainer_style_answers(
    pairs: list[Any], encoded: Any, start_logits: list[Any], end_logits: list[Any], hp: dict[str, Any]
) -> dict[str, str]:
    """The QA example's post-processing: per question, the best valid span over its windows' n-best starts and ends
    (both in the context, end not before start, at most `max_answer_length` tokens), scored by the sum of its logits."""
    import numpy as np

    best: dict[str, tuple[float, str]] = {}
    for index, sample in enumerate(encoded["overflow_to_sample_mapping"]):
        passage, question = pairs[sample]
        sequence = encoded.sequence_ids(index)
        offsets = encoded["offset_mapping"][index]
        starts = np.argsort(start_logits[index])[::-1][: hp["n_best_size"]]
        ends = np.argsort(end_logits[index])[::-1][: hp["n_best_size"]]
        for start in starts:
            for end in ends:
                if start >= len(sequence) or end >= len(sequence) or sequence[start] != 1 or sequence[end] != 1:
                    continue
                if end < start or end - start + 1 > hp["max_answer_length"]:
                    continue
                score = float(start_logits[index][start] + end_logits[index][end])
                if question.qid not in best or score > best[question.qid][0]:
                    best[question.qid] = (score, passage.context[offsets[start][0] : offsets[end][1]])
    return {question.qid: best.get(question.qid, (0.0, ""))[1] for _, question in pairs}


def trainer_style_predict(model: Any, tokenizer: Any, split: Any, config: Config) -> dict[str, str]:
    """`model`'s answers as the Trainer script finds them: its windows, batches in order, its post-processing."""
    import torch

    from concur.approaches.precision import autocast

    hp = config.hparams
    pairs, encoded, features = eval_windows(split, tokenizer, hp, False)
    start_logits: list[Any] = []
    end_logits: list[Any] = []
    model.eval()
    with torch.inference_mode():
        for first in range(0, len(features), hp["eval_batch_size"]):
            batch = tokenizer.pad(features[first : first + hp["eval_batch_size"]], return_tensors="pt").to(config.device)
            with autocast(config.device, config.precision):
                output = model(**batch)
            for row, length in enumerate(batch["attention_mask"].sum(dim=1).tolist()):
                start_logits.append(output.start_logits[row, :length].float().cpu().numpy())
                end_logits.append(output.end_logits[row, :length].float().cpu().numpy())
    return trainer_style_answers(pairs, encoded, start_logits, end_logits, hp)
