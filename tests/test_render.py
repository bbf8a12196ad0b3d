"""How a concurrence matrix reads: small-n marks, n beside every value, the long form for narrow terminals."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from rich.console import Console

from concur.analysis.bootstrap import BootstrapSettings, bootstrap_matrix
from concur.analysis.concurrence import MIN_APPROACHES, concurrence_matrix, is_small_n
from concur.analysis.render import (
    counts_csv,
    matrix_csv,
    matrix_json,
    matrix_latex,
    matrix_markdown,
    pair_texts,
    small_n_note,
)
from concur.cli.analysis_cmds import show_matrix

# Five approaches; e has no value on b3, so pairs with b3 rest on four.
# b1 vs b2: of 10 pairs only (b, c) is discordant: tau = (9 - 1) / 10 = 0.8 over n = 5.
# b1 vs b3: a..d fully reversed: tau = -1 over n = 4.
# b2 vs b3 over a..d: b2 = 10 30 20 40, b3 = 40 30 20 10: only (b, c) concordant: (1 - 5) / 6 = -2/3.
HAND = pd.DataFrame(
    {"b1": [10.0, 20, 30, 40, 50], "b2": [10.0, 30, 20, 40, 50], "b3": [40.0, 30, 20, 10, float("nan")]},
    index=list("abcde"),
)


@pytest.fixture
def hand():
    return concurrence_matrix(HAND, "kendall")


def printed(matrix, width: int, ci=None) -> list[str]:
    console = Console(width=width, file=io.StringIO(), highlight=False)
    show_matrix(matrix, ci, None, console)
    return console.file.getvalue().splitlines()


def test_threshold_and_flags(hand):
    assert MIN_APPROACHES == 5
    assert is_small_n(4) and not is_small_n(5)
    assert hand.counts.to_numpy().tolist() == [[5, 5, 4], [5, 5, 4], [4, 4, 4]]
    assert hand.small_n().to_numpy().tolist() == [[False, False, True], [False, False, True], [True, True, True]]


def test_csv_stays_the_matrix_and_counts_come_alongside(hand):
    assert matrix_csv(hand.values).splitlines() == [
        "benchmark,b1,b2,b3",
        "b1,1.0000,0.8000,-1.0000",
        "b2,0.8000,1.0000,-0.6667",
        "b3,-1.0000,-0.6667,1.0000",
    ]
    assert counts_csv(hand.counts).splitlines() == ["benchmark,b1,b2,b3", "b1,5,5,4", "b2,5,5,4", "b3,4,4,4"]


def test_json_carries_n_and_the_flag_per_cell(hand):
    payload = matrix_json(hand, None, {})
    assert payload["values"] == [[1.0, 0.8, -1.0], [0.8, 1.0, -0.666667], [-1.0, -0.666667, 1.0]]
    assert payload["counts"] == [[5, 5, 4], [5, 5, 4], [4, 4, 4]]
    assert payload["small_n"] == [[False, False, True], [False, False, True], [True, True, True]]
    assert payload["min_approaches"] == 5


def test_note_lists_the_small_pairs(hand):
    assert small_n_note(hand) == "2 of 3 pair(s) rest on fewer than 5 approaches (†): b1×b3 (n=4), b2×b3 (n=4)"
    assert small_n_note(concurrence_matrix(HAND.loc[list("abcd")], "kendall")) == "every pair rests on 4 approaches, fewer than 5 (†)"
    assert small_n_note(concurrence_matrix(HAND[["b1", "b2"]], "kendall")) is None


def test_markdown_and_latex_mark_and_explain(hand):
    assert matrix_markdown(hand, None).splitlines() == [
        "| benchmark | b1 | b2 | b3 |",
        "|---|---|---|---|",
        "| b1 | 1.00 (n=5) | 0.80 (n=5) | -1.00† (n=4) |",
        "| b2 | 0.80 (n=5) | 1.00 (n=5) | -0.67† (n=4) |",
        "| b3 | -1.00† (n=4) | -0.67† (n=4) | 1.00† (n=4) |",
        "",
        "† n < 5 approaches: an unstable estimate",
    ]
    latex = matrix_latex(hand, None, "Kendall τ.")
    assert r"b1 & 1.00 (n=5) & 0.80 (n=5) & -1.00$^{\dagger}$ (n=4) \\" in latex
    assert r"\caption{Kendall $\tau$. $^{\dagger}$ n $<$ 5 approaches: an unstable estimate.}" in latex
    assert "†" not in matrix_markdown(concurrence_matrix(HAND[["b1", "b2"]], "kendall"), None)


def test_pairs_in_matrix_order_with_interval_and_n(hand):
    ci = bootstrap_matrix(HAND, "kendall", BootstrapSettings(200, 0))
    pairs = pair_texts(ci.estimate, ci)
    assert list(pairs.columns) == ["first", "second", "τ", "interval", "n"]
    assert pairs[["first", "second", "τ", "n"]].to_numpy().tolist() == [
        ["b1", "b2", "0.80", "5"],
        ["b1", "b3", "-1.00†", "4"],
        ["b2", "b3", "-0.67†", "4"],
    ]
    lower, upper = ci.lower.loc["b1", "b2"], ci.upper.loc["b1", "b2"]
    assert pairs["interval"].iloc[0] == f"[{lower:.2f}, {upper:.2f}]"
    reordered = concurrence_matrix(HAND[["b3", "b1", "b2"]], "kendall")
    assert pair_texts(reordered, None)[["first", "second"]].to_numpy().tolist() == [["b3", "b1"], ["b3", "b2"], ["b1", "b2"]]


def test_square_matrix_when_it_fits(hand):
    # widest cell "-1.00† (n=4)" is 12 characters: 5 borders + (9 + 2) + 3 * (12 + 2) = 58 columns
    assert printed(hand, 58) == [
        "┏━━━━━━━━━━━┳━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━┓",
        "┃ benchmark ┃ b1           ┃ b2           ┃ b3           ┃",
        "┡━━━━━━━━━━━╇━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━┩",
        "│ b1        │ 1.00 (n=5)   │ 0.80 (n=5)   │ -1.00† (n=4) │",
        "│ b2        │ 0.80 (n=5)   │ 1.00 (n=5)   │ -0.67† (n=4) │",
        "│ b3        │ -1.00† (n=4) │ -0.67† (n=4) │ 1.00† (n=4)  │",
        "└───────────┴──────────────┴──────────────┴──────────────┘",
        "† n < 5 approaches: an unstable estimate",
    ]


def test_one_row_per_pair_when_the_matrix_is_too_wide(hand):
    assert printed(hand, 57) == [
        "┏━━━━━━━┳━━━━━━━━┳━━━━━━━━┳━━━┓",
        "┃ first ┃ second ┃ τ      ┃ n ┃",
        "┡━━━━━━━╇━━━━━━━━╇━━━━━━━━╇━━━┩",
        "│ b1    │ b2     │ 0.80   │ 5 │",
        "│ b1    │ b3     │ -1.00† │ 4 │",
        "│ b2    │ b3     │ -0.67† │ 4 │",
        "└───────┴────────┴────────┴───┘",
        "Too wide for 57 columns: one row per pair.",
        "Full matrix: --format csv --out FILE",
        "† n < 5 approaches: an unstable estimate",
    ]


def test_no_footnote_without_small_n():
    lines = printed(concurrence_matrix(HAND[["b1", "b2"]], "kendall"), 80)
    assert lines[3] == "│ b1        │ 1.00 │ 0.80 │" and lines[5:] == ["└───────────┴──────┴──────┘", "n = 5 approaches in every cell"]
