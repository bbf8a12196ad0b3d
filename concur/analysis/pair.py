"""Two benchmarks side by side: each correlation with its bootstrap interval and n, and whether they concur
differently with a third benchmark (`concur compare`)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from concur.analysis.bootstrap import BootstrapSettings, Comparison, bootstrap_matrix, compare_with_reference
from concur.analysis.concurrence import Method


@dataclass(frozen=True)
class PairEstimate:
    """One correlation between the two benchmarks, over the approaches that have both."""

    method: Method
    value: float
    lower: float
    upper: float
    n: int


@dataclass(frozen=True)
class PairComparison:
    first: str
    second: str
    estimates: list[PairEstimate]  # one per method
    versus_reference: list[Comparison]  # one per method when a reference was given, else none


def compare_pair(wide: pd.DataFrame, first: str, second: str, settings: BootstrapSettings, reference: str | None = None) -> PairComparison:
    """Pearson and Kendall between `first` and `second` with intervals; with `reference`, the paired test of
    CORR(first, reference) - CORR(second, reference) for each."""
    estimates = []
    for method in Method:
        cell = bootstrap_matrix(wide[[first, second]], method, settings)
        value, n = cell.estimate.pair(first, second)
        estimates.append(PairEstimate(method, value, float(cell.lower.loc[first, second]), float(cell.upper.loc[first, second]), n))
    tests = [compare_with_reference(wide, reference, first, second, method, settings) for method in Method] if reference else []
    return PairComparison(first, second, estimates, tests)
