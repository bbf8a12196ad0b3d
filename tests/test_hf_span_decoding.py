"""Span decoding of the hf-span approach on hand-made logits."""

from __future__ import annotations

import math

import numpy as np
import torch

from concur.approaches.hf_span.decoding import answers, best_window_per_question, best_window_spans, span_masks
from concur.approaches.hf_span.features import PredictFeatures, Windows

ALL = torch.ones(1, 8, dtype=torch.bool)


def logits(peaks: dict[int, float], width: int = 8) -> torch.Tensor:
    values = torch.full((1, width), -10.0)
    for position, value in peaks.items():
        values[0, position] = value
    return values


def decode(start: dict[int, float], end: dict[int, float], *, start_mask=ALL, end_mask=ALL, n_best: int = 20, max_length: int = 30):
    score, first, last = best_window_spans(logits(start), logits(end), start_mask, end_mask, n_best, max_length)
    return float(score[0]), int(first[0]), int(last[0])


def test_best_pair_is_the_highest_sum():
    assert decode({2: 5.0, 4: 1.0}, {3: 4.0, 6: 2.0}) == (9.0, 2, 3)


def test_max_answer_length_is_respected():
    # (2, 6) scores best but spans 5 tokens; with max_answer_length 3 the best valid pair is (4, 6) = 1 + 4
    start, end = {2: 5.0, 4: 1.0}, {6: 4.0}
    assert decode(start, end, max_length=5) == (9.0, 2, 6)
    assert decode(start, end, max_length=3) == (5.0, 4, 6)
    # length counts tokens: end - start < max_answer_length, so a one-token answer needs max_length 1
    assert decode({5: 3.0}, {5: 3.0}, max_length=1) == (6.0, 5, 5)


def test_end_before_start_is_never_chosen():
    score, first, last = decode({6: 9.0}, {2: 9.0})
    assert score == -1.0  # a peak paired with a background logit, not the two peaks (18.0)
    assert first <= last
    assert (first, last) != (6, 2)


def test_only_the_n_best_starts_and_ends_are_considered():
    # the best start (6) comes after the best end (3); the only valid pairs need the second-best start
    start_mask = torch.tensor([[False, True, False, False, False, False, True, False]])
    end_mask = torch.tensor([[False, False, False, True, False, False, False, False]])
    assert decode({6: 9.0, 1: 2.0}, {3: 4.0}, start_mask=start_mask, end_mask=end_mask, n_best=1)[0] == -math.inf
    assert decode({6: 9.0, 1: 2.0}, {3: 4.0}, start_mask=start_mask, end_mask=end_mask, n_best=2) == (6.0, 1, 3)


def test_starts_outside_the_start_mask_are_excluded():
    start_mask = torch.tensor([[True, True, False, True, True, True, True, True]])  # token 2 lacks max context
    assert decode({2: 9.0, 3: 1.0}, {4: 1.0}, start_mask=start_mask) == (2.0, 3, 4)


def test_a_window_without_a_valid_span_scores_minus_infinity():
    nothing = torch.zeros(1, 8, dtype=torch.bool)
    score, _, _ = decode({2: 1.0}, {3: 1.0}, start_mask=nothing)
    assert score == -math.inf


def test_the_best_window_wins_per_question_and_ties_go_to_the_earlier_window():
    question_index = np.array([0, 0, 1, 1, 2, 3])
    scores = np.array([1.0, 3.0, 2.0, 2.0, -np.inf, 0.5])
    assert best_window_per_question(question_index, scores, 5).tolist() == [1, 2, -1, 5, -1]


CONTEXT = "Mary went to the kitchen. John moved to the garden."


def two_window_features() -> PredictFeatures:
    """One question whose passage is read through two windows: `[CLS] q [SEP] <4 tokens> [SEP]`."""
    words = [(0, 4), (5, 9), (10, 12), (13, 16), (17, 24), (26, 30), (31, 36), (37, 39), (40, 43), (44, 50)]
    offsets, flags = [], []
    for first, owned in ((0, [True, True, True, False]), (6, [False, True, True, True])):
        window = np.full((7, 2), -1)
        window[2:6] = words[first : first + 4]
        offsets.append(window)
        flags.append(np.array([False, False, *owned, False]))
    ids = [np.arange(7), np.arange(7)]
    return PredictFeatures(Windows(ids), np.array([0, 0]), offsets, flags, ["q"], [CONTEXT])


def test_answers_map_the_best_window_back_to_characters():
    features = two_window_features()
    start_mask, end_mask = span_masks(features, [0, 1], 8)
    assert start_mask[0].tolist() == [False, False, True, True, True, False, False, False]
    assert end_mask[1].tolist() == [False, False, True, True, True, True, False, False]
    start = torch.full((2, 8), -5.0)
    end = torch.full((2, 8), -5.0)
    start[0, 3], end[0, 5] = 2.0, 2.0  # window 0: "went to the" scores 4
    start[1, 4], end[1, 5] = 3.0, 3.0  # window 1: "the garden" scores 6
    score, first, last = best_window_spans(start, end, start_mask, end_mask, 20, 30)
    predictions = answers(features, score.numpy(), first.numpy(), last.numpy())
    assert predictions == {"q": "the garden"}
    score[1] = -math.inf
    assert answers(features, score.numpy(), first.numpy(), last.numpy()) == {"q": "went to the"}


def test_a_question_without_any_valid_span_gets_an_empty_answer():
    features = two_window_features()
    features.qids.append("unwindowed")  # e.g. an empty passage: no window at all
    features.contexts.append("")
    scores = np.array([-np.inf, -np.inf])
    assert answers(features, scores, np.zeros(2, dtype=int), np.zeros(2, dtype=int)) == {"q": "", "unwindowed": ""}
