"""Vocabularies of words, characters and tags, built from the training split.

Ids 0 and 1 are padding and unknown everywhere. Words are ordered question words first, by
frequency, so "the k most frequent question words" (the rows DrQA fine-tunes) are ids
2..k+1 and the trainable part of the embedding is one contiguous block.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

PAD, UNK = 0, 1
SPECIALS = ("<pad>", "<unk>")


class Vocabulary:
    """Strings to ids; unknown strings map to UNK."""

    def __init__(self, items: Iterable[str]) -> None:
        self.items: list[str] = list(SPECIALS)
        self.index: dict[str, int] = {item: i for i, item in enumerate(self.items)}
        self.extend(items)

    def __len__(self) -> int:
        return len(self.items)

    def extend(self, items: Iterable[str]) -> list[str]:
        """Append the items not yet known; returns them, in order."""
        added = []
        for item in items:
            if item not in self.index:
                self.index[item] = len(self.items)
                self.items.append(item)
                added.append(item)
        return added

    def ids(self, items: Sequence[str]) -> np.ndarray:
        return np.fromiter((self.index.get(item, UNK) for item in items), dtype=np.int64, count=len(items))


def word_vocabulary(question_words: Counter[str], all_words: Counter[str]) -> Vocabulary:
    """Question words by descending frequency, then the remaining words by descending frequency (ties alphabetical)."""
    by_frequency = sorted(question_words, key=lambda word: (-question_words[word], word))
    rest = sorted((word for word in all_words if word not in question_words), key=lambda word: (-all_words[word], word))
    return Vocabulary(by_frequency + rest)


def label_vocabulary(counts: Counter[str]) -> Vocabulary:
    """Characters or tags, by descending frequency (ties alphabetical)."""
    return Vocabulary(sorted(counts, key=lambda item: (-counts[item], item)))
