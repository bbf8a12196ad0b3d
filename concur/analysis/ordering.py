"""The order in which benchmarks and approaches appear in tables and figures.

An order is part of what a reader sees: grouping by family makes slices of a matrix
comparable across figures, and clustering puts benchmarks that rank approaches alike
side by side, so blocks of high concurrence show up as blocks. Both orders are
deterministic, so regenerating a figure never reshuffles it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.cluster.hierarchy import leaves_list, linkage
from scipy.spatial.distance import squareform

from concur.registry.registry import natural_key

CLUSTER_METHOD = "average"  # UPGMA: a cluster's distance is the mean over its members, robust to one odd pair
MISSING_DISTANCE = 1.0  # 1 - 0: an unknown concurrence counts as no concurrence, neither close nor opposite


def family_order(
    ids: Iterable[str],
    families: Mapping[str, str],
    family_rank: Sequence[str],
    *,
    scores: Mapping[str, float] | None = None,
) -> list[str]:
    """Ids grouped by family in `family_rank` order; other families follow by name, ids without a family last.

    Within a family, ids with higher `scores` come first when scores are given (missing
    scores last), so a legend can follow the lines it labels; ties, and everything when
    no scores are given, fall back to `natural_key` (babi-2 before babi-11).
    """
    rank = {family: position for position, family in enumerate(family_rank)}

    def key(item: str) -> tuple:
        family = families.get(item, "")
        position = rank.get(family, len(rank) if family else len(rank) + 1)
        score = math.nan if scores is None else float(scores.get(item, math.nan))
        missing = math.isnan(score)
        return (position, "" if family in rank else family, missing, 0.0 if missing else -score, natural_key(item))

    return sorted(ids, key=key)


def cluster_order(matrix: pd.DataFrame) -> list[str]:
    """Leaf order of an average-linkage clustering on distance 1 - value (optimal leaf ordering).

    NaN cells count as distance `MISSING_DISTANCE`; the matrix is symmetrised. Labels are
    put in natural order before clustering, so the result depends on the values only, not
    on the row order the caller happened to have.
    """
    if sorted(matrix.index) != sorted(matrix.columns):
        raise ValueError("cluster_order needs a square matrix with the same ids as rows and columns")
    labels = sorted(matrix.index, key=natural_key)
    if len(labels) < 3:  # one or two leaves have a single order up to reversal
        return labels
    distance = 1.0 - matrix.loc[labels, labels].to_numpy(dtype=float)
    distance = np.nan_to_num(distance, nan=MISSING_DISTANCE)
    distance = np.clip((distance + distance.T) / 2.0, 0.0, 2.0)
    np.fill_diagonal(distance, 0.0)
    tree = linkage(squareform(distance, checks=False), method=CLUSTER_METHOD, optimal_ordering=True)
    return [labels[leaf] for leaf in leaves_list(tree)]
