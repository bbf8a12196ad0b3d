"""How many approaches are enough: concurrence against the number of approaches sampled."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from concur.plots.style import OKABE_ITO, figure_style

BAND_ALPHA = 0.18
FIGURE_SIZE = (6.0, 4.0)


def approach_count_figure(
    curve: pd.DataFrame, *, reference: str, value_label: str, names: Mapping[str, str] | None = None, title: str | None = None
) -> Figure:
    """One line per benchmark: mean concurrence with `reference` over random subsets, with its band.

    `curve` is `concur.analysis.bootstrap.approach_count_curve`'s table; the dotted line of
    each benchmark is its value on all approaches, which the curve reaches at full size.
    """
    names = names or {}
    with figure_style():
        fig, ax = plt.subplots(figsize=FIGURE_SIZE)
        for index, (key, rows) in enumerate(curve.groupby("benchmark", sort=False)):
            bench = str(key)  # benchmark ids are strings; pandas types a group's key as any scalar
            color = OKABE_ITO[index % len(OKABE_ITO)]
            ax.plot(rows["approaches"], rows["mean"], marker="o", color=color, label=names.get(bench, bench))
            ax.fill_between(rows["approaches"], rows["lower"], rows["upper"], color=color, alpha=BAND_ALPHA, linewidth=0)
            ax.axhline(rows["full"].iloc[0], color=color, linestyle=":", linewidth=1)
        ax.set_xlabel("approaches sampled")
        ax.set_ylabel(f"{value_label} with {names.get(reference, reference)}")
        ax.set_ylim(-1.05, 1.05)
        ax.legend(loc="lower right", frameon=True)
        if title:
            ax.set_title(title)
        fig.tight_layout()
    return fig
