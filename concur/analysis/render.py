"""Text renderings of a concurrence matrix: CSV (the machine contract), JSON, Markdown, LaTeX.

CSV is the matrix alone, so it can be piped: a header `benchmark,<ids...>` and one row per
benchmark, values rounded to `CSV_DECIMALS`, an empty field where the correlation is
undefined; the number of approaches behind each cell is a companion CSV of the same layout
(`counts_csv`). The human formats show `DISPLAY_DECIMALS`, the interval when there is one,
the number of approaches where it differs between cells (pairwise-complete), mark with
`SMALL_N_MARK` every value resting on fewer than `MIN_APPROACHES` approaches and with
`INCONCLUSIVE_MARK` every value noise alone could explain, and show the pair's noise ceiling
after `CEILING_PREFIX` where the test questions are known (`concur.analysis.reliability`).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from concur.analysis.bootstrap import INTERVAL_KINDS, MatrixWithCI
from concur.analysis.concurrence import METHOD_SYMBOLS, MIN_APPROACHES, ConcurrenceMatrix, number_at
from concur.analysis.reliability import CONCLUSIVE_CEILING, MatrixNoise, verdict_at

CSV_DECIMALS = 4
DISPLAY_DECIMALS = 2
JSON_DECIMALS = 6
SMALL_N_MARK = "†"
SMALL_N_FOOTNOTE = f"{SMALL_N_MARK} n < {MIN_APPROACHES} approaches: an unstable estimate"
INCONCLUSIVE_MARK = "‡"
INCONCLUSIVE_FOOTNOTE = (
    f"{INCONCLUSIVE_MARK} inconclusive: noise alone could explain it "
    f"(its interval includes 0, or its ceiling is below {CONCLUSIVE_CEILING})"
)
CEILING_PREFIX = "≤"  # `0.62 ≤0.85`: the value, and the most the pair's noise allows
CEILING_FOOTNOTE = (
    f"{CEILING_PREFIX}c: the pair's noise ceiling, the value identical rankings would show given both benchmarks' test questions"
)
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


def estimate_text(
    value: float, lower: float = math.nan, upper: float = math.nan, *, small_n: bool = False, inconclusive: bool = False
) -> str:
    """`0.83 [0.59, 0.96]` as a person reads it; `SMALL_N_MARK` after the value when `small_n`, `INCONCLUSIVE_MARK` when `inconclusive`."""
    if math.isnan(value):
        return "n/a"
    text = f"{value:.{DISPLAY_DECIMALS}f}" + (SMALL_N_MARK if small_n else "") + (INCONCLUSIVE_MARK if inconclusive else "")
    return text + interval_text(lower, upper)


def interval_text(lower: float, upper: float) -> str:
    """` [lower, upper]`, or nothing when there is no interval."""
    return "" if math.isnan(lower) else f" [{lower:.{DISPLAY_DECIMALS}f}, {upper:.{DISPLAY_DECIMALS}f}]"


def ceiling_text(ceiling: float) -> str:
    """` ≤0.85`, or nothing where the ceiling is unknown."""
    return "" if math.isnan(ceiling) else f" {CEILING_PREFIX}{ceiling:.{DISPLAY_DECIMALS}f}"


def cell_text(matrix: ConcurrenceMatrix, ci: MatrixWithCI | None, noise: MatrixNoise | None, row: str, column: str) -> str:
    """One cell as a person reads it: value and marks, interval, ceiling (off the diagonal)."""
    lower, upper = (math.nan, math.nan) if ci is None else (number_at(ci.lower, row, column), number_at(ci.upper, row, column))
    flagged = noise is not None and verdict_at(noise.inconclusive, row, column) is True
    text = estimate_text(
        number_at(matrix.values, row, column), lower, upper, small_n=bool(matrix.small_n().loc[row, column]), inconclusive=flagged
    )
    if noise is not None and noise.ceilings is not None and row != column:
        text += ceiling_text(number_at(noise.ceilings.ceiling, row, column))
    return text


def cell_texts(matrix: ConcurrenceMatrix, ci: MatrixWithCI | None, noise: MatrixNoise | None = None) -> pd.DataFrame:
    """What a person reads in each cell: value (marked when n is small or noise could explain it), [lower, upper],
    the ceiling, and n when n varies."""
    uniform = matrix.counts.to_numpy().min() == matrix.counts.to_numpy().max()
    texts = pd.DataFrame("", index=matrix.values.index, columns=matrix.values.columns)
    for row in texts.index:
        for column in texts.columns:
            text = cell_text(matrix, ci, noise, row, column)
            if not uniform:
                text += f" (n={matrix.counts.loc[row, column]})"
            texts.loc[row, column] = text
    return texts


def footnotes(matrix: ConcurrenceMatrix, noise: MatrixNoise | None) -> list[str]:
    """The footnotes a rendering of the matrix needs: small n, inconclusive cells, ceilings."""
    notes = [SMALL_N_FOOTNOTE] if matrix.small_n().to_numpy().any() else []
    if noise is not None and (noise.inconclusive.to_numpy() == True).any():  # noqa: E712 (cells hold True, False or None)
        notes.append(INCONCLUSIVE_FOOTNOTE)
    if noise is not None and noise.ceilings is not None:
        notes.append(CEILING_FOOTNOTE)
    return notes


def pair_texts(matrix: ConcurrenceMatrix, ci: MatrixWithCI | None, noise: MatrixNoise | None = None) -> pd.DataFrame:
    """The matrix in long form, one row per pair of benchmarks in matrix order (row by row, above the diagonal).

    Columns: the two benchmarks, the value (marked when n is small or inconclusive), the interval
    when there is one, the ceiling when known, and n. It reads well where the square matrix is too
    wide to print.
    """
    labels = list(matrix.values.index)
    small = matrix.small_n()
    rows = []
    for i, first in enumerate(labels):
        for second in labels[i + 1 :]:
            flagged = noise is not None and verdict_at(noise.inconclusive, first, second) is True
            row = {
                "first": first,
                "second": second,
                METHOD_SYMBOLS[matrix.method]: estimate_text(
                    matrix.values.loc[first, second], small_n=bool(small.loc[first, second]), inconclusive=flagged
                ),
            }
            if ci is not None:
                row["interval"] = interval_text(ci.lower.loc[first, second], ci.upper.loc[first, second]).strip()
            if noise is not None and noise.ceilings is not None:
                row["ceiling"] = ceiling_text(number_at(noise.ceilings.ceiling, first, second)).strip()
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


def matrix_markdown(matrix: ConcurrenceMatrix, ci: MatrixWithCI | None, noise: MatrixNoise | None = None) -> str:
    """The matrix as a Markdown table, with the footnotes its marks need."""
    table = markdown_table(cell_texts(matrix, ci, noise).rename_axis("benchmark").reset_index())
    return table + "".join(f"\n{note}\n" for note in footnotes(matrix, noise))


def matrix_latex(matrix: ConcurrenceMatrix, ci: MatrixWithCI | None, caption: str, noise: MatrixNoise | None = None) -> str:
    """The matrix as a LaTeX table; the footnotes its marks need join the caption."""
    caption = " ".join([caption, *(f"{note}." for note in footnotes(matrix, noise))])
    return latex_table(cell_texts(matrix, ci, noise).rename_axis("Benchmark").reset_index(), caption)


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
        (INCONCLUSIVE_MARK, r"$^{\ddagger}$"),
        (CEILING_PREFIX, r"$\le$"),
    )
    for plain, escaped in replacements:
        text = text.replace(plain, escaped)
    return text


def matrix_json(
    matrix: ConcurrenceMatrix, ci: MatrixWithCI | None, context: dict[str, Any], noise: MatrixNoise | None = None
) -> dict[str, Any]:
    """Everything behind the matrix, for programs: values, counts (n), small-n flags, intervals and settings, and
    the noise assessment.

    `ceiling` (its diagonal: each benchmark's reliability) and `inconclusive` are matrices like
    `values`, null where they cannot be computed (no per-question data; no interval); `ci.kind`
    says per cell whether its interval resamples the test questions too or the approaches only.
    """
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
            "kind": [[INTERVAL_KINDS[bool(value)] for value in row] for row in ci.measured.to_numpy()],
        }
    labels = list(matrix.values.index)
    blank = pd.DataFrame(math.nan, index=labels, columns=labels)
    ceilings = noise.ceilings if noise is not None else None
    payload["ceiling"] = _rounded(ceilings.ceiling if ceilings is not None else blank)
    payload["reliability"] = {
        bench: None
        if ceilings is None or math.isnan(ceilings.reliability[bench])
        else round(float(ceilings.reliability[bench]), JSON_DECIMALS)
        for bench in labels
    }
    if ceilings is not None and ceilings.disattenuated is not None:
        payload["disattenuated"] = _rounded(ceilings.disattenuated)
    payload["inconclusive"] = (
        [[verdict_at(noise.inconclusive, row, column) for column in labels] for row in labels]
        if noise is not None
        else [[None] * len(labels) for _ in labels]
    )
    payload["conclusive_ceiling"] = CONCLUSIVE_CEILING
    return payload


def _rounded(frame: pd.DataFrame) -> list[list[float | None]]:
    return [[None if math.isnan(value) else round(float(value), JSON_DECIMALS) for value in row] for row in frame.to_numpy()]
