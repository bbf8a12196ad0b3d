"""Per-question outcomes of our own finished jobs: each job's stored predictions scored again, question by question.

A job stores its corpus EM and F1 and its predictions (`runs/jobs/<key>/predictions.json.gz`),
not the score of each question; intervals that include test-question noise need those. They
are recomputed here exactly as the job scored itself (`concur.runner.execution.one_job`):
against the prepared test split of the data the job ran on, cut to the job's own subset of
it, with the official metric (`concur.metrics`), a question without a prediction scoring 0.
The recomputed mean must equal the job's stored EM; where it cannot be recomputed (no
predictions, the benchmark's data no longer prepared, or prepared again from another spec
or other data), the job keeps its stored EM and one note counts such jobs and says why.

Speed. Each benchmark's test split is read once, and a (question, prediction) pair is scored
once per benchmark however many jobs gave that answer. The official metric in pure Python is
still the slow part over full-size test sets (docs/analysis.md gives the times), so a job's
outcomes, once checked against its EM, are kept in `runs/cache/questions/<key>.npz`: a
finished job never changes (its key fixes its data, subset and spec), and the cached file
records the stamp of the predictions it was scored from, so predictions written again (a
job directory removed and its job run anew) are scored again. A runs directory this process
may not write is scored every time.
"""

from __future__ import annotations

import contextlib
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from concur.analysis.questions import empty_questions, question_frame
from concur.data.model import Split
from concur.data.prepare import prepared
from concur.errors import ConcurError
from concur.fsutil import UNREADABLE, atomic_open, read_json
from concur.metrics import exact_match, max_over_gold, token_f1
from concur.registry.registry import Registry
from concur.runner.planning.budget import QUESTIONS, SEED, take_subset
from concur.runner.records.jobdir import PREDICTIONS_FILE, file_stamp
from concur.runner.records.result import JobResult
from concur.workspace import Workspace

EM_TOLERANCE = 1e-6  # percentage points between the recomputed and the stored EM
TEST = "test"
SHOWN_KEYS = 3  # job keys a note names
SHOWN_HASH = 12  # hex digits of a data hash a note shows
NO_PREDICTIONS = "no stored predictions"
CACHE_DIR = "questions"  # under the workspace's cache directory
CACHE_VERSION = 1  # part of each cached file's name: a new way of scoring leaves the old files unread


@dataclass(frozen=True)
class FinishedJob:
    """What scoring one finished ("ok") job per question needs: its run, its stored EM, and the data it was scored on."""

    key: str
    approach: str
    benchmark: str
    hparam_id: int
    seed: int
    exact_match: float
    data_hash: str
    subset: Mapping[str, Any] | None  # the job definition's {split: {"questions", "seed"}}; None or empty: whole splits

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> FinishedJob:
        """From an index row (`concur.runner.records.store`, JSON columns decoded)."""
        return cls(
            row["key"], row["approach"], row["benchmark"], row["hparam_id"], row["seed"], row["em"], row["data_hash"], row.get("subset")
        )

    @classmethod
    def from_result(cls, result: JobResult) -> FinishedJob:
        job = result.job
        em = result.exact_match
        if em is None:
            raise ConcurError(f"job {result.key} has no EM: only finished ('ok') jobs are scored per question")
        return cls(job["key"], job["approach"], job["benchmark"], job["hparam_id"], job["seed"], em, job["data_hash"], job.get("subset"))


@dataclass(frozen=True)
class _Outcomes:
    """One job's test questions in the order it was scored on them, with each one's EM (0 or 1) and F1 (0-1)."""

    qids: np.ndarray
    em: np.ndarray
    f1: np.ndarray


@dataclass
class _Gold:
    """One benchmark's prepared test split, or why the jobs on it cannot be scored per question."""

    test: Split | None
    data_hash: str | None
    problem: str | None
    cuts: dict[tuple[int, int] | None, dict[str, list[str]]] = field(default_factory=dict)
    scored: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)  # (qid, prediction) -> (em, f1)


def job_questions(jobs: Sequence[FinishedJob], workspace: Workspace, registry: Registry, origin: str) -> tuple[pd.DataFrame, list[str]]:
    """The per-question frame (`concur.analysis.questions`) of `jobs`, and a note on those left with their EM only.

    `origin` names the source in the note ("store", "study mini"). Benchmarks are looked up in
    `registry` and read from `workspace`'s prepared data (only for jobs not cached yet);
    predictions from its job directories.
    """
    golds: dict[str, _Gold] = {}
    scored: list[tuple[FinishedJob, _Outcomes]] = []
    lacking: dict[str, list[str]] = defaultdict(list)  # reason -> job keys
    cache_dir = workspace.cache_dir / CACHE_DIR
    for job in jobs:
        predictions_path = workspace.jobs_dir / job.key / PREDICTIONS_FILE
        stamp = file_stamp(predictions_path)
        cache_path = cache_dir / f"{job.key}.v{CACHE_VERSION}.npz"
        outcome: _Outcomes | str | None = NO_PREDICTIONS if stamp is None else _read_cache(cache_path, stamp)
        if outcome is None:
            if job.benchmark not in golds:
                golds[job.benchmark] = _load_gold(job.benchmark, workspace.data_dir, registry)
            outcome = _score_job(job, golds[job.benchmark], predictions_path)
            if isinstance(outcome, _Outcomes) and stamp is not None:
                _write_cache(cache_path, outcome, stamp)
        if isinstance(outcome, str):
            lacking[outcome].append(job.key)
        else:
            scored.append((job, outcome))
    return _frame(scored), _notes(origin, len(jobs), lacking)


def _frame(scored: list[tuple[FinishedJob, _Outcomes]]) -> pd.DataFrame:
    """The per-question frame of the scored jobs, built column by column (hundreds of thousands of rows)."""
    if not scored:
        return empty_questions()
    sizes = [len(outcome.qids) for _, outcome in scored]
    columns: dict[str, Any] = {
        name: np.repeat(np.array([getattr(job, name) for job, _ in scored], dtype=object), sizes)
        for name in ("approach", "benchmark", "hparam_id", "seed")
    }
    columns["question_id"] = np.concatenate([outcome.qids for _, outcome in scored]).astype(object)
    columns["em"] = np.concatenate([outcome.em for _, outcome in scored])
    columns["f1"] = np.concatenate([outcome.f1 for _, outcome in scored])
    return question_frame(pd.DataFrame(columns))


def _load_gold(bench_id: str, data_dir: Path, registry: Registry) -> _Gold:
    """The benchmark's test split as prepared now (checked against its manifest), or the reason there is none."""
    try:
        bench = prepared(data_dir, registry.benchmark(bench_id))
    except ConcurError as error:  # not in the registry, or prepared data that is damaged or changed
        return _Gold(None, None, f"{bench_id}'s data cannot be read: {error}")
    if bench is None:
        return _Gold(None, None, f"{bench_id} is not prepared from its current spec here; run `concur data prepare {bench_id}`")
    return _Gold(bench.load(TEST), bench.data_hash, None)


def _gold_answers(gold: _Gold, subset: Mapping[str, Any] | None) -> dict[str, list[str]]:
    """{qid: answers} of the test questions a job with `subset` was scored on, as `apply_subset` cuts them.

    Only the test split is cut here (`take_subset`, what `apply_subset` applies to each split):
    the training split plays no part in scoring, and reading it would cost more than all the rest.
    """
    assert gold.test is not None
    cut = (subset or {}).get(TEST)
    at = None if cut is None else (int(cut[QUESTIONS]), int(cut[SEED]))
    if at not in gold.cuts:
        gold.cuts[at] = (gold.test if at is None else take_subset(gold.test, *at)).gold_answers()
    return gold.cuts[at]


def _score_job(job: FinishedJob, gold: _Gold, predictions_path: Path) -> _Outcomes | str:
    """The job's per-question outcomes, or the reason (a note's words) it has none."""
    if gold.problem is not None:
        return gold.problem
    if gold.data_hash != job.data_hash:
        now, theirs = (str(value)[:SHOWN_HASH] for value in (gold.data_hash, job.data_hash))
        return f"{job.benchmark} was prepared again from other data since they ran (data hash {now}, theirs {theirs})"
    predictions = _read_predictions(predictions_path)
    if isinstance(predictions, str):
        return predictions
    answers = _gold_answers(gold, job.subset)
    em = np.zeros(len(answers))
    f1 = np.zeros(len(answers))
    for index, (qid, golds) in enumerate(answers.items()):
        prediction = predictions.get(qid)
        if prediction is None:  # the official script: a question without a prediction scores 0
            continue
        pair = (qid, prediction)
        scores = gold.scored.get(pair)
        if scores is None:
            scores = gold.scored[pair] = (max_over_gold(exact_match, prediction, golds), max_over_gold(token_f1, prediction, golds))
        em[index], f1[index] = scores
    recomputed = 100.0 * float(em.mean()) if len(em) else 0.0
    if abs(recomputed - job.exact_match) > EM_TOLERANCE:
        return "their predictions, scored again, do not give their stored EM"
    return _Outcomes(np.array(list(answers), dtype=str), em, f1)


def _read_predictions(path: Path) -> dict[str, str] | str:
    """The job's {qid: answer}, or the reason (a note's words) it cannot be read."""
    try:
        predictions = read_json(path)
    except FileNotFoundError:
        return NO_PREDICTIONS
    except (OSError, ValueError, *UNREADABLE) as error:
        return f"a damaged {PREDICTIONS_FILE} ({type(error).__name__})"
    if not isinstance(predictions, dict) or not all(isinstance(answer, str) for answer in predictions.values()):
        return f"a damaged {PREDICTIONS_FILE} (not a JSON object of answers)"
    return predictions


def _read_cache(path: Path, stamp: str) -> _Outcomes | None:
    """A job's cached outcomes, when they were scored from the predictions file that is there now (else None)."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            if str(stored["stamp"]) != stamp:
                return None
            return _Outcomes(stored["qids"], stored["em"], stored["f1"])
    except (OSError, ValueError, KeyError, *UNREADABLE):  # absent, or damaged: scored again and written anew
        return None


def _write_cache(path: Path, outcome: _Outcomes, stamp: str) -> None:
    """Keep a job's checked outcomes; a runs directory this process may not write (or a full disk) just goes without."""
    with contextlib.suppress(OSError), atomic_open(path, "wb") as handle:
        np.savez(handle, qids=outcome.qids, em=outcome.em, f1=outcome.f1, stamp=np.array(stamp))


def _notes(origin: str, total: int, lacking: Mapping[str, list[str]]) -> list[str]:
    """One note: how many jobs keep only their EM (their intervals leave test-question noise out), by reason."""
    missing = sum(len(keys) for keys in lacking.values())
    if not missing:
        return []
    counts = Counter({reason: len(keys) for reason, keys in lacking.items()})
    reasons = "; ".join(
        f"{count} {'job' if count == 1 else 'jobs'}: {reason} ({_keys(lacking[reason])})" for reason, count in counts.most_common()
    )
    return [
        f"{origin}: {missing} of {total} jobs have no per-question outcomes, so their intervals leave out test-question noise; {reasons}"
    ]


def _keys(keys: list[str]) -> str:
    shown = ", ".join(sorted(keys)[:SHOWN_KEYS])
    return f"job {shown}" if len(keys) == 1 else f"jobs {shown}" + (", ..." if len(keys) > SHOWN_KEYS else "")
