"""Measurement noise: the test questions and seeds behind every EM, as arrays the statistics resample.

An EM is a mean over one benchmark's test questions (and, where a cell has several runs, over
its seeds), so it is itself an estimate: with 200 questions an EM of 50 has a 95% interval of
about +-7 points. Where results come with per-question outcomes (`Results.questions`), each
benchmark's are laid out as one array (approaches x runs x questions) with each run's weight in
its cell's value (`concur.analysis.policy`), and resampled in two ways:

- the *questions* of a benchmark are drawn with replacement once per resample and shared by
  every approach, because all approaches answer the same questions (a paired design: an
  easy draw lifts every approach at once, which leaves their ranking less changed than
  independent draws would);
- the *runs* of each cell are drawn with replacement independently, so seed variance enters
  where a cell has several seeds.

Counts of draws (multinomial weights) replace copies, so a resample is one matrix product.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from concur.analysis.policy import Cells

RUN_KEY = ["approach", "benchmark", "hparam_id", "seed"]
PERCENT = 100.0


@dataclass(frozen=True)
class BenchmarkOutcomes:
    """One benchmark's per-question EM (0/1) for the approaches with a value on it, and each run's weight."""

    benchmark: str
    approaches: tuple[str, ...]
    outcomes: np.ndarray  # (approaches, runs, questions), float32 0/1; padding runs are 0 with weight 0
    weights: np.ndarray  # (approaches, runs): each run's share of its cell's value, rows summing to 1

    @property
    def n_questions(self) -> int:
        return int(self.outcomes.shape[2])

    @property
    def n_runs(self) -> np.ndarray:
        """Runs per approach (the rest of the runs axis is padding)."""
        return np.asarray((self.weights > 0).sum(axis=1))

    def per_question(self) -> np.ndarray:
        """(approaches, questions): each cell's outcome per question, its runs weighted (a mean over seeds)."""
        return np.asarray(np.einsum("as,asq->aq", self.weights, self.outcomes, dtype=float))

    def run_em(self) -> np.ndarray:
        """(approaches, runs): each run's EM in percent (0 for padding)."""
        return np.asarray(PERCENT * self.outcomes.mean(axis=2, dtype=float))

    def em(self) -> np.ndarray:
        """Each approach's EM in percent, as its cell holds it."""
        return np.asarray(PERCENT * self.per_question().mean(axis=1))

    def replicates(self, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
        """(n_resamples, approaches): EM with the questions (shared) and each cell's runs drawn again."""
        n, runs, questions = self.outcomes.shape
        question_counts = multinomial_counts(questions, n_resamples, rng)
        flat = self.outcomes.reshape(n * runs, questions)
        run_scores = (question_counts @ flat.T).reshape(n_resamples, n, runs) / np.float32(questions)
        if runs == 1:
            return np.asarray(PERCENT * run_scores[:, :, 0].astype(float))
        run_counts = self._run_counts(n_resamples, rng) * self.weights[None]
        return np.asarray(PERCENT * (run_counts * run_scores).sum(axis=2) / run_counts.sum(axis=2))

    def _run_counts(self, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
        """(n_resamples, approaches, runs): how often each of a cell's runs is drawn (its own runs only)."""
        n, runs = self.weights.shape
        counts = np.zeros((n_resamples, n, runs))
        for approach, size in enumerate(self.n_runs):
            if size == 1:
                counts[:, approach, 0] = 1.0
            else:
                counts[:, approach, :size] = multinomial_counts(int(size), n_resamples, rng)
        return counts


@dataclass(frozen=True)
class Measurement:
    """The per-question outcomes of a table's benchmarks; benchmarks without them (all or some cells) are listed."""

    benchmarks: dict[str, BenchmarkOutcomes] = field(default_factory=dict)
    partial: tuple[str, ...] = ()  # some of its cells have per-question data, not all: treated as aggregate-only
    mismatched: tuple[str, ...] = ()  # its runs scored different questions: not a paired design
    drawn: dict[tuple[object, ...], np.ndarray] = field(default_factory=dict, compare=False, repr=False)  # em_replicates, kept

    def covers(self, benchmark: str) -> bool:
        return benchmark in self.benchmarks

    def notes(self) -> list[str]:
        """What the user should know about benchmarks left without measurement noise."""
        notes = []
        if self.partial:
            notes.append(
                f"per-question results cover only some cells of {', '.join(self.partial)}: their intervals resample approaches only"
            )
        if self.mismatched:
            notes.append(
                f"the runs of {', '.join(self.mismatched)} were scored on different test questions: "
                "their intervals resample approaches only"
            )
        return notes


def multinomial_counts(n: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(n_resamples, n) float32 counts of n draws with replacement from n items: a bootstrap resample as weights.

    Counts stay exact in float32 (at most n, far below 2^24); the draws use the narrowest integer
    type that holds them, which is what their cost depends on.
    """
    draws = rng.integers(0, n, (n_resamples, n), dtype=np.uint16 if n <= np.iinfo(np.uint16).max else np.int64)
    flat = draws + (np.arange(n_resamples, dtype=np.int64) * n)[:, None]
    return np.bincount(flat.ravel(), minlength=n_resamples * n).reshape(n_resamples, n).astype(np.float32)


def measurement_for(wide: pd.DataFrame, cells: Cells, questions: pd.DataFrame) -> Measurement:
    """Lay out the per-question outcomes of the runs behind `wide`'s values (approaches x benchmarks).

    A benchmark is covered when every run behind every one of its values has per-question
    outcomes on one common set of questions; otherwise its values count as aggregate-only.
    """
    if questions.empty:
        return Measurement()
    runs = cells.runs[cells.runs["benchmark"].isin(wide.columns) & cells.runs["approach"].isin(wide.index)]
    keyed = _keyed(questions)
    covered: dict[str, BenchmarkOutcomes] = {}
    partial, mismatched = [], []
    for bench in wide.columns:
        approaches = tuple(str(approach) for approach in wide.index[wide[bench].notna()])
        bench_runs = runs[(runs["benchmark"] == bench) & runs["approach"].isin(approaches)]
        rows = keyed.get(str(bench))
        if rows is None:
            continue
        laid_out = _lay_out(str(bench), approaches, bench_runs, rows)
        if laid_out is None:
            partial.append(str(bench))
        elif isinstance(laid_out, str):
            mismatched.append(laid_out)
        else:
            covered[str(bench)] = laid_out
    return Measurement(covered, tuple(partial), tuple(mismatched))


def em_replicates(measurement: Measurement, wide: pd.DataFrame, n_resamples: int, seed: int) -> np.ndarray:
    """(n_resamples, approaches, benchmarks): `wide` with every covered benchmark's EM drawn again per resample.

    Each benchmark has its own random stream, keyed by its id, so its draws do not depend on
    which other benchmarks are selected or in what order. The draws of one table are kept on
    `measurement`, so its Kendall and Pearson matrices and its EM intervals share them.
    """
    key = (tuple(wide.index), tuple(wide.columns), wide.to_numpy(dtype=float).tobytes(), n_resamples, seed)
    if key not in measurement.drawn:
        measurement.drawn[key] = _draw(measurement, wide, n_resamples, seed)
    return measurement.drawn[key]


def _draw(measurement: Measurement, wide: pd.DataFrame, n_resamples: int, seed: int) -> np.ndarray:
    values = np.broadcast_to(wide.to_numpy(dtype=float), (n_resamples, *wide.shape)).copy()
    for column, bench in enumerate(wide.columns):
        outcomes = measurement.benchmarks.get(str(bench))
        if outcomes is None:
            continue
        drawn = outcomes.replicates(n_resamples, benchmark_rng(seed, str(bench)))
        rows = wide.index.get_indexer(pd.Index(outcomes.approaches))
        present = rows >= 0
        values[:, rows[present], column] = drawn[:, present]
    return values


def benchmark_rng(seed: int, benchmark: str) -> np.random.Generator:
    """The random stream of one benchmark's question draws under a bootstrap seed."""
    return np.random.default_rng([seed, zlib.crc32(benchmark.encode())])


def cell_em_intervals(
    measurement: Measurement, wide: pd.DataFrame, *, confidence: float, n_resamples: int, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Percentile interval of every covered cell's EM over its questions and runs; NaN where not covered."""
    replicates = em_replicates(measurement, wide, n_resamples, seed)
    tail = (1.0 - confidence) / 2.0
    lower = np.quantile(replicates, tail, axis=0)
    upper = np.quantile(replicates, 1.0 - tail, axis=0)
    covered = np.array([measurement.covers(str(bench)) for bench in wide.columns])[None, :] & wide.notna().to_numpy()

    def frame(array: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame(np.where(covered, array, np.nan), index=wide.index, columns=wide.columns)

    return frame(lower), frame(upper)


def run_em_intervals(questions: pd.DataFrame, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Each run's EM interval from its own test questions: the percentile bootstrap of its per-question EM."""
    grouped = questions.groupby(RUN_KEY, dropna=False, sort=False)["em"].agg(["sum", "size"]).reset_index()
    sizes = grouped["size"].to_numpy()
    lower, upper = em_intervals(grouped["sum"].to_numpy(), sizes, confidence=confidence, n_resamples=n_resamples, seed=seed)
    return grouped[RUN_KEY].assign(n_questions=sizes, em_lower=lower, em_upper=upper)


def em_intervals(
    correct: np.ndarray, sizes: np.ndarray, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """EM intervals (percent) of runs that answered `correct` of `sizes` test questions exactly.

    The percentile bootstrap of a mean of 0/1 outcomes draws the number correct from a binomial
    with the observed rate, so it is drawn that way (the same distribution, without the questions).
    """
    rng = np.random.default_rng(seed)
    rates = np.asarray(correct, dtype=float) / sizes
    draws = rng.binomial(sizes[None, :], rates[None, :], (n_resamples, len(sizes))) / sizes[None, :]
    tail = (1.0 - confidence) / 2.0
    lower, upper = np.quantile(PERCENT * draws, [tail, 1.0 - tail], axis=0)
    return lower, upper


def _keyed(questions: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {str(bench): rows for bench, rows in questions.groupby("benchmark", sort=False)}


def _lay_out(bench: str, approaches: tuple[str, ...], runs: pd.DataFrame, rows: pd.DataFrame) -> BenchmarkOutcomes | str | None:
    """The benchmark's array, None when some run lacks per-question rows, its id when runs disagree on the questions."""
    keys = runs[RUN_KEY].astype("string").fillna("<none>")
    row_keys = rows[RUN_KEY].astype("string").fillna("<none>")
    run_index = pd.MultiIndex.from_frame(keys)
    present = run_index.isin(pd.MultiIndex.from_frame(row_keys))
    if not present.all() or set(runs["approach"]) != set(approaches):
        return None
    used = rows[pd.MultiIndex.from_frame(row_keys).isin(run_index)]
    used_keys = pd.MultiIndex.from_frame(used[RUN_KEY].astype("string").fillna("<none>"))
    question_codes, question_ids = pd.factorize(used["question_id"].astype(str), sort=True)
    per_run = pd.Series(pd.factorize(used_keys)[0]).value_counts()
    if (per_run != len(question_ids)).any():  # (run, question) pairs are unique, so each run lists every question
        return bench
    approach_position = {approach: position for position, approach in enumerate(approaches)}
    slot = runs.groupby("approach", sort=False).cumcount().to_numpy()
    n_slots = int(slot.max()) + 1
    outcomes = np.zeros((len(approaches), n_slots, len(question_ids)), dtype=np.float32)
    weights = np.zeros((len(approaches), n_slots))
    run_position = {key: index for index, key in enumerate(run_index)}
    run_approach = np.array([approach_position[str(approach)] for approach in runs["approach"]])
    weights[run_approach, slot] = runs["weight"].to_numpy(dtype=float)
    which_run = np.array([run_position[key] for key in used_keys])
    outcomes[run_approach[which_run], slot[which_run], question_codes] = used["em"].to_numpy(dtype=np.float32)
    return BenchmarkOutcomes(bench, approaches, outcomes, weights / weights.sum(axis=1, keepdims=True))
