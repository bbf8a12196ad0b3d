"""The one shape every result source is turned into.

A tidy table has one row per run: `approach, benchmark, hparam_id, seed, em, f1`
(DESIGN.md, "Analysis"). `hparam_id` 0 is the approach's published SQuAD setting;
a missing `hparam_id` marks a value that was already reduced before it reached us
(a published table or a leaderboard), which every policy takes as it is. Optional
columns carry what plots need: `approach_family`, `benchmark_family`,
`approach_name`, `benchmark_name`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from concur.errors import DataFormatError

KEY_COLUMNS = ("approach", "benchmark", "hparam_id", "seed")
TIDY_COLUMNS = (*KEY_COLUMNS, "em", "f1")
REQUIRED_COLUMNS = ("approach", "benchmark", "em")
LABEL_COLUMNS = ("approach_family", "benchmark_family", "approach_name", "benchmark_name")
SCORE_RANGE = (0.0, 100.0)  # EM and F1 are percentages, as in the official scripts
CSV_FIRST_DATA_LINE = 2  # line 1 is the header


def tidy_frame(frame: pd.DataFrame, origin: str, *, first_line: int | None = None) -> pd.DataFrame:
    """Check and normalise a results table; errors name `origin` and, for files, the line.

    `first_line` is the file line of the frame's first row (CSV input), so that a bad
    value is reported where the user can find it.
    """
    frame = frame.reset_index(drop=True)
    missing = [column for column in REQUIRED_COLUMNS if column not in frame.columns]
    if missing:
        raise DataFormatError(origin, f"missing column(s) {', '.join(missing)}; a results table needs {', '.join(TIDY_COLUMNS)}")
    tidy = pd.DataFrame(
        {"approach": _names(frame, "approach", origin, first_line), "benchmark": _names(frame, "benchmark", origin, first_line)}
    )
    for column in ("hparam_id", "seed"):
        tidy[column] = _integers(frame, column, origin, first_line)
    for column in ("em", "f1"):
        tidy[column] = _scores(frame, column, origin, first_line, required=column == "em")
    for column in LABEL_COLUMNS:
        if column in frame.columns:
            tidy[column] = frame[column].astype("string")
    _reject_duplicates(tidy, origin, first_line)
    return tidy


def read_tidy_csv(path: Path) -> pd.DataFrame:
    """A user's results CSV (columns as `TIDY_COLUMNS`; `hparam_id`, `seed`, `f1` optional)."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""], comment=None)
    except FileNotFoundError:
        raise DataFormatError(path, "no such file") from None
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise DataFormatError(path, f"not a readable CSV table ({exc})") from None
    return tidy_frame(frame, str(path), first_line=CSV_FIRST_DATA_LINE)


def empty_tidy() -> pd.DataFrame:
    """A tidy table with no rows (and the right dtypes)."""
    return tidy_frame(pd.DataFrame({column: [] for column in TIDY_COLUMNS}), "empty table")


def _where(origin: str, first_line: int | None, row: int) -> tuple[str, int | None, str]:
    if first_line is None:
        return origin, None, f" (row {row})"
    return origin, first_line + row, ""


def _names(frame: pd.DataFrame, column: str, origin: str, first_line: int | None) -> pd.Series:
    values = frame[column].astype("string").str.strip()
    bad = values.isna() | (values == "") | values.str.contains(",", regex=False).fillna(False)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        path, line, suffix = _where(origin, first_line, row)
        raise DataFormatError(path, f"column {column!r} must be a non-empty name without commas{suffix}", line)
    return values


def _integers(frame: pd.DataFrame, column: str, origin: str, first_line: int | None) -> pd.Series:
    if column not in frame.columns:
        return pd.Series(pd.NA, index=frame.index, dtype="Int64")
    raw = frame[column]
    numbers = pd.to_numeric(raw, errors="coerce")
    bad = (numbers.isna() & raw.notna()) | (numbers.notna() & (numbers != np.floor(numbers.fillna(0))))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        path, line, suffix = _where(origin, first_line, row)
        raise DataFormatError(path, f"column {column!r} must be a whole number or empty, got {raw.iloc[row]!r}{suffix}", line)
    return numbers.astype("Int64")


def _scores(frame: pd.DataFrame, column: str, origin: str, first_line: int | None, *, required: bool) -> pd.Series:
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
        path, line, suffix = _where(origin, first_line, row)
        value = raw.iloc[row]
        problem = "is missing" if pd.isna(value) else f"must be a number from {low:g} to {high:g} (a percentage), got {value!r}"
        raise DataFormatError(path, f"column {column!r} {problem}{suffix}", line)
    return numbers


def _reject_duplicates(tidy: pd.DataFrame, origin: str, first_line: int | None) -> None:
    keys = tidy[list(KEY_COLUMNS)].astype("string").fillna("<none>")
    duplicated = keys.duplicated(keep=False)
    if duplicated.any():
        rows = np.flatnonzero(duplicated.to_numpy())
        first = keys.iloc[rows[0]]
        twins = [int(row) for row in rows if keys.iloc[row].equals(first)]
        path, line, suffix = _where(origin, first_line, twins[1])
        where = ", ".join(str((first_line + row) if first_line is not None else row) for row in twins)
        raise DataFormatError(
            path,
            f"the run ({', '.join(f'{column}={first[column]}' for column in KEY_COLUMNS)}) appears more than once "
            f"({'lines' if first_line is not None else 'rows'} {where}){suffix}; give each seed or hyperparameter sample its own id",
            line,
        )
