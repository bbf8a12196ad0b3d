"""`kind = "robustness"`: a linear fit of each benchmark's score against a reference's, and each approach's distance from it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pandas as pd

from concur.analysis.render import CSV_DECIMALS
from concur.analysis.robustness import SCALINGS, Scaling, fit_effective_robustness
from concur.analysis.view import EMTable
from concur.components import FigureKind
from concur.plots.robustness import robustness_figure
from concur.plots.style import save_figure
from concur.recipes.drawing import Output, anchor, write_text
from concur.recipes.spec import Recipe


@dataclass(frozen=True)
class RobustnessOptions:
    x: str  # the benchmark on the x axis (in-distribution)
    # SCALINGS is get_args(Scaling), which analysis types as tuple[str, ...]
    scalings: list[Scaling] = field(default_factory=lambda: list(SCALINGS))  # axis scalings, one figure each
    metric: Literal["em", "f1"] = "em"


def draw(recipe: Recipe, table: EMTable, stem: Path, output: Output) -> None:
    options: RobustnessOptions = recipe.options
    others = anchor(table, options.x)
    values = table.cells.wide(options.metric).loc[table.wide.index]
    metric = options.metric.upper()
    fits = []
    for other in others:
        pair = values[[options.x, other]].dropna()
        for scaling in options.scalings:
            fit = fit_effective_robustness(
                pair[options.x].to_numpy(),
                pair[other].to_numpy(),
                scaling=scaling,
                n_resamples=recipe.bootstrap.n_resamples,
                seed=recipe.bootstrap.seed,
                confidence=recipe.bootstrap.confidence,
            )
            fits.append(
                {
                    "benchmark": other,
                    "scaling": scaling,
                    "n": fit.n,
                    "slope": fit.slope,
                    "intercept": fit.intercept,
                    "r2": fit.r2,
                    "mean_effective_robustness": float(fit.effective_robustness.mean()),
                }
            )
            names = table.labels.benchmark_names([options.x, other])
            figure = robustness_figure(
                pair[options.x].to_numpy(),
                pair[other].to_numpy(),
                list(table.labels.approach_names(pair.index).values()),
                fit,
                x_label=f"{names[options.x]} {metric}",
                y_label=f"{names[other]} {metric}",
                title=f"{recipe.title} ({scaling})",
            )
            output.paths.extend(save_figure(figure, stem.with_name(f"{stem.name}-{other}-{scaling}")))
    write_text(stem.with_suffix(".csv"), pd.DataFrame(fits).round(CSV_DECIMALS).to_csv(index=False), output)


KIND = FigureKind(options=RobustnessOptions, draw=draw, reference="x")
