"""Rank resolution: which approaches a benchmark's test questions can tell apart (`concur ranks`).

Two approaches are compared on the same questions (paired): the EM difference's noise is the
variance of their per-question differences over the number of questions, plus the seed
variance of each cell where it has several runs (`concur.analysis.reliability`), and the
two-sided p-value is the normal one of the difference over that noise (with one run per
cell this is McNemar's test without continuity correction). The p-values of all pairs are
adjusted together by Holm's step-down method, so every "told apart" holds at the family-wise
level `alpha`.

Groups are read off best first: the best approach left leads a group, which holds every
remaining approach its questions cannot tell from the leader. Approaches in one group may be
ordered by their EMs, but the test questions do not support that order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import ndtr

from concur.analysis.measurement import BenchmarkOutcomes
from concur.analysis.reliability import benchmark_noise

ALPHA = 0.05


@dataclass(frozen=True)
class RankGroups:
    """A benchmark's approaches in groups its questions cannot tell apart, best first, and every pair's test."""

    benchmark: str
    n_questions: int
    alpha: float
    groups: list[list[str]]
    em: dict[str, float]
    pairs: pd.DataFrame  # first, second, difference (EM points), se, p_value, p_holm, distinct


def rank_groups(outcomes: BenchmarkOutcomes, alpha: float = ALPHA) -> RankGroups:
    """Group `outcomes`' approaches by paired tests over the same questions, Holm-corrected."""
    noise = benchmark_noise(outcomes)
    order = np.argsort(-noise.em, kind="stable")
    names = [outcomes.approaches[index] for index in order]
    em = noise.em[order]
    covariance = noise.covariance()[np.ix_(order, order)]
    first, second = np.triu_indices(len(names), k=1)
    difference = em[first] - em[second]
    se = np.sqrt(np.maximum(covariance[first, first] + covariance[second, second] - 2 * covariance[first, second], 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_value = np.where(se > 0, 2.0 * ndtr(-np.abs(difference) / se), np.where(difference == 0, 1.0, 0.0))
    p_holm = holm(p_value)
    distinct = p_holm < alpha
    pairs = pd.DataFrame(
        {
            "first": [names[i] for i in first],
            "second": [names[j] for j in second],
            "difference": difference,
            "se": se,
            "p_value": p_value,
            "p_holm": p_holm,
            "distinct": distinct,
        }
    )
    apart = np.zeros((len(names), len(names)), dtype=bool)
    apart[first, second] = distinct
    apart[second, first] = distinct
    groups: list[list[str]] = []
    left = list(range(len(names)))
    while left:
        leader = left[0]
        members = [index for index in left if index == leader or not apart[leader, index]]
        groups.append([names[index] for index in members])
        left = [index for index in left if index not in members]
    return RankGroups(outcomes.benchmark, outcomes.n_questions, alpha, groups, dict(zip(names, map(float, em))), pairs)


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error control over all the tests given)."""
    count = p_values.size
    if count == 0:
        return p_values.astype(float)
    order = np.argsort(p_values, kind="stable")
    stepped = np.maximum.accumulate(p_values[order] * (count - np.arange(count)))
    adjusted = np.empty(count)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted
