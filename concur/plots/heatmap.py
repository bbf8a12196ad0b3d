"""The concurrence matrix as an annotated heatmap, and the annotated-heatmap drawing it shares.

Colour alone cannot be read back to two decimals, so cells carry their value; where the
number of approaches differs between cells (pairwise-complete data), each cell says how
many approaches it rests on, since a tau over 6 approaches is far noisier than one over 20.
Missing cells are hatched and say "n/a", so a gap is never mistaken for a zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import QuadMesh
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.typing import ColorType

from concur.analysis.concurrence import METHOD_LABELS, ConcurrenceMatrix
from concur.analysis.matrix import BenchmarkMatrix
from concur.plots.style import HEATMAP_CMAP, display_name, figure_style, save_figure

CONCURRENCE_LIMITS = (-1.0, 1.0)  # the correlation range; symmetric limits centre the diverging map at 0
CONCURRENCE_TICKS = (-1.0, -0.5, 0.0, 0.5, 1.0)
COLORBAR_INCHES = (0.15, 0.22)  # gap to the matrix, width; the bar is as tall as the matrix
CELL_INCHES = 0.55  # side of one cell while the matrix fits in MAX_MATRIX_INCHES
MIN_MATRIX_INCHES = 2.5
MAX_MATRIX_INCHES = 12.0  # larger matrices shrink their cells instead of growing off the page
COLORBAR_ROOM_INCHES = 1.2  # the colour bar with its ticks and label, right of the matrix
TITLE_ROOM_INCHES = 0.5
LABEL_PAD_INCHES = 0.2  # between the tick labels and the figure's edge
ANNOTATION_FONT_SIZE = 8
SMALL_ANNOTATION_FONT_SIZE = 6
SMALL_FONT_ABOVE = int(MAX_MATRIX_INCHES / CELL_INCHES)  # benchmarks: above this, cells shrink and full-size numbers no longer fit
ANNOTATE_AT_MOST = 30  # benchmarks: above this, cells are too small for any number; colour carries the value
MISSING_TEXT = "n/a"
MISSING_HATCH = "////"
MISSING_HATCH_COLOR = "0.8"
CELL_GAP_POINTS = 0.5  # white lines between cells
LIGHT_TEXT_LUMINANCE = 0.408  # cells darker than this get white text (seaborn's own threshold)
DARK_TEXT, LIGHT_TEXT = "0.1", "white"
X_LABEL_ROTATION = 45


def concurrence_heatmap(
    matrix: pd.DataFrame,
    *,
    counts: pd.DataFrame | None = None,
    title: str | None = None,
    value_label: str = "Kendall τ",
    names: Mapping[str, str] | None = None,
    annotate: bool = True,
) -> Figure:
    """A benchmark x benchmark matrix of values in [-1, 1], in the order given (see `concur.analysis.ordering`).

    `counts` (same labels) is the number of approaches behind each cell: shown per cell
    when it varies, once on the colour bar when it does not. Annotations are dropped above
    `ANNOTATE_AT_MOST` rows or columns, whatever `annotate` asks.
    """
    rows, columns = matrix.shape
    largest = max(rows, columns, 1)
    cell = min(CELL_INCHES, MAX_MATRIX_INCHES / largest)
    matrix_width, matrix_height = (max(MIN_MATRIX_INCHES, cell * count) for count in (columns, rows))
    aligned = None if counts is None else counts.reindex(index=matrix.index, columns=matrix.columns)
    single = None if aligned is None else _single_count(aligned)
    texts = _cell_texts(matrix, None if single is not None else aligned) if annotate and largest <= ANNOTATE_AT_MOST else None
    fontsize = ANNOTATION_FONT_SIZE if largest <= SMALL_FONT_ABOVE else SMALL_ANNOTATION_FONT_SIZE
    with figure_style():
        fig = plt.figure(figsize=(matrix_width + COLORBAR_ROOM_INCHES, matrix_height + TITLE_ROOM_INCHES), layout="constrained")
        ax = fig.add_subplot()
        gap, bar = (inches / matrix_width for inches in COLORBAR_INCHES)
        colorbar_ax = ax.inset_axes((1.0 + gap, 0.0, bar, 1.0))  # follows the square matrix, unlike a layout-managed bar
        annotated_heatmap(
            ax,
            matrix,
            texts,
            cmap=HEATMAP_CMAP,
            limits=CONCURRENCE_LIMITS,
            fontsize=fontsize,
            xticklabels=[display_name(item, names) for item in matrix.columns],
            yticklabels=[display_name(item, names) for item in matrix.index],
            colorbar_label=value_label if single is None else f"{value_label} (n = {single})",
            square=True,
            colorbar_ax=colorbar_ax,
        )
        colorbar_ax.set_yticks(CONCURRENCE_TICKS)
        if title:
            ax.set_title(title)
        _make_room_for_labels(fig, ax, matrix_width, matrix_height)
    return fig


def matrix_heatmap(matrix: ConcurrenceMatrix, names: Mapping[str, str] | None = None, *, title: str | None = None) -> Figure:
    """`concurrence_heatmap` of a computed matrix: its values, its counts, and its correlation as the colour bar's label."""
    return concurrence_heatmap(matrix.values, counts=matrix.counts, title=title, value_label=METHOD_LABELS[matrix.method], names=names)


def save_matrix_heatmap(made: BenchmarkMatrix, stem: Path) -> list[Path]:
    """The heatmap of `concur matrix --heatmap`, saved as `stem`.pdf and .png: the matrix in its order, benchmarks by name."""
    return save_figure(matrix_heatmap(made.estimate, made.table.labels.benchmark_names(made.wide.columns)), stem)


def _make_room_for_labels(fig: Figure, ax: Axes, matrix_width: float, matrix_height: float) -> None:
    """Grow the figure by what the tick labels measure, so long benchmark names never squeeze the cells.

    A fixed margin fits short ids; names such as "SQuAD v1.1 dev (MRQA), carved 80/20 by
    passage" are wider than the matrix, and the layout engine would shrink the matrix, and
    with it the cells and their numbers, to make room for them.
    """
    renderer = FigureCanvasAgg(fig).get_renderer() if not isinstance(fig.canvas, FigureCanvasAgg) else fig.canvas.get_renderer()
    left = max((label.get_window_extent(renderer).width for label in ax.get_yticklabels()), default=0.0) / fig.dpi
    below = max((label.get_window_extent(renderer).height for label in ax.get_xticklabels()), default=0.0) / fig.dpi
    title = TITLE_ROOM_INCHES if ax.get_title() else 0.0
    fig.set_size_inches(matrix_width + left + COLORBAR_ROOM_INCHES + LABEL_PAD_INCHES, matrix_height + below + title + LABEL_PAD_INCHES)


def annotated_heatmap(
    ax: Axes,
    values: pd.DataFrame,
    texts: np.ndarray | None,
    *,
    cmap: str,
    limits: tuple[float, float],
    fontsize: float,
    xticklabels: Sequence[str],
    yticklabels: Sequence[str],
    colorbar_label: str,
    square: bool,
    colorbar_ax: Axes | None = None,
) -> QuadMesh:
    """Draw `values` as coloured cells with `texts` on them (None: no text); NaN cells are hatched.

    Text colour follows the cell's luminance so numbers stay legible on dark and light cells.
    """
    data = values.to_numpy(dtype=float)
    ax.add_patch(
        Rectangle(
            (0, 0),
            data.shape[1],
            data.shape[0],
            facecolor="white",
            edgecolor=MISSING_HATCH_COLOR,
            hatch=MISSING_HATCH,
            linewidth=0,
            zorder=0,
        )
    )
    sns.heatmap(
        data,
        ax=ax,
        cmap=cmap,
        vmin=limits[0],
        vmax=limits[1],
        mask=np.isnan(data),
        square=square,
        linewidths=CELL_GAP_POINTS,
        linecolor="white",
        xticklabels=list(xticklabels),
        yticklabels=list(yticklabels),
        cbar_ax=colorbar_ax,
        cbar_kws={"label": colorbar_label},
    )
    mesh = ax.collections[-1]
    assert isinstance(mesh, QuadMesh)  # seaborn draws the cells with pcolormesh, last
    ax.grid(False)
    ax.tick_params(length=0)
    for label in ax.get_xticklabels():
        label.set(rotation=X_LABEL_ROTATION, horizontalalignment="right", rotation_mode="anchor")
    for label in ax.get_yticklabels():
        label.set(rotation=0)
    if texts is not None:
        colors = np.asarray(mesh.cmap(mesh.norm(data)))  # RGBA per cell (the stubs allow one colour's tuple too)
        for (row, column), text in np.ndenumerate(texts):
            background = "white" if np.isnan(data[row, column]) else _rgba(colors[row, column])
            ax.text(column + 0.5, row + 0.5, text, ha="center", va="center", fontsize=fontsize, color=text_color_on(background))
    return mesh


def text_color_on(background: ColorType) -> str:
    """Dark text on light colours, white on dark ones, by relative luminance."""
    return LIGHT_TEXT if sns.utils.relative_luminance(background) < LIGHT_TEXT_LUMINANCE else DARK_TEXT


def _rgba(color: np.ndarray) -> tuple[float, float, float, float]:
    """A colormap's RGBA row as the colour tuple matplotlib's types describe."""
    red, green, blue, alpha = (float(value) for value in color)
    return red, green, blue, alpha


def _cell_texts(matrix: pd.DataFrame, counts: pd.DataFrame | None) -> np.ndarray:
    """'0.81', or '0.81\\nn=14' with `counts` (aligned with `matrix`); 'n/a' for a missing value."""
    texts = np.vectorize(_format_value, otypes=[object])(matrix.to_numpy(dtype=float))
    if counts is None:
        return texts
    for cell, count in np.ndenumerate(counts.to_numpy(dtype=float)):
        if not np.isnan(count):
            texts[cell] = f"{texts[cell]}\nn={int(count)}"
    return texts


def _format_value(value: float) -> str:
    if np.isnan(value):
        return MISSING_TEXT
    text = f"{value:.2f}"
    return ("0.00" if text == "-0.00" else text).replace("-", "\N{MINUS SIGN}")


def _single_count(counts: pd.DataFrame) -> int | None:
    """The one number of approaches behind every cell, or None where it varies."""
    present = pd.unique(counts.to_numpy(dtype=float).ravel())
    present = present[~np.isnan(present)]
    return int(present[0]) if len(present) == 1 else None
