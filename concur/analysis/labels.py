"""Families and display names of the ids in a results table, for slicing and plotting.

A table's own label columns win (leaderboards name their systems); then the registry's
specs; then the reference study's families (for ids whose specs are not registered).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

import pandas as pd

from concur.analysis.reference import reference_families
from concur.errors import ConcurError
from concur.registry import Registry

_Spec = TypeVar("_Spec")


@dataclass(frozen=True)
class Labels:
    approach_family: dict[str, str]
    benchmark_family: dict[str, str]
    approach_name: dict[str, str]
    benchmark_name: dict[str, str]

    def approach_names(self, ids: Iterable[str]) -> dict[str, str]:
        return {item: self.approach_name.get(item, item) for item in ids}

    def benchmark_names(self, ids: Iterable[str]) -> dict[str, str]:
        return {item: self.benchmark_name.get(item, item) for item in ids}


def labels_for(frame: pd.DataFrame, registry: Registry | None) -> Labels:
    """Collect the labels of every approach and benchmark in `frame`."""
    approach_family, benchmark_family = reference_families()
    approach_name: dict[str, str] = {}
    benchmark_name: dict[str, str] = {}
    if registry is not None:
        for approach in _specs(registry.approaches):
            approach_family[approach.id], approach_name[approach.id] = approach.family, approach.name
        for benchmark in _specs(registry.benchmarks):
            benchmark_family[benchmark.id], benchmark_name[benchmark.id] = benchmark.family, benchmark.name
    for column, mapping, key in (
        ("approach_family", approach_family, "approach"),
        ("benchmark_family", benchmark_family, "benchmark"),
        ("approach_name", approach_name, "approach"),
        ("benchmark_name", benchmark_name, "benchmark"),
    ):
        if column in frame.columns:
            given = frame[[key, column]].dropna().drop_duplicates(key)
            mapping.update(zip(given[key].astype(str), given[column].astype(str)))
    return Labels(approach_family, benchmark_family, approach_name, benchmark_name)


def _specs(listing: Callable[[], list[_Spec]]) -> list[_Spec]:
    """The registry's specs; a broken user spec should not stop an analysis of other ids."""
    try:
        return listing()
    except ConcurError:
        return []
