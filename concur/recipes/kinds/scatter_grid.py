"""`kind = "scatter-grid"`: small multiples of a reference benchmark's EM against each other benchmark's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from concur.analysis.concurrence import METHOD_SYMBOLS, MIN_APPROACHES, Method, concurrence_matrix, is_small_n
from concur.analysis.render import CSV_DECIMALS, estimate_text
from concur.analysis.view import EMTable
from concur.components import FigureKind
from concur.plots.scatter import scatter_grid
from concur.plots.style import save_figure
from concur.recipes.drawing import Output, anchor, write_text
from concur.recipes.spec import Recipe


@dataclass(frozen=True)
class ScatterGridOptions:
    reference: str  # the benchmark on every panel's x axis
    columns: int = 3  # panels per row

    def problem(self) -> tuple[str, str] | None:
        return ("columns", "must be a positive integer") if self.columns < 1 else None


def draw(recipe: Recipe, table: EMTable, stem: Path, output: Output) -> None:
    """Small multiples of the reference against each benchmark.

    `NAME.csv` holds every point drawn, `NAME-concurrence.csv` each panel's r, τ and n.
    """
    options: ScatterGridOptions = recipe.options
    reference = options.reference
    others = anchor(table, reference)
    stats, panels = {}, []
    for other in others:
        row: dict[str, object] = {"reference": reference, "benchmark": other}
        estimates: dict[Method, float] = {}
        for method in Method:
            estimates[method], n = concurrence_matrix(table.wide[[reference, other]], method).pair(reference, other)
            row[str(method)] = estimates[method]
        row.update({"n": n, "small_n": is_small_n(n)})
        panels.append(row)
        lines = [f"{METHOD_SYMBOLS[method]} = {estimate_text(estimates[method])}" for method in Method]
        stats[other] = "\n".join([*lines, f"n = {n}" + (f" < {MIN_APPROACHES}: too few approaches" if is_small_n(n) else "")])
    points = table.wide[[reference, *others]].melt(ignore_index=False, id_vars=reference, var_name="benchmark", value_name="em")
    points = points.dropna().rename(columns={reference: "reference_em"}).rename_axis("approach").reset_index()
    points.insert(1, "reference", reference)
    write_text(stem.with_suffix(".csv"), points[["approach", "reference", "benchmark", "reference_em", "em"]].to_csv(index=False), output)
    write_text(stem.with_name(f"{stem.name}-concurrence.csv"), pd.DataFrame(panels).round(CSV_DECIMALS).to_csv(index=False), output)
    names = {**table.labels.approach_names(table.wide.index), **table.labels.benchmark_names(table.wide.columns)}
    families = table.approach_families()
    figure = scatter_grid(table.wide, reference, others, families=families, names=names, stats=stats, columns=options.columns)
    output.paths.extend(save_figure(figure, stem))


KIND = FigureKind(options=ScatterGridOptions, draw=draw, reference="reference")
