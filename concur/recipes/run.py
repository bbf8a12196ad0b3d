"""Run a recipe: select the cells, compute, draw, and write figures and tables.

A recipe draws what the results hold: a benchmark or approach it names that is not in the
results is left out with a note, and a recipe left with too little to draw is skipped
with the reason, never written as an empty figure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from concur.analysis.bootstrap import approach_count_curve, bootstrap_matrix
from concur.analysis.concurrence import METHOD_LABELS, METHOD_SYMBOLS, concurrence_matrix
from concur.analysis.ordering import cluster_order
from concur.analysis.render import CSV_DECIMALS, DISPLAY_DECIMALS, latex_table, markdown_table, matrix_csv
from concur.analysis.results import Results
from concur.analysis.robustness import fit_effective_robustness
from concur.analysis.view import EMTable, em_table
from concur.fsutil import atomic_open
from concur.plots.babi import perfect_or_chance, perfect_or_chance_counts
from concur.plots.curves import downsampling_curves
from concur.plots.heatmap import concurrence_heatmap
from concur.plots.robustness import robustness_figure
from concur.plots.scatter import scatter_grid
from concur.plots.style import save_figure
from concur.plots.subsets import approach_count_figure
from concur.recipes.spec import Recipe
from concur.registry import Registry

MIN_BENCHMARKS = 2


@dataclass
class Output:
    """What one recipe wrote, or why it wrote nothing."""

    recipe: Recipe
    paths: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None


class Skip(Exception):
    """The results cannot make this recipe's figure; the message says why."""


def run_recipe(recipe: Recipe, results: Results, registry: Registry | None, out_dir: Path) -> Output:
    output = Output(recipe)
    try:
        table = em_table(
            results, policy=recipe.policy, benches=_with_reference(recipe), approaches=recipe.approaches, registry=registry, lenient=True
        )
        output.notes.extend(table.notes)
        RUNNERS[recipe.kind](recipe, table, out_dir / recipe.name, output)
    except Skip as reason:
        output.skipped = str(reason)
    return output


def _with_reference(recipe: Recipe) -> str | None:
    anchor = recipe.options.get("reference") or recipe.options.get("x")
    if anchor is None or recipe.benches is None:
        return recipe.benches
    return f"{anchor},{recipe.benches}"


def _need(table: EMTable, benches: list[str], minimum: int = MIN_BENCHMARKS) -> None:
    present = [bench for bench in benches if bench in table.wide.columns]
    if len(present) < minimum:
        raise Skip(f"needs at least {minimum} of {', '.join(benches) or 'its benchmarks'} in the results, found {len(present)}")


def _anchor(table: EMTable, name: str) -> list[str]:
    if name not in table.wide.columns:
        raise Skip(f"the reference benchmark {name!r} is not in the results")
    others = [bench for bench in table.wide.columns if bench != name]
    if not others:
        raise Skip(f"no benchmark besides {name!r} in the results")
    return others


def _write_text(path: Path, text: str, output: Output) -> None:
    with atomic_open(path, "wt") as handle:
        handle.write(text)
    output.paths.append(path)


def _concurrence_table(recipe: Recipe, table: EMTable, stem: Path, output: Output) -> None:
    reference = recipe.options["reference"]
    others = _anchor(table, reference)
    rows = []
    for other in others:
        row: dict[str, object] = {"benchmark": other, "name": table.labels.benchmark_name.get(other, other)}
        for method in recipe.options["methods"]:
            cell = bootstrap_matrix(table.wide[[reference, other]], method, recipe.bootstrap)
            value, n = cell.estimate.pair(reference, other)
            row.update(
                {
                    "n": n,
                    str(method): value,
                    f"{method}_lower": float(cell.lower.loc[reference, other]),
                    f"{method}_upper": float(cell.upper.loc[reference, other]),
                }
            )
        rows.append(row)
    frame = pd.DataFrame(rows)
    _write_text(stem.with_suffix(".csv"), frame.round(CSV_DECIMALS).to_csv(index=False), output)
    shown = pd.DataFrame({"Benchmark": frame["name"], "n": frame["n"]})
    for method in recipe.options["methods"]:
        shown[METHOD_LABELS[method]] = [
            _with_interval(*values) for values in zip(frame[str(method)], frame[f"{method}_lower"], frame[f"{method}_upper"])
        ]
    boot = recipe.bootstrap
    confidence = f"{int(boot.confidence * 100)}% {boot.interval} intervals over approaches, {boot.n_resamples} resamples"
    _write_text(stem.with_suffix(".md"), f"**{recipe.title}** ({confidence})\n\n" + markdown_table(shown), output)
    _write_text(stem.with_suffix(".tex"), latex_table(shown, f"{recipe.title} ({confidence}).", f"tab:{recipe.name}"), output)


def _with_interval(value: float, lower: float, upper: float) -> str:
    if math.isnan(value):
        return "n/a"
    interval = "" if math.isnan(lower) else f" [{lower:.{DISPLAY_DECIMALS}f}, {upper:.{DISPLAY_DECIMALS}f}]"
    return f"{value:.{DISPLAY_DECIMALS}f}{interval}"


def _scatter_grid(recipe: Recipe, table: EMTable, stem: Path, output: Output) -> None:
    reference = recipe.options["reference"]
    others = _anchor(table, reference)
    stats = {}
    for other in others:
        lines = []
        for method in ("pearson", "kendall"):
            value, n = concurrence_matrix(table.wide[[reference, other]], method).pair(reference, other)
            lines.append(f"{METHOD_SYMBOLS[method]} = {_with_interval(value, math.nan, math.nan)}")
        stats[other] = "\n".join([*lines, f"n = {n}"])
    names = {**table.labels.approach_names(table.wide.index), **table.labels.benchmark_names(table.wide.columns)}
    figure = scatter_grid(
        table.wide, reference, others, families=table.approach_families(), names=names, stats=stats, columns=recipe.options["columns"]
    )
    output.paths.extend(save_figure(figure, stem))


def _heatmap(recipe: Recipe, table: EMTable, stem: Path, output: Output) -> None:
    _need(table, list(table.wide.columns))
    method = recipe.options["method"]
    wide = table.wide
    matrix = concurrence_matrix(wide, method)
    if recipe.options["order"] == "cluster":
        wide = wide[cluster_order(matrix.values)]
        matrix = concurrence_matrix(wide, method)
    _write_text(stem.with_suffix(".csv"), matrix_csv(matrix.values), output)
    figure = concurrence_heatmap(
        matrix.values,
        counts=matrix.counts,
        title=recipe.title,
        value_label=METHOD_LABELS[method],
        names=table.labels.benchmark_names(wide.columns),
    )
    output.paths.extend(save_figure(figure, stem))


def _downsampling(recipe: Recipe, table: EMTable, stem: Path, output: Output) -> None:
    sizes = {bench: size for bench, size in recipe.options["sizes"].items() if bench in table.wide.columns}
    _need(table, list(recipe.options["sizes"]))
    figure = downsampling_curves(
        table.wide[list(sizes)],
        sizes,
        families=table.approach_families(),
        names=table.labels.approach_names(table.wide.index),
        title=recipe.title,
    )
    output.paths.extend(save_figure(figure, stem))


def _perfect_or_chance(recipe: Recipe, table: EMTable, stem: Path, output: Output) -> None:
    benches = list(table.wide.columns)
    _need(table, benches, minimum=1)
    perfect, chance = recipe.options["perfect"], recipe.options["chance"]
    counts = perfect_or_chance_counts(table.wide, benches, perfect, chance)
    _write_text(stem.with_suffix(".csv"), counts.to_csv(index=False), output)
    figure = perfect_or_chance(
        table.wide,
        benches,
        families=table.approach_families(),
        names=table.labels.approach_names(table.wide.index),
        perfect=perfect,
        chance=chance,
        title=recipe.title,
    )
    output.paths.extend(save_figure(figure, stem))


def _approach_count(recipe: Recipe, table: EMTable, stem: Path, output: Output) -> None:
    options = recipe.options
    others = _anchor(table, options["reference"])
    curve = approach_count_curve(
        table.wide,
        options["reference"],
        others,
        options["method"],
        options["counts"],
        draws=options["draws"],
        seed=options["seed"],
        confidence=recipe.bootstrap.confidence,
    )
    if curve.empty:
        raise Skip(f"fewer approaches than the smallest subset size {min(options['counts'])}")
    _write_text(stem.with_suffix(".csv"), curve.round(CSV_DECIMALS).to_csv(index=False), output)
    figure = approach_count_figure(
        curve,
        reference=options["reference"],
        value_label=METHOD_LABELS[options["method"]],
        names=table.labels.benchmark_names(table.wide.columns),
        title=recipe.title,
    )
    output.paths.extend(save_figure(figure, stem))


def _robustness(recipe: Recipe, table: EMTable, stem: Path, output: Output) -> None:
    x_bench = recipe.options["x"]
    others = _anchor(table, x_bench)
    values = table.cells.wide(recipe.options["metric"]).loc[table.wide.index]
    metric = recipe.options["metric"].upper()
    fits = []
    for other in others:
        pair = values[[x_bench, other]].dropna()
        for scaling in recipe.options["scalings"]:
            fit = fit_effective_robustness(
                pair[x_bench].to_numpy(),
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
            names = table.labels.benchmark_names([x_bench, other])
            figure = robustness_figure(
                pair[x_bench].to_numpy(),
                pair[other].to_numpy(),
                list(table.labels.approach_names(pair.index).values()),
                fit,
                x_label=f"{names[x_bench]} {metric}",
                y_label=f"{names[other]} {metric}",
                title=f"{recipe.title} ({scaling})",
            )
            output.paths.extend(save_figure(figure, stem.with_name(f"{stem.name}-{other}-{scaling}")))
    _write_text(stem.with_suffix(".csv"), pd.DataFrame(fits).round(CSV_DECIMALS).to_csv(index=False), output)


RUNNERS: dict[str, Callable[[Recipe, EMTable, Path, Output], None]] = {
    "concurrence-table": _concurrence_table,
    "scatter-grid": _scatter_grid,
    "heatmap": _heatmap,
    "downsampling": _downsampling,
    "perfect-or-chance": _perfect_or_chance,
    "approach-count": _approach_count,
    "robustness": _robustness,
}
