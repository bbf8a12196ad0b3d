"""Windows made once per (data, tokenizer, window geometry), shared by every job of a study cell.

The hyperparameter settings and seeds of one (approach, benchmark) cell read the same questions
with the same tokenizer and, unless a setting changes `max_seq_length`, `doc_stride` or
`max_query_length`, cut the same windows. The first job writes them to
`runs/cache/hf-span-features/KEY.npz`; the others load them instead of tokenising again. KEY is a
hash of everything the windows depend on: the questions, passages and answer spans, the
tokenizer's full serialisation (vocabulary, normaliser, special tokens), the three geometry
hyperparameters and `FEATURES_VERSION` (raise it when features.py changes what it builds).
A file is written whole or not at all (`atomic_open`), so concurrent jobs of one cell at worst
both build it, and a cache file that does not load is built again and replaced, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from concur.approaches.hf_span.features import (
    PredictFeatures,
    TrainFeatures,
    Windows,
    build_predict_features,
    build_train_features,
)
from concur.approaches.hf_span.hparams import HFSpanHParams
from concur.data.model import Split
from concur.fsutil import atomic_open

FEATURES_VERSION = 1
CACHE_SUBDIR = "hf-span-features"
GEOMETRY = ("max_seq_length", "doc_stride", "max_query_length")
TRANSIENT_SETTINGS = ("truncation", "padding")  # per-call settings a fast tokenizer keeps from its last call

F = TypeVar("F", TrainFeatures, PredictFeatures)


def split_fingerprint(split: Split) -> str:
    """A hash of what windows are made of: each passage's text and its questions' ids, texts and answer spans."""
    digest = hashlib.blake2b(digest_size=16)
    for passage in split.passages:
        digest.update(json.dumps(passage.context).encode())
        for question in passage.qas:
            digest.update(json.dumps([question.qid, question.question, question.first_span]).encode())
    return digest.hexdigest()


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """A hash of the fast tokenizer's serialisation and the inputs its model takes.

    Truncation and padding are left out: a call that truncates leaves its settings on the
    tokenizer (which would change the hash after the first use), and features.py passes its own.
    """
    serialised = json.loads(tokenizer.backend_tokenizer.to_str())
    for transient in TRANSIENT_SETTINGS:
        serialised.pop(transient, None)
    digest = hashlib.blake2b(digest_size=16)
    digest.update(json.dumps(serialised, sort_keys=True).encode())
    digest.update(json.dumps(list(tokenizer.model_input_names)).encode())
    return digest.hexdigest()


def cache_key(kind: str, split: Split, tokenizer: Any, hparams: HFSpanHParams) -> str:
    content = {
        "version": FEATURES_VERSION,
        "kind": kind,
        "geometry": {name: getattr(hparams, name) for name in GEOMETRY},
        "tokenizer": tokenizer_fingerprint(tokenizer),
        "data": split_fingerprint(split),
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:32]


def train_features(split: Split, tokenizer: Any, hparams: HFSpanHParams, cache_dir: Path | None) -> tuple[TrainFeatures, bool]:
    """The training windows of `split`, from the cache when a job of the cell made them; (features, from cache)."""
    return _cached("train", split, tokenizer, hparams, cache_dir, build_train_features, _train_arrays, _train_from_arrays)


def predict_features(split: Split, tokenizer: Any, hparams: HFSpanHParams, cache_dir: Path | None) -> tuple[PredictFeatures, bool]:
    """The prediction windows of `split`, from the cache when a job of the cell made them; (features, from cache)."""
    return _cached("predict", split, tokenizer, hparams, cache_dir, build_predict_features, _predict_arrays, _predict_from_arrays)


def _cached(
    kind: str,
    split: Split,
    tokenizer: Any,
    hparams: HFSpanHParams,
    cache_dir: Path | None,
    build: Callable[[Split, Any, HFSpanHParams], F],
    to_arrays: Callable[[F], dict[str, np.ndarray]],
    from_arrays: Callable[[dict[str, np.ndarray], Split], F],
) -> tuple[F, bool]:
    if cache_dir is None:
        return build(split, tokenizer, hparams), False
    path = cache_dir / CACHE_SUBDIR / f"{cache_key(kind, split, tokenizer, hparams)}.npz"
    stored = _load(path, split, from_arrays) if path.is_file() else None
    if stored is not None:
        return stored, True
    features = build(split, tokenizer, hparams)
    with atomic_open(path) as out:
        # allow_pickle spelled out (numpy's default) so no array's name can stand for it
        np.savez(out, allow_pickle=True, **to_arrays(features))
    return features, False


def _load(path: Path, split: Split, from_arrays: Callable[[dict[str, np.ndarray], Split], F]) -> F | None:
    """The features stored at `path`; None when the file is damaged or has another layout (it is then rebuilt)."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            return from_arrays(dict(stored), split)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None


def _ragged(prefix: str, rows: list[np.ndarray]) -> dict[str, np.ndarray]:
    lengths = np.fromiter((len(row) for row in rows), dtype=np.int64, count=len(rows))
    flat = np.concatenate(rows) if rows else np.empty(0)
    return {f"{prefix}_flat": flat, f"{prefix}_lengths": lengths}


def _unragged(arrays: dict[str, np.ndarray], prefix: str) -> list[np.ndarray]:
    ends = np.cumsum(arrays[f"{prefix}_lengths"])
    return np.split(arrays[f"{prefix}_flat"], ends[:-1]) if len(ends) else []


def _windows_arrays(windows: Windows) -> dict[str, np.ndarray]:
    arrays = _ragged("ids", windows.input_ids)
    if windows.token_type_ids is not None:
        arrays |= _ragged("types", windows.token_type_ids)
    return arrays


def _windows_from(arrays: dict[str, np.ndarray]) -> Windows:
    types = _unragged(arrays, "types") if "types_flat" in arrays else None
    return Windows(input_ids=_unragged(arrays, "ids"), token_type_ids=types)


def _train_arrays(features: TrainFeatures) -> dict[str, np.ndarray]:
    skipped = json.dumps(dict(features.skipped))
    return _windows_arrays(features.windows) | {
        "start_positions": features.start_positions,
        "end_positions": features.end_positions,
        "n_questions": np.asarray(features.n_questions),
        "skipped": np.asarray(skipped),
    }


def _train_from_arrays(arrays: dict[str, np.ndarray], split: Split) -> TrainFeatures:
    return TrainFeatures(
        windows=_windows_from(arrays),
        start_positions=arrays["start_positions"],
        end_positions=arrays["end_positions"],
        n_questions=int(arrays["n_questions"]),
        skipped=Counter(json.loads(str(arrays["skipped"]))),
    )


def _predict_arrays(features: PredictFeatures) -> dict[str, np.ndarray]:
    return (
        _windows_arrays(features.windows)
        | _ragged("offsets", [offsets.reshape(-1) for offsets in features.char_offsets])
        | _ragged("max_context", features.max_context)
        | {"question_index": features.question_index}
    )


def _predict_from_arrays(arrays: dict[str, np.ndarray], split: Split) -> PredictFeatures:
    """The stored windows, with the question ids and passages taken from the split itself (the key covers them)."""
    pairs = list(split.questions())
    return PredictFeatures(
        windows=_windows_from(arrays),
        question_index=arrays["question_index"],
        char_offsets=[offsets.reshape(-1, 2) for offsets in _unragged(arrays, "offsets")],
        max_context=_unragged(arrays, "max_context"),
        qids=[question.qid for _, question in pairs],
        contexts=[passage.context for passage, _ in pairs],
    )
