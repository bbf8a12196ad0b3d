"""The train and test sides of any registry benchmark, for the measuring scripts, without a runs dir.

The benchmark is prepared as `concur data prepare` prepares it (a carve checked against the sizes its
spec records, a generator run with its seed), from the data roots (../shared/data or --source-dir) and
concur's download cache, into a directory the caller owns; the sides are then read back from there.
A script that starts several processes prepares once and hands them the directory, so each child
only reads. Problems (an unknown benchmark, a source that is missing offline, a carve of another
size) end the script with concur's one-line message.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from concur.data.model import Split
from concur.data.prepare import prepare, prepared
from concur.data.sources import SourceLocator
from concur.errors import ConcurError
from concur.registry.registry import default_registry
from concur.workspace import Workspace, data_roots

DEFAULT_BENCHMARK = "squad-dev-carved"  # real questions, trains and tests offline from ../shared/data alone


def benchmark_sides(benchmark: str, source_dirs: Sequence[Path], data_dir: Path) -> tuple[Split, Split]:
    """(train, test) of `benchmark`, prepared into `data_dir` unless it is there already."""
    try:
        spec = default_registry().benchmark(benchmark)
        bench = prepared(data_dir, spec)
        if bench is None:
            locator = SourceLocator(tuple(data_roots(tuple(source_dirs))), Workspace.resolve().cache_dir)
            bench, _ = prepare(spec, locator, data_dir)
        return bench.load("train"), bench.load("test")
    except ConcurError as error:
        raise SystemExit(f"benchmark {benchmark!r}: {error}") from None
