"""`concur compare` below the command line: two benchmarks compared and their scatter plot saved, in one call.

The plot is part of what the command returns (its JSON names the files), so the comparison and
the drawing are one function here, the lowest layer that may do both; the command prints the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from concur.analysis.pair import BenchmarkPair, PairRequest, compare_benchmarks, pair_stats_text
from concur.analysis.results import Results
from concur.plots.scatter import pair_scatter
from concur.plots.style import save_figure
from concur.registry import Registry


@dataclass(frozen=True)
class DrawnPair:
    """A compared pair and the files of its scatter plot (PDF, PNG)."""

    pair: BenchmarkPair
    paths: list[Path]


def compare_and_draw(
    results: Results, request: PairRequest, stem: Path, *, registry: Registry | None, note: Callable[[str], None] = lambda _: None
) -> DrawnPair:
    """Compare the request's pair on `results` (`compare_benchmarks`, which sends its notes to `note`) and save the
    scatter of the second benchmark's EM against the first's to `stem`.pdf and .png, the statistics in its corner."""
    pair = compare_benchmarks(results, request, registry=registry, note=note)
    table, first, second = pair.table, request.first, request.second
    figure = pair_scatter(
        table.wide,
        first,
        second,
        families=table.approach_families(),
        names={**table.labels.approach_names(table.wide.index), **table.labels.benchmark_names([first, second])},
        stats=pair_stats_text(pair.comparison),
    )
    return DrawnPair(pair, save_figure(figure, stem))
