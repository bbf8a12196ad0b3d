"""The unified data model: MRQA's one-context-with-its-questions records.

Every benchmark is materialised in this shape, so any MRQA tool can
read our data and we can read theirs. Character spans are inclusive at both ends, as in MRQA.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

Span = tuple[int, int]
"""Inclusive character offsets `(first, last)` into a passage, the MRQA convention."""


@dataclass(frozen=True, slots=True)
class DetectedAnswer:
    """One answer string and every place it occurs in the passage."""

    text: str
    char_spans: tuple[Span, ...]


@dataclass(slots=True)
class Question:
    """A question with its accepted answers (for scoring) and their spans (for training)."""

    qid: str
    question: str
    answers: list[str]
    detected_answers: list[DetectedAnswer] = field(default_factory=list)

    @property
    def first_span(self) -> Span | None:
        """The span models train on: the first span of the first detected answer (as MRQA)."""
        for detected in self.detected_answers:
            if detected.char_spans:
                return detected.char_spans[0]
        return None


@dataclass(slots=True)
class Passage:
    """One context with the questions asked about it (one line of an MRQA file).

    `article` identifies the source document (a SQuAD article title, a bAbI story) so that
    splits can keep a document's passages together; it is optional in MRQA files.
    """

    context: str
    qas: list[Question]
    article: str | None = None


@dataclass(slots=True)
class Split:
    """A whole split of a benchmark: the MRQA header plus its passages.

    `dropped` counts source examples that could not be converted, by reason, so that no
    example is ever lost silently (the manifest reports them).
    """

    dataset: str
    split: str
    passages: list[Passage]
    dropped: Counter[str] = field(default_factory=Counter)

    @property
    def n_questions(self) -> int:
        return sum(len(passage.qas) for passage in self.passages)

    @property
    def n_passages(self) -> int:
        return len(self.passages)

    @property
    def n_articles(self) -> int:
        """Distinct source documents the passages come from (0 where the format names none, as MRQA)."""
        return len({passage.article for passage in self.passages if passage.article is not None})

    def questions(self) -> Iterator[tuple[Passage, Question]]:
        """Every question with the passage it is asked about."""
        for passage in self.passages:
            for question in passage.qas:
                yield passage, question

    def gold_answers(self) -> dict[str, list[str]]:
        """`{qid: accepted answers}`, what the metric scores predictions against."""
        return {question.qid: question.answers for _, question in self.questions()}


def unanswered(answers: list[str]) -> str | None:
    """Why a question with these gold answers cannot be scored (none, or only blank ones), or None when it can."""
    if any(answer.strip() for answer in answers):
        return None
    return f"no answer text to score against (answers {answers!r}); unanswerable questions are not supported"


def span_problem(context: str, span: Span) -> str | None:
    """Why `span` cannot index `context`, or None when it can."""
    first, last = span
    if not 0 <= first <= last < len(context):
        return f"span {list(span)} is outside the passage of {len(context)} characters"
    return None
