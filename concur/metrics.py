"""Exact match and F1, exactly as the official SQuAD v1.1 and MRQA 2019 evaluation scripts.

Answers are normalised by lower-casing, removing ASCII punctuation, removing the articles
a/an/the and folding white space; a prediction's score is its maximum over the accepted
answers; corpus scores are means on the percent scale over the gold questions. Questions
without a prediction score zero; predictions for questions not in the gold set are ignored.
Both cases are counted and reported, as the official scripts print them.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation, drop articles, fold white space (official order)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the normalised strings are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    """Harmonic mean of token precision and recall after normalisation (bag of tokens)."""
    predicted = normalize_answer(prediction).split()
    expected = normalize_answer(gold).split()
    overlap = sum((Counter(predicted) & Counter(expected)).values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(predicted)
    recall = overlap / len(expected)
    return 2 * precision * recall / (precision + recall)


def max_over_gold(metric: Callable[[str, str], float], prediction: str, golds: Sequence[str]) -> float:
    """The metric's best value over the accepted answers (0.0 when there are none)."""
    return max((metric(prediction, gold) for gold in golds), default=0.0)


@dataclass(frozen=True)
class Scores:
    """Corpus-level EM and F1 (percent) with the bookkeeping the official scripts print."""

    exact_match: float
    f1: float
    n_gold: int
    n_predicted: int
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)

    def official(self) -> dict[str, float]:
        """The two numbers the official scripts print, `{"exact_match": .., "f1": ..}`."""
        return {"exact_match": self.exact_match, "f1": self.f1}


def evaluate(gold: Mapping[str, Sequence[str]], predictions: Mapping[str, str]) -> Scores:
    """Score `{qid: answer}` predictions against `{qid: accepted answers}`."""
    em_total = f1_total = 0.0
    missing: list[str] = []
    for qid, answers in gold.items():
        if qid not in predictions:
            missing.append(qid)
            continue
        prediction = predictions[qid]
        em_total += max_over_gold(exact_match, prediction, answers)
        f1_total += max_over_gold(token_f1, prediction, answers)
    extra = [qid for qid in predictions if qid not in gold]
    n = len(gold)
    return Scores(
        exact_match=100.0 * em_total / n if n else 0.0,
        f1=100.0 * f1_total / n if n else 0.0,
        n_gold=n,
        n_predicted=len(predictions) - len(extra),
        missing=missing,
        extra=extra,
    )
