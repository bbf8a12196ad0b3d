"""Benchmarks ordered by what they measure: clustered, so that benchmarks ranking approaches alike sit side by side.

Blocks of high concurrence then show up as blocks. The order is deterministic, so
regenerating a figure never reshuffles it; the family order of tables and legends is
`concur.registry.selection.family_order`.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import pandas as pd
from scipy.cluster.hierarchy import leaves_list, linkage
from scipy.spatial.distance import squareform

from concur.analysis.concurrence import ConcurrenceMatrix, Method, concurrence_matrix
from concur.registry.registry import natural_key

CLUSTER_METHOD: Final = "average"  # UPGMA: a cluster's distance is the mean over its members, robust to one odd pair
MISSING_DISTANCE = 1.0  # 1 - 0: an unknown concurrence counts as no concurrence, neither close nor opposite


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


def clustered_matrix(wide: pd.DataFrame, method: Method) -> tuple[pd.DataFrame, ConcurrenceMatrix]:
    """`wide` with its benchmarks in `cluster_order` of their concurrence, and the matrix in that order."""
    wide = wide[cluster_order(concurrence_matrix(wide, method).values)]
    return wide, concurrence_matrix(wide, method)
