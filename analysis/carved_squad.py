"""The two sides of the `squad-dev-carved` benchmark, read as its spec says, for the measuring scripts.

The scripts read the MRQA SQuAD dev file from a data root (../shared/data or --source-dir)
and carve it with the spec's own settings (by passage, 20% for testing, seed 0), so their
questions are the benchmark's without preparing it in a runs dir.
"""

from __future__ import annotations

from pathlib import Path

from concur.data.model import Split
from concur.data.mrqa import read_mrqa
from concur.data.transforms import carve
from concur.registry.registry import default_registry
from concur.registry.specs import Carve
from concur.workspace import data_roots

BENCHMARK = "squad-dev-carved"


def _carve_settings() -> tuple[str, Carve]:
    spec = default_registry().benchmark(BENCHMARK)
    assert spec.carve is not None
    return spec.sources[spec.carve.source].path, spec.carve


def squad_dev_path(source_dirs: list[Path]) -> Path:
    """The benchmark's source file under the first data root holding it; exits naming the roots searched."""
    relative, _ = _carve_settings()
    roots = data_roots(tuple(source_dirs))
    path = next((root / relative for root in roots if (root / relative).is_file()), None)
    if path is None:
        raise SystemExit(f"{relative} not found under {', '.join(map(str, roots)) or 'no data root'}; pass --source-dir")
    return path


def carved_squad(path: Path) -> tuple[Split, Split]:
    """(train, test) of squad-dev-carved from its source file at `path`."""
    _, plan = _carve_settings()
    return carve(read_mrqa(path), by=plan.by, test_fraction=plan.test_fraction, seed=plan.seed)
