"""The non-pretrained reader approach end to end: vocabulary, word vectors, training, prediction, the runner."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from concur.approaches.base import RunContext, build_approach
from concur.approaches.dropout import FastDropout
from concur.data.babi import read_babi
from concur.data.vectors import MINILM_PACKAGE, offline_vectors
from concur.errors import ConcurError, ModelUnavailableError
from concur.metrics import evaluate
from concur.registry import default_registry
from tests.conftest import PEOPLE, PLACES, toml_value, write_babi_like

# A BiDAF small enough to train in seconds on 2 CPU threads; the recipe is the spec's otherwise.
SMALL_BIDAF = {
    "hidden_size": 16,
    "char_dim": 4,
    "char_filters": 8,
    "char_kernel": 3,
    "optimizer": "adam",
    "learning_rate": 0.01,
    "beta1": 0.9,
    "beta2": 0.999,
    "batch_size": 16,
    "epochs": 8.0,
    "steps": 0,  # the spec's 20,000-step budget would replace the epochs
    "ema_decay": 0.0,
}
# bAbI-like stories use these words and nothing else (tests/conftest.py:write_babi_like).
BABI_WORDS = {*PEOPLE, *PLACES, "went", "to", "the", ".", "Where", "is", "?"}


def _split(tmp_path: Path, name: str, stories: int, seed: int):
    return read_babi(write_babi_like(tmp_path / f"{name}.txt", stories=stories, seed=seed), name)


def _small_bidaf(model: dict | None = None):
    spec = default_registry().approach("bidaf")
    if model is not None:
        spec = dataclasses.replace(spec, model={**spec.model, **model})
    return spec, {**spec.hparams, **SMALL_BIDAF}


def _context(tmp_path: Path, lines: list[str], model_path: Path | None = None) -> RunContext:
    return RunContext(device="cpu", seed=0, log=lines.append, model_path=model_path)


def test_bidaf_learns_babi_like_stories_and_records_its_inputs(tmp_path):
    train, test = _split(tmp_path, "train", 50, 1), _split(tmp_path, "test", 20, 2)
    spec, hparams = _small_bidaf({"offline_vectors": "random", "word_dim": 16})
    approach = build_approach(spec, hparams)
    lines: list[str] = []
    report = approach.train(train, _context(tmp_path, lines))
    assert report.train_questions == train.n_questions == 150
    assert report.skipped_questions == 0
    assert report.losses[-1] < 0.6 * report.losses[0]
    details = report.details
    assert details["word_vectors"] == "offline:random"
    assert details["vocabulary"] == 2 + len(BABI_WORDS)  # padding, unknown, the stories' words
    assert details["vocabulary_with_vectors"] == 0
    assert details["trained_word_rows"] == details["vocabulary"]  # random vectors all train
    assert details["word_vector_dim"] == 16
    assert details["tagger"] is None
    assert any("not found" in line and "offline:random" in line for line in lines)
    dropouts = [module for module in approach._model.modules() if isinstance(module, torch.nn.Dropout)]
    assert dropouts and all(isinstance(module, FastDropout) for module in dropouts)  # bulk CPU masks
    predictions = approach.predict(test, _context(tmp_path, lines))
    contexts = {question.qid: passage.context for passage, question in test.questions()}
    assert set(predictions) == set(contexts)
    assert all(answer and answer in contexts[qid] for qid, answer in predictions.items())
    # Better than naming a random place of the story (about 1 in 4 here); the >= 95 EM of the
    # full recipe on real bAbI takes minutes, so `python -m bench.readers_check` measures it.
    assert evaluate({q.qid: q.answers for _, q in test.questions()}, predictions).exact_match > 40


def test_a_glove_file_gives_vectors_and_covers_test_words(tmp_path):
    train = _split(tmp_path, "train", 10, 1)
    test = _split(tmp_path, "test", 3, 2)
    cellar = test.passages[0]
    cellar.context = cellar.context.replace("went", "crawled")  # a word only the test split has
    rng = np.random.default_rng(0)
    covered = ["Mary", "went", "the", "crawled"]
    vectors = {word: rng.normal(size=5).round(4) for word in covered}
    glove = tmp_path / "glove.test.5d.txt"
    glove.write_text("".join(f"{word} {' '.join(map(str, row))}\n" for word, row in vectors.items()))
    spec, hparams = _small_bidaf()
    approach = build_approach(spec, {**hparams, "epochs": 1.0})
    lines: list[str] = []
    report = approach.train(train, _context(tmp_path, lines, model_path=glove))
    assert report.details["word_vectors"] == "file:glove.test.5d.txt"
    assert report.details["word_vector_dim"] == 5
    assert report.details["vocabulary_with_vectors"] == 3  # Mary, went, the
    assert report.details["trained_word_rows"] == 2  # BiDAF keeps GloVe fixed (tune_top_k = 0)
    embedding = approach._model.word_embedding
    mary = approach._vocabularies.words.index["Mary"]
    np.testing.assert_allclose(embedding(__import__("torch").tensor([mary])).detach().numpy()[0], vectors["Mary"], rtol=1e-6)
    rows_before = embedding.fixed.shape[0]
    approach.predict(test, _context(tmp_path, lines, model_path=glove))
    assert embedding.fixed.shape[0] == rows_before + 1  # "crawled" joined with its pretrained vector
    assert lines[-1].endswith("1 new test words with pretrained vectors")


def test_the_minilm_stand_in_takes_the_spec_spread_also_for_words_met_at_test_time(tmp_path):
    pytest.importorskip(MINILM_PACKAGE, reason=f"{MINILM_PACKAGE} is not installed (pip install 'concur[minilm]')")
    train, test = _split(tmp_path, "train", 10, 1), _split(tmp_path, "test", 3, 2)
    test.passages[0].context = test.passages[0].context.replace("went", "crawled")  # a word only the test split has
    spec, hparams = _small_bidaf({"offline_vectors": "minilm", "offline_vector_std": 0.35})
    approach = build_approach(spec, {**hparams, "epochs": 1.0})
    report = approach.train(train, _context(tmp_path, []))
    words = approach._vocabularies.words.items
    raw = offline_vectors("minilm").lookup(words)
    assert sorted(raw) == sorted(words)  # MiniLM's word pieces cover every word, <pad> and <unk> included
    factor = 0.35 / float(np.stack([raw[word] for word in words]).std())
    assert factor > 3  # MiniLM's own spread is about 0.05
    embedding = approach._model.word_embedding
    mary = approach._vocabularies.words.index["Mary"]
    np.testing.assert_allclose(embedding(torch.tensor([mary])).detach().numpy()[0], raw["Mary"] * factor, rtol=1e-5)
    assert report.details["word_vectors"] == "offline:minilm"
    assert report.details["word_vector_std"] == pytest.approx(float(embedding.fixed.numpy().std()), rel=1e-5)
    approach.predict(test, _context(tmp_path, []))
    crawled = offline_vectors("minilm").lookup(["crawled"])["crawled"]
    np.testing.assert_allclose(embedding.fixed[-1].numpy(), crawled * factor, rtol=1e-5)


def test_a_step_budget_replaces_the_epochs(tmp_path):
    train = _split(tmp_path, "train", 20, 1)  # 60 questions: 4 batches of 16 an epoch
    spec, hparams = _small_bidaf({"offline_vectors": "random", "word_dim": 8})
    by_epochs = build_approach(spec, {**hparams, "epochs": 2.0}).train(train, _context(tmp_path, []))
    by_steps = build_approach(spec, {**hparams, "epochs": 2.0, "steps": 11}).train(train, _context(tmp_path, []))
    assert by_epochs.optimizer_steps == 8
    assert by_steps.optimizer_steps == 11
    assert len(by_steps.losses) == 11  # one loss point per step when there are fewer steps than points
    with pytest.raises(ConcurError, match="steps = -1"):
        build_approach(spec, {**hparams, "steps": -1})


def test_a_missing_vector_file_is_an_error_not_a_fallback(tmp_path):
    spec, hparams = _small_bidaf()
    approach = build_approach(spec, hparams)
    with pytest.raises(ModelUnavailableError, match="does not exist"):
        approach.train(_split(tmp_path, "train", 2, 1), _context(tmp_path, [], model_path=tmp_path / "nope.txt"))


def test_with_features_approaches_name_the_extra_when_the_pipeline_is_missing(tmp_path):
    spec = default_registry().approach("docreader")
    spec = dataclasses.replace(spec, model={**spec.model, "spacy_pipeline": "en_core_web_nonexistent"})
    approach = build_approach(spec, spec.hparams)
    with pytest.raises(ModelUnavailableError, match="nofeat"):
        approach.train(_split(tmp_path, "train", 2, 1), _context(tmp_path, []))


def test_a_reader_job_runs_through_the_cli_and_records_its_vectors(tmp_path, tiny_registry):
    from typer.testing import CliRunner

    from concur.cli import app

    bidaf = default_registry().approach("bidaf")
    hparams = {**bidaf.hparams, **SMALL_BIDAF, "epochs": 2.0}
    body = "\n".join(f"{key} = {toml_value(value)}" for key, value in hparams.items())
    (tiny_registry / "approaches" / "tiny-bidaf.toml").write_text(
        'id = "tiny-bidaf"\nfamily = "non-pretrained"\nimplementation = "bidaf"\n'
        '[model]\nword_vectors = "glove.6B.100d"\noffline_vectors = "random"\nword_dim = 8\nlinguistic_features = false\n'
        f"[hparams]\n{body}\n"
    )
    args = ["--registry", str(tiny_registry), "--runs-dir", str(tmp_path / "runs"), "run", "-a", "tiny-bidaf", "-b", "tiny-babi"]
    result = CliRunner().invoke(app, [*args, "--source-dir", str(tmp_path / "data-root")])
    assert result.exit_code == 0, result.output
    (job_dir,) = (tmp_path / "runs" / "jobs").iterdir()
    recorded = json.loads((job_dir / "result.json").read_text())
    assert recorded["status"] == "ok"
    assert recorded["train"]["details"]["word_vectors"] == "offline:random"
    assert recorded["scores"]["n_questions"] == recorded["scores"]["n_predicted"] == 30
    again = CliRunner().invoke(app, [*args, "--source-dir", str(tmp_path / "data-root")])
    assert "already done" in again.output
