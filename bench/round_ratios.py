"""One rate over another within each round of an interleaved benchmark, summarised over the rounds.

On the 2-core development machine the same code's rate moves 10-40% between rounds, while the
systems of one round run minutes apart. A ratio taken within a round cancels most of that drift,
which a ratio of the two systems' medians over all rounds keeps.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any


def by_round(mine: Mapping[int, float], theirs: Mapping[int, float]) -> dict[str, Any] | None:
    """mine[r] / theirs[r] over the rounds r both ran: median, min, max, and in how many rounds mine was higher (None: no such round)."""
    ratios = [mine[round_] / theirs[round_] for round_ in sorted(mine.keys() & theirs.keys())]
    if not ratios:
        return None
    ahead = sum(ratio > 1 for ratio in ratios)
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios), "ahead": ahead, "rounds": len(ratios)}


def describe(ratios: dict[str, Any] | None, ahead: bool = True) -> str:
    """`1.05x (0.98-1.10), ahead in 3 of 4` (without the last part if not `ahead`); `-` for None."""
    if ratios is None:
        return "-"
    text = f"{ratios['median']:.2f}x ({ratios['min']:.2f}-{ratios['max']:.2f})"
    return f"{text}, ahead in {ratios['ahead']} of {ratios['rounds']}" if ahead else text
