"""Describe a materialised benchmark the way the reference study's Table 2 does.

For each split: how many questions and passages, the average question, passage and answer
lengths, and the fraction of questions whose answer occurs verbatim in the passage. Lengths
are counted in the word tokens the non-pretrained readers see (`concur.data.tokenize`), so the
numbers say how long the inputs of those models really are. A passage is counted once,
however many questions it carries; the answer of a question is its training span (the first
detected answer), or its first accepted answer where no span was found.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from concur.data.model import Question, Split
from concur.data.tokenize import tokenize


@dataclass(frozen=True)
class SplitStats:
    """Table 2's numbers for one split of one benchmark."""

    questions: int
    passages: int
    question_tokens: float  # mean over questions
    passage_tokens: float  # mean over passages
    answer_tokens: float  # mean over questions with an answer
    answer_in_passage: float  # fraction of questions with an accepted answer found verbatim in the passage

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def split_stats(split: Split) -> SplitStats:
    """Count and average over every question and passage of `split`."""
    question_tokens = answer_tokens = passage_tokens = 0
    answered = found = 0
    for passage in split.passages:
        passage_tokens += len(tokenize(passage.context))
        for question in passage.qas:
            question_tokens += len(tokenize(question.question))
            answer = _answer_text(passage.context, question)
            if answer is not None:
                answered += 1
                answer_tokens += len(tokenize(answer))
            found += any(text and text in passage.context for text in question.answers)
    questions = split.n_questions
    return SplitStats(
        questions=questions,
        passages=split.n_passages,
        question_tokens=_mean(question_tokens, questions),
        passage_tokens=_mean(passage_tokens, split.n_passages),
        answer_tokens=_mean(answer_tokens, answered),
        answer_in_passage=_mean(found, questions),
    )


def _answer_text(context: str, question: Question) -> str | None:
    span = question.first_span
    if span is not None:
        return context[span[0] : span[1] + 1]
    return question.answers[0] if question.answers else None


def _mean(total: int, count: int) -> float:
    return total / count if count else 0.0
