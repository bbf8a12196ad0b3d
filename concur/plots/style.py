"""One look for every figure: readable fonts, a colour-blind-safe palette, PDF + PNG.

The palette is Okabe & Ito's (2008) colour-universal-design set, distinguishable under
the common colour-vision deficiencies. Figures use the non-interactive Agg backend so
they render on machines without a display.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from concur.fsutil import atomic_open  # noqa: E402
from concur.registry.specs import APPROACH_FAMILIES, BENCHMARK_FAMILIES  # noqa: E402

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.typing import RcKeyType

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
UNKNOWN_FAMILY_COLOR = "#999999"
FIGURE_FORMATS = ("pdf", "png")
PNG_DPI = 200
FAMILY_ORDER = (*APPROACH_FAMILIES, *BENCHMARK_FAMILIES)  # legend order, and which palette colour each family keeps
NO_FAMILY_LABEL = "other"  # legend entry for ids the caller gave no family
LEGEND_MARKER_SIZE = 6
HEATMAP_CMAP = "vlag"  # diverging blue-white-red, symmetric around 0 for correlations
SEQUENTIAL_CMAP = "cividis"  # perceptually uniform and colour-blind safe, for EM values
RC: dict[RcKeyType, float | str] = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "pdf.fonttype": 42,  # embed TrueType, so text stays text (editable, searchable) in PDFs
    "ps.fonttype": 42,
    "svg.fonttype": "none",
    "figure.dpi": 100,
    "savefig.bbox": "tight",
}


@contextmanager
def figure_style() -> Iterator[None]:
    """Apply the shared look for the figures drawn inside the block."""
    with sns.axes_style("whitegrid"), plt.rc_context(RC):
        yield


def family_colors(families: Iterable[str]) -> dict[str, str]:
    """A stable colour per family: the palette in order of first appearance."""
    colors: dict[str, str] = {}
    for family in families:
        if family not in colors:
            colors[family] = OKABE_ITO[len(colors) % len(OKABE_ITO)] if family else UNKNOWN_FAMILY_COLOR
    return colors


def color_of(item: str, families: Mapping[str, str], colors: Mapping[str, str]) -> str:
    return colors.get(families.get(item, ""), UNKNOWN_FAMILY_COLOR)


def stable_family_colors(families: Mapping[str, str]) -> dict[str, str]:
    """Family colours that do not depend on which families one figure happens to show.

    The known families take the palette in `FAMILY_ORDER` (pretrained is the same blue in
    every figure); other families follow in name order; ids without a family come last, grey.
    """
    extra = sorted(set(families.values()) - {*FAMILY_ORDER, ""})
    return family_colors([*FAMILY_ORDER, *extra, ""])


def family_legend_handles(present: Iterable[str], colors: Mapping[str, str]) -> list[Line2D]:
    """One marker per family that is shown, in the stable order of `colors`."""
    shown = set(present)
    return [
        Line2D([], [], linestyle="none", marker="o", markersize=LEGEND_MARKER_SIZE, color=color, label=family or NO_FAMILY_LABEL)
        for family, color in colors.items()
        if family in shown
    ]


def scores_by_id(scores: pd.Series) -> dict[str, float]:
    """A score column keyed by id, as orderings take it (pandas types its labels and values as anything)."""
    return {str(item): float(score) for item, score in scores.items()}


def display_name(item: str, names: Mapping[str, str] | None) -> str:
    """What a reader sees for an id: the caller's display name where it has one."""
    return names.get(item, item) if names else item


def save_figure(fig: Figure, stem: Path, formats: Iterable[str] = FIGURE_FORMATS) -> list[Path]:
    """Write `stem.pdf` and `stem.png` (vector and raster) atomically; close the figure.

    Saving applies `RC` itself: the PDF font type and the tight bounding box are read when
    the file is written, not when the figure was drawn inside `figure_style()`.
    """
    written = []
    for fmt in formats:
        path = stem.with_name(f"{stem.name}.{fmt}")
        with atomic_open(path, "wb") as handle, plt.rc_context(RC):
            fig.savefig(handle, format=fmt, dpi=PNG_DPI if fmt == "png" else None)
        written.append(path)
    plt.close(fig)
    return written
