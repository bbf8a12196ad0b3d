"""The hf-span windows of a study cell are made once and read back whole by the cell's other jobs."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest

from concur.approaches.hf_span.feature_cache import CACHE_SUBDIR, predict_features, train_features
from concur.approaches.hf_span.features import PredictFeatures, TrainFeatures
from concur.approaches.hf_span.hparams import HFSpanHParams
from concur.data.babi import read_babi
from concur.data.model import Passage, Question, Split
from tests.conftest import TINY_HPARAMS, write_babi_like

# windows of 24 tokens moving 8: bAbI stories (up to ~70 tokens) give several windows per question
HPARAMS = HFSpanHParams(**{**TINY_HPARAMS, "max_seq_length": 24, "doc_stride": 8, "max_query_length": 8})


@pytest.fixture(scope="module")
def babi(tmp_path_factory) -> Split:
    path = write_babi_like(tmp_path_factory.mktemp("babi") / "qa1_train.txt", stories=12, seed=3)
    return read_babi(path, "train")


def windows_equal(a, b) -> bool:
    same_ids = len(a.input_ids) == len(b.input_ids) and all(np.array_equal(x, y) for x, y in zip(a.input_ids, b.input_ids))
    types_a, types_b = a.token_type_ids or [], b.token_type_ids or []
    return same_ids and len(types_a) == len(types_b) and all(np.array_equal(x, y) for x, y in zip(types_a, types_b))


def cache_files(cache_dir) -> list:
    return sorted((cache_dir / CACHE_SUBDIR).glob("*.npz"))


def test_the_second_job_of_a_cell_reads_the_training_windows_the_first_made(tmp_path, tokenizer, babi):
    built, cached = train_features(babi, tokenizer, HPARAMS, tmp_path)
    assert not cached and len(cache_files(tmp_path)) == 1
    assert len(built.windows) > babi.n_questions  # several windows per question: the geometry is exercised
    other_setting = dataclasses.replace(HPARAMS, learning_rate=1e-3, epochs=9.0)  # not part of the windows
    loaded, cached = train_features(babi, tokenizer, other_setting, tmp_path)
    assert cached and isinstance(loaded, TrainFeatures)
    assert windows_equal(loaded.windows, built.windows)
    assert np.array_equal(loaded.start_positions, built.start_positions) and np.array_equal(loaded.end_positions, built.end_positions)
    assert loaded.n_questions == built.n_questions == babi.n_questions and loaded.skipped == built.skipped == Counter()


def test_prediction_windows_round_trip_with_offsets_and_max_context_flags(tmp_path, tokenizer, babi):
    built, _ = predict_features(babi, tokenizer, HPARAMS, tmp_path)
    loaded, cached = predict_features(babi, tokenizer, HPARAMS, tmp_path)
    assert cached and isinstance(loaded, PredictFeatures)
    assert windows_equal(loaded.windows, built.windows)
    assert np.array_equal(loaded.question_index, built.question_index)
    assert all(np.array_equal(x, y) and x.shape == y.shape for x, y in zip(loaded.char_offsets, built.char_offsets))
    assert all(np.array_equal(x, y) and x.dtype == bool for x, y in zip(loaded.max_context, built.max_context))
    assert loaded.qids == built.qids and loaded.contexts == built.contexts
    assert len(cache_files(tmp_path)) == 1  # train and predict windows of one split are separate entries
    train_features(babi, tokenizer, HPARAMS, tmp_path)
    assert len(cache_files(tmp_path)) == 2


def test_new_geometry_or_changed_data_makes_new_windows(tmp_path, tokenizer, babi):
    train_features(babi, tokenizer, HPARAMS, tmp_path)
    _, cached = train_features(babi, tokenizer, dataclasses.replace(HPARAMS, doc_stride=4), tmp_path)
    assert not cached
    first = babi.passages[0]
    edited = Question(first.qas[0].qid, first.qas[0].question + " now", first.qas[0].answers, first.qas[0].detected_answers)
    changed = Split(babi.dataset, babi.split, [Passage(first.context, [edited, *first.qas[1:]]), *babi.passages[1:]])
    _, cached = train_features(changed, tokenizer, HPARAMS, tmp_path)
    assert not cached and len(cache_files(tmp_path)) == 3


def test_a_damaged_cache_file_is_built_again_and_replaced(tmp_path, tokenizer, babi):
    built, _ = train_features(babi, tokenizer, HPARAMS, tmp_path)
    (path,) = cache_files(tmp_path)
    path.write_bytes(path.read_bytes()[:100])  # a truncated file, as a full disk leaves one
    rebuilt, cached = train_features(babi, tokenizer, HPARAMS, tmp_path)
    assert not cached and windows_equal(rebuilt.windows, built.windows)
    _, cached = train_features(babi, tokenizer, HPARAMS, tmp_path)
    assert cached and cache_files(tmp_path) == [path]


def test_without_a_cache_directory_nothing_is_written(tmp_path, tokenizer, babi):
    _, cached = train_features(babi, tokenizer, HPARAMS, None)
    assert not cached and not any(tmp_path.iterdir())


def test_a_cells_second_job_trains_on_cached_windows_and_says_so(tmp_path, tiny_model_dir, babi):
    from concur.approaches.base import RunContext, build_approach
    from concur.registry.specs import parse_approach

    table = {"id": "tiny-bert", "family": "pretrained", "implementation": "hf-span", "model": {"path": str(tiny_model_dir)}}
    spec = parse_approach({**table, "hparams": {**TINY_HPARAMS, "max_seq_length": 128}}, tmp_path / "tiny-bert.toml")
    reports, logs = [], []
    for seed in (0, 1):  # two jobs of one cell: the same data and geometry, another seed
        lines: list[str] = []
        context = RunContext(device="cpu", seed=seed, log=lines.append, cache_dir=tmp_path / "cache")
        approach = build_approach(spec, spec.hparams)
        reports.append(approach.train(babi, context))
        approach.predict(babi, context)
        logs.append(lines)
    assert [report.details["features_cached"] for report in reports] == [False, True]
    assert reports[0].train_features == reports[1].train_features
    assert any("(windows from the cache)" in line for line in logs[1]) and not any("cache" in line for line in logs[0])
    assert any(line.startswith("predict:") and "(from the cache)" in line for line in logs[1])
