"""`kind = "downsampling"`: each approach's EM against the training-set size of downsampled SQuAD."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from concur.analysis.view import EMTable
from concur.components import FigureKind
from concur.plots.curves import downsampling_curves
from concur.plots.style import save_figure
from concur.recipes.drawing import Output, need
from concur.recipes.spec import Recipe


@dataclass(frozen=True)
class DownsamplingOptions:
    sizes: dict[str, int]  # training questions of each benchmark, the x axis

    def problem(self) -> tuple[str, str] | None:
        small = [bench for bench, size in self.sizes.items() if size < 1]
        return ("sizes", f"must be positive training-set sizes ({', '.join(small)} is not)") if small else None


def draw(recipe: Recipe, table: EMTable, stem: Path, output: Output) -> None:
    options: DownsamplingOptions = recipe.options
    sizes = {bench: size for bench, size in options.sizes.items() if bench in table.wide.columns}
    need(table, list(options.sizes))
    figure = downsampling_curves(
        table.wide[list(sizes)],
        sizes,
        families=table.approach_families(),
        names=table.labels.approach_names(table.wide.index),
        title=recipe.title,
    )
    output.paths.extend(save_figure(figure, stem))


KIND = FigureKind(options=DownsamplingOptions, draw=draw)
