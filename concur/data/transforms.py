"""Transforms a benchmark spec can ask for: downsampling and carving train/test splits.

Both are seeded and deterministic: the same input and seed give the same output on every
machine (Python's `random.Random` with an integer seed is platform-independent).
"""

from __future__ import annotations

import random
from collections import Counter

from concur.data.model import Passage, Split
from concur.errors import ConcurError
from concur.registry.specs import CARVE_UNITS


def downsample(split: Split, questions: int, seed: int) -> Split:
    """Keep exactly `questions` questions drawn uniformly without replacement.

    Whole-context grouping: each kept question stays in its original passage with the other
    kept questions of that passage; passages left without questions are dropped; passages
    and questions keep their original order. Sampling questions (not passages) keeps the
    question count exact and gives every question the same chance, as "SQuAD 1K" means
    1,000 training questions.
    """
    total = split.n_questions
    if questions > total:
        raise ConcurError(f"cannot downsample {split.dataset} {split.split} to {questions} questions: it has {total}")
    chosen = set(random.Random(seed).sample(range(total), questions))
    passages: list[Passage] = []
    position = 0
    for passage in split.passages:
        kept = [q for offset, q in enumerate(passage.qas, start=position) if offset in chosen]
        position += len(passage.qas)
        if kept:
            passages.append(Passage(context=passage.context, qas=kept, article=passage.article))
    return Split(split.dataset, split.split, passages, Counter(split.dropped))


def carve(split: Split, *, by: str, test_fraction: float, seed: int) -> tuple[Split, Split]:
    """Split one source into train and test with no passage (or article) in both.

    `by = "context"` assigns each distinct passage text to one side (a text the source
    repeats, as SQuADShifts Reddit does twice, is one unit, so no passage is in both
    splits); `by = "article"` keeps all passages of one source document (a SQuAD article, a
    bAbI story) on the same side, so that test questions are never about a document seen in
    training. Units, in order of first appearance, are shuffled with `seed` and the first
    `round(test_fraction * units)` go to test.
    """
    if by not in CARVE_UNITS:
        raise ConcurError(f"carve by {by!r} is not supported; use one of {', '.join(CARVE_UNITS)}")
    if not 0.0 < test_fraction < 1.0:
        raise ConcurError(f"test_fraction must be between 0 and 1, got {test_fraction}")
    if by == "article":
        missing = sum(1 for passage in split.passages if passage.article is None)
        if missing:
            raise ConcurError(
                f"cannot carve {split.dataset} by article: {missing} passages have no article id "
                "(this format has none); carve by 'context' instead"
            )
    order = list(dict.fromkeys(_unit(passage, by) for passage in split.passages))
    random.Random(seed).shuffle(order)
    n_test = round(test_fraction * len(order))
    if n_test == 0 or n_test == len(order):
        raise ConcurError(f"carving {len(order)} {by}s with test_fraction {test_fraction} leaves one side empty")
    test_units = set(order[:n_test])
    train: list[Passage] = []
    test: list[Passage] = []
    for passage in split.passages:
        (test if _unit(passage, by) in test_units else train).append(passage)
    return (
        Split(split.dataset, "train", train, Counter(split.dropped)),
        Split(split.dataset, "test", test, Counter()),
    )


def _unit(passage: Passage, by: str) -> str | None:
    """What a carve keeps on one side: the passage's article, or its text."""
    return passage.article if by == "article" else passage.context
