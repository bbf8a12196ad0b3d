"""EM against training-set size: does an approach's ranking hold as training data shrinks?

Twenty lines in two family colours stay apart by a marker, a line style and a shade of
the family's colour, cycling together (10 markers and 4 styles give 20 distinct pairs per
family). The legend sits outside the axes, family by family, each in the order its lines
end at the largest size, so a reader can match names to lines by eye.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullLocator

from concur.plots.style import (
    FAMILY_ORDER,
    NO_FAMILY_LABEL,
    color_of,
    display_name,
    figure_style,
    scores_by_id,
    stable_family_colors,
)
from concur.registry.selection import family_order

FIGURE_INCHES = (9.5, 5.0)  # axes plus the legend to their right (one row per approach and per family)
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")  # with the 4 line styles: 20 distinct pairs per family
LINE_WIDTH = 1.3
MARKER_SIZE = 4.5
SHADES = (0.0, 0.35, -0.3)  # toward white (+) or black (-), cycling within a family
SIZE_SUFFIXES = ((1e6, "M"), (1e3, "k"))


def downsampling_curves(
    wide: pd.DataFrame,
    sizes: Mapping[str, int],
    *,
    families: Mapping[str, str],
    names: Mapping[str, str] | None = None,
    title: str | None = None,
) -> Figure:
    """One line per approach through its EM on each benchmark of `sizes` (benchmark id -> training questions).

    Approaches without any of these benchmarks are left out; a missing size is skipped,
    not drawn as a gap, so a line joins the sizes an approach was trained on.
    """
    missing = [bench for bench in sizes if bench not in wide.columns]
    if missing:
        raise ValueError(f"no EM column for {', '.join(missing)}")
    benches = sorted(sizes, key=lambda bench: sizes[bench])
    table = wide[benches].dropna(how="all")
    x = np.array([sizes[bench] for bench in benches], dtype=float)
    order = family_order(table.index, families, FAMILY_ORDER, scores=scores_by_id(table[benches[-1]]))
    colors = stable_family_colors(families)
    seen: Counter[str] = Counter()
    groups: dict[str, list[Line2D]] = {}
    with figure_style():
        fig = plt.figure(figsize=FIGURE_INCHES, layout="constrained")
        ax = fig.add_subplot()
        for approach in order:
            family = families.get(approach, "")
            position = seen[family]
            seen[family] += 1
            scores = table.loc[approach].to_numpy(dtype=float)
            present = ~np.isnan(scores)
            (line,) = ax.plot(
                x[present],
                scores[present],
                color=_shade(color_of(approach, families, colors), position),
                linestyle=LINE_STYLES[position % len(LINE_STYLES)],
                marker=MARKERS[position % len(MARKERS)],
                linewidth=LINE_WIDTH,
                markersize=MARKER_SIZE,
                label=display_name(approach, names),
            )
            groups.setdefault(family, []).append(line)
        ax.set_xscale("log")
        ax.set_xticks(x, [size_label(size) for size in x])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("Training questions (log scale)")
        ax.set_ylabel("EM (%)")
        if title:
            ax.set_title(title)
        if groups:
            _family_legend(ax, groups)
    return fig


def size_label(count: float) -> str:
    """1000 -> '1k', 87599 -> '87.6k': the sizes as the paper writes them."""
    for threshold, suffix in SIZE_SUFFIXES:
        if count >= threshold:
            return f"{count / threshold:.1f}".removesuffix(".0") + suffix
    return f"{count:g}"


def _shade(color: str, position: int) -> tuple[float, float, float]:
    """The family's colour, lighter or darker by position, so neighbouring lines of one family differ in more than style."""
    amount = SHADES[position % len(SHADES)]
    rgb = np.array(to_rgb(color))
    return tuple(rgb + (1.0 - rgb) * amount if amount > 0 else rgb * (1.0 + amount))


def _family_legend(ax: Axes, groups: dict[str, list[Line2D]]) -> None:
    """One legend right of the axes: each family's name in bold, then its approaches."""
    handles: list[Line2D] = []
    labels: list[str] = []
    headers = []
    for family, lines in groups.items():
        headers.append(len(labels))
        handles += [Line2D([], [], linestyle="none"), *lines]
        labels += [family or NO_FAMILY_LABEL, *[str(line.get_label()) for line in lines]]  # set from a str; the stubs say object
    legend = ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, borderaxespad=0.0)
    for index in headers:
        legend.get_texts()[index].set_fontweight("bold")
