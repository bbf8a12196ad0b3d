"""From results to the approaches x benchmarks EM table an analysis works on.

One place applies the policy, the approach and benchmark selection, and collects what is
missing, so the CLI and the figure recipes report the same cells in the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from concur.analysis.labels import Labels, labels_for
from concur.analysis.measurement import Measurement, measurement_for
from concur.analysis.policy import Cells, Policy, reduce_runs
from concur.analysis.render import listed
from concur.analysis.results import Results
from concur.registry import Registry
from concur.registry.selection import select
from concur.registry.specs import APPROACH_FAMILIES, BENCHMARK_FAMILIES


@dataclass(frozen=True)
class EMTable:
    """The selected EM table (NaN = missing cell) and how it came to be."""

    wide: pd.DataFrame
    cells: Cells
    labels: Labels
    notes: tuple[str, ...]
    measurement: Measurement = field(default_factory=Measurement)  # the per-question outcomes behind its cells, where known

    def missing(self) -> list[tuple[str, str]]:
        rows, columns = np.nonzero(self.wide.isna().to_numpy())
        return [(str(self.wide.index[int(row)]), str(self.wide.columns[int(column)])) for row, column in zip(rows, columns)]

    def approach_families(self) -> dict[str, str]:
        return {approach: self.labels.approach_family.get(approach, "") for approach in self.wide.index}


def em_table(
    results: Results,
    *,
    policy: Policy | str,
    benches: str | None,
    approaches: str | None,
    registry: Registry | None,
    lenient: bool = False,
) -> EMTable:
    """Reduce `results` by `policy` and keep the requested approaches and benchmarks.

    `lenient` keeps going when a requested benchmark or approach is not in the results
    (a recipe drawn from a partial store) and notes what was left out.
    """
    cells = reduce_runs(results.frame, policy)
    labels = labels_for(results.frame, registry)
    wide = cells.wide()
    skipped: list[str] | None = [] if lenient else None
    bench_ids = select(list(wide.columns), benches, labels.benchmark_family, BENCHMARK_FAMILIES, "benchmark", skipped=skipped)
    approach_ids = select(list(wide.index), approaches, labels.approach_family, APPROACH_FAMILIES, "approach", skipped=skipped)
    wide = wide.loc[approach_ids, bench_ids]
    wide = wide.loc[wide.notna().any(axis=1)]  # approaches with no value on any chosen benchmark say nothing here
    notes = list(results.notes)
    if skipped:
        notes.append(f"not in these results, left out: {', '.join(skipped)}")
    excluded = cells.excluded[cells.excluded["benchmark"].isin(bench_ids) & cells.excluded["approach"].isin(approach_ids)]
    if len(excluded):
        notes.append(f"policy {cells.policy}: {len(excluded)} cell(s) have runs but none this policy uses ({excluded['reason'].iloc[0]})")
    measurement = measurement_for(wide, cells, results.questions)
    notes.extend(measurement.notes())
    table = EMTable(wide, cells, labels, tuple(notes), measurement)
    missing = table.missing()
    if missing:
        shown = listed([f"{approach}×{bench}" for approach, bench in missing])
        notes.append(f"{len(missing)} of {wide.size} cells missing (correlations are pairwise-complete; n per cell shown): {shown}")
        table = EMTable(wide, cells, labels, tuple(notes), measurement)
    return table
