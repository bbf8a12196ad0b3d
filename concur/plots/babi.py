"""The "perfect or chance" view of the bAbI tasks: most approaches either solve a task or fail it.

On such tasks EM is nearly binary, so a correlation over approaches says little; the
heatmap shows every score, and the marginal bars count how many approaches reach
`perfect` or stay at `chance` per task. Both thresholds come from the caller (the study's
spec), never from this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import groupby

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import Colormap
from matplotlib.figure import Figure

from concur.plots.heatmap import MISSING_TEXT, annotated_heatmap, text_color_on
from concur.plots.style import FAMILY_ORDER, NO_FAMILY_LABEL, SEQUENTIAL_CMAP, display_name, figure_style, scores_by_id
from concur.registry.selection import family_order

COUNT_COLUMNS = ("task", "perfect", "chance", "between", "n")
EM_LIMITS = (0.0, 100.0)
CELL_INCHES = (0.62, 0.27)  # width of a task column, height of an approach row
MARGINAL_INCHES = 1.2
COLORBAR_INCHES = 0.25
KEY_INCHES = 1.6  # the bars' legend, beside them and above the colour bar
LABEL_ROOM_INCHES = (3.2, 1.8)  # approach names and family labels (width); task names and title (height)
ANNOTATION_FONT_SIZE = 7
MARGINAL_FONT_SIZE = 7
MIN_SEGMENT_TO_PRINT = 0.1  # a bar segment at least this fraction of the bars' height has room for its number
BAR_WIDTH = 0.8
BETWEEN_COLOR = "0.85"
FAMILY_RULE_WIDTH = 2.5  # white gap between the families' rows
FAMILY_LABEL_PAD = 0.02  # axes fraction between the heatmap's right edge and the family names


def perfect_or_chance_counts(wide: pd.DataFrame, benches: Sequence[str], perfect: float, chance: float) -> pd.DataFrame:
    """Per task: approaches with EM >= `perfect`, <= `chance`, in between, and with any EM (`n`)."""
    _check(wide, benches, perfect, chance)
    rows = []
    for task in benches:
        scores = wide[task].dropna()
        at_perfect, at_chance = int((scores >= perfect).sum()), int((scores <= chance).sum())
        rows.append((task, at_perfect, at_chance, len(scores) - at_perfect - at_chance, len(scores)))
    return pd.DataFrame(rows, columns=list(COUNT_COLUMNS))


def perfect_or_chance(
    wide: pd.DataFrame,
    benches: Sequence[str],
    *,
    families: Mapping[str, str],
    names: Mapping[str, str] | None = None,
    perfect: float,
    chance: float,
    title: str | None = None,
) -> Figure:
    """Approaches (rows, by family then mean EM) x tasks, with the perfect/chance counts above each task."""
    counts = perfect_or_chance_counts(wide, benches, perfect, chance)
    table = wide[list(benches)].dropna(how="all")
    order = family_order(table.index, families, FAMILY_ORDER, scores=scores_by_id(table.mean(axis=1)))
    table = table.loc[order]
    rows, columns = table.shape
    cmap = mpl.colormaps[SEQUENTIAL_CMAP]
    heat_width, heat_height = CELL_INCHES[0] * max(columns, 1), CELL_INCHES[1] * max(rows, 1)
    figsize = (heat_width + COLORBAR_INCHES + KEY_INCHES + LABEL_ROOM_INCHES[0], heat_height + MARGINAL_INCHES + LABEL_ROOM_INCHES[1])
    with figure_style():
        fig = plt.figure(figsize=figsize, layout="constrained")
        grid = fig.add_gridspec(2, 2, height_ratios=(MARGINAL_INCHES, heat_height), width_ratios=(heat_width, COLORBAR_INCHES))
        marginal = fig.add_subplot(grid[0, 0])
        ax = fig.add_subplot(grid[1, 0], sharex=marginal)
        annotated_heatmap(
            ax,
            table,
            np.vectorize(_format_em, otypes=[object])(table.to_numpy(dtype=float)),
            cmap=SEQUENTIAL_CMAP,
            limits=EM_LIMITS,
            fontsize=ANNOTATION_FONT_SIZE,
            xticklabels=[display_name(task, names) for task in benches],
            yticklabels=[display_name(item, names) for item in order],
            colorbar_label="EM (%)",
            square=False,
            colorbar_ax=fig.add_subplot(grid[1, 1]),
        )
        _mark_families(ax, [families.get(item, "") for item in order])
        _draw_marginal(marginal, fig.add_subplot(grid[0, 1]), counts, perfect, chance, cmap)
        if title:
            fig.suptitle(title)
    return fig


def _check(wide: pd.DataFrame, benches: Sequence[str], perfect: float, chance: float) -> None:
    if not chance < perfect:
        raise ValueError(f"the chance threshold ({chance}) must be below the perfect threshold ({perfect})")
    missing = [task for task in benches if task not in wide.columns]
    if missing:
        raise ValueError(f"no EM column for {', '.join(missing)}")


def _format_em(value: float) -> str:
    return MISSING_TEXT if np.isnan(value) else f"{value:.1f}"


def _mark_families(ax: Axes, row_families: list[str]) -> None:
    """A white rule between the families' blocks of rows and each family's name beside its block."""
    start = 0
    for family, members in groupby(row_families):
        end = start + len(list(members))
        if start:
            ax.axhline(start, color="white", linewidth=FAMILY_RULE_WIDTH)
        label = family or NO_FAMILY_LABEL
        ax.text(1 + FAMILY_LABEL_PAD, (start + end) / 2, label, transform=ax.get_yaxis_transform(), rotation=270, ha="left", va="center")
        start = end


def _draw_marginal(ax: Axes, key: Axes, counts: pd.DataFrame, perfect: float, chance: float, cmap: Colormap) -> None:
    """Stacked bars per task: at chance (bottom), in between, perfect (top), in the heatmap's colours; their legend in `key`."""
    centres = np.arange(len(counts)) + 0.5
    bottom = np.zeros(len(counts))
    segments = (
        ("chance", f"≤ {chance:g} EM (chance)", cmap(0.0)),
        ("between", "in between", BETWEEN_COLOR),
        ("perfect", f"≥ {perfect:g} EM (perfect)", cmap(1.0)),
    )
    smallest_printed = max(MIN_SEGMENT_TO_PRINT * counts["n"].max(), 1)
    for column, label, color in segments:
        heights = counts[column].to_numpy(dtype=float)
        ax.bar(centres, heights, bottom=bottom, width=BAR_WIDTH, color=color, edgecolor="white", linewidth=0.5, label=label)
        for centre, middle, height in zip(centres, bottom + heights / 2, heights):
            if height >= smallest_printed:
                text = f"{height:.0f}"
                ax.text(centre, middle, text, ha="center", va="center", fontsize=MARGINAL_FONT_SIZE, color=text_color_on(color))
        bottom += heights
    ax.set_ylabel("approaches")
    ax.set_ylim(0, max(1.0, bottom.max()))
    ax.tick_params(labelbottom=False, length=0)
    ax.grid(axis="x", visible=False)
    handles, labels = ax.get_legend_handles_labels()
    key.axis("off")
    key.legend(handles[::-1], labels[::-1], loc="center left", frameon=False, borderaxespad=0.0)  # top segment first, as stacked
