"""Two benchmarks side by side: each correlation with its bootstrap interval and n, and whether they concur
differently with a third benchmark (`concur compare`).

`compare_benchmarks` is all of the command below the command line but the scatter plot (which
`concur.plots.pair` adds): the command only parses, calls and prints, so the same comparison can
be made and checked from Python. The texts of its table, its JSON and its plot's box are made
here too, from one formatting of a statistic, so that the three never disagree.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from concur.analysis.bootstrap import BootstrapSettings, Comparison, bootstrap_matrix, compare_with_reference
from concur.analysis.concurrence import METHOD_LABELS, METHOD_SYMBOLS, MIN_APPROACHES, Method, is_small_n, number_at
from concur.analysis.measurement import Measurement
from concur.analysis.policy import Policy
from concur.analysis.reliability import assess_matrix, verdict_at
from concur.analysis.render import INCONCLUSIVE_MARK, SMALL_N_MARK
from concur.analysis.results import Results
from concur.analysis.view import EMTable, em_table
from concur.errors import ConcurError
from concur.registry import Registry
from concur.registry.specs import id_problem

PAIR_DECIMALS = 3  # finer than a matrix cell's: one pair is read closely, and differences are small
PAIR_COLUMNS = ["statistic", "value", "interval", "ceiling", "n"]


@dataclass(frozen=True)
class PairEstimate:
    """One correlation between the two benchmarks, over the approaches that have both."""

    method: Method
    value: float
    lower: float
    upper: float
    n: int
    kind: str  # what the interval resamples: questions+approaches, or approaches only
    ceiling: float  # the most the two benchmarks' noise allows (NaN without per-question data)
    reliability: tuple[float, float]  # of the first and the second benchmark (NaN without per-question data)
    inconclusive: bool | None  # noise alone could explain it
    disattenuated: float  # Pearson: r over the ceiling (Spearman 1904); NaN for Kendall or without per-question data


@dataclass(frozen=True)
class PairComparison:
    first: str
    second: str
    estimates: list[PairEstimate]  # one per method
    versus_reference: list[Comparison]  # one per method when a reference was given, else none

    @property
    def n(self) -> int:
        """The approaches with a value on both benchmarks (every method's estimate rests on the same ones)."""
        return next(estimate.n for estimate in self.estimates if estimate.method is Method.kendall)

    @property
    def small_n(self) -> bool:
        """Whether any statistic shown, the estimates or the tests against the reference, rests on too few approaches."""
        return any(is_small_n(size) for size in [self.n, *(test.n for test in self.versus_reference)])


def compare_pair(
    wide: pd.DataFrame,
    first: str,
    second: str,
    settings: BootstrapSettings,
    reference: str | None = None,
    measurement: Measurement | None = None,
) -> PairComparison:
    """Pearson and Kendall between `first` and `second` with intervals, reliabilities and ceiling; with `reference`,
    the paired test of CORR(first, reference) - CORR(second, reference) for each. Intervals and tests resample the
    test questions too where `measurement` covers both benchmarks."""
    measurement = measurement or Measurement()
    estimates = []
    for method in Method:
        pair = wide[[first, second]]
        cell = bootstrap_matrix(pair, method, settings, measurement)
        value, n = cell.estimate.pair(first, second)
        noise = assess_matrix(pair, measurement, method, cell.estimate.values, cell)
        ceilings = noise.ceilings if noise is not None else None
        estimates.append(
            PairEstimate(
                method,
                value,
                number_at(cell.lower, first, second),
                number_at(cell.upper, first, second),
                n,
                cell.kind(first, second),
                number_at(ceilings.ceiling, first, second) if ceilings is not None else math.nan,
                (float(ceilings.reliability[first]), float(ceilings.reliability[second])) if ceilings is not None else (math.nan, math.nan),
                verdict_at(noise.inconclusive, first, second) if noise is not None else None,
                number_at(ceilings.disattenuated, first, second)
                if ceilings is not None and ceilings.disattenuated is not None
                else math.nan,
            )
        )
    tests = (
        [compare_with_reference(wide, reference, first, second, method, settings, measurement) for method in Method] if reference else []
    )
    return PairComparison(first, second, estimates, tests)


@dataclass(frozen=True)
class PairRequest:
    """What `concur compare` is asked, checked when made: benchmark ids (they name the plot's file), all different.

    An empty `reference` is none, as an empty option is.
    """

    first: str
    second: str
    reference: str | None = None
    policy: Policy = Policy.best
    approaches: str | None = None
    bootstrap: BootstrapSettings = field(default_factory=BootstrapSettings)

    def __post_init__(self) -> None:
        named = self.benchmarks
        if len(set(named)) < len(named):
            raise ConcurError(f"compare needs different benchmarks, got {', '.join(named)}")
        for name in named:
            if problem := id_problem(name):
                raise ConcurError(f"compare takes benchmark ids: {problem}")

    @property
    def benchmarks(self) -> list[str]:
        return [self.first, self.second, *([self.reference] if self.reference else [])]


@dataclass(frozen=True)
class BenchmarkPair:
    """A compared pair and the EM table it was compared on (whose labels and families its plot shows)."""

    request: PairRequest
    table: EMTable
    comparison: PairComparison


def compare_benchmarks(
    results: Results, request: PairRequest, *, registry: Registry | None, note: Callable[[str], None] = lambda _: None
) -> BenchmarkPair:
    """Select the request's benchmarks and approaches from `results` and compare the pair.

    A family or a pattern in place of an id is refused (a pair is two benchmarks). The table's
    notes (missing cells, replaced cells) go to `note` before the bootstrap starts, so a user
    reads them before waiting, and before any later error.
    """
    named = request.benchmarks
    table = em_table(results, policy=request.policy, benches=",".join(named), approaches=request.approaches, registry=registry)
    not_ids = [name for name in named if name not in table.wide.columns]
    if not_ids:
        raise ConcurError(f"compare takes benchmark ids, not families or patterns: {', '.join(not_ids)}")
    for line in table.notes:
        note(line)
    comparison = compare_pair(table.wide, request.first, request.second, request.bootstrap, request.reference, table.measurement)
    return BenchmarkPair(request, table, comparison)


def pair_title(pair: BenchmarkPair) -> str:
    """The heading of the pair's table: which benchmarks, and the bootstrap behind the intervals."""
    request, settings = pair.request, pair.request.bootstrap
    return (
        f"{request.first} vs {request.second} ({int(settings.confidence * 100)}% {settings.interval} intervals, "
        f"{settings.n_resamples} resamples, seed {settings.seed})"
    )


def pair_rows(pair: BenchmarkPair) -> list[list[str]]:
    """The rows of `PAIR_COLUMNS`: one per correlation (marked when inconclusive), its disattenuated value where known,
    each benchmark's reliability, then one row per test against the reference (with its p-value)."""
    comparison = pair.comparison
    rows = []
    for estimate in comparison.estimates:
        marked = _text(estimate.value) + (INCONCLUSIVE_MARK if estimate.inconclusive and not math.isnan(estimate.value) else "")
        rows.append(
            [
                METHOD_LABELS[estimate.method],
                marked,
                _interval(estimate.lower, estimate.upper),
                _text(estimate.ceiling),
                _n_text(estimate.n),
            ]
        )
        if not math.isnan(estimate.disattenuated):
            rows.append([f"{METHOD_LABELS[estimate.method]}, disattenuated", _text(estimate.disattenuated), "", "", _n_text(estimate.n)])
    for estimate in comparison.estimates:
        for bench, reliability in zip((comparison.first, comparison.second), estimate.reliability):
            if not math.isnan(reliability):
                rows.append([f"{METHOD_LABELS[estimate.method]} reliability of {bench}", _text(reliability), "", "", _n_text(estimate.n)])
    for test in comparison.versus_reference:
        reference = test.reference
        label = f"{METHOD_LABELS[test.method]}: ({test.first}, {reference}) - ({test.second}, {reference})"
        p_value = "n/a" if math.isnan(test.p_value) else f"{test.p_value:.3f}"
        rows.append([label, _text(test.difference), _interval(test.lower, test.upper), "", f"{_n_text(test.n)}  p = {p_value}"])
    return rows


def pair_notes(pair: BenchmarkPair) -> list[str]:
    """What the table's marks and intervals mean for this pair."""
    kinds = sorted({estimate.kind for estimate in pair.comparison.estimates})
    notes = [f"intervals resample: {' / '.join(kinds)}"]
    if any(estimate.inconclusive for estimate in pair.comparison.estimates):
        notes.append(f"{INCONCLUSIVE_MARK} inconclusive: noise alone could explain it (interval includes 0, or ceiling below 0.5)")
    if all(math.isnan(estimate.ceiling) for estimate in pair.comparison.estimates):
        notes.append("no ceiling or reliability: these results have no per-question outcomes for both benchmarks")
    return notes


def pair_stats_text(comparison: PairComparison) -> str:
    """The plot's text box: each correlation with its interval (and ceiling where known), then n (flagged when small)."""
    lines = [
        f"{METHOD_SYMBOLS[estimate.method]} = {_text(estimate.value)} {_interval(estimate.lower, estimate.upper)}"
        + ("" if math.isnan(estimate.ceiling) else f", ceiling {_text(estimate.ceiling)}")
        for estimate in comparison.estimates
    ]
    n = comparison.n
    lines.append(f"n = {n}" + (f" (fewer than {MIN_APPROACHES} approaches)" if is_small_n(n) else ""))
    return "\n".join(lines)


def pair_json(pair: BenchmarkPair, plot: list[Path]) -> dict[str, Any]:
    """Everything behind the comparison, for programs: the settings, each estimate and each test by name, the plot's files.

    An undefined statistic is null (JSON has no NaN); values are not rounded.
    """
    request = pair.request
    payload: dict[str, Any] = {
        "first": request.first,
        "second": request.second,
        "policy": str(request.policy),
        "interval": str(request.bootstrap.interval),
        "confidence": request.bootstrap.confidence,
        "min_approaches": MIN_APPROACHES,
    }
    for estimate in pair.comparison.estimates:
        payload[str(estimate.method)] = {
            **_numbers(
                value=estimate.value,
                lower=estimate.lower,
                upper=estimate.upper,
                ceiling=estimate.ceiling,
                disattenuated=estimate.disattenuated,
            ),
            "reliability": _numbers(**dict(zip((request.first, request.second), estimate.reliability))),
            "n": estimate.n,
            "small_n": is_small_n(estimate.n),
            "kind": estimate.kind,
            "inconclusive": estimate.inconclusive,
        }
    for test in pair.comparison.versus_reference:
        payload[f"versus_{test.reference}_{test.method}"] = {
            **_numbers(
                first=test.first_value,
                second=test.second_value,
                difference=test.difference,
                lower=test.lower,
                upper=test.upper,
                p_value=test.p_value,
            ),
            "n": test.n,
            "small_n": is_small_n(test.n),
        }
    payload["plot"] = [str(path) for path in plot]
    return payload


def _text(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.{PAIR_DECIMALS}f}"


def _interval(lower: float, upper: float) -> str:
    return f"[{_text(lower)}, {_text(upper)}]"


def _n_text(n: int) -> str:
    return f"{n}{SMALL_N_MARK}" if is_small_n(n) else str(n)


def _numbers(**values: float) -> dict[str, float | None]:
    return {name: None if math.isnan(value) else float(value) for name, value in values.items()}
