"""The one shape every result source is turned into.

A tidy table has one row per run: `approach, benchmark, hparam_id, seed, em, f1`
(docs/analysis.md). `hparam_id` 0 is the approach's published SQuAD setting;
a missing `hparam_id` marks a value that was already reduced before it reached us
(a published table or a leaderboard), which every policy takes as it is. Optional
columns carry what plots need: `approach_family`, `benchmark_family`,
`approach_name`, `benchmark_name`.

A user's results file is a CSV, or a JSON array of flat objects with the same fields. EM and
F1 are percentages (0-100) as the official scripts print them; an imported column whose
values all lie within 0-1 is refused as a 0-1 scale, which would otherwise rank and
correlate like percentages and be wrong in every figure by a factor of 100.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from concur.errors import DataFormatError
from concur.userfiles import load_json_list

KEY_COLUMNS = ("approach", "benchmark", "hparam_id", "seed")
TIDY_COLUMNS = (*KEY_COLUMNS, "em", "f1")
REQUIRED_COLUMNS = ("approach", "benchmark", "em")
LABEL_COLUMNS = ("approach_family", "benchmark_family", "approach_name", "benchmark_name")
SCORE_RANGE = (0.0, 100.0)  # EM and F1 are percentages, as in the official scripts
FRACTION_SCALE_TOP = 1.0  # an imported score column entirely within [0, 1] is on the wrong scale
SHOWN_VALUES = 4  # values a scale error quotes
CSV_FIRST_DATA_LINE = 2  # line 1 is the header
JSON_SUFFIX = ".json"
JSON_EXAMPLE = '[{"approach": "bidaf", "benchmark": "squad", "em": 67.7, "f1": 77.3}, ...]'


def tidy_frame(
    frame: pd.DataFrame,
    origin: str,
    *,
    first_line: int | None = None,
    lines: Sequence[int] | None = None,
    imported: bool = False,
) -> pd.DataFrame:
    """Check and normalise a results table; errors name `origin` and, for files, the line.

    `first_line` is the file line of the frame's first row (CSV input), or `lines` the line
    of each row (JSON input), so that a bad value is reported where the user can find it.
    An `imported` table (a user's or a leaderboard's file) must also not be on a 0-1 scale.
    """
    frame = frame.reset_index(drop=True)
    if lines is None and first_line is not None:
        lines = range(first_line, first_line + len(frame))
    tidy = run_keys(frame, origin, lines, REQUIRED_COLUMNS, f"a results table needs {', '.join(TIDY_COLUMNS)}")
    for column in ("em", "f1"):
        tidy[column] = _scores(frame, column, origin, lines, required=column == "em")
        if imported:
            _reject_fraction_scale(tidy[column], column, origin, lines)
    for column in LABEL_COLUMNS:
        if column in frame.columns:
            tidy[column] = frame[column].astype("string")
    _reject_duplicates(tidy, origin, lines)
    return tidy


@dataclass(frozen=True)
class RawTable:
    """A user's file as read, before any layout is applied: text values (NA where empty) and each row's file line."""

    frame: pd.DataFrame
    lines: list[int]


def run_keys(frame: pd.DataFrame, origin: str, lines: Sequence[int] | None, required: Sequence[str], needs: str) -> pd.DataFrame:
    """The run of every row (`KEY_COLUMNS`: names checked, `hparam_id` and `seed` whole numbers or missing), once the
    `required` columns are there; a missing one is an error naming them and what the table `needs`."""
    missing = [column for column in required if column not in frame.columns]
    if missing:
        raise DataFormatError(origin, f"missing column(s) {', '.join(missing)}; {needs}")
    keys = pd.DataFrame({column: _name_column(frame, column, origin, lines) for column in ("approach", "benchmark")})
    for column in ("hparam_id", "seed"):
        keys[column] = _integer_column(frame, column, origin, lines)
    return keys


def read_tidy_file(path: Path) -> pd.DataFrame:
    """A user's results file: JSON when it is named `*.json`, else CSV."""
    raw = read_raw_table(path)
    return tidy_frame(raw.frame, str(path), lines=raw.lines, imported=True)


def read_tidy_json(path: Path) -> pd.DataFrame:
    """A user's results as a JSON array of flat objects with the fields of `TIDY_COLUMNS` (`hparam_id`, `seed`, `f1` optional)."""
    raw = read_raw_json(path)
    return tidy_frame(raw.frame, str(path), lines=raw.lines, imported=True)


def read_tidy_csv(path: Path) -> pd.DataFrame:
    """A user's results CSV (columns as `TIDY_COLUMNS`; `hparam_id`, `seed`, `f1` optional)."""
    raw = read_raw_csv(path)
    return tidy_frame(raw.frame, str(path), lines=raw.lines, imported=True)


def read_raw_table(path: Path) -> RawTable:
    """A user's table file, whatever its layout (concur.analysis.layouts): JSON when named `*.json`, else CSV."""
    return read_raw_json(path) if path.suffix.lower() == JSON_SUFFIX else read_raw_csv(path)


def read_raw_json(path: Path) -> RawTable:
    """A JSON array of flat objects (numbers, text or null) as a table of text, each row with its object's line."""
    entries = load_json_list(path)
    rows = [_flat_row(path, line, index, entry) for index, (line, entry) in enumerate(entries, start=1)]
    return RawTable(pd.DataFrame(rows, dtype=object), [line for line, _ in entries])


def read_raw_csv(path: Path) -> RawTable:
    """A CSV file with a header line as a table of text (empty cells NA), row i on line i + 2."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""], comment=None)
    except FileNotFoundError:
        raise DataFormatError(path, "no such file") from None
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise DataFormatError(path, f"not a readable CSV table ({exc})") from None
    return RawTable(frame, list(range(CSV_FIRST_DATA_LINE, CSV_FIRST_DATA_LINE + len(frame))))


def _flat_row(path: Path, line: int, index: int, entry: Any) -> dict[str, Any]:
    """One JSON results entry: an object whose values are numbers, text or null (nothing nested)."""
    if not isinstance(entry, dict):
        raise DataFormatError(path, f"entry {index} must be an object like {JSON_EXAMPLE}, got {entry!r}", line)
    for key, value in entry.items():
        if isinstance(value, dict | list | bool):
            kind = "a nested object" if isinstance(value, dict) else "a list" if isinstance(value, list) else "true/false"
            raise DataFormatError(path, f"entry {index}, field {key!r}: must be a number, text or null, not {kind} ({value!r})", line)
    return {key: None if value is None else str(value) for key, value in entry.items()}


def _where(origin: str, lines: Sequence[int] | None, row: int) -> tuple[str, int | None, str]:
    if lines is None:
        return origin, None, f" (row {row})"
    return origin, lines[row], ""


def _name_column(frame: pd.DataFrame, column: str, origin: str, lines: Sequence[int] | None) -> pd.Series:
    """`column`'s names, stripped; an empty one, or one with a comma (lists are comma-separated), is an error at its line."""
    values = frame[column].astype("string").str.strip()
    bad = values.isna() | (values == "") | values.str.contains(",", regex=False).fillna(False)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        path, line, suffix = _where(origin, lines, row)
        raise DataFormatError(path, f"column {column!r} must be a non-empty name without commas{suffix}", line)
    return values


def _integer_column(frame: pd.DataFrame, column: str, origin: str, lines: Sequence[int] | None) -> pd.Series:
    """`column` as `Int64` (all NA when the frame has no such column); a value that is not a whole number is an error at its line."""
    if column not in frame.columns:
        return pd.Series(pd.NA, index=frame.index, dtype="Int64")
    raw = frame[column]
    numbers = pd.to_numeric(raw, errors="coerce")
    bad = (numbers.isna() & raw.notna()) | (numbers.notna() & (numbers != np.floor(numbers.fillna(0))))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        path, line, suffix = _where(origin, lines, row)
        raise DataFormatError(path, f"column {column!r} must be a whole number or empty, got {raw.iloc[row]!r}{suffix}", line)
    return numbers.astype("Int64")


def _scores(frame: pd.DataFrame, column: str, origin: str, lines: Sequence[int] | None, *, required: bool) -> pd.Series:
    if column not in frame.columns:
        return pd.Series(np.nan, index=frame.index, dtype=float)
    raw = frame[column]
    numbers = pd.to_numeric(raw, errors="coerce").astype(float)
    low, high = SCORE_RANGE
    unreadable = numbers.isna() & (raw.notna() if not required else True)
    outside = numbers.notna() & ((numbers < low) | (numbers > high))
    bad = unreadable | outside
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        path, line, suffix = _where(origin, lines, row)
        value = raw.iloc[row]
        problem = "is missing" if pd.isna(value) else f"must be a number from {low:g} to {high:g} (a percentage), got {value!r}"
        raise DataFormatError(path, f"column {column!r} {problem}{suffix}", line)
    return numbers


def _reject_fraction_scale(scores: pd.Series, column: str, origin: str, lines: Sequence[int] | None) -> None:
    """Scores that all lie within 0-1 are fractions, not percentages (one repeated value, e.g. all 0, says nothing)."""
    low, high = SCORE_RANGE
    present = scores.dropna()
    if present.nunique() < 2 or not present.between(low, FRACTION_SCALE_TOP).all():
        return
    row = int(present.index[0])
    path, line, suffix = _where(origin, lines, row)
    shown = ", ".join(f"{value:g}" for value in present.iloc[:SHOWN_VALUES]) + (", ..." if len(present) > SHOWN_VALUES else "")
    raise DataFormatError(
        path,
        f"column {column!r} looks like a 0-1 scale: all {len(present)} values lie within 0-1 ({shown}){suffix}; "
        f"scores are percentages from {low:g} to {high:g}, so multiply them by 100",
        line,
    )


def _reject_duplicates(tidy: pd.DataFrame, origin: str, lines: Sequence[int] | None) -> None:
    keys = tidy[list(KEY_COLUMNS)].astype("string").fillna("<none>")
    duplicated = keys.duplicated(keep=False)
    if duplicated.any():
        rows = np.flatnonzero(duplicated.to_numpy())
        first = keys.iloc[rows[0]]
        twins = [int(row) for row in rows if keys.iloc[row].equals(first)]
        path, line, suffix = _where(origin, lines, twins[1])
        where = ", ".join(str(lines[row] if lines is not None else row) for row in twins)
        raise DataFormatError(
            path,
            f"the run ({', '.join(f'{column}={first[column]}' for column in KEY_COLUMNS)}) appears more than once "
            f"({'lines' if lines is not None else 'rows'} {where}){suffix}; give each seed or hyperparameter sample its own id",
            line,
        )
