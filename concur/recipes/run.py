"""Run a recipe: select the cells, compute, draw, and write figures and tables.

A recipe draws what the results hold: a benchmark or approach it names that is not in the
results is left out with a note, and a recipe left with too little to draw is skipped
with the reason, never written as an empty figure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from concur.analysis.bootstrap import approach_count_curve, bootstrap_matrix
from concur.analysis.concurrence import METHOD_LABELS, METHOD_SYMBOLS, MIN_APPROACHES, Method, concurrence_matrix, is_small_n
from concur.analysis.ordering import cluster_order
from concur.analysis.render import CSV_DECIMALS, SMALL_N_FOOTNOTE, estimate_text, latex_table, markdown_table, matrix_csv
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
from concur.registry.selection import select
from concur.registry.specs import BENCHMARK_FAMILIES

MIN_BENCHMARKS = 2
SAME_BENCHMARK = "–"  # a table cell comparing a benchmark with itself, left empty as in the paper


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


def run_recipe(recipe: Recipe, results: Results, registry: Registry | None, out_dir: Path, *, reference: str | None = None) -> Output:
    """Draw one recipe into `out_dir`; `reference` replaces the benchmark the recipe compares with."""
    if reference is not None:
        recipe = recipe.with_reference(reference)
    output = Output(recipe)
    try:
        table = em_table(
            results, policy=recipe.policy, benches=_benches_needed(recipe), approaches=recipe.approaches, registry=registry, lenient=True
        )
        output.notes.extend(table.notes)
        RUNNERS[recipe.kind](recipe, table, out_dir / recipe.name, output)
    except Skip as reason:
        output.skipped = str(reason)
    return output


def _benches_needed(recipe: Recipe) -> str | None:
    """The recipe's benchmarks with the ones it compares them against (its reference, a table's rows, robustness' x)."""
    anchors = recipe.options.get("rows") or [recipe.options.get("reference") or recipe.options.get("x")]
    anchors = [anchor for anchor in anchors if anchor]
    if not anchors or recipe.benches is None:
        return recipe.benches
    return ",".join([*anchors, recipe.benches])


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
    """The paper's table layout: its rows (the first is the reference) against its benchmarks, with intervals and n.

    Columns are the recipe's `benches` present in the results, without the reference; a row
    compared with itself is left empty, as in the paper.
    """
    rows = [row for row in recipe.options["rows"] if row in table.wide.columns]
    absent = [row for row in recipe.options["rows"] if row not in rows]
    if not rows or rows[0] != recipe.options["rows"][0]:
        raise Skip(f"the reference benchmark {recipe.options['rows'][0]!r} is not in the results")
    if absent:
        output.notes.append(f"rows not in these results, left out: {', '.join(absent)}")
    columns = [bench for bench in _selected(table, recipe.benches) if bench != rows[0]]
    if not columns:
        raise Skip(f"none of {recipe.benches} besides {rows[0]!r} is in the results")
    names = table.labels.benchmark_names([*rows, *columns])
    long_rows, shown = [], []
    for method in recipe.options["methods"]:
        cells = bootstrap_matrix(table.wide[list(dict.fromkeys([*rows, *columns]))], method, recipe.bootstrap)
        grid = pd.DataFrame(index=[names[row] for row in rows], columns=[names[column] for column in columns], dtype=object)
        for row in rows:
            for column in columns:
                if row == column:
                    grid.loc[names[row], names[column]] = SAME_BENCHMARK
                    continue
                value, n = cells.estimate.pair(row, column)
                lower, upper = float(cells.lower.loc[row, column]), float(cells.upper.loc[row, column])
                small = is_small_n(n)
                grid.loc[names[row], names[column]] = estimate_text(value, small_n=small)
                cell = {"row": row, "column": column, "method": str(method), "value": value, "lower": lower, "upper": upper}
                long_rows.append({**cell, "n": n, "small_n": small})
                shown.append([names[row], names[column], METHOD_SYMBOLS[method], estimate_text(value, lower, upper, small_n=small), n])
        output.tables[str(method)] = grid
    frame = pd.DataFrame(long_rows)
    _write_text(stem.with_suffix(".csv"), frame.round(CSV_DECIMALS).to_csv(index=False), output)
    boot = recipe.bootstrap
    confidence = f"{int(boot.confidence * 100)}% {boot.interval} intervals over approaches, {boot.n_resamples} resamples"
    small_note = f"\n\n{SMALL_N_FOOTNOTE}" if frame["small_n"].any() else ""
    intervals = pd.DataFrame(shown, columns=["Row", "Column", "Statistic", "Estimate", "n"])
    markdown = [f"**{recipe.title}**"]
    for method, grid in output.tables.items():
        markdown.append(f"{METHOD_LABELS[method]}:\n\n" + markdown_table(grid.reset_index(names="")))
    markdown.append(f"With {confidence}:\n\n" + markdown_table(intervals) + small_note)
    _write_text(stem.with_suffix(".md"), "\n\n".join(markdown) + "\n", output)
    latex = [
        latex_table(grid.reset_index(names=""), f"{recipe.title}: {METHOD_LABELS[method]}.", f"tab:{recipe.name}-{method}")
        for method, grid in output.tables.items()
    ]
    _write_text(stem.with_suffix(".tex"), "\n".join(latex), output)


def _selected(table: EMTable, benches: str | None) -> list[str]:
    """The benchmarks of `benches` present in the table, in the order the selection gives."""
    columns = list(table.wide.columns)
    return select(columns, benches, table.labels.benchmark_family, BENCHMARK_FAMILIES, "benchmark", skipped=[])


def _scatter_grid(recipe: Recipe, table: EMTable, stem: Path, output: Output) -> None:
    """Small multiples of the reference against each benchmark.

    `NAME.csv` holds every point drawn, `NAME-concurrence.csv` each panel's r, τ and n.
    """
    reference = recipe.options["reference"]
    others = _anchor(table, reference)
    stats, panels = {}, []
    for other in others:
        row: dict[str, object] = {"reference": reference, "benchmark": other}
        for method in Method:
            value, n = concurrence_matrix(table.wide[[reference, other]], method).pair(reference, other)
            row[str(method)] = value
        row.update({"n": n, "small_n": is_small_n(n)})
        panels.append(row)
        lines = [f"{METHOD_SYMBOLS[method]} = {estimate_text(row[str(method)])}" for method in Method]
        stats[other] = "\n".join([*lines, f"n = {n}" + (f" < {MIN_APPROACHES}: too few approaches" if is_small_n(n) else "")])
    points = table.wide[[reference, *others]].melt(ignore_index=False, id_vars=reference, var_name="benchmark", value_name="em")
    points = points.dropna().rename(columns={reference: "reference_em"}).rename_axis("approach").reset_index()
    points.insert(1, "reference", reference)
    _write_text(stem.with_suffix(".csv"), points[["approach", "reference", "benchmark", "reference_em", "em"]].to_csv(index=False), output)
    _write_text(stem.with_name(f"{stem.name}-concurrence.csv"), pd.DataFrame(panels).round(CSV_DECIMALS).to_csv(index=False), output)
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
