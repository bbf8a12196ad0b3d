"""The noise of a benchmark's EMs, from its per-question outcomes: what reliabilities, ceilings, rank groups and the
two-level bootstrap's calibration are computed from.

Each EM is the approach's true accuracy plus noise whose covariance across approaches is known:
the questions are shared, so the noise of a difference between two approaches is the variance
of their per-question differences over the number of questions, plus the seed variance of each
cell beyond it where the cell has several runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from concur.analysis.concurrence import Method
from concur.analysis.measurement import BenchmarkOutcomes

PERCENT = 100.0
QUADRATURE_POINTS = 32  # Gauss-Hermite nodes for averaging over a pair's unknown true difference

_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(QUADRATURE_POINTS)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()  # expectations over a standard normal


def _difference_variance(covariance: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The noise variance of each pair's EM difference."""
    return np.asarray(np.maximum(covariance[first, first] + covariance[second, second] - 2 * covariance[first, second], 0.0))


@dataclass(frozen=True)
class BenchmarkNoise:
    """One benchmark's EMs and their noise: the covariance across approaches from questions, the variance from seeds."""

    benchmark: str
    approaches: tuple[str, ...]
    em: np.ndarray  # (n,) percent
    question_covariance: np.ndarray  # (n, n) percent^2 of the EMs, at today's number of questions
    seed_variance: np.ndarray  # (n,) percent^2 of each cell's mean over its runs (0 with one run)
    n_questions: int

    def covariance(self, n_questions: float | None = None) -> np.ndarray:
        """The EMs' noise covariance (percent^2) had the benchmark `n_questions` test questions."""
        scale = 1.0 if n_questions is None else self.n_questions / n_questions
        return self.question_covariance * scale + np.diag(self.seed_variance)

    def agreement(self, rows: np.ndarray, n_questions: float | None = None, spread: float = 1.0, power: int = 1) -> np.ndarray:
        """E[|rho|^power] for every pair of the approaches at `rows` (upper triangle order): how surely a test set
        of `n_questions` orders each pair as the true EMs do; `spread` scales the true differences.

        The true difference of a pair is unknown; its posterior given the observed one is normal
        under a normal prior whose variance is the mean over pairs of `d^2 - sigma^2` (empirical
        Bayes), and `|rho|^power` is averaged over it by Gauss-Hermite quadrature. Plugging in the
        observed difference instead would overstate every reliability, since `E[d^2] = delta^2 + sigma^2`.
        """
        first, second = np.triu_indices(len(rows), k=1)
        today = self.covariance()[np.ix_(rows, rows)]
        then = self.covariance(n_questions)[np.ix_(rows, rows)]
        observed = self.em[rows][first] - self.em[rows][second]
        noise_today = _difference_variance(today, first, second)
        noise_then = _difference_variance(then, first, second)
        prior = max(float(np.mean(observed**2 - noise_today)), 0.0) if observed.size else 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            shrink = np.where(prior + noise_today > 0, prior / (prior + noise_today), 1.0)
            mean = spread * shrink * observed
            sd = spread * np.sqrt(shrink * noise_today)
            delta = np.abs(mean[:, None] + sd[:, None] * _NODES[None, :])
            rho = np.where(noise_then[:, None] > 0, 2.0 * ndtr(delta / np.sqrt(noise_then)[:, None]) - 1.0, (delta > 0).astype(float))
        return np.asarray((rho**power) @ _WEIGHTS)

    def untied(self, rows: np.ndarray) -> np.ndarray:
        """For every pair of the approaches at `rows`: False where the two answered every question alike, in every
        run, so that every test set ties them; tau-b leaves such pairs out of its denominator, and so do the
        reliability and the ceilings."""
        first, second = np.triu_indices(len(rows), k=1)
        covariance = self.covariance()[np.ix_(rows, rows)]
        observed = self.em[rows][first] - self.em[rows][second]
        return np.asarray((_difference_variance(covariance, first, second) > 0) | (observed != 0))

    def true_variance_share(self, rows: np.ndarray, n_questions: float | None = None, spread: float = 1.0) -> float:
        """Pearson reliability over the approaches at `rows`: 1 - noise variance / observed variance across approaches."""
        if len(rows) < 2:
            return math.nan
        noise = self._variance_across(rows, n_questions)
        true = max(float(np.var(self.em[rows], ddof=1)) - self._variance_across(rows), 0.0) * spread**2
        return math.nan if true + noise <= 0 else true / (true + noise)

    def _variance_across(self, rows: np.ndarray, n_questions: float | None = None) -> float:
        """The expected sample variance across approaches that noise alone adds: tr(C S C) / (n - 1), C centring."""
        covariance = self.covariance(n_questions)[np.ix_(rows, rows)]
        return float((np.trace(covariance) - covariance.sum() / len(rows)) / (len(rows) - 1))

    def reliability(self, method: Method, rows: np.ndarray | None = None, n_questions: float | None = None, spread: float = 1.0) -> float:
        """Expected concurrence between two independent test sets of this size (or `n_questions`)."""
        rows = np.arange(len(self.approaches)) if rows is None else rows
        if method is Method.pearson:
            return self.true_variance_share(rows, n_questions, spread)
        untied = self.untied(rows)
        return float(np.mean(self.agreement(rows, n_questions, spread, power=2)[untied])) if untied.any() else math.nan

    def rows_of(self, approaches: list[str]) -> np.ndarray:
        position = {approach: index for index, approach in enumerate(self.approaches)}
        return np.array([position[approach] for approach in approaches], dtype=int)


def benchmark_noise(outcomes: BenchmarkOutcomes) -> BenchmarkNoise:
    """The noise model of one benchmark's EMs from its per-question outcomes."""
    per_question = outcomes.per_question()
    questions = outcomes.n_questions
    question_covariance = PERCENT**2 * np.atleast_2d(np.cov(per_question, ddof=1)) / questions
    run_em = outcomes.run_em()
    runs = outcomes.n_runs
    seed_variance = np.zeros(len(outcomes.approaches))
    for approach, size in enumerate(runs):
        if size > 1:
            # Runs differ on the same questions by their training and by each answer's own chance; the latter is
            # already in the question covariance, so only the excess over it is the seeds' variance.
            between_runs = float(np.var(run_em[approach, :size], ddof=1))
            within_question = PERCENT**2 * float(np.var(outcomes.outcomes[approach, :size], axis=0, ddof=1).mean()) / questions
            seed_variance[approach] = max(between_runs - within_question, 0.0) * float(np.sum(outcomes.weights[approach, :size] ** 2))
    return BenchmarkNoise(outcomes.benchmark, outcomes.approaches, outcomes.em(), question_covariance, seed_variance, questions)
