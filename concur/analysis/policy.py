"""Reduce runs to one number per (approach, benchmark) by a named policy.

Seeds of one hyperparameter setting are averaged first; the policy then chooses among
settings:

- `default`: the approach's published SQuAD setting (`hparam_id` 0);
- `best`: the setting with the highest mean EM (its F1 comes along);
- `mean`: the mean over settings, with the spread kept (`em_sd`, `em_min`, `em_max`).

Values that arrive already reduced (no `hparam_id`: published tables, leaderboards) count
as a single setting under every policy. A cell that has runs but none the policy can use
(e.g. `default` when only random samples finished) is reported in `excluded`, never
dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import pandas as pd

from concur.analysis.tidy import LABEL_COLUMNS
from concur.runner.planning.hparams import PUBLISHED

CELL = ["approach", "benchmark"]
REDUCED_SETTING = -1  # stands for "no hparam_id" while grouping; never leaves this module


class Policy(StrEnum):
    default = "default"
    best = "best"
    mean = "mean"


@dataclass(frozen=True)
class Cells:
    """One row per (approach, benchmark): em, f1, the spread over settings and the run counts."""

    table: pd.DataFrame
    excluded: pd.DataFrame  # approach, benchmark, reason
    policy: Policy
    runs: pd.DataFrame  # the runs behind each value: approach, benchmark, hparam_id, seed, weight (summing to 1 per cell)

    def wide(self, value: str = "em") -> pd.DataFrame:
        """Approaches x benchmarks; NaN where a cell has no value."""
        if self.table.empty:
            return pd.DataFrame(dtype=float)
        wide = self.table.pivot(index="approach", columns="benchmark", values=value)
        wide.columns.name = None
        wide.index.name = None
        return wide.astype(float)


def reduce_runs(frame: pd.DataFrame, policy: Policy | str) -> Cells:
    """Apply `policy` to a tidy table."""
    policy = Policy(policy)
    runs = frame.assign(setting=frame["hparam_id"].fillna(REDUCED_SETTING).astype(int))
    settings = runs.groupby([*CELL, "setting"], sort=True).agg(em=("em", "mean"), f1=("f1", "mean"), runs=("em", "size")).reset_index()
    spread = settings.groupby(CELL).agg(
        em_sd=("em", lambda values: float(np.std(values, ddof=1)) if len(values) > 1 else np.nan),
        em_min=("em", "min"),
        em_max=("em", "max"),
        settings=("setting", "size"),
        runs=("runs", "sum"),
    )
    if policy is Policy.default:
        usable = settings[settings["setting"].isin([PUBLISHED, REDUCED_SETTING])]
        chosen = usable.sort_values([*CELL, "setting"], ascending=[True, True, False]).drop_duplicates(CELL)
    elif policy is Policy.best:
        chosen = settings.sort_values([*CELL, "em", "setting"], ascending=[True, True, False, True]).drop_duplicates(CELL)
    else:
        chosen = settings.groupby(CELL, as_index=False).agg(em=("em", "mean"), f1=("f1", "mean"))
    table = chosen[[*CELL, "em", "f1"]].merge(spread.reset_index(), on=CELL, how="left")
    used = _run_weights(runs, chosen, policy)
    labels = [column for column in LABEL_COLUMNS if column in frame.columns]
    if labels:
        table = table.merge(frame[[*CELL, *labels]].drop_duplicates(CELL), on=CELL, how="left")
    excluded = spread.index.difference(pd.MultiIndex.from_frame(table[CELL]))
    reason = f"no run with the default hyperparameters (hparam_id {PUBLISHED})"
    excluded_frame = pd.DataFrame([(approach, bench, reason) for approach, bench in excluded], columns=[*CELL, "reason"])
    return Cells(table.reset_index(drop=True), excluded_frame, policy, used)


def _run_weights(runs: pd.DataFrame, chosen: pd.DataFrame, policy: Policy) -> pd.DataFrame:
    """Each run's weight in its cell's value: the mean over seeds of the chosen setting (`default`, `best`), or the
    mean over settings of their seed means (`mean`); the noise of a value is resampled over these runs."""
    per_setting = runs.groupby([*CELL, "setting"])["em"].transform("size")
    if policy is Policy.mean:
        settings = runs.groupby(CELL)["setting"].transform("nunique")
        used = runs.assign(weight=1.0 / (per_setting * settings))
    else:
        keys = chosen[[*CELL, "setting"]]
        used = runs.assign(weight=1.0 / per_setting).merge(keys, on=[*CELL, "setting"], how="inner")
    return used[[*CELL, "hparam_id", "seed", "weight"]].reset_index(drop=True)
