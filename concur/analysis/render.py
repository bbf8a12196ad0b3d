"""Text renderings of a concurrence matrix: CSV (the machine contract), JSON, Markdown, LaTeX.

CSV is the matrix alone, so it can be piped: a header `benchmark,<ids...>` and one row per
benchmark, values rounded to `CSV_DECIMALS`, an empty field where the correlation is
undefined. The human formats show `DISPLAY_DECIMALS`, the interval when there is one, and
the number of approaches where it differs between cells (pairwise-complete).
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

import pandas as pd

from concur.analysis.bootstrap import MatrixWithCI
from concur.analysis.concurrence import ConcurrenceMatrix

CSV_DECIMALS = 4
DISPLAY_DECIMALS = 2
JSON_DECIMALS = 6


def matrix_csv(values: pd.DataFrame) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["benchmark", *values.columns])
    for bench, row in values.iterrows():
        writer.writerow([bench, *("" if math.isnan(value) else f"{round(value, CSV_DECIMALS):.{CSV_DECIMALS}f}" for value in row)])
    return buffer.getvalue()


def cell_texts(matrix: ConcurrenceMatrix, ci: MatrixWithCI | None) -> pd.DataFrame:
    """What a person reads in each cell: value, [lower, upper], and n when n varies."""
    uniform = matrix.counts.to_numpy().min() == matrix.counts.to_numpy().max()
    texts = pd.DataFrame("", index=matrix.values.index, columns=matrix.values.columns)
    for row in texts.index:
        for column in texts.columns:
            value = matrix.values.loc[row, column]
            text = "n/a" if math.isnan(value) else f"{value:.{DISPLAY_DECIMALS}f}"
            if ci is not None and not math.isnan(ci.lower.loc[row, column]):
                text += f" [{ci.lower.loc[row, column]:.{DISPLAY_DECIMALS}f}, {ci.upper.loc[row, column]:.{DISPLAY_DECIMALS}f}]"
            if not uniform:
                text += f" (n={matrix.counts.loc[row, column]})"
            texts.loc[row, column] = text
    return texts


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


def matrix_markdown(texts: pd.DataFrame) -> str:
    return markdown_table(texts.rename_axis("benchmark").reset_index())


def matrix_latex(texts: pd.DataFrame, caption: str) -> str:
    return latex_table(texts.rename_axis("Benchmark").reset_index(), caption)


def _latex(text: str) -> str:
    for plain, escaped in (("\\", r"\textbackslash{}"), ("_", r"\_"), ("&", r"\&"), ("%", r"\%"), ("#", r"\#"), ("τ", r"$\tau$")):
        text = text.replace(plain, escaped)
    return text


def matrix_json(matrix: ConcurrenceMatrix, ci: MatrixWithCI | None, context: dict[str, Any]) -> dict[str, Any]:
    """Everything behind the matrix, for programs: values, counts, intervals and settings."""
    payload: dict[str, Any] = {
        **context,
        "method": str(matrix.method),
        "benchmarks": list(matrix.values.columns),
        "values": _rounded(matrix.values),
        "counts": matrix.counts.to_numpy().tolist(),
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
