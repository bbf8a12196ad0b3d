"""The reference study's published EM tables, bundled as package data (see data/README.md).

Liu, Lee, Jia & Liang (2023) report one EM per approach and benchmark; the values were
already reduced over their hyperparameter settings, so rows carry no `hparam_id` and every
policy takes them as they are.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from concur.analysis.tidy import tidy_frame

DATA_DIR = Path(__file__).parent / "data"
SPEC_FILE = DATA_DIR / "liu2023.toml"


@cache
def reference_spec() -> dict[str, Any]:
    with SPEC_FILE.open("rb") as handle:
        return tomllib.load(handle)


def reference_families() -> tuple[dict[str, str], dict[str, str]]:
    """(approach id -> family, benchmark id -> family) as the reference study assigns them."""
    spec = reference_spec()

    def invert(table: dict[str, list[str]]) -> dict[str, str]:
        return {item: family for family, items in table.items() for item in items}

    return invert(spec["approach_families"]), invert(spec["benchmark_families"])


def liu2023() -> pd.DataFrame:
    """The 20 approaches x 44 benchmarks of the paper's appendix tables, as a tidy table."""
    spec = reference_spec()
    path = DATA_DIR / spec["em_file"]
    raw = pd.read_csv(path, dtype=str)
    frame = raw.rename(
        columns={"approach_id": "approach", "benchmark_id": "benchmark", "approach": "approach_name", "benchmark": "benchmark_name"}
    )
    return _with_families(tidy_frame(frame, str(path), first_line=2))


def liu2023_published_squad() -> pd.DataFrame:
    """Table 5: the SQuAD v1.1 dev EM each approach's own paper published (where it did)."""
    spec = reference_spec()
    path = DATA_DIR / spec["published_squad_file"]
    raw = pd.read_csv(path, dtype=str).dropna(subset=["published_squad11_dev_em"])
    frame = pd.DataFrame(
        {
            "approach": raw["approach_id"],
            "benchmark": spec["published_squad_benchmark"],
            "em": raw["published_squad11_dev_em"],
            "benchmark_name": spec["published_squad_name"],
        }
    )
    names = liu2023().drop_duplicates("approach").set_index("approach")["approach_name"]
    frame["approach_name"] = frame["approach"].map(names)
    return _with_families(tidy_frame(frame, str(path)))


def _with_families(frame: pd.DataFrame) -> pd.DataFrame:
    approach_families, benchmark_families = reference_families()
    frame["approach_family"] = frame["approach"].map(approach_families).astype("string")
    frame["benchmark_family"] = frame["benchmark"].map(benchmark_families).astype("string")
    return frame
