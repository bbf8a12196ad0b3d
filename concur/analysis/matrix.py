"""The benchmark x benchmark concurrence matrix of `concur matrix`: selected from results, ordered, and with
intervals when asked.

`benchmark_matrix` is the whole command below the command line but its output formats and the
optional heatmap (`concur.plots.heatmap.save_matrix_heatmap`): the command parses, calls and
prints, so a matrix can be made from Python exactly as the command makes it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import pandas as pd

from concur.analysis.bootstrap import BootstrapSettings, MatrixWithCI, bootstrap_matrix
from concur.analysis.concurrence import ConcurrenceMatrix, Method, concurrence_matrix
from concur.analysis.ordering import clustered_matrix
from concur.analysis.policy import Policy
from concur.analysis.reliability import MatrixNoise, assess_matrix
from concur.analysis.results import Results
from concur.analysis.view import EMTable, em_table
from concur.errors import ConcurError
from concur.registry import Registry


class Order(StrEnum):
    given = "given"  # as selected: ids as listed, families in family order
    cluster = "cluster"  # similar benchmarks side by side (`concur.analysis.ordering`)


@dataclass(frozen=True)
class MatrixRequest:
    """What `concur matrix` is asked: the correlation, the selection, the order, and the bootstrap (None: no intervals)."""

    method: Method = Method.kendall
    policy: Policy = Policy.best
    benches: str | None = None
    approaches: str | None = None
    order: Order = Order.given
    bootstrap: BootstrapSettings | None = None


@dataclass(frozen=True)
class BenchmarkMatrix:
    """The matrix, the table it was computed from, and how long its bootstrap took (None without one)."""

    table: EMTable
    wide: pd.DataFrame  # the table's EM values with the benchmarks in the matrix's order
    estimate: ConcurrenceMatrix
    with_ci: MatrixWithCI | None
    bootstrap_seconds: float | None
    noise: MatrixNoise | None  # ceilings and inconclusive cells; None without per-question data or intervals


def benchmark_matrix(
    results: Results, request: MatrixRequest, *, registry: Registry | None, note: Callable[[str], None] = lambda _: None
) -> BenchmarkMatrix:
    """The concurrence between every pair of the selected benchmarks over the selected approaches.

    The table's notes (missing cells, replaced cells) go to `note` first: they often say why
    fewer than two benchmarks are left, which is an error.
    """
    table = em_table(results, policy=request.policy, benches=request.benches, approaches=request.approaches, registry=registry)
    for line in table.notes:
        note(line)
    if table.wide.shape[1] < 2:
        raise ConcurError(f"a matrix needs at least two benchmarks; these results and filters leave {list(table.wide.columns)}")
    if request.order is Order.cluster:
        wide, estimate = clustered_matrix(table.wide, request.method)
    else:
        wide, estimate = table.wide, concurrence_matrix(table.wide, request.method)
    if request.bootstrap is None:
        noise = assess_matrix(wide, table.measurement, request.method, estimate.values, None)
        return BenchmarkMatrix(table, wide, estimate, None, None, noise)
    started = time.perf_counter()
    with_ci = bootstrap_matrix(wide, request.method, request.bootstrap, table.measurement)
    seconds = time.perf_counter() - started
    noise = assess_matrix(wide, table.measurement, request.method, estimate.values, with_ci)
    return BenchmarkMatrix(table, wide, estimate, with_ci, seconds, noise)
