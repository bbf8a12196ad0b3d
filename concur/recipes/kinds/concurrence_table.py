"""`kind = "concurrence-table"`: the paper's table layout, reference and other rows against benchmarks, with intervals and n."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from concur.analysis.bootstrap import bootstrap_matrix
from concur.analysis.concurrence import METHOD_LABELS, METHOD_SYMBOLS, Method, is_small_n, number_at
from concur.analysis.render import CSV_DECIMALS, SMALL_N_FOOTNOTE, estimate_text, latex_table, markdown_table
from concur.analysis.view import EMTable
from concur.components import FigureKind
from concur.recipes.drawing import Output, Skip, selected, write_text
from concur.recipes.spec import Recipe

SAME_BENCHMARK = "–"  # a table cell comparing a benchmark with itself, left empty as in the paper


@dataclass(frozen=True)
class ConcurrenceTableOptions:
    rows: list[str]  # benchmark ids; the first is the reference
    methods: list[Method] = field(default_factory=lambda: list(Method))

    def problem(self) -> tuple[str, str] | None:
        if not self.rows or not all(self.rows):
            return "rows", "must be a non-empty list of benchmark ids (the first is the reference)"
        return ("methods", "must name at least one method") if not self.methods else None


def draw(recipe: Recipe, table: EMTable, stem: Path, output: Output) -> None:
    """The paper's table layout: its rows (the first is the reference) against its benchmarks, with intervals and n.

    Columns are the recipe's `benches` present in the results, without the reference; a row
    compared with itself is left empty, as in the paper.
    """
    options: ConcurrenceTableOptions = recipe.options
    rows = [row for row in options.rows if row in table.wide.columns]
    absent = [row for row in options.rows if row not in rows]
    if not rows or rows[0] != options.rows[0]:
        raise Skip(f"the reference benchmark {options.rows[0]!r} is not in the results")
    if absent:
        output.notes.append(f"rows not in these results, left out: {', '.join(absent)}")
    columns = [bench for bench in selected(table, recipe.benches) if bench != rows[0]]
    if not columns:
        raise Skip(f"none of {recipe.benches} besides {rows[0]!r} is in the results")
    names = table.labels.benchmark_names([*rows, *columns])
    long_rows, shown = [], []
    for method in options.methods:
        cells = bootstrap_matrix(table.wide[list(dict.fromkeys([*rows, *columns]))], method, recipe.bootstrap)
        grid = pd.DataFrame(index=[names[row] for row in rows], columns=[names[column] for column in columns], dtype=object)
        for row in rows:
            for column in columns:
                if row == column:
                    grid.loc[names[row], names[column]] = SAME_BENCHMARK
                    continue
                value, n = cells.estimate.pair(row, column)
                lower, upper = number_at(cells.lower, row, column), number_at(cells.upper, row, column)
                small = is_small_n(n)
                grid.loc[names[row], names[column]] = estimate_text(value, small_n=small)
                cell = {"row": row, "column": column, "method": str(method), "value": value, "lower": lower, "upper": upper}
                long_rows.append({**cell, "n": n, "small_n": small})
                shown.append([names[row], names[column], METHOD_SYMBOLS[method], estimate_text(value, lower, upper, small_n=small), n])
        output.tables[str(method)] = grid
    frame = pd.DataFrame(long_rows)
    write_text(stem.with_suffix(".csv"), frame.round(CSV_DECIMALS).to_csv(index=False), output)
    boot = recipe.bootstrap
    confidence = f"{int(boot.confidence * 100)}% {boot.interval} intervals over approaches, {boot.n_resamples} resamples"
    small_note = f"\n\n{SMALL_N_FOOTNOTE}" if frame["small_n"].any() else ""
    intervals = pd.DataFrame(shown, columns=["Row", "Column", "Statistic", "Estimate", "n"])
    markdown = [f"**{recipe.title}**"]
    for name, grid in output.tables.items():
        markdown.append(f"{METHOD_LABELS[Method(name)]}:\n\n" + markdown_table(grid.reset_index(names="")))
    markdown.append(f"With {confidence}:\n\n" + markdown_table(intervals) + small_note)
    write_text(stem.with_suffix(".md"), "\n\n".join(markdown) + "\n", output)
    latex = [
        latex_table(grid.reset_index(names=""), f"{recipe.title}: {METHOD_LABELS[Method(name)]}.", f"tab:{recipe.name}-{name}")
        for name, grid in output.tables.items()
    ]
    write_text(stem.with_suffix(".tex"), "\n".join(latex), output)


KIND = FigureKind(options=ConcurrenceTableOptions, draw=draw, reference="rows")
