"""The results as one table of runs, as `concur results` prints it: the tidy rows, with each run's EM interval.

A run whose test questions are known (`Results.questions`) gets `n_questions` and the 95%
interval of its EM from those questions (`em_lower`, `em_upper`): how far its EM could move
on another draw of as many questions. Runs known only by their EM (published tables,
leaderboards) have those columns empty, and a table without any per-question data has none.
"""

from __future__ import annotations

import pandas as pd

from concur.analysis.measurement import run_em_intervals
from concur.analysis.results import Results
from concur.analysis.tidy import KEY_COLUMNS

INTERVAL_COLUMNS = ("n_questions", "em_lower", "em_upper")


def runs_table(results: Results, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """`results.frame`, with `INTERVAL_COLUMNS` after `f1` where any run has per-question outcomes."""
    frame = results.frame
    if results.questions.empty:
        return frame
    intervals = run_em_intervals(results.questions, confidence=confidence, n_resamples=n_resamples, seed=seed)
    keys = list(KEY_COLUMNS)
    joined = frame.merge(intervals.astype({key: frame[key].dtype for key in keys}), on=keys, how="left")
    joined["n_questions"] = joined["n_questions"].astype("Int64")
    at = list(joined.columns).index("f1") + 1
    rest = [column for column in joined.columns if column not in INTERVAL_COLUMNS]
    return joined[[*rest[:at], *INTERVAL_COLUMNS, *rest[at:]]]
