"""The paper's scatter plots: EM on one benchmark against EM on another, one point per approach.

A concurrence coefficient summarises such a plot; the plot shows which approaches break
the trend, so points carry their approach's name. Names are placed by a small
deterministic search over spots around each point (farther ones joined by a leader line),
scored by what a name would cover. A name that still covers another name or a point, or
leaves the axes, is left out ("annotations only where they fit"): a crowded panel (twenty
approaches at 100 EM) stays legible, and the shared x axis (the reference benchmark)
identifies its points in the other panels. On the paper's Figures 10 and 12 (320 names) this
search fits nearly twice as many names as adjustText 1.4.0, in a small fraction of its time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, overload

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import patheffects
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure, SubFigure
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox

from concur.plots.style import FAMILY_ORDER, color_of, display_name, family_legend_handles, figure_style, stable_family_colors
from concur.registry.selection import family_order

PAIR_FIGURE_INCHES = (5.6, 5.2)
PANEL_INCHES = (4.3, 4.2)  # one small multiple of `scatter_grid`
MARKER_AREA = 36.0  # points^2, matplotlib's `s`
MARKER_EDGE_WIDTH = 0.6
AXES_MARGIN = 0.1  # room inside the axes for the names of the outermost points
POINT_LABEL_GID = "point-label"  # tags the approach names, so callers and tests can find them
POINT_LABEL_FONT_SIZE = 7
POINT_LABEL_COLOR = "0.15"
LABEL_HALO = (patheffects.withStroke(linewidth=2.0, foreground="white"),)  # keeps names legible over grid and leader lines
LEADER_COLOR = "0.55"
LEADER_WIDTH = 0.5
# distances from a marker's edge tried for its name, nearest first; beyond the first, a leader line joins them
LABEL_GAPS_POINTS = (1.5, 7.0, 14.0, 24.0, 36.0, 52.0)
LABEL_DIRECTIONS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1))  # right first, then left, above, below, diagonals
LABEL_PAD_POINTS = 1.0  # clearance kept around a name, so neighbouring names never touch
OUTSIDE_PENALTY = 4.0  # a name's area outside the axes costs this much more than area covering another name
MARKER_PENALTY = 3.0  # covering a point hides data: worse than touching another name
COLLISION_POINTS = 16.0  # a name touching another name or a point also costs a square this wide: a slight touch looks as bad as a big one
LEADER_CROSSING_POINTS = 8.0  # a leader through a name or point costs like a strip this wide of overlap; two leaders crossing, its square
LEADER_LENGTH_POINTS = 1.0  # any leader costs like a strip this wide along its length, so names stay close when they can
PLACEMENT_PASSES = 3  # the first places names greedily, the others revise each against all the rest
CROWDING_RADIUS_POINTS = 30.0  # points with more neighbours this close place their names first
STATS_FONT_SIZE = 8
STATS_PAD_POINTS = 4.0  # the box's frame around its text, kept clear of names
STATS_BOX = {"boxstyle": "round", "facecolor": "white", "edgecolor": "0.75", "alpha": 0.9}
HorizontalAlignment = Literal["left", "center", "right"]
VerticalAlignment = Literal["bottom", "baseline", "center", "center_baseline", "top"]
Corner = tuple[float, float, HorizontalAlignment, VerticalAlignment]  # axes fractions x, y and the box's alignment there
STATS_CORNERS: tuple[Corner, ...] = (
    (0.03, 0.97, "left", "top"),
    (0.97, 0.03, "right", "bottom"),
    (0.97, 0.97, "right", "top"),
    (0.03, 0.03, "left", "bottom"),
)
EMPTY_TEXT = "no approach has both scores"


@dataclass(frozen=True)
class _Panel:
    """One drawn scatter whose names still await placement (they need the final layout)."""

    ax: Axes
    approaches: list[str]
    xy: np.ndarray
    labels: list[str]
    stats: Text | None


@overload
def pair_scatter(
    wide: pd.DataFrame,
    x: str,
    y: str,
    *,
    families: Mapping[str, str],
    names: Mapping[str, str] | None = None,
    stats: str | None = None,
    ax: None = None,
) -> Figure: ...


@overload
def pair_scatter(
    wide: pd.DataFrame,
    x: str,
    y: str,
    *,
    families: Mapping[str, str],
    names: Mapping[str, str] | None = None,
    stats: str | None = None,
    ax: Axes,
) -> Figure | SubFigure: ...


def pair_scatter(
    wide: pd.DataFrame,
    x: str,
    y: str,
    *,
    families: Mapping[str, str],
    names: Mapping[str, str] | None = None,
    stats: str | None = None,
    ax: Axes | None = None,
) -> Figure | SubFigure:
    """EM on benchmark `y` against EM on benchmark `x` for the approaches that have both.

    `stats` is a text box (e.g. the correlations with their intervals) put in the corner
    with the fewest points. With `ax`, draws there and returns that axes' figure.
    """
    colors = stable_family_colors(families)
    with figure_style():
        fig: Figure | SubFigure
        if ax is None:
            fig = plt.figure(figsize=PAIR_FIGURE_INCHES, layout="constrained")
            ax = fig.add_subplot()
        else:
            fig = ax.figure
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
    return fig


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
    root = panels[0].ax.figure.figure  # the top-level figure, also for an axes in a subfigure
    canvas = root.canvas if isinstance(root.canvas, FigureCanvasAgg) else FigureCanvasAgg(root)  # a bare Figure() has no renderer
    canvas.draw()
    renderer = canvas.get_renderer()
    for panel in panels:
        _label_panel(panel, renderer)


def _label_panel(panel: _Panel, renderer: RendererBase) -> None:
    """Measure every name once, lay out its candidate boxes in pixels, choose, then draw the chosen ones."""
    ax = panel.ax
    pixels_per_point = ax.figure.dpi / 72.0
    radius_points = math.sqrt(MARKER_AREA) / 2.0
    points = ax.transData.transform(panel.xy).reshape(-1, 2)
    markers = np.hstack([points - radius_points * pixels_per_point, points + radius_points * pixels_per_point])
    obstacles = np.empty((0, 4))
    if panel.stats is not None:
        obstacles = np.array([_place_stats(panel.stats, points, renderer, pixels_per_point).extents])
    gaps = np.repeat(LABEL_GAPS_POINTS, len(LABEL_DIRECTIONS))
    directions = np.tile(np.array(LABEL_DIRECTIONS, dtype=float), (len(LABEL_GAPS_POINTS), 1))
    offsets = directions * (radius_points + gaps)[:, None]
    with_leader = gaps > LABEL_GAPS_POINTS[0]
    sizes = np.array([_text_size(ax, panel, index, renderer) for index in range(len(points))]).reshape(-1, 2)
    anchors = points[:, None, :] + offsets[None] * pixels_per_point
    lower = anchors - sizes[:, None, :] * (1.0 - directions[None]) / 2.0  # the alignment `_name` gives the text
    pad = LABEL_PAD_POINTS * pixels_per_point
    boxes = np.concatenate([lower - pad, lower + sizes[:, None, :] + pad], axis=2)
    leader_ends = np.where(with_leader[None, :, None], anchors, points[:, None, :])  # no leader: a segment of length 0
    frame = np.array([ax.get_window_extent(renderer).extents])
    order = _crowded_first(points, CROWDING_RADIUS_POINTS * pixels_per_point)
    chosen = _choose(points, boxes, leader_ends, markers, frame, obstacles, order, pixels_per_point)
    every = np.arange(len(points))
    kept = _fitting(boxes[every, chosen], np.hstack([points, leader_ends[every, chosen]]), markers, frame[0], obstacles)
    for index, spot in enumerate(chosen):
        if index not in kept:
            continue
        direction = (int(directions[spot, 0]), int(directions[spot, 1]))
        _name(ax, panel, index, tuple(offsets[spot]), direction, leader=bool(with_leader[spot]), shrink=radius_points)


def _fitting(boxes: np.ndarray, leaders: np.ndarray, markers: np.ndarray, frame: np.ndarray, obstacles: np.ndarray) -> set[int]:
    """The names to keep: none, nor its leader line, covers another kept name, another point or the stats box; none leaves the axes.

    `leaders` holds each name's line (x0, y0, x1, y1; of length 0 without one). Names are
    dropped one at a time, the one in most conflict first, so one collision costs one name.
    """
    count = len(boxes)
    starts, ends = leaders[:, :2], leaders[:, 2:]
    through_names = _inside_lengths(starts, ends, boxes)  # [i, j]: leader i inside name j
    conflicts = _overlaps(boxes, boxes) + through_names + through_names.T
    np.fill_diagonal(conflicts, 0.0)
    on_markers = _overlaps(boxes, markers) + _inside_lengths(starts, ends, markers)
    np.fill_diagonal(on_markers, 0.0)  # a name and its leader touch their own point
    inside = (boxes[:, 0] >= frame[0]) & (boxes[:, 1] >= frame[1]) & (boxes[:, 2] <= frame[2]) & (boxes[:, 3] <= frame[3])
    fixed = on_markers.sum(axis=1) + _overlaps(boxes, obstacles).sum(axis=1) + _inside_lengths(starts, ends, obstacles).sum(axis=1)
    kept = {index for index in range(count) if inside[index] and fixed[index] == 0.0}
    while kept:
        members = sorted(kept)
        in_conflict = conflicts[np.ix_(members, members)].sum(axis=1)
        if in_conflict.max() == 0.0:
            break
        kept.remove(members[int(np.argmax(in_conflict))])
    return kept


def _choose(
    points: np.ndarray,
    boxes: np.ndarray,
    leader_ends: np.ndarray,
    markers: np.ndarray,
    frame: np.ndarray,
    obstacles: np.ndarray,
    order: list[int],
    pixels_per_point: float,
) -> np.ndarray:
    """The chosen candidate per name: greedy in `order`, then passes that re-place each name against all the others.

    Costs are areas in pixels^2: a name over another name, a point (`MARKER_PENALTY`), the
    stats box, or outside the axes (`OUTSIDE_PENALTY`), plus `COLLISION_POINTS` squared per
    name or point touched; leader lines by their length and where they cross names, points
    or each other (`LEADER_*`). The cheapest candidate wins, the nearest on ties, so a name
    moves away from its point only when that avoids covering something.
    """
    count, candidates = boxes.shape[:2]
    crossing = LEADER_CROSSING_POINTS * pixels_per_point
    starts = np.broadcast_to(points[:, None, :], leader_ends.shape)
    flat = boxes.reshape(-1, 4)
    area = (flat[:, 2] - flat[:, 0]) * (flat[:, 3] - flat[:, 1])
    fixed = OUTSIDE_PENALTY * (area - _overlaps(flat, frame)[:, 0]) + _overlaps(flat, obstacles).sum(axis=1)
    collision = (COLLISION_POINTS * pixels_per_point) ** 2
    on_markers = _overlaps(flat, markers)
    fixed += MARKER_PENALTY * on_markers.sum(axis=1) + collision * (on_markers > 0).sum(axis=1)
    through = _inside_lengths(starts.reshape(-1, 2), leader_ends.reshape(-1, 2), markers).reshape(count, candidates, count)
    through[np.arange(count), :, np.arange(count)] = 0.0  # a leader starts inside its own point
    length = np.hypot(*(leader_ends - starts).transpose(2, 0, 1))
    fixed = fixed.reshape(count, candidates) + crossing * through.sum(axis=2) + LEADER_LENGTH_POINTS * pixels_per_point * length
    chosen = np.full(count, -1)
    for _ in range(PLACEMENT_PASSES):
        for index in order:
            others = np.flatnonzero((chosen >= 0) & (np.arange(count) != index))
            other_boxes, other_ends = boxes[others, chosen[others]], leader_ends[others, chosen[others]]
            on_names = _overlaps(boxes[index], other_boxes)
            cost = fixed[index] + on_names.sum(axis=1) + collision * (on_names > 0).sum(axis=1)
            cost += crossing * _inside_lengths(points[others], other_ends, boxes[index]).sum(axis=0)
            cost += crossing * _inside_lengths(starts[index], leader_ends[index], other_boxes).sum(axis=1)
            cost += crossing**2 * _segments_cross(starts[index], leader_ends[index], points[others], other_ends).sum(axis=1)
            chosen[index] = int(np.argmin(cost))
    return chosen


def _text_size(ax: Axes, panel: _Panel, index: int, renderer: RendererBase) -> tuple[float, float]:
    """Width and height in pixels of one name as it will be drawn."""
    probe = _name(ax, panel, index, (0.0, 0.0), (1, 1))
    extent = probe.get_window_extent(renderer)
    probe.remove()
    return extent.width, extent.height


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
    """The approach's name at `offset` points from its point, growing away from it along `direction`."""
    # a leader line leaves the name from its edge facing the point, not through its middle
    relpos = ((1 - direction[0]) / 2, (1 - direction[1]) / 2)
    arrow = {"arrowstyle": "-", "color": LEADER_COLOR, "lw": LEADER_WIDTH, "shrinkA": 0.0, "shrinkB": shrink, "relpos": relpos}
    text = ax.annotate(
        panel.labels[index],
        xy=tuple(panel.xy[index]),
        xytext=offset,
        textcoords="offset points",
        ha={1: "left", 0: "center", -1: "right"}[direction[0]],
        va={1: "bottom", 0: "center", -1: "top"}[direction[1]],
        fontsize=POINT_LABEL_FONT_SIZE,
        color=POINT_LABEL_COLOR,
        path_effects=LABEL_HALO,
        arrowprops=arrow if leader else None,
        gid=POINT_LABEL_GID,
        zorder=5,
    )
    text.set_in_layout(False)
    return text


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


def _move_to_corner(text: Text, corner: Corner) -> None:
    x_anchor, y_anchor, ha, va = corner
    text.set_position((x_anchor, y_anchor))
    text.set_horizontalalignment(ha)
    text.set_verticalalignment(va)


def _crowded_first(points: np.ndarray, reach: float) -> list[int]:
    """Indices of points by falling number of neighbours within `reach` (then in order), so crowded names choose first."""
    distances = np.hypot(*(points[:, None, :] - points[None, :, :]).transpose(2, 0, 1))
    neighbours = (distances < reach).sum(axis=1)
    return sorted(range(len(points)), key=lambda index: (-neighbours[index], index))


def _segments_cross(starts: np.ndarray, ends: np.ndarray, other_starts: np.ndarray, other_ends: np.ndarray) -> np.ndarray:
    """Whether each segment (n) properly crosses each other segment (k): n x k; a segment of length 0 crosses nothing."""

    def side(origin: np.ndarray, direction: np.ndarray, point: np.ndarray) -> np.ndarray:
        return direction[..., 0] * (point[..., 1] - origin[..., 1]) - direction[..., 1] * (point[..., 0] - origin[..., 0])

    first, last = starts[:, None, :], ends[:, None, :]
    other_first, other_last = other_starts[None, :, :], other_ends[None, :, :]
    straddles_theirs = side(other_first, other_last - other_first, first) * side(other_first, other_last - other_first, last) < 0
    straddles_mine = side(first, last - first, other_first) * side(first, last - first, other_last) < 0
    return straddles_theirs & straddles_mine


def _overlaps(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Areas shared by every box of `first` (n x 4: x0, y0, x1, y1) with every box of `second` (k x 4): n x k."""
    width = np.minimum(first[:, None, 2], second[None, :, 2]) - np.maximum(first[:, None, 0], second[None, :, 0])
    height = np.minimum(first[:, None, 3], second[None, :, 3]) - np.maximum(first[:, None, 1], second[None, :, 1])
    return np.clip(width, 0.0, None) * np.clip(height, 0.0, None)


def _inside_lengths(starts: np.ndarray, ends: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Length of each segment (n x 2 starts and ends) inside each box (k x 4): n x k, by Liang-Barsky clipping."""
    delta = ends - starts
    low = np.zeros((len(starts), len(boxes)))
    high = np.ones((len(starts), len(boxes)))
    for axis in (0, 1):
        start, step = starts[:, axis, None], delta[:, axis, None]
        lower, upper = boxes[None, :, axis], boxes[None, :, axis + 2]
        parallel = step == 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            first, second = (lower - start) / step, (upper - start) / step
        low = np.maximum(low, np.where(parallel, -np.inf, np.minimum(first, second)))
        high = np.minimum(high, np.where(parallel, np.inf, np.maximum(first, second)))
        high = np.where(parallel & ((start < lower) | (start > upper)), -np.inf, high)
    return np.clip(high - low, 0.0, None) * np.hypot(delta[:, 0], delta[:, 1])[:, None]
