"""Text renderings of a concurrence matrix: CSV (the machine contract), JSON, Markdown, LaTeX.

CSV is the matrix alone, so it can be piped: a header `benchmark,<ids...>` and one row per
benchmark, values rounded to `CSV_DECIMALS`, an empty field where the correlation is
undefined; the number of approaches behind each cell is a companion CSV of the same layout
(`counts_csv`). The human formats show `DISPLAY_DECIMALS`, the interval when there is one,
the number of approaches where it differs between cells (pairwise-complete), and mark with
`SMALL_N_MARK` every value resting on fewer than `MIN_APPROACHES` approaches.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from concur.analysis.bootstrap import MatrixWithCI
from concur.analysis.concurrence import METHOD_SYMBOLS, MIN_APPROACHES, ConcurrenceMatrix

CSV_DECIMALS = 4
DISPLAY_DECIMALS = 2
JSON_DECIMALS = 6
SMALL_N_MARK = "†"
SMALL_N_FOOTNOTE = f"{SMALL_N_MARK} n < {MIN_APPROACHES} approaches: an unstable estimate"
SHOWN_BY_NAME = 8  # items a note lists by name before "..."


def matrix_csv(values: pd.DataFrame) -> str:
    return _frame_csv(values, lambda value: "" if math.isnan(value) else f"{round(value, CSV_DECIMALS):.{CSV_DECIMALS}f}")


def counts_csv(counts: pd.DataFrame) -> str:
    """The companion of `matrix_csv`: the number of approaches behind each cell, same layout."""
    return _frame_csv(counts, lambda count: str(int(count)))


def _frame_csv(frame: pd.DataFrame, cell: Callable[[Any], str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["benchmark", *frame.columns])
    for bench, row in frame.iterrows():
        writer.writerow([bench, *(cell(value) for value in row)])
    return buffer.getvalue()


def estimate_text(value: float, lower: float = math.nan, upper: float = math.nan, *, small_n: bool = False) -> str:
    """`0.83 [0.59, 0.96]` as a person reads it; `SMALL_N_MARK` after the value when `small_n`."""
    if math.isnan(value):
        return "n/a"
    text = f"{value:.{DISPLAY_DECIMALS}f}" + (SMALL_N_MARK if small_n else "")
    return text + interval_text(lower, upper)


def interval_text(lower: float, upper: float) -> str:
    """` [lower, upper]`, or nothing when there is no interval."""
    return "" if math.isnan(lower) else f" [{lower:.{DISPLAY_DECIMALS}f}, {upper:.{DISPLAY_DECIMALS}f}]"


def cell_texts(matrix: ConcurrenceMatrix, ci: MatrixWithCI | None) -> pd.DataFrame:
    """What a person reads in each cell: value (marked when n is small), [lower, upper], and n when n varies."""
    uniform = matrix.counts.to_numpy().min() == matrix.counts.to_numpy().max()
    small = matrix.small_n()
    texts = pd.DataFrame("", index=matrix.values.index, columns=matrix.values.columns)
    for row in texts.index:
        for column in texts.columns:
            lower, upper = (math.nan, math.nan) if ci is None else (ci.lower.loc[row, column], ci.upper.loc[row, column])
            text = estimate_text(matrix.values.loc[row, column], lower, upper, small_n=bool(small.loc[row, column]))
            if not uniform:
                text += f" (n={matrix.counts.loc[row, column]})"
            texts.loc[row, column] = text
    return texts


def pair_texts(matrix: ConcurrenceMatrix, ci: MatrixWithCI | None) -> pd.DataFrame:
    """The matrix in long form, one row per pair of benchmarks in matrix order (row by row, above the diagonal).

    Columns: the two benchmarks, the value (marked when n is small), the interval when
    there is one, and n. It reads well where the square matrix is too wide to print.
    """
    labels = list(matrix.values.index)
    small = matrix.small_n()
    rows = []
    for i, first in enumerate(labels):
        for second in labels[i + 1 :]:
            row = {
                "first": first,
                "second": second,
                METHOD_SYMBOLS[matrix.method]: estimate_text(matrix.values.loc[first, second], small_n=bool(small.loc[first, second])),
            }
            if ci is not None:
                row["interval"] = interval_text(ci.lower.loc[first, second], ci.upper.loc[first, second]).strip()
            row["n"] = str(matrix.counts.loc[first, second])
            rows.append(row)
    return pd.DataFrame(rows)


def small_n_note(matrix: ConcurrenceMatrix) -> str | None:
    """Which pairs of benchmarks rest on fewer than `MIN_APPROACHES` approaches, or None."""
    labels = list(matrix.values.index)
    small = matrix.small_n()
    pairs = [
        f"{first}×{second} (n={matrix.counts.loc[first, second]})"
        for i, first in enumerate(labels)
        for second in labels[i + 1 :]
        if small.loc[first, second]
    ]
    if not pairs:
        return None
    total = len(labels) * (len(labels) - 1) // 2
    counts = {int(matrix.counts.loc[first, second]) for i, first in enumerate(labels) for second in labels[i + 1 :]}
    if len(pairs) == total and len(counts) == 1:
        n = counts.pop()
        return f"every pair rests on {n} approach{'' if n == 1 else 'es'}, fewer than {MIN_APPROACHES} ({SMALL_N_MARK})"
    return f"{len(pairs)} of {total} pair(s) rest on fewer than {MIN_APPROACHES} approaches ({SMALL_N_MARK}): {listed(pairs)}"


def listed(items: Sequence[str]) -> str:
    """The first `SHOWN_BY_NAME` items, comma-separated, then "..." if there are more."""
    return ", ".join(items[:SHOWN_BY_NAME]) + (", ..." if len(items) > SHOWN_BY_NAME else "")


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table of `frame`'s columns (no index)."""
    lines = ["| " + " | ".join(str(column) for column in frame.columns) + " |", "|---" * len(frame.columns) + "|"]
    lines += ["| " + " | ".join(str(value) for value in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def latex_table(frame: pd.DataFrame, caption: str, label: str | None = None) -> str:
    """A booktabs LaTeX table of `frame`'s columns (no index), first column left-aligned."""
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\begin{tabular}{l" + "r" * (len(frame.columns) - 1) + "}",
        r"\toprule",
        " & ".join(_latex(str(column)) for column in frame.columns) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(_latex(str(value)) for value in row) + r" \\" for row in frame.itertuples(index=False)]
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{_latex(caption)}}}"]
    lines += [rf"\label{{{label}}}"] if label else []
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def matrix_markdown(matrix: ConcurrenceMatrix, ci: MatrixWithCI | None) -> str:
    """The matrix as a Markdown table, with the small-n footnote when a cell is marked."""
    table = markdown_table(cell_texts(matrix, ci).rename_axis("benchmark").reset_index())
    return table + (f"\n{SMALL_N_FOOTNOTE}\n" if matrix.small_n().to_numpy().any() else "")


def matrix_latex(matrix: ConcurrenceMatrix, ci: MatrixWithCI | None, caption: str) -> str:
    """The matrix as a LaTeX table; the small-n footnote joins the caption when a cell is marked."""
    if matrix.small_n().to_numpy().any():
        caption = f"{caption} {SMALL_N_FOOTNOTE}."
    return latex_table(cell_texts(matrix, ci).rename_axis("Benchmark").reset_index(), caption)


def _latex(text: str) -> str:
    replacements = (
        ("\\", r"\textbackslash{}"),
        ("_", r"\_"),
        ("&", r"\&"),
        ("%", r"\%"),
        ("#", r"\#"),
        ("τ", r"$\tau$"),
        ("<", r"$<$"),
        (">", r"$>$"),
        (SMALL_N_MARK, r"$^{\dagger}$"),
    )
    for plain, escaped in replacements:
        text = text.replace(plain, escaped)
    return text


def matrix_json(matrix: ConcurrenceMatrix, ci: MatrixWithCI | None, context: dict[str, Any]) -> dict[str, Any]:
    """Everything behind the matrix, for programs: values, counts (n), small-n flags, intervals and settings."""
    payload: dict[str, Any] = {
        **context,
        "method": str(matrix.method),
        "benchmarks": list(matrix.values.columns),
        "values": _rounded(matrix.values),
        "counts": matrix.counts.to_numpy().tolist(),
        "min_approaches": MIN_APPROACHES,
        "small_n": matrix.small_n().to_numpy().tolist(),
    }
    if ci is not None:
        payload["ci"] = {
            "interval": str(ci.settings.interval),
            "confidence": ci.settings.confidence,
            "resamples": ci.settings.n_resamples,
            "seed": ci.settings.seed,
            "lower": _rounded(ci.lower),
            "upper": _rounded(ci.upper),
            "undefined_resamples": ci.undefined.to_numpy().tolist(),
        }
    return payload


def _rounded(frame: pd.DataFrame) -> list[list[float | None]]:
    return [[None if math.isnan(value) else round(float(value), JSON_DECIMALS) for value in row] for row in frame.to_numpy()]
