"""Is a grid's data on this machine? Checked before any job runs: every missing source file, who needs it, how to get it.

A study runs unattended for hours; a benchmark that cannot be prepared halfway through (an
offline node, a file nobody copied) would stop it after hours of work, or leave a hole
nobody noticed. So the driver looks for every benchmark's sources first, where preparing
would (`--source-dir` / `$CONCUR_DATA_ROOT`, then the cache; `concur.data.sources`), and
refuses to start while any is missing, with one message naming each file, the benchmarks
that need it and the ways to get it. Prepared benchmarks need no sources. Nothing is looked
for in a default place: a data root is always given. `benchmark_data` says the same of one
benchmark for `concur benches`, so a user can choose what to run on an offline machine.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from concur.data.prepare import offline_availability, offline_missing
from concur.data.sources import SourceLocator
from concur.errors import MissingSourceError
from concur.registry.specs import BenchmarkSpec, SourceFile
from concur.workspace import DATA_ROOT_ENV


@dataclass(frozen=True)
class MissingSource:
    """A source file neither under a data root nor in the cache, and the benchmarks that need it."""

    source: SourceFile
    benchmarks: tuple[str, ...]

    @property
    def downloadable(self) -> bool:
        return self.source.origin is not None

    def describe(self) -> str:
        how = f"download: {self.source.origin} (needs internet)" if self.downloadable else "no download URL (a local copy is the only way)"
        return f"{self.source.path}  needed by {', '.join(self.benchmarks)}; {how}"


@dataclass(frozen=True)
class BenchmarkData:
    """Where a benchmark's data would come from on this machine."""

    data: str  # prepared, damaged, missing, download, generate (its generator makes the splits), local or cache
    offline: str  # as `offline_availability` says it: prepared, generated, sources found, missing: PATH or damaged: PATH
    sources: dict[str, str]  # each source file's place: local, cache, download or missing


def benchmark_data(spec: BenchmarkSpec, locator: SourceLocator, data_dir: Path) -> BenchmarkData:
    """Look where the benchmark's data is without reading or fetching any source; prepared data is verified,
    and prepared data that fails its manifest check is `damaged`, not an error."""
    places = {name: locator.availability(source) for name, source in spec.sources.items()}
    offline = offline_availability(spec, locator, data_dir)
    if offline == "prepared" or offline.startswith("damaged"):
        data = offline.split(":")[0]
    elif "missing" in places.values():
        data = "missing"
    elif "download" in places.values():
        data = "download"
    elif spec.generator is not None:
        data = "generate"  # inputs (if any) are at hand; the generator makes the splits
    else:
        data = "local" if "local" in places.values() else "cache"
    return BenchmarkData(data, offline, places)


def missing_sources(benches: Iterable[BenchmarkSpec], locator: SourceLocator, data_dir: Path) -> list[MissingSource]:
    """Each source file the unprepared benchmarks still need and this machine does not hold, once, in first-needed order."""
    needed: dict[str, tuple[SourceFile, list[str]]] = {}
    checked: set[str] = set()
    for spec in benches:
        if spec.id in checked:
            continue
        checked.add(spec.id)
        for source in offline_missing(spec, locator, data_dir):
            benchmarks = needed.setdefault(source.path, (source, []))[1]
            if spec.id not in benchmarks:  # two sources of one benchmark can be one file (train and test in one archive)
                benchmarks.append(spec.id)
    return [MissingSource(source, tuple(benchmarks)) for source, benchmarks in needed.values()]


def check_sources(benches: Iterable[BenchmarkSpec], locator: SourceLocator, data_dir: Path, *, download: bool) -> None:
    """Raise a `MissingSourceError` naming every missing file, unless all can be had (with `download`, fetched).

    Without `download` every file must be at hand; with it, only files without a download URL stop the run.
    """
    missing = [item for item in missing_sources(benches, locator, data_dir) if not (download and item.downloadable)]
    if missing:
        raise MissingSourceError(f"no job was started: {missing_message(missing, locator, download=download)}")


def missing_message(missing: list[MissingSource], locator: SourceLocator, *, download: bool) -> str:
    """Each missing file with its benchmarks and how to get it, and where it was looked for."""
    roots = ", ".join(str(root) for root in locator.data_roots) or f"none given (no --source-dir, ${DATA_ROOT_ENV} not set)"
    files = "1 source file is" if len(missing) == 1 else f"{len(missing)} source files are"
    lines = [
        f"{files} not on this machine (data roots: {roots}; cache: {locator.cache_dir / 'sources'}):",
        *(f"  {item.describe()}" for item in missing),
        f"Put each file at DIR/<path> (or DIR/<path>.gz) and pass --source-dir DIR or set {DATA_ROOT_ENV}=DIR.",
    ]
    if not download and any(item.downloadable for item in missing):
        lines.append(
            "With internet access, add --download to fetch the files with a URL into the cache, or prepare first: "
            f"concur data prepare {' '.join(dict.fromkeys(b for item in missing if item.downloadable for b in item.benchmarks))}"
        )
    return "\n".join(lines)
