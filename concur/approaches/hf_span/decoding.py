"""From start/end logits to answer strings, as BERT's SQuAD decoder, but vectorised.

Per window: the `n_best_size` best start and end positions among context tokens (a start
must also be a token whose max-context window this is), every start-end pair scored by the
sum of its logits, pairs with end before start or longer than `max_answer_length` tokens
ruled out, the best pair kept. Per question: the window whose best pair scores highest.
The answer is the passage text from the first character of the start token to the last
character of the end token; a question without any valid pair gets "".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from concur.approaches.hf_span.features import PredictFeatures


def span_masks(features: PredictFeatures, indices: Sequence[int] | np.ndarray, width: int) -> tuple[Any, Any]:
    """Boolean `(start_mask, end_mask)` of shape (len(indices), width) for a padded batch of windows."""
    import torch

    start = np.zeros((len(indices), width), dtype=bool)
    end = np.zeros((len(indices), width), dtype=bool)
    for row, index in enumerate(indices):
        is_context = features.char_offsets[index][:, 0] >= 0
        end[row, : len(is_context)] = is_context
        start[row, : len(is_context)] = is_context & features.max_context[index]
    return torch.from_numpy(start), torch.from_numpy(end)


def best_window_spans(
    start_logits: Any, end_logits: Any, start_mask: Any, end_mask: Any, n_best_size: int, max_answer_length: int
) -> tuple[Any, Any, Any]:
    """`(score, start, end)` of the best valid span of each window (score -inf where none is valid).

    Inputs are (windows, tokens) tensors; the work is a top-k and one (windows, k, k) grid.
    """
    import torch

    if n_best_size < 1 or max_answer_length < 1:
        raise ValueError(f"n_best_size and max_answer_length must be positive, got {n_best_size} and {max_answer_length}")
    minus_inf = torch.tensor(float("-inf"), device=start_logits.device)
    starts = torch.where(start_mask, start_logits.float(), minus_inf)
    ends = torch.where(end_mask, end_logits.float(), minus_inf)
    k = min(n_best_size, starts.shape[1])
    start_values, start_positions = starts.topk(k, dim=1)
    end_values, end_positions = ends.topk(k, dim=1)
    scores = start_values[:, :, None] + end_values[:, None, :]
    length = end_positions[:, None, :] - start_positions[:, :, None]
    valid = (length >= 0) & (length < max_answer_length) & torch.isfinite(scores)
    scores = torch.where(valid, scores, minus_inf).flatten(1)
    best = scores.argmax(dim=1, keepdim=True)
    return (
        scores.gather(1, best).squeeze(1),
        start_positions.gather(1, best // k).squeeze(1),
        end_positions.gather(1, best % k).squeeze(1),
    )


def best_window_per_question(question_index: np.ndarray, scores: np.ndarray, n_questions: int) -> np.ndarray:
    """Index of each question's highest-scoring window (the earlier one on ties), -1 where none has a valid span."""
    windows = np.arange(len(scores))
    order = np.lexsort((windows, -scores, question_index))
    questions = question_index[order]
    first = order[np.r_[True, questions[1:] != questions[:-1]]] if len(order) else order
    best = np.full(n_questions, -1, dtype=np.int64)
    best[question_index[first]] = np.where(np.isfinite(scores[first]), first, -1)
    return best


def answers(features: PredictFeatures, scores: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> dict[str, str]:
    """`{qid: answer text}` from every window's best span."""
    best = best_window_per_question(features.question_index, scores, len(features.qids))
    predictions: dict[str, str] = {}
    for question, (qid, window) in enumerate(zip(features.qids, best)):
        if window < 0:
            predictions[qid] = ""
            continue
        offsets = features.char_offsets[window]
        first, last = offsets[starts[window], 0], offsets[ends[window], 1]
        predictions[qid] = features.contexts[question][first:last].strip()
    return predictions
