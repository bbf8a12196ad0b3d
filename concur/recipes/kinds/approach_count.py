"""`kind = "approach-count"`: concurrence with a reference benchmark on random subsets of the approaches, by subset size."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from concur.analysis.bootstrap import approach_count_curve
from concur.analysis.concurrence import METHOD_LABELS, Method
from concur.analysis.render import CSV_DECIMALS
from concur.analysis.view import EMTable
from concur.components import FigureKind
from concur.plots.style import save_figure
from concur.plots.subsets import approach_count_figure
from concur.recipes.drawing import Output, Skip, anchor, write_text
from concur.recipes.spec import Recipe

MIN_SUBSET = 3  # a correlation over fewer approaches says nothing


@dataclass(frozen=True)
class ApproachCountOptions:
    reference: str  # the benchmark every other one is compared with
    counts: list[int]  # subset sizes
    draws: int  # random subsets per size
    method: Method = Method.kendall
    seed: int = 0

    def problem(self) -> tuple[str, str] | None:
        if not self.counts or min(self.counts) < MIN_SUBSET:
            return "counts", f"must be a list of subset sizes, each at least {MIN_SUBSET}"
        return ("draws", "must be a positive integer") if self.draws < 1 else None


def draw(recipe: Recipe, table: EMTable, stem: Path, output: Output) -> None:
    options: ApproachCountOptions = recipe.options
    others = anchor(table, options.reference)
    curve = approach_count_curve(
        table.wide,
        options.reference,
        others,
        options.method,
        options.counts,
        draws=options.draws,
        seed=options.seed,
        confidence=recipe.bootstrap.confidence,
    )
    if curve.empty:
        raise Skip(f"fewer approaches than the smallest subset size {min(options.counts)}")
    write_text(stem.with_suffix(".csv"), curve.round(CSV_DECIMALS).to_csv(index=False), output)
    figure = approach_count_figure(
        curve,
        reference=options.reference,
        value_label=METHOD_LABELS[options.method],
        names=table.labels.benchmark_names(table.wide.columns),
        title=recipe.title,
    )
    output.paths.extend(save_figure(figure, stem))


KIND = FigureKind(options=ApproachCountOptions, draw=draw, reference="reference")
