"""Per-question outcomes: the data behind a run's EM, so intervals can include test-question noise.

A run's EM is the mean over its test questions; which questions a benchmark happens to test
is itself a sample, so an interval that resamples only approaches or seeds is too narrow.
The per-question frame has one row per (approach, benchmark, hparam_id, seed, question_id)
with `em` 0.0 or 1.0 and `f1` in [0, 1] (NaN where the source gave none); the run keys have
the tidy table's types, so a per-question frame and its aggregate join on them directly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from concur.analysis.tidy import KEY_COLUMNS, TIDY_COLUMNS

QUESTION_COLUMNS = ("approach", "benchmark", "hparam_id", "seed", "question_id", "em", "f1")
QUESTION_DTYPES: dict[str, Any] = {
    "approach": "string",
    "benchmark": "string",
    "hparam_id": "Int64",
    "seed": "Int64",
    "question_id": "string",
    "em": "float64",
    "f1": "float64",
}
PERCENT = 100.0  # the tidy table's EM and F1 are percentages; per-question scores are fractions


def empty_questions() -> pd.DataFrame:
    """No per-question data, with the contract's columns and dtypes (so concatenation keeps the types)."""
    return question_frame(pd.DataFrame(columns=list(QUESTION_COLUMNS)))


def question_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame`'s contract columns in order, cast to the contract's dtypes (values are assumed already checked)."""
    columns = {column: frame[column].astype(QUESTION_DTYPES[column]) for column in QUESTION_COLUMNS}
    return pd.DataFrame(columns, index=frame.index).reset_index(drop=True)


def aggregate_questions(questions: pd.DataFrame) -> pd.DataFrame:
    """The tidy rows of per-question outcomes: per run, EM and F1 = 100 × the mean over its questions.

    F1 is NaN for a run whose questions carry no F1 (a source that gave EM only), rather than
    a mean over the few that have one. Runs keep the per-question frame's keys and dtypes.
    """
    if questions.empty:
        return pd.DataFrame({column: pd.Series(dtype=QUESTION_DTYPES[column]) for column in TIDY_COLUMNS})
    grouped = questions.groupby(list(KEY_COLUMNS), dropna=False, sort=False)
    em = grouped["em"].mean()
    f1 = grouped["f1"].agg(lambda values: values.mean() if values.notna().all() else np.nan)
    tidy = pd.DataFrame({"em": em * PERCENT, "f1": f1.astype(float) * PERCENT}).reset_index()
    for column in KEY_COLUMNS:
        tidy[column] = tidy[column].astype(QUESTION_DTYPES[column])
    return tidy[list(TIDY_COLUMNS)]
