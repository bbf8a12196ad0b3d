"""The layouts a results file may have, and how each becomes a tidy table (and per-question outcomes).

- **tidy**: one row per run, `approach, benchmark, em` (optional `hparam_id, seed, f1`);
  concur.analysis.tidy.
- **questions**: one row per run and test question, `approach, benchmark, question_id, em`
  with `em` 1 or 0 (optional `f1` 0-1, `seed`, `hparam_id`); its tidy rows are the runs'
  means in percent, and its outcomes give intervals that include test-question noise
  (concur.analysis.questions).
- **wide**: how leaderboards and papers' tables are shared, one row per approach and one
  column of EM (percent) per benchmark; the name column is `approach`, or `model`, or else
  the first column, and an empty cell is a missing value.

Without an explicit layout a file is read as questions when it has a `question_id` column,
as tidy when it has a `benchmark` column, and as wide otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import numpy as np
import pandas as pd

from concur.analysis.questions import aggregate_questions, empty_questions, read_questions
from concur.analysis.tidy import LABEL_COLUMNS, RawTable, read_raw_table, tidy_frame
from concur.errors import DataFormatError

NAME_COLUMNS = ("approach", "model")  # a wide table's approach column, else its first column
WIDE_LABELS = ("approach_family", "approach_name")  # label columns a wide table may carry beside its benchmarks
LAYOUTS_HELP = (
    "a results file is either tidy, one row per run (approach, benchmark, em; optional hparam_id, seed, f1) or per question "
    "(with question_id and em 1 or 0), or wide, one row per approach (column approach, model or the first) "
    "and one column of EM in percent per benchmark"
)


class Layout(StrEnum):
    tidy = "tidy"
    questions = "questions"
    wide = "wide"


@dataclass(frozen=True)
class FileResults:
    """A results file as a tidy table, with its per-question outcomes (empty unless the file has them)."""

    frame: pd.DataFrame
    questions: pd.DataFrame


def read_results_file(path: Path, layout: Layout | str | None = None) -> FileResults:
    """A user's CSV or JSON results file in `layout` (None: detected from its columns, see the module)."""
    raw = read_raw_table(path)
    chosen = Layout(layout) if layout is not None else detect_layout(raw.frame.columns)
    origin = str(path)
    if chosen is Layout.questions:
        questions = read_questions(raw, origin)
        return FileResults(tidy_frame(aggregate_questions(questions), origin), questions)
    if chosen is Layout.wide:
        return FileResults(wide_frame(raw, origin), empty_questions())
    return FileResults(tidy_frame(raw.frame, origin, lines=raw.lines, imported=True), empty_questions())


def detect_layout(columns: pd.Index) -> Layout:
    names = {str(column).strip() for column in columns}
    if "question_id" in names:
        return Layout.questions
    return Layout.tidy if "benchmark" in names else Layout.wide


def wide_frame(raw: RawTable, origin: str) -> pd.DataFrame:
    """A wide table (one row per approach, one EM column per benchmark) as a tidy one, checked as an imported tidy table.

    A file with no benchmark column holding a number is neither layout and says so; a
    benchmark cell that is not a number names its column and line.
    """
    frame = raw.frame.rename(columns=lambda column: str(column).strip())
    if frame.columns.empty:
        raise DataFormatError(origin, f"no columns; {LAYOUTS_HELP}")
    name = next((column for column in NAME_COLUMNS if column in frame.columns), frame.columns[0])
    labels = [column for column in WIDE_LABELS if column in frame.columns]
    benches = [column for column in frame.columns if column != name and column not in LABEL_COLUMNS]
    numbers = {bench: pd.to_numeric(frame[bench], errors="coerce") for bench in benches}
    if not any(values.notna().any() for values in numbers.values()):
        raise DataFormatError(origin, f"neither layout: no column beside {name!r} holds numbers; {LAYOUTS_HELP}")
    for bench in benches:
        bad = numbers[bench].isna() & frame[bench].notna()
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataFormatError(
                origin,
                f"column {bench!r} (a benchmark in the wide layout) holds EMs in percent or empty cells, not {frame[bench].iloc[row]!r}",
                raw.lines[row],
            )
    long = frame.melt(id_vars=[name, *labels], value_vars=benches, var_name="benchmark", value_name="em", ignore_index=False)
    long = long[long["em"].notna()].rename(columns={name: "approach"})
    lines = [raw.lines[row] for row in long.index]
    return tidy_frame(long.reset_index(drop=True), origin, lines=lines, imported=True)
