"""`kind = "heatmap"`: the concurrence matrix of every pair of benchmarks, as a heatmap and a CSV."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from concur.analysis.concurrence import METHOD_LABELS, Method, concurrence_matrix
from concur.analysis.ordering import clustered_matrix
from concur.analysis.render import matrix_csv
from concur.analysis.view import EMTable
from concur.components import FigureKind
from concur.plots.heatmap import concurrence_heatmap
from concur.plots.style import save_figure
from concur.recipes.drawing import Output, need, write_text
from concur.recipes.spec import Recipe


@dataclass(frozen=True)
class HeatmapOptions:
    method: Method = Method.kendall
    order: Literal["family", "cluster"] = "family"  # the registry's family order, or hierarchical clustering of the matrix


def draw(recipe: Recipe, table: EMTable, stem: Path, output: Output) -> None:
    options: HeatmapOptions = recipe.options
    need(table, list(table.wide.columns))
    if options.order == "cluster":
        wide, matrix = clustered_matrix(table.wide, options.method)
    else:
        wide, matrix = table.wide, concurrence_matrix(table.wide, options.method)
    write_text(stem.with_suffix(".csv"), matrix_csv(matrix.values), output)
    figure = concurrence_heatmap(
        matrix.values,
        counts=matrix.counts,
        title=recipe.title,
        value_label=METHOD_LABELS[options.method],
        names=table.labels.benchmark_names(wide.columns),
    )
    output.paths.extend(save_figure(figure, stem))


KIND = FigureKind(options=HeatmapOptions, draw=draw)
