"""Rank resolution: which approaches a benchmark's test questions can tell apart (`concur ranks`).

Two approaches are compared on the same questions (paired): the EM difference's noise is the
variance of their per-question differences over the number of questions, plus the seed
variance of each cell where it has several runs (`concur.analysis.reliability`), and the
two-sided p-value is the normal one of the difference over that noise (with one run per
cell, a Wald form of McNemar's test: the variance of the paired differences in place of
McNemar's discordant count). The p-values of all pairs are
adjusted together by Holm's step-down method, so every "told apart" holds at the family-wise
level `alpha`.

Groups are read off best first: the best approach left leads a group, which holds every
remaining approach its questions cannot tell from the leader. Approaches in one group may be
ordered by their EMs, but the test questions do not support that order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtr

from concur.analysis.bootstrap import BootstrapSettings, percentile_interval
from concur.analysis.measurement import BenchmarkOutcomes, benchmark_rng
from concur.analysis.noise_model import benchmark_noise
from concur.analysis.policy import Policy
from concur.analysis.results import Results
from concur.analysis.view import em_table
from concur.errors import ConcurError
from concur.registry import Registry
from concur.registry.specs import id_problem

ALPHA = 0.05
RANK_COLUMNS = ["group", "approach", "EM", "interval"]


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


@dataclass(frozen=True)
class BenchmarkRanks:
    """`concur ranks`: the groups, and each approach's EM interval from the same questions and seeds."""

    groups: RankGroups
    em_lower: dict[str, float]
    em_upper: dict[str, float]
    settings: BootstrapSettings


def benchmark_ranks(
    results: Results,
    benchmark: str,
    *,
    policy: Policy,
    approaches: str | None,
    registry: Registry | None,
    alpha: float = ALPHA,
    settings: BootstrapSettings = BootstrapSettings(),
    note: Callable[[str], None] = lambda _: None,
) -> BenchmarkRanks:
    """Rank resolution of one benchmark of `results`; refused where its per-question outcomes are not known."""
    if problem := id_problem(benchmark):
        raise ConcurError(f"ranks takes a benchmark id: {problem}")
    table = em_table(results, policy=policy, benches=benchmark, approaches=approaches, registry=registry)
    for line in table.notes:
        note(line)
    outcomes = table.measurement.benchmarks.get(benchmark)
    if outcomes is None:
        raise ConcurError(
            f"{benchmark} has no per-question outcomes in these results (results {'+'.join(results.sources)}); ranks compares "
            "approaches question by question: use --results store or study:FILE.toml (jobs run by concur), or a per-question CSV"
        )
    if len(outcomes.approaches) < 2:
        raise ConcurError(f"{benchmark} has {len(outcomes.approaches)} approach in these results; ranks needs at least two")
    grouped = rank_groups(outcomes, alpha)
    replicates = outcomes.replicates(settings.n_resamples, benchmark_rng(settings.seed, benchmark))
    lower, upper = percentile_interval(replicates, settings.confidence)
    em_lower = dict(zip(outcomes.approaches, map(float, lower)))
    em_upper = dict(zip(outcomes.approaches, map(float, upper)))
    return BenchmarkRanks(grouped, em_lower, em_upper, settings)


def rank_rows(ranks: BenchmarkRanks) -> list[list[str]]:
    """The rows of `RANK_COLUMNS`, best first: group number, approach, EM, its interval."""
    rows = []
    for number, group in enumerate(ranks.groups.groups, start=1):
        for approach in group:
            interval = f"[{ranks.em_lower[approach]:.1f}, {ranks.em_upper[approach]:.1f}]"
            rows.append([str(number), approach, f"{ranks.groups.em[approach]:.1f}", interval])
    return rows


def ranks_json(ranks: BenchmarkRanks) -> dict[str, Any]:
    """The groups (`{"groups": [[approach, ...], ...]}`, best first) and what is behind them."""
    grouped = ranks.groups
    return {
        "benchmark": grouped.benchmark,
        "groups": grouped.groups,
        "n_questions": grouped.n_questions,
        "alpha": grouped.alpha,
        "correction": "holm",
        "em": grouped.em,
        "em_interval": {approach: [ranks.em_lower[approach], ranks.em_upper[approach]] for approach in grouped.em},
        "confidence": ranks.settings.confidence,
        "pairs": grouped.pairs.to_dict(orient="records"),
    }
