"""A lexical-overlap baseline: the floor a trained reader on human-written questions must clear.

For each question, every passage span of at most `max_length` tokens that shares no word
with the question is scored by the question words near it: each word type found within
`window` tokens on either side adds its inverse count in the passage (Richardson et al.
2013's weighting) divided by its distance to the span. Ties go to the shorter, then the
earlier span. No training, no learned parameters.
"""

from __future__ import annotations

import numpy as np

from concur.data.model import Split
from concur.data.tokenize import tokenize


def lexical_overlap_answers(split: Split, window: int, max_length: int) -> dict[str, str]:
    """`{qid: answer}` for every question of `split`."""
    answers: dict[str, str] = {}
    for passage in split.passages:
        tokens = tokenize(passage.context)
        words = np.array([word.lower() for word in tokens.words])
        if len(words) == 0:
            answers.update((question.qid, "") for question in passage.qas)
            continue
        types, inverse, counts = np.unique(words, return_inverse=True, return_counts=True)
        weight = np.log1p(1.0 / counts)[inverse]  # inverse-count weight of each passage token
        for question in passage.qas:
            asked = {word.lower() for word in tokenize(question.question).words}
            first, last = _best_span(words, weight, asked, window, max_length)
            answers[question.qid] = passage.context[tokens.offsets[first, 0] : tokens.offsets[last, 1]]
    return answers


def _best_span(words: np.ndarray, weight: np.ndarray, asked: set[str], window: int, max_length: int) -> tuple[int, int]:
    n = len(words)
    in_question = np.array([word in asked for word in words])
    alphanumeric = np.array([any(ch.isalnum() for ch in word) for word in words])
    asked_types = sorted({word for word, hit in zip(words, in_question) if hit})
    if not asked_types:
        return 0, 0
    positions = np.arange(n)
    # For each question word type k and token t: distance to its nearest occurrence at or before t / at or after t.
    present = np.stack([words == word for word in asked_types])  # (k, n)
    last_seen = np.maximum.accumulate(np.where(present, positions, -(10**9)), axis=1)
    next_seen = np.minimum.accumulate(np.where(present, positions, 10**9)[:, ::-1], axis=1)[:, ::-1]
    type_weight = np.array([weight[words == word][0] for word in asked_types])
    question_prefix = np.r_[0, np.cumsum(in_question)]
    best_score, best = -1.0, (0, 0)
    for length in range(1, min(max_length, n) + 1):
        s = positions[: n - length + 1]
        e = s + length - 1
        left = np.where(s > 0, s - last_seen[:, np.maximum(s - 1, 0)], 10**9)  # (k, spans)
        right = np.where(e < n - 1, next_seen[:, np.minimum(e + 1, n - 1)] - e, 10**9)
        distance = np.minimum(left, right)
        closeness = np.where(distance <= window, 1.0 / distance.clip(min=1), 0.0)
        score = type_weight @ closeness
        usable = (question_prefix[e + 1] - question_prefix[s] == 0) & alphanumeric[s] & alphanumeric[e]
        score = np.where(usable, score, -1.0)
        index = int(score.argmax())
        if score[index] > best_score:
            best_score, best = float(score[index]), (int(s[index]), int(e[index]))
    return best
