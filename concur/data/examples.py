"""A seeded sample of a split's questions, to look at what a benchmark really asks."""

from __future__ import annotations

import random
from dataclasses import dataclass

from concur.data.model import Split


@dataclass(frozen=True)
class Example:
    """One question shown with its passage and the span a model trains on."""

    qid: str
    passage: str
    question: str
    answers: list[str]
    span: tuple[int, int] | None

    @property
    def span_text(self) -> str | None:
        """The passage text at the training span (inclusive offsets), which must equal an answer."""
        return None if self.span is None else self.passage[self.span[0] : self.span[1] + 1]


def sample_examples(split: Split, count: int, seed: int) -> list[Example]:
    """`count` questions drawn without replacement with `seed`, in the split's order (all if fewer)."""
    questions = list(split.questions())
    chosen = sorted(random.Random(seed).sample(range(len(questions)), min(count, len(questions))))
    return [
        Example(question.qid, passage.context, question.question, question.answers, question.first_span)
        for passage, question in (questions[index] for index in chosen)
    ]
