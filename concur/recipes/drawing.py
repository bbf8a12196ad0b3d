"""What every figure kind draws with: the record of what a recipe wrote, the skip it may take, shared checks.

A figure kind's `draw(recipe, table, stem, output)` (`concur.components.FigureKind`) draws what
the results hold: it raises `Skip` with the reason when they cannot make its figure (never an
empty figure), writes each file through `write_text` or `save_figure`, and notes what it left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from concur.analysis.view import EMTable
from concur.fsutil import atomic_open
from concur.recipes.spec import Recipe
from concur.registry.selection import select
from concur.registry.specs import BENCHMARK_FAMILIES

MIN_BENCHMARKS = 2


@dataclass
class Output:
    """What one recipe wrote, or why it wrote nothing."""

    recipe: Recipe
    paths: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)  # a table recipe's grids by method, as shown


class Skip(Exception):
    """The results cannot make this recipe's figure; the message says why."""


def need(table: EMTable, benches: list[str], minimum: int = MIN_BENCHMARKS) -> None:
    """Skip unless at least `minimum` of `benches` are in the results."""
    present = [bench for bench in benches if bench in table.wide.columns]
    if len(present) < minimum:
        raise Skip(f"needs at least {minimum} of {', '.join(benches) or 'its benchmarks'} in the results, found {len(present)}")


def anchor(table: EMTable, name: str) -> list[str]:
    """The benchmarks compared with the reference `name`; skip when the results hold it alone or not at all."""
    if name not in table.wide.columns:
        raise Skip(f"the reference benchmark {name!r} is not in the results")
    others = [bench for bench in table.wide.columns if bench != name]
    if not others:
        raise Skip(f"no benchmark besides {name!r} in the results")
    return others


def selected(table: EMTable, benches: str | None) -> list[str]:
    """The benchmarks of `benches` present in the table, in the order the selection gives."""
    columns = list(table.wide.columns)
    return select(columns, benches, table.labels.benchmark_family, BENCHMARK_FAMILIES, "benchmark", skipped=[])


def write_text(path: Path, text: str, output: Output) -> None:
    """Write one text file of the recipe atomically and record it."""
    with atomic_open(path, "wt") as handle:
        handle.write(text)
    output.paths.append(path)
