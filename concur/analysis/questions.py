"""Per-question outcomes: the data behind a run's EM, so intervals can include test-question noise.

A run's EM is the mean over its test questions; which questions a benchmark happens to test
is itself a sample, so an interval that resamples only approaches or seeds is too narrow.
The per-question frame has one row per (approach, benchmark, hparam_id, seed, question_id)
with `em` 0.0 or 1.0 and `f1` in [0, 1] (NaN where the source gave none); the run keys have
the tidy table's types, so a per-question frame and its aggregate join on them directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from concur.analysis.tidy import KEY_COLUMNS, TIDY_COLUMNS, RawTable, run_keys
from concur.errors import DataFormatError

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
REQUIRED_QUESTION_COLUMNS = ("approach", "benchmark", "question_id", "em")
QUESTIONS_EXAMPLE = (
    "a per-question results table has one row per run and question: approach, benchmark, question_id, em (1 or 0), "
    "and optionally f1 (0-1), seed, hparam_id"
)
SHOWN_QUESTIONS = 3  # question ids an error quotes
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


def read_questions(raw: RawTable, origin: str) -> pd.DataFrame:
    """A user's per-question table (the CSV contract: `approach, benchmark, question_id, em` with `em` 1 or 0, optional
    `f1` 0-1, `seed`, `hparam_id`), checked; errors are one line naming `origin` and the line.

    Every run of a benchmark must list the same questions: a run scored on fewer questions
    has an EM on another test set, and its interval would not be comparable.
    """
    frame, lines = raw.frame.reset_index(drop=True), raw.lines
    questions = run_keys(frame, origin, lines, REQUIRED_QUESTION_COLUMNS, QUESTIONS_EXAMPLE)
    questions["question_id"] = frame["question_id"].astype("string").str.strip()
    _refuse(questions["question_id"].isna() | (questions["question_id"] == ""), origin, lines, "column 'question_id' must not be empty")
    questions["em"] = _fractions(frame, "em", origin, lines, "must be 1 or 0 (answered exactly or not)", required=True)
    questions["f1"] = _fractions(frame, "f1", origin, lines, "must be a number from 0 to 1 (the question's token F1) or empty")
    questions = question_frame(questions)
    _refuse_repeated_questions(questions, origin, lines)
    _refuse_uneven_runs(questions, origin, lines)
    return questions


def questions_csv(questions: pd.DataFrame) -> str:
    """The per-question frame as the CSV contract `read_questions` reads (em 1 or 0, f1 0-1, empty where missing)."""
    written = question_frame(questions).assign(em=lambda frame: frame["em"].astype("Int64"))
    return written.to_csv(index=False)


def describe_run(approach: object, benchmark: object, hparam_id: object, seed: object) -> str:
    """ "bidaf on squad (hparams 2, seed 1)", leaving out what the run does not have."""
    parts = [f"{label} {value}" for label, value in (("hparams", hparam_id), ("seed", seed)) if not pd.isna(value)]  # type: ignore[call-overload]
    return f"{approach} on {benchmark}" + (f" ({', '.join(parts)})" if parts else "")


def _fractions(frame: pd.DataFrame, column: str, origin: str, lines: Sequence[int], rule: str, *, required: bool = False) -> pd.Series:
    """`column` as floats within 0-1 (exactly 0 or 1 for `em`); NaN where absent, unless `required`."""
    if column not in frame.columns:
        return pd.Series(np.nan, index=frame.index, dtype=float)
    raw = frame[column]
    numbers = pd.to_numeric(raw, errors="coerce").astype(float)
    allowed = numbers.isin([0.0, 1.0]) if column == "em" else numbers.between(0.0, 1.0)
    bad = ~allowed & (raw.notna() | required)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        value = raw.iloc[row]
        problem = "is missing" if pd.isna(value) else f"{rule}, got {value!r}"
        raise DataFormatError(origin, f"column {column!r} {problem}", lines[row])
    return numbers


def _refuse(bad: pd.Series, origin: str, lines: Sequence[int], problem: str) -> None:
    if bad.any():
        raise DataFormatError(origin, problem, lines[int(np.flatnonzero(bad.to_numpy())[0])])


def _run_keys(questions: pd.DataFrame) -> pd.DataFrame:
    """The run keys as text, NA spelt out, so that runs without a seed or setting group and compare."""
    return questions[list(KEY_COLUMNS)].astype("string").fillna("<none>")


def _refuse_repeated_questions(questions: pd.DataFrame, origin: str, lines: Sequence[int]) -> None:
    keyed = _run_keys(questions).assign(question_id=questions["question_id"])
    repeated = keyed.duplicated(keep=False)
    if not repeated.any():
        return
    rows = np.flatnonzero(repeated.to_numpy())
    first = keyed.iloc[rows[0]]
    twins = [int(row) for row in rows if keyed.iloc[row].equals(first)]
    run = describe_run(*questions.loc[twins[0], list(KEY_COLUMNS)])
    where = ", ".join(str(lines[row]) for row in twins)
    raise DataFormatError(origin, f"question {first['question_id']!r} of {run} appears more than once (lines {where})", lines[twins[1]])


def _refuse_uneven_runs(questions: pd.DataFrame, origin: str, lines: Sequence[int]) -> None:
    """Every run of a benchmark lists every question any run of it lists."""
    keys = _run_keys(questions)
    run = questions.groupby([keys[column] for column in KEY_COLUMNS], sort=False).ngroup().to_numpy()
    listed = np.bincount(run)  # questions per run (repeated ones were refused)
    of_bench = questions.groupby("benchmark", sort=False)["question_id"].transform("nunique").to_numpy()
    short = np.flatnonzero(listed[run] < of_bench)
    if not len(short):
        return
    first = int(short[0])
    bench_ids = set(questions.loc[questions["benchmark"] == questions.at[first, "benchmark"], "question_id"])
    lacking = sorted(bench_ids - set(questions.loc[run == run[first], "question_id"]))
    shown = ", ".join(lacking[:SHOWN_QUESTIONS]) + (", ..." if len(lacking) > SHOWN_QUESTIONS else "")
    raise DataFormatError(
        origin,
        f"{describe_run(*questions.loc[first, list(KEY_COLUMNS)])} lists {listed[run[first]]} of the benchmark's "
        f"{of_bench[first]} questions; every run of a benchmark must score the same questions (it lacks {shown})",
        lines[first],
    )
