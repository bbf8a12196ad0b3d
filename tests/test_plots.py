"""The analysis layer's orderings and publication figures: what they draw, counted, and that they save."""

from __future__ import annotations

import math
from itertools import combinations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PathCollection, QuadMesh
from matplotlib.figure import Figure
from matplotlib.text import Text

from concur.analysis.ordering import cluster_order
from concur.plots.babi import perfect_or_chance, perfect_or_chance_counts
from concur.plots.curves import downsampling_curves, size_label
from concur.plots.heatmap import ANNOTATE_AT_MOST, CELL_INCHES, concurrence_heatmap
from concur.plots.scatter import POINT_LABEL_GID, pair_scatter, scatter_grid
from concur.plots.style import save_figure
from concur.registry.selection import family_order
from concur.registry.specs import APPROACH_FAMILIES, BENCHMARK_FAMILIES

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FAMILIES = {
    "bert-base": "pretrained",
    "roberta-large": "pretrained",
    "electra-base": "pretrained",
    "bidaf": "non-pretrained",
    "rasor": "non-pretrained",
    "qanet": "non-pretrained",
    "squad": "human",
    "mrqa-newsqa": "human",
    "qamr": "human",
    "cbt-cn": "cloze",
}
NAMES = {"bert-base": "BERT (base)", "roberta-large": "RoBERTa (large)", "squad": "SQuAD"}


@pytest.fixture(autouse=True)
def close_figures():
    """Figures a test did not save stay open in pyplot; close them so they do not pile up."""
    yield
    plt.close("all")


@pytest.fixture
def wide() -> pd.DataFrame:
    """Six approaches x four benchmarks of EM; QANet has no CBT score."""
    return pd.DataFrame(
        {
            "squad": [80.8, 88.9, 84.5, 67.7, 66.4, 73.6],
            "mrqa-newsqa": [52.1, 58.9, 55.0, 43.5, 44.7, 47.0],
            "qamr": [70.2, 77.4, 73.0, 55.1, 54.0, 60.3],
            "cbt-cn": [70.0, 76.1, 72.2, 52.3, 51.0, np.nan],
        },
        index=["bert-base", "roberta-large", "electra-base", "bidaf", "rasor", "qanet"],
    )


def labels_of(fig: Figure) -> list[str]:
    return [text.get_text() for ax in fig.axes for text in ax.texts if text.get_gid() == POINT_LABEL_GID]


def name_boxes(ax) -> list:
    """Where the point names' letters are (an annotation's own extent also spans its leader line)."""
    return [Text.get_window_extent(text) for text in ax.texts if text.get_gid() == POINT_LABEL_GID]


def points_of(ax) -> int:
    return sum(len(collection.get_offsets()) for collection in ax.collections if isinstance(collection, PathCollection))


def draw(fig: Figure) -> Figure:
    fig.canvas.draw()
    return fig


def no_overlaps(boxes) -> bool:
    return not any(first.overlaps(second) for first, second in combinations(boxes, 2))


def assert_saves(fig: Figure, tmp_path, stem: str) -> None:
    pdf, png = save_figure(fig, tmp_path / stem)
    assert (pdf.name, png.name) == (f"{stem}.pdf", f"{stem}.png")
    assert pdf.read_bytes().startswith(b"%PDF") and pdf.stat().st_size > 1000
    assert png.read_bytes().startswith(PNG_MAGIC) and png.stat().st_size > 1000


# ---- ordering -------------------------------------------------------------------------


def test_family_order_groups_by_rank_then_natural_name_with_unknown_families_last():
    families = {"babi-11": "synthetic", "babi-2": "synthetic", "squad-10k": "downsampled", "squad-1k": "downsampled", "squad": "human"}
    families |= {"lambada": "cloze", "mine-b": "custom", "mine-a": "custom", "orphan": ""}
    ids = ["orphan", "babi-11", "mine-b", "squad-10k", "lambada", "babi-2", "squad", "mine-a", "squad-1k"]
    order = family_order(ids, families, BENCHMARK_FAMILIES)
    assert order == ["squad", "squad-1k", "squad-10k", "lambada", "babi-2", "babi-11", "mine-a", "mine-b", "orphan"]
    assert family_order(reversed(ids), families, BENCHMARK_FAMILIES) == order


def test_family_order_puts_higher_scores_first_within_a_family():
    families = {"a": "pretrained", "b": "pretrained", "c": "non-pretrained", "d": "non-pretrained", "e": "pretrained"}
    scores = {"a": 70.0, "b": 90.0, "c": 50.0, "d": 60.0, "e": math.nan}
    assert family_order("abcde", families, APPROACH_FAMILIES, scores=scores) == ["b", "a", "e", "d", "c"]


def near_twins_matrix() -> pd.DataFrame:
    """x and x2 rank approaches almost alike, as do y and y2; z is its own; one cell unknown."""
    labels = ["x", "y", "z", "x2", "y2"]
    values = {
        ("x", "x2"): 0.98,
        ("y", "y2"): 0.97,
        ("x", "y"): 0.2,
        ("x", "y2"): 0.25,
        ("x2", "y"): 0.22,
        ("x2", "y2"): 0.18,
        ("z", "x"): 0.5,
        ("z", "x2"): 0.45,
        ("z", "y"): -0.1,
        ("z", "y2"): np.nan,
    }
    matrix = pd.DataFrame(np.eye(len(labels)), index=labels, columns=labels)
    for (first, second), value in values.items():
        matrix.loc[first, second] = matrix.loc[second, first] = value
    return matrix


def test_cluster_order_puts_near_identical_benchmarks_side_by_side_deterministically():
    matrix = near_twins_matrix()
    order = cluster_order(matrix)
    assert sorted(order) == sorted(matrix.index)
    assert abs(order.index("x") - order.index("x2")) == 1
    assert abs(order.index("y") - order.index("y2")) == 1
    assert abs(order.index("z") - order.index("x")) == 1 or abs(order.index("z") - order.index("x2")) == 1  # z is closest to x/x2
    shuffled = matrix.loc[["y2", "z", "x", "y", "x2"], ["x2", "y", "z", "y2", "x"]]
    assert cluster_order(shuffled) == order == cluster_order(matrix)


def test_cluster_order_rejects_a_matrix_whose_rows_and_columns_differ():
    with pytest.raises(ValueError, match="square"):
        cluster_order(pd.DataFrame([[1.0, 0.5]], index=["a"], columns=["a", "b"]))


# ---- heatmap --------------------------------------------------------------------------


def test_heatmap_has_a_cell_and_a_text_per_pair_with_counts_where_they_vary(tmp_path):
    matrix = near_twins_matrix()
    counts = pd.DataFrame(20, index=matrix.index, columns=matrix.columns)
    counts.loc["z", "y2"] = counts.loc["y2", "z"] = 2
    fig = concurrence_heatmap(matrix, counts=counts, title="tau", names={"x": "Bench X"})
    ax = fig.axes[0]
    mesh = next(collection for collection in ax.collections if isinstance(collection, QuadMesh))
    assert mesh.get_array().size == 25
    texts = {(int(text.get_position()[1]), int(text.get_position()[0])): text.get_text() for text in ax.texts}
    assert len(ax.texts) == 25
    assert texts[(1, 2)] == "\N{MINUS SIGN}0.10\nn=20"  # row y, column z
    assert texts[(2, 4)] == texts[(4, 2)] == "n/a\nn=2"
    assert texts[(0, 0)] == "1.00\nn=20"
    assert [label.get_text() for label in ax.get_yticklabels()] == ["Bench X", "y", "z", "x2", "y2"]
    assert ax.get_title() == "tau"
    assert_saves(fig, tmp_path, "heatmap")


def test_heatmap_reports_a_constant_count_once_and_drops_numbers_on_huge_matrices():
    matrix = near_twins_matrix()
    fig = concurrence_heatmap(matrix, counts=pd.DataFrame(20, index=matrix.index, columns=matrix.columns))
    assert {text.get_text() for text in fig.axes[0].texts} >= {"n/a", "0.98"}
    assert not any("n=" in text.get_text() for text in fig.axes[0].texts)
    assert fig.axes[0].child_axes[0].get_ylabel() == "Kendall τ (n = 20)"  # the colour bar

    size = ANNOTATE_AT_MOST + 1
    labels = [f"b{index}" for index in range(size)]
    big = pd.DataFrame(np.eye(size), index=labels, columns=labels)
    big_fig = concurrence_heatmap(big, value_label="Pearson r")
    assert len(big_fig.axes[0].texts) == 0
    assert big_fig.get_size_inches()[0] > fig.get_size_inches()[0]
    assert no_overlaps([label.get_window_extent() for label in draw(big_fig).axes[0].get_yticklabels()])


def test_long_benchmark_names_never_squeeze_the_cells_or_their_numbers():
    """Names as the registry gives them ("SQuAD v1.1 dev (MRQA), carved 80/20 by passage") grow the figure, not shrink the matrix."""
    ids = [f"b{index}" for index in range(8)]
    names = {item: f"A benchmark with a long descriptive name, number {index} of 8" for index, item in enumerate(ids)}
    matrix = pd.DataFrame(np.linspace(-0.9, 0.9, 64).reshape(8, 8), index=ids, columns=ids)
    fig = draw(concurrence_heatmap(matrix, names=names, title="Kendall τ between every pair of benchmarks"))
    ax = fig.axes[0]
    cell_inches = ax.get_window_extent().width / fig.dpi / 8
    assert cell_inches == pytest.approx(CELL_INCHES, rel=0.15)
    cell_pixels = ax.get_window_extent().width / 8
    assert len(ax.texts) == 64 and all(text.get_window_extent().width < cell_pixels for text in ax.texts)
    short = draw(concurrence_heatmap(matrix, title="Kendall τ between every pair of benchmarks"))  # ids only: a smaller figure
    assert short.get_size_inches()[0] < fig.get_size_inches()[0] and short.axes[0].get_window_extent().width == pytest.approx(
        ax.get_window_extent().width, rel=0.05
    )


# ---- scatter --------------------------------------------------------------------------


def test_pair_scatter_draws_and_names_only_approaches_with_both_values(wide, tmp_path):
    stats = "r = 0.93 [0.85, 0.97]\nτ = 0.80 [0.66, 0.90]\nn = 5"
    fig = pair_scatter(wide, "squad", "cbt-cn", families=FAMILIES, names=NAMES, stats=stats)
    ax = fig.axes[0]
    assert points_of(ax) == 5
    assert sorted(labels_of(fig)) == sorted(["BERT (base)", "RoBERTa (large)", "electra-base", "bidaf", "rasor"])
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["pretrained", "non-pretrained"]
    assert stats in [text.get_text() for text in ax.texts]
    assert ax.get_xlabel() == "SQuAD EM (%)"
    assert no_overlaps(name_boxes(draw(fig).axes[0]))
    assert_saves(fig, tmp_path, "pair")


def test_pair_scatter_names_a_crowded_cloud_without_overlaps():
    rng = np.random.default_rng(7)
    skill = np.r_[rng.normal(82, 4, 10), rng.normal(62, 4, 10)]
    crowd = pd.DataFrame({"a": skill, "b": 0.8 * skill + rng.normal(0, 2, 20)}, index=[f"approach-{i}" for i in range(20)])
    families = {item: "pretrained" if number < 10 else "non-pretrained" for number, item in enumerate(crowd.index)}
    fig = draw(pair_scatter(crowd, "a", "b", families=families, stats="r = 0.9"))
    ax = fig.axes[0]
    names = name_boxes(ax)
    assert len(names) == 20 and no_overlaps(names)
    stats_box = next(text for text in ax.texts if text.get_text() == "r = 0.9").get_window_extent()
    assert not any(name.overlaps(stats_box) for name in names)


def test_a_crowded_panel_names_only_the_points_whose_names_fit():
    """Twenty approaches at 100 EM, as on bAbI with 9K training examples: names that would collide are left out."""
    skill = np.linspace(65.0, 89.0, 20)
    solved = np.full(20, 100.0)
    solved[[3, 17]] = [57.0, 80.0]
    crowd = pd.DataFrame({"squad": skill, "babi": solved}, index=[f"approach-{i:02d}" for i in range(20)])
    names = {item: f"Approach {i:02d} (large, whole-word masking)" for i, item in enumerate(crowd.index)}
    families = {item: "pretrained" if i % 2 else "non-pretrained" for i, item in enumerate(crowd.index)}
    fig = draw(pair_scatter(crowd, "squad", "babi", families=families, names=names, stats="r = 0.10"))
    ax = fig.axes[0]
    boxes = name_boxes(ax)
    assert 2 <= len(boxes) < 20 and no_overlaps(boxes)
    frame = ax.get_window_extent()
    assert all(frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1 for box in boxes)
    assert {names["approach-03"], names["approach-17"]} <= set(labels_of(fig))  # the two points apart keep their names


def test_pair_scatter_draws_on_a_given_axes_and_lists_only_the_families_shown(wide):
    host = Figure()
    ax = host.add_subplot()
    fig = pair_scatter(wide.loc[["bidaf", "rasor", "qanet"]], "squad", "qamr", families=FAMILIES, ax=ax)
    assert fig is host
    assert points_of(ax) == 3
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["non-pretrained"]


def test_scatter_grid_has_one_panel_per_other_benchmark(wide, tmp_path):
    others = ["mrqa-newsqa", "qamr", "cbt-cn"]
    fig = scatter_grid(wide, "squad", others, families=FAMILIES, names=NAMES, stats={"qamr": "τ = 1.00"}, columns=2)
    assert len(fig.axes) == 3
    assert [ax.get_ylabel() for ax in fig.axes] == [f"{other} EM (%)" for other in others]
    assert [points_of(ax) for ax in fig.axes] == [6, 6, 5]
    assert len(labels_of(fig)) == 17
    assert "τ = 1.00" in [text.get_text() for text in fig.axes[1].texts]
    assert [text.get_text() for text in fig.legends[0].get_texts()] == ["pretrained", "non-pretrained"]
    assert_saves(fig, tmp_path, "grid")


def test_scatter_grid_needs_another_benchmark(wide):
    with pytest.raises(ValueError, match="at least one"):
        scatter_grid(wide, "squad", [], families=FAMILIES)


# ---- curves ---------------------------------------------------------------------------


def test_downsampling_curves_draw_one_line_per_approach_on_labelled_sizes(tmp_path):
    sizes = {"squad": 87599, "squad-1k": 1000, "squad-10k": 10000}
    table = pd.DataFrame(
        {"squad-1k": [30.0, 8.0, np.nan, np.nan], "squad-10k": [75.0, 48.0, 50.0, np.nan], "squad": [88.0, 67.0, 70.0, np.nan]},
        index=["bert-base", "bidaf", "rasor", "never-ran"],
    )
    fig = downsampling_curves(table, sizes, families=FAMILIES, names=NAMES, title="SQuAD")
    ax = fig.axes[0]
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["BERT (base)", "rasor", "bidaf"]  # family, then EM at the largest size
    assert [len(line.get_xdata()) for line in lines] == [3, 2, 3]  # rasor's missing 1k is skipped, not a gap
    assert lines[0].get_color() != lines[1].get_color()
    assert (lines[1].get_marker(), lines[1].get_linestyle()) != (lines[2].get_marker(), lines[2].get_linestyle())
    assert ax.get_xscale() == "log"
    assert [label.get_text() for label in ax.get_xticklabels()] == ["1k", "10k", "87.6k"]
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["pretrained", "BERT (base)", "non-pretrained", "rasor", "bidaf"]
    assert_saves(fig, tmp_path, "curves")


@pytest.mark.parametrize(("count", "label"), [(1000, "1k"), (87599, "87.6k"), (20000, "20k"), (500, "500"), (2_500_000, "2.5M")])
def test_size_label(count, label):
    assert size_label(count) == label


# ---- bAbI: perfect or chance ----------------------------------------------------------


@pytest.fixture
def babi() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "babi-2": [100.0, 96.0, 95.0, 50.0, 30.0, np.nan],
            "babi-11": [99.9, 40.0, 20.0, 25.0, 31.0, 95.0],
        },
        index=["bert-base", "roberta-large", "electra-base", "bidaf", "rasor", "qanet"],
    )


def test_perfect_or_chance_counts_by_hand(babi):
    counts = perfect_or_chance_counts(babi, ["babi-2", "babi-11"], perfect=95.0, chance=30.0)
    assert counts.to_dict("records") == [
        {"task": "babi-2", "perfect": 3, "chance": 1, "between": 1, "n": 5},  # 100, 96, 95 | 30 | 50; qanet missing
        {"task": "babi-11", "perfect": 2, "chance": 2, "between": 2, "n": 6},  # 99.9, 95 | 20, 25 | 40, 31
    ]
    with pytest.raises(ValueError, match="below"):
        perfect_or_chance_counts(babi, ["babi-2"], perfect=30.0, chance=30.0)
    with pytest.raises(ValueError, match="babi-3"):
        perfect_or_chance_counts(babi, ["babi-3"], perfect=95.0, chance=30.0)


def test_perfect_or_chance_figure(babi, tmp_path):
    fig = perfect_or_chance(babi, ["babi-2", "babi-11"], families=FAMILIES, names=NAMES, perfect=95.0, chance=30.0, title="bAbI")
    marginal, heat = fig.axes[0], fig.axes[1]
    mesh = next(collection for collection in heat.collections if isinstance(collection, QuadMesh))
    assert mesh.get_array().size == 12
    assert len(heat.texts) - 2 == 12  # one number per cell, plus the two families' names
    assert "n/a" in [text.get_text() for text in heat.texts]
    rows = [label.get_text() for label in heat.get_yticklabels()]
    assert rows == ["BERT (base)", "RoBERTa (large)", "electra-base", "qanet", "bidaf", "rasor"]  # family, then mean EM
    assert len(marginal.patches) == 3 * 2
    assert sorted(text.get_text() for text in marginal.texts) == ["1", "1", "2", "2", "2", "3"]  # the counts above, on their bars
    key = next(ax for ax in fig.axes if ax.get_legend() is not None)
    assert [text.get_text() for text in key.get_legend().get_texts()] == ["≥ 95 EM (perfect)", "in between", "≤ 30 EM (chance)"]
    assert_saves(fig, tmp_path, "babi")
