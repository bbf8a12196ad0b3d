"""Where results come from: `--results liu2023|store|<leaderboard>|FILE.csv`, combined.

Several sources can be combined (`--results liu2023 --results store`, or `liu2023+store`):
e.g. one approach run locally placed among the 20 published ones. When two sources hold
the same (approach, benchmark) cell, the later one replaces it and a note says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from concur.analysis.leaderboards import LEADERBOARDS, load_leaderboard
from concur.analysis.reference import liu2023, liu2023_published_squad
from concur.analysis.tidy import read_tidy_csv, tidy_frame
from concur.data.sources import SourceLocator
from concur.errors import ConcurError, MissingSourceError, UnknownNameError
from concur.runner.store import Store

STORE = "store"
REFERENCES = {"liu2023": liu2023, "liu2023-published": liu2023_published_squad}
NAMED_SOURCES = (*REFERENCES, STORE, *LEADERBOARDS)
SEPARATOR = "+"
OK_STATUS = "ok"


@dataclass(frozen=True)
class Results:
    """A tidy table and what the user should know about how it was assembled."""

    frame: pd.DataFrame
    sources: tuple[str, ...]
    notes: tuple[str, ...]


def load_results(requests: list[str], *, store_path: Path, locator: SourceLocator) -> Results:
    """Read and combine every requested source, in order."""
    names = [part for request in requests for part in _split(request)]
    if not names:
        raise ConcurError(f"no results given; use --results with one of {', '.join(NAMED_SOURCES)} or a CSV file")
    frames: list[pd.DataFrame] = []
    notes: list[str] = []
    for name in names:
        frame, source_notes = _load_one(name, store_path, locator)
        notes.extend(source_notes)
        frames.append(frame.assign(source=name))
    combined, overridden = _combine(frames)
    notes.extend(overridden)
    return Results(combined, tuple(names), tuple(notes))


def store_results(store_path: Path) -> tuple[pd.DataFrame, list[str]]:
    """Finished jobs of the SQLite index as a tidy table; failed jobs are counted, not used."""
    if not store_path.is_file():
        raise MissingSourceError(f"no results store at {store_path}; run jobs with `concur run` first, or pass --runs-dir")
    rows = Store(store_path).rows()
    ok = [row for row in rows if row["status"] == OK_STATUS]
    frame = pd.DataFrame(ok, columns=["approach", "benchmark", "hparam_id", "seed", "em", "f1"])
    notes = []
    if len(ok) < len(rows):
        notes.append(f"store: {len(rows) - len(ok)} failed job(s) left out (see `concur status`)")
    return tidy_frame(frame, str(store_path)), notes


def _split(request: str) -> list[str]:
    if Path(request).is_file():
        return [request]
    return [part.strip() for part in request.split(SEPARATOR) if part.strip()]


def _load_one(name: str, store_path: Path, locator: SourceLocator) -> tuple[pd.DataFrame, list[str]]:
    if name in REFERENCES:
        return REFERENCES[name](), []
    if name == STORE:
        return store_results(store_path)
    if name in LEADERBOARDS:
        imported = load_leaderboard(name, locator)
        return imported.frame, list(imported.notes)
    path = Path(name)
    if path.suffix.lower() == ".csv" or path.exists():
        return read_tidy_csv(path), []
    raise UnknownNameError("results source", name, NAMED_SOURCES)


def _combine(frames: list[pd.DataFrame]) -> tuple[pd.DataFrame, list[str]]:
    combined = frames[0]
    notes = []
    for frame in frames[1:]:
        cells = pd.MultiIndex.from_frame(frame[["approach", "benchmark"]].astype(str))
        existing = pd.MultiIndex.from_frame(combined[["approach", "benchmark"]].astype(str))
        replaced = existing.isin(cells)
        if replaced.any():
            pairs = sorted(set(existing[replaced]))
            shown = ", ".join(f"{approach}×{bench}" for approach, bench in pairs[:6]) + (", ..." if len(pairs) > 6 else "")
            notes.append(f"{frame['source'].iloc[0]} replaces {len(pairs)} cell(s) of earlier results: {shown}")
        combined = pd.concat([combined[~replaced], frame], ignore_index=True)
    return combined, notes
