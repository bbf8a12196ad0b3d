"""Concurrence within and between groups of benchmarks, with intervals: the paper's central pattern as numbers.

Liu et al. find that human-constructed benchmarks concur highly with each other and that synthetic ones such as
bAbI concur little with them. A study shows that pattern when the mean concurrence over its pairs of human sets
stands above the mean over its human-bAbI pairs by more than the noise. Each mean is taken over distinct pairs of
the matrix, in every resample of the matrix's own bootstrap (approaches, and test questions where covered), so the
means and their difference get percentile intervals from the same draws as the cells. A pair whose correlation is
undefined (a benchmark on which every approach ties ranks nothing) is left out of the mean, not allowed to void it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations, product

import numpy as np
import pandas as pd

from concur.analysis.bootstrap import MatrixWithCI, percentile_interval
from concur.analysis.concurrence import number_at
from concur.errors import ConcurError


@dataclass(frozen=True)
class GroupMean:
    """The mean concurrence over the distinct pairs between two groups of benchmarks (or within one)."""

    pairs: tuple[tuple[str, str], ...]  # the pairs averaged: those with a defined correlation
    mean: float
    lower: float
    upper: float


@dataclass(frozen=True)
class GroupContrast:
    """Whether pairs of one kind concur more than pairs of another: both means and their difference."""

    higher: GroupMean
    lower_group: GroupMean
    difference: float
    lower: float
    upper: float


def group_pairs(first: Sequence[str], second: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The distinct unordered pairs of two different benchmarks, one from each group (within a group when they are equal)."""
    if list(first) == list(second):
        return tuple(combinations(first, 2))
    seen: set[frozenset[str]] = set()
    pairs = []
    for a, b in product(first, second):
        if a != b and frozenset((a, b)) not in seen:
            seen.add(frozenset((a, b)))
            pairs.append((a, b))
    return tuple(pairs)


def group_mean(ci: MatrixWithCI, first: Sequence[str], second: Sequence[str]) -> GroupMean:
    """The mean concurrence over `group_pairs(first, second)` and its percentile interval over the matrix's resamples."""
    pairs = _defined(ci, group_pairs(first, second))
    estimate, replicates = _pair_means(ci, pairs)
    low, high = _interval(replicates, ci)
    return GroupMean(pairs, estimate, low, high)


def group_contrast(
    ci: MatrixWithCI, higher: tuple[Sequence[str], Sequence[str]], lower: tuple[Sequence[str], Sequence[str]]
) -> GroupContrast:
    """The mean over `higher`'s pairs minus the mean over `lower`'s, with a percentile interval from the same resamples."""
    high_pairs, low_pairs = _defined(ci, group_pairs(*higher)), _defined(ci, group_pairs(*lower))
    high_estimate, high_replicates = _pair_means(ci, high_pairs)
    low_estimate, low_replicates = _pair_means(ci, low_pairs)
    differences = high_replicates - low_replicates
    low, high = _interval(differences, ci)
    return GroupContrast(
        GroupMean(high_pairs, high_estimate, *_interval(high_replicates, ci)),
        GroupMean(low_pairs, low_estimate, *_interval(low_replicates, ci)),
        high_estimate - low_estimate,
        low,
        high,
    )


def _defined(ci: MatrixWithCI, pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """`pairs` whose correlation the estimate defines; an error where a benchmark is not in the matrix or there is no pair."""
    if not pairs:
        raise ConcurError("a group mean needs at least one pair of two different benchmarks")
    labels = [str(label) for label in ci.estimate.values.index]
    missing = sorted({bench for pair in pairs for bench in pair} - set(labels))
    if missing:
        raise ConcurError(f"not in the matrix: {', '.join(missing)}; it has {', '.join(labels)}")
    return tuple((a, b) for a, b in pairs if not np.isnan(number_at(ci.estimate.values, a, b)))


def _pair_means(ci: MatrixWithCI, pairs: tuple[tuple[str, str], ...]) -> tuple[float, np.ndarray]:
    """The estimate's mean over `pairs`, and each resample's (NaN where a pair's correlation is undefined in it);
    NaN throughout where no pair is defined."""
    if not pairs:
        return float("nan"), np.full(ci.replicates.shape[0], np.nan)
    labels = [str(label) for label in ci.estimate.values.index]
    rows = [labels.index(a) for a, _ in pairs]
    columns = [labels.index(b) for _, b in pairs]
    estimate = float(np.mean(ci.estimate.values.to_numpy(dtype=float)[rows, columns]))
    return estimate, ci.replicates[:, rows, columns].mean(axis=1)


def _interval(replicates: np.ndarray, ci: MatrixWithCI) -> tuple[float, float]:
    defined = replicates[~np.isnan(replicates)]
    if not defined.size:
        return float("nan"), float("nan")
    low, high = percentile_interval(defined, ci.settings.confidence)
    return float(low), float(high)


def family_means(ci: MatrixWithCI, families: Mapping[str, str]) -> pd.DataFrame:
    """The mean concurrence within each family of benchmarks and between every two, with percentile intervals, and
    for each family with pairs of its own, how far its within mean stands above its mean with each other family.

    One row per family pair that has a pair of benchmarks: `first`, `second`, `pairs` (those averaged), `mean`, `lower`, `upper`, and
    for a between-families row whose `first` family has within pairs, `above` (the within mean minus this mean) with
    `above_lower` and `above_upper` (NaN elsewhere). Benchmarks without a family are left out.
    """
    labels = [str(label) for label in ci.estimate.values.index]
    members: dict[str, list[str]] = {}
    for bench in labels:
        if families.get(bench):
            members.setdefault(families[bench], []).append(bench)
    rows = []
    names = list(members)
    for i, first in enumerate(names):
        for second in names[i:]:
            if not group_pairs(members[first], members[second]):
                continue
            mean = group_mean(ci, members[first], members[second])
            row: dict[str, object] = {"first": first, "second": second, "pairs": len(mean.pairs), "mean": mean.mean}
            row |= {"lower": mean.lower, "upper": mean.upper, "above": np.nan, "above_lower": np.nan, "above_upper": np.nan}
            within = (members[first], members[first])
            if first != second and group_pairs(*within):
                contrast = group_contrast(ci, within, (members[first], members[second]))
                row |= {"above": contrast.difference, "above_lower": contrast.lower, "above_upper": contrast.upper}
            rows.append(row)
    return pd.DataFrame(rows, columns=["first", "second", "pairs", "mean", "lower", "upper", "above", "above_lower", "above_upper"])
