"""The paper's scatter plots: EM on one benchmark against EM on another, one point per approach.

A concurrence coefficient summarises such a plot; the plot shows which approaches break
the trend, so every point carries its approach's name. Names are placed by a small
deterministic search (nearest free spot around the point, crowded points first), which
avoids the worst overlaps without a label-placement dependency.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.figure import Figure
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox

from concur.analysis.ordering import family_order
from concur.plots.style import FAMILY_ORDER, color_of, display_name, family_legend_handles, figure_style, stable_family_colors

PAIR_FIGURE_INCHES = (5.6, 5.2)
PANEL_INCHES = (3.9, 3.6)  # one small multiple of `scatter_grid`
MARKER_AREA = 36.0  # points^2, matplotlib's `s`
MARKER_EDGE_WIDTH = 0.6
AXES_MARGIN = 0.1  # room inside the axes for the names of the outermost points
POINT_LABEL_GID = "point-label"  # tags the approach names, so callers and tests can find them
POINT_LABEL_FONT_SIZE = 7
POINT_LABEL_COLOR = "0.15"
LEADER_COLOR = "0.55"
LEADER_WIDTH = 0.5
LABEL_GAPS_POINTS = (1.5, 7.0, 13.0)  # distances from the marker's edge tried for a name, nearest first; beyond the first, a leader line
LABEL_DIRECTIONS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1))  # right first, then left, above, below, diagonals
OUTSIDE_PENALTY = 4.0  # a name's area outside the axes costs this much more than area covering a point or another name
CROWDING_RADIUS_POINTS = 30.0  # points with more neighbours this close place their names first
STATS_FONT_SIZE = 8
STATS_PAD_POINTS = 4.0  # the box's frame around its text, kept clear of names
STATS_BOX = {"boxstyle": "round", "facecolor": "white", "edgecolor": "0.75", "alpha": 0.9}
STATS_CORNERS = ((0.03, 0.97, "left", "top"), (0.97, 0.03, "right", "bottom"), (0.97, 0.97, "right", "top"), (0.03, 0.03, "left", "bottom"))
EMPTY_TEXT = "no approach has both scores"


@dataclass
class _Panel:
    """One drawn scatter whose names still await placement (they need the final layout)."""

    ax: Axes
    approaches: list[str]
    xy: np.ndarray
    labels: list[str]
    stats: Text | None


def pair_scatter(
    wide: pd.DataFrame,
    x: str,
    y: str,
    *,
    families: Mapping[str, str],
    names: Mapping[str, str] | None = None,
    stats: str | None = None,
    ax: Axes | None = None,
) -> Figure:
    """EM on benchmark `y` against EM on benchmark `x` for the approaches that have both.

    `stats` is a text box (e.g. the correlations with their intervals) put in the corner
    with the fewest points. With `ax`, draws there and returns that axes' figure.
    """
    colors = stable_family_colors(families)
    with figure_style():
        if ax is None:
            ax = plt.figure(figsize=PAIR_FIGURE_INCHES, layout="constrained").add_subplot()
        panel = _draw_panel(ax, wide, x, y, families, names, colors, stats)
        shown = {families.get(item, "") for item in panel.approaches}
        if shown:
            ax.legend(
                handles=family_legend_handles(shown, colors),
                loc="lower left",
                bbox_to_anchor=(0.0, 1.01),
                ncol=len(shown),
                frameon=False,
                borderaxespad=0.0,
            )
        _place_labels([panel])
    return ax.figure


def scatter_grid(
    wide: pd.DataFrame,
    reference: str,
    others: Sequence[str],
    *,
    families: Mapping[str, str],
    names: Mapping[str, str] | None = None,
    stats: Mapping[str, str] | None = None,
    columns: int = 3,
) -> Figure:
    """Small multiples: `reference` on x, each of `others` on y; `stats` maps an other to its text box."""
    if not others:
        raise ValueError("scatter_grid needs at least one benchmark besides the reference")
    if columns < 1:
        raise ValueError(f"columns must be at least 1, not {columns}")
    columns = min(columns, len(others))
    rows = math.ceil(len(others) / columns)
    colors = stable_family_colors(families)
    with figure_style():
        fig = plt.figure(figsize=(PANEL_INCHES[0] * columns, PANEL_INCHES[1] * rows), layout="constrained")
        axes = fig.subplots(rows, columns, squeeze=False).ravel()
        panels = [
            _draw_panel(ax, wide, reference, other, families, names, colors, (stats or {}).get(other)) for ax, other in zip(axes, others)
        ]
        for unused in axes[len(others) :]:
            unused.remove()
        shown = {families.get(item, "") for panel in panels for item in panel.approaches}
        if shown:
            fig.legend(handles=family_legend_handles(shown, colors), loc="outside upper center", ncol=len(shown), frameon=False)
        _place_labels(panels)
    return fig


def _draw_panel(
    ax: Axes,
    wide: pd.DataFrame,
    x: str,
    y: str,
    families: Mapping[str, str],
    names: Mapping[str, str] | None,
    colors: Mapping[str, str],
    stats: str | None,
) -> _Panel:
    """Points, axis labels and the stats box; names are placed later by `_place_labels`."""
    both = wide[[x, y]].dropna()
    approaches = family_order(both.index, families, FAMILY_ORDER)
    xy = both.loc[approaches, [x, y]].to_numpy(dtype=float)
    ax.scatter(
        xy[:, 0],
        xy[:, 1],
        s=MARKER_AREA,
        c=[color_of(item, families, colors) for item in approaches],
        edgecolors="white",
        linewidths=MARKER_EDGE_WIDTH,
        zorder=3,
    )
    ax.margins(AXES_MARGIN)
    ax.set_xlabel(f"{display_name(x, names)} EM (%)")
    ax.set_ylabel(f"{display_name(y, names)} EM (%)")
    if not approaches:
        ax.text(0.5, 0.5, EMPTY_TEXT, transform=ax.transAxes, ha="center", va="center", color=LEADER_COLOR)
    box = None
    if stats:
        box = ax.text(0, 0, stats, transform=ax.transAxes, fontsize=STATS_FONT_SIZE, zorder=4, bbox=STATS_BOX)
        _move_to_corner(box, STATS_CORNERS[0])
        box.set_in_layout(False)
    return _Panel(ax, approaches, xy, [display_name(item, names) for item in approaches], box)


def _place_labels(panels: Sequence[_Panel]) -> None:
    """Name every point once the figure's layout is final (positions in pixels depend on it)."""
    if not panels:
        return
    canvas = panels[0].ax.figure.canvas
    canvas.draw()
    renderer = canvas.get_renderer()
    for panel in panels:
        _label_panel(panel, renderer)


def _label_panel(panel: _Panel, renderer: RendererBase) -> None:
    ax = panel.ax
    pixels_per_point = ax.figure.dpi / 72.0
    radius_points = math.sqrt(MARKER_AREA) / 2.0
    radius = radius_points * pixels_per_point
    points = ax.transData.transform(panel.xy) if len(panel.xy) else np.empty((0, 2))
    occupied = [Bbox.from_extents(px - radius, py - radius, px + radius, py + radius) for px, py in points]
    if panel.stats is not None:
        occupied.append(_place_stats(panel.stats, points, renderer, pixels_per_point))
    frame = ax.get_window_extent(renderer)
    for index in _crowded_first(points, CROWDING_RADIUS_POINTS * pixels_per_point):
        probe = _name(ax, panel, index, (0.0, 0.0), (1, 0))
        best = None
        for gap_index, gap in enumerate(LABEL_GAPS_POINTS):
            for direction in LABEL_DIRECTIONS:
                offset = (direction[0] * (radius_points + gap), direction[1] * (radius_points + gap))
                _aim(probe, offset, direction)
                box = probe.get_window_extent(renderer)
                cost = sum(_overlap(box, other) for other in occupied) + OUTSIDE_PENALTY * (_area(box) - _overlap(box, frame))
                if best is None or cost < best[0]:
                    best = (cost, gap_index, offset, direction, box)
        probe.remove()
        _, gap_index, offset, direction, box = best
        _name(ax, panel, index, offset, direction, leader=gap_index > 0, shrink=radius_points)
        occupied.append(box)


def _name(
    ax: Axes,
    panel: _Panel,
    index: int,
    offset: tuple[float, float],
    direction: tuple[int, int],
    *,
    leader: bool = False,
    shrink: float = 0.0,
) -> Annotation:
    """The approach's name at `offset` points from its point, on the side `direction` points to."""
    # a leader line leaves the name from its edge facing the point, not through its middle
    relpos = ((1 - direction[0]) / 2, (1 - direction[1]) / 2)
    arrow = {"arrowstyle": "-", "color": LEADER_COLOR, "lw": LEADER_WIDTH, "shrinkA": 0.0, "shrinkB": shrink, "relpos": relpos}
    text = ax.annotate(
        panel.labels[index],
        xy=tuple(panel.xy[index]),
        xytext=offset,
        textcoords="offset points",
        fontsize=POINT_LABEL_FONT_SIZE,
        color=POINT_LABEL_COLOR,
        arrowprops=arrow if leader else None,
        gid=POINT_LABEL_GID,
        zorder=5,
    )
    _aim(text, offset, direction)
    text.set_in_layout(False)
    return text


def _aim(text: Text, offset: tuple[float, float], direction: tuple[int, int]) -> None:
    """Align the name so it grows away from its point."""
    text.set_position(offset)
    text.set_horizontalalignment({1: "left", 0: "center", -1: "right"}[direction[0]])
    text.set_verticalalignment({1: "bottom", 0: "center", -1: "top"}[direction[1]])


def _place_stats(text: Text, points: np.ndarray, renderer: RendererBase, pixels_per_point: float) -> Bbox:
    """Move the stats box to the corner covering the fewest points (the first such corner); return its extent."""
    extents = []
    for corner in STATS_CORNERS:
        _move_to_corner(text, corner)
        extents.append(text.get_window_extent(renderer).padded(STATS_PAD_POINTS * pixels_per_point))
    covered = [sum(box.contains(px, py) for px, py in points) for box in extents]
    best = covered.index(min(covered))
    _move_to_corner(text, STATS_CORNERS[best])
    return extents[best]


def _move_to_corner(text: Text, corner: tuple[float, float, str, str]) -> None:
    x_anchor, y_anchor, ha, va = corner
    text.set_position((x_anchor, y_anchor))
    text.set_horizontalalignment(ha)
    text.set_verticalalignment(va)


def _crowded_first(points: np.ndarray, reach: float) -> list[int]:
    """Indices of points by falling number of neighbours within `reach` (then in order), so crowded names choose first."""
    if not len(points):
        return []
    distances = np.hypot(*(points[:, None, :] - points[None, :, :]).transpose(2, 0, 1))
    neighbours = (distances < reach).sum(axis=1)
    return sorted(range(len(points)), key=lambda index: (-neighbours[index], index))


def _overlap(first: Bbox, second: Bbox) -> float:
    width = min(first.x1, second.x1) - max(first.x0, second.x0)
    height = min(first.y1, second.y1) - max(first.y0, second.y0)
    return max(width, 0.0) * max(height, 0.0)


def _area(box: Bbox) -> float:
    return box.width * box.height
