"""A per-question cost for an (approach, benchmark) cell never measured, from the cells that were.

What a question costs depends on both its approach (the model) and its benchmark (passage and
question lengths: an epoch of MiniLM over the same number of questions costs about ten times as
much on the synthetic Wikidata set as on bAbI task 1), and the two act nearly as factors: on the
quick-start study every reader was slower per question on the Wikidata set than on carved SQuAD
by a similar factor. So the logarithm of a
cell's cost is fitted as an approach effect plus a benchmark effect, by least squares over the
measured cells, and a cell never measured is predicted from its approach's and benchmark's effects
where some chain of measured cells links the two (a new approach on a benchmark others ran, or an
approach on a benchmark that other approaches ran beside it). Without such a chain the two effects
are on unrelated scales, and there is no prediction.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

# Alternating least squares stops once no effect moves by more than this (a ratio of 1 + 1e-9) ...
CONVERGED = 1e-9
# ... or after this many rounds (a complete grid needs one; a sparse one converges slower, never this slow in practice).
MAX_ROUNDS = 1000

Cell = tuple[str, str]  # (approach, benchmark)


@dataclass(frozen=True)
class TwoWay:
    """log cost = approach effect + benchmark effect, fitted over the measured cells."""

    approach_effects: Mapping[str, float]
    benchmark_effects: Mapping[str, float]
    groups: Mapping[tuple[str, str], int]  # ("approach" | "benchmark", name) -> its group of linked cells

    def predict(self, approach: str, benchmark: str) -> float | None:
        """The cell's cost, or None where the approach or the benchmark has no measured cell linked to the other."""
        if approach not in self.approach_effects or benchmark not in self.benchmark_effects:
            return None
        if self.groups[("approach", approach)] != self.groups[("benchmark", benchmark)]:
            return None
        return math.exp(self.approach_effects[approach] + self.benchmark_effects[benchmark])


def fit_two_way(costs: Mapping[Cell, float]) -> TwoWay:
    """The two-way model of the positive `costs` (others are left out: a logarithm needs them positive)."""
    logs = {cell: math.log(cost) for cell, cost in costs.items() if cost > 0}
    by_approach: dict[str, list[tuple[str, float]]] = defaultdict(list)
    by_benchmark: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for (approach, benchmark), value in logs.items():
        by_approach[approach].append((benchmark, value))
        by_benchmark[benchmark].append((approach, value))
    approach_effects = {approach: statistics.fmean(value for _, value in cells) for approach, cells in by_approach.items()}
    benchmark_effects = dict.fromkeys(by_benchmark, 0.0)
    for _ in range(MAX_ROUNDS):
        benchmark_effects = {b: statistics.fmean(value - approach_effects[a] for a, value in cells) for b, cells in by_benchmark.items()}
        updated = {a: statistics.fmean(value - benchmark_effects[b] for b, value in cells) for a, cells in by_approach.items()}
        moved = max((abs(updated[a] - approach_effects[a]) for a in updated), default=0.0)
        approach_effects = updated
        if moved < CONVERGED:
            break
    return TwoWay(approach_effects, benchmark_effects, _groups(logs))


def _groups(cells: Mapping[Cell, float]) -> dict[tuple[str, str], int]:
    """Each approach and benchmark numbered by its connected group in the graph whose edges are the measured cells."""
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def root(node: tuple[str, str]) -> tuple[str, str]:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for approach, benchmark in cells:
        a, b = ("approach", approach), ("benchmark", benchmark)
        parent.setdefault(a, a)
        parent.setdefault(b, b)
        parent[root(a)] = root(b)
    roots: dict[tuple[str, str], int] = {}
    return {node: roots.setdefault(root(node), len(roots)) for node in parent}
