"""Where results come from: `--results liu2023|store|study:FILE.toml|<leaderboard>|FILE.csv|FILE.json`, combined.

`study:analysis/studies/X.toml` is exactly the finished jobs of that study's plan (its job
keys, so budgets and overrides count), with the study's hyperparameter setting ids and
seeds; other jobs in the same runs directory on the same approaches and benchmarks are not
in it.

Several sources can be combined (`--results liu2023 --results store`, or `liu2023+store`):
e.g. one approach run locally placed among the 20 published ones. When two sources hold
the same (approach, benchmark) cell, the later one replaces it (with its per-question
outcomes) and a note says so.

A file is read in its layout (`concur.analysis.layouts`: tidy, per question, or wide),
detected from its columns unless `layout` names it. The store and a study also give each
finished job's per-question outcomes, scored again from its stored predictions
(`concur.analysis.job_questions`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from concur.analysis.job_questions import FinishedJob, job_questions
from concur.analysis.layouts import Layout, read_results_file
from concur.analysis.leaderboards import LEADERBOARDS, load_leaderboard
from concur.analysis.questions import empty_questions, question_frame
from concur.analysis.reference import liu2023, liu2023_published_squad
from concur.analysis.tidy import JSON_SUFFIX, tidy_frame
from concur.data.sources import SourceLocator
from concur.errors import ConcurError, MissingSourceError, UnknownNameError
from concur.registry.registry import Registry, default_registry
from concur.runner.planning.study import load_study, plan_study
from concur.runner.records.jobdir import JobState
from concur.runner.records.result import OK_STATUS
from concur.runner.records.store import finished_jobs
from concur.workspace import Workspace

STORE = "store"
STUDY_PREFIX = "study:"  # `study:FILE.toml`, a study's own results
REFERENCES = {"liu2023": liu2023, "liu2023-published": liu2023_published_squad}
NAMED_SOURCES = (*REFERENCES, STORE, f"{STUDY_PREFIX}FILE.toml", *LEADERBOARDS)
SEPARATOR = "+"
CELL = ("approach", "benchmark")


@dataclass(frozen=True)
class Results:
    """A tidy table, what the user should know about how it was assembled, and the per-question outcomes behind it.

    `questions` (concur.analysis.questions) holds the runs whose test questions are known, so
    their intervals can include question noise; it is empty for aggregate-only sources.
    """

    frame: pd.DataFrame
    sources: tuple[str, ...]
    notes: tuple[str, ...]
    questions: pd.DataFrame = field(default_factory=empty_questions)


@dataclass(frozen=True)
class Source:
    """One source's tidy table, its per-question outcomes (often none) and its notes."""

    frame: pd.DataFrame
    questions: pd.DataFrame
    notes: list[str]


def load_results(
    requests: list[str],
    *,
    store_path: Path,
    locator: SourceLocator,
    registry: Registry | None = None,
    layout: Layout | str | None = None,
) -> Results:
    """Read and combine every requested source, in order; `registry` resolves a study's names and the benchmarks whose
    jobs are scored per question (default: the built-in specs and $CONCUR_REGISTRY), and its runs directory is the one
    holding `store_path`. `layout` is that of every file requested (None: each detected from its columns)."""
    names = [part for request in requests for part in _split(request)]
    if not names:
        raise ConcurError(f"no results given; use --results with one of {', '.join(NAMED_SOURCES)} or a CSV file")
    sources: list[Source] = []
    notes: list[str] = []
    for name in names:
        source = _load_one(name, store_path, locator, registry, layout)
        notes.extend(source.notes)
        sources.append(Source(source.frame.assign(source=name), source.questions, []))
    combined, questions, overridden = _combine(sources)
    notes.extend(overridden)
    return Results(combined, tuple(names), tuple(notes), questions)


def store_results(store_path: Path, registry: Registry | None = None) -> Source:
    """Finished jobs of the runs directory holding `store_path` as a tidy table; failed jobs are counted, not used.

    The index is brought up to date from the job directories first (results written but not
    indexed yet count), and a damaged result or index is a note naming the file and the fix
    while every readable result is still used. Each job's per-question outcomes come with it
    where its predictions and its benchmark's data are still there (a note counts the others).
    """
    finished = finished_jobs(store_path, Workspace(store_path.parent).jobs_dir)
    if not store_path.is_file() and not finished.with_result:
        raise MissingSourceError(f"no results store at {store_path}; run jobs with `concur run` first, or pass --runs-dir")
    rows = finished.rows
    ok = [row for row in rows if row["status"] == OK_STATUS]
    _refuse_repeated_runs(ok, store_path)
    frame = pd.DataFrame(ok, columns=["approach", "benchmark", "hparam_id", "seed", "em", "f1"])
    notes = finished.warnings()
    if len(ok) < len(rows):
        notes.append(f"store: {len(rows) - len(ok)} failed job(s) left out (see `concur status`)")
    workspace = Workspace(store_path.parent)
    questions, question_notes = job_questions([FinishedJob.from_row(row) for row in ok], workspace, registry or default_registry(), STORE)
    return Source(tidy_frame(frame, str(store_path)), questions, notes + question_notes)


def study_results(path: Path, registry: Registry, workspace: Workspace) -> Source:
    """The finished ("ok") jobs of a study's plan as a tidy table, with the study's setting ids and seeds.

    Read through the plan (the job keys the study computes), so the jobs of another study or
    another budget on the same approaches and benchmarks are left out; failed and unfinished
    jobs are counted in a note. Per-question outcomes as for the store.
    """
    study = load_study(path)
    if not workspace.root.is_dir():
        raise MissingSourceError(f"no runs directory at {workspace.root}: no job of study {study.name} has run there; pass --runs-dir")
    plan = plan_study(registry, study, workspace)
    done = [(planned, planned.result) for planned in plan.jobs if planned.state == JobState.DONE.value and planned.result is not None]
    frame = pd.DataFrame(
        [
            {
                "approach": planned.point.approach.id,
                "benchmark": planned.point.bench.id,
                "hparam_id": planned.point.setting.id,
                "seed": planned.point.seed,
                "em": result.exact_match,
                "f1": result.f1,
            }
            for planned, result in done
        ],
        columns=["approach", "benchmark", "hparam_id", "seed", "em", "f1"],
    )
    notes = []
    if len(done) < len(plan.jobs):
        states = plan.counts()
        left = ", ".join(f"{count} {state}" for state, count in sorted(states.items()) if state != JobState.DONE.value)
        notes.append(f"study {study.name}: {len(done)} of {len(plan.jobs)} jobs finished; left out: {left} (`concur study plan {path}`)")
    # under the study's own setting ids, as its tidy rows (a job's own are those of the study that first planned it)
    finished = [replace(FinishedJob.from_result(result), hparam_id=planned.point.setting.id) for planned, result in done]
    questions, question_notes = job_questions(finished, workspace, registry, f"study {study.name}")
    return Source(tidy_frame(frame, str(path)), questions, notes + question_notes)


def _refuse_repeated_runs(rows: list[dict[str, Any]], store_path: Path) -> None:
    """Two finished jobs with the same approach, benchmark, setting id and seed (e.g. a budgeted and a full run)
    are two results for one cell of the table; name them and say how to pick a study's."""
    keys: dict[tuple[Any, ...], list[str]] = defaultdict(list)
    for row in rows:
        keys[(row["approach"], row["benchmark"], row["hparam_id"], row["seed"])].append(row["key"])
    for (approach, bench, hparam_id, seed), jobs in keys.items():
        if len(jobs) > 1:
            raise ConcurError(
                f"the store at {store_path} holds {len(jobs)} runs of {approach} on {bench} (hparams {hparam_id}, seed {seed}), "
                f"jobs {', '.join(sorted(jobs))} (another budget, overrides or spec version); "
                f"choose one study's jobs with --results {STUDY_PREFIX}FILE.toml"
            )


def _split(request: str) -> list[str]:
    if Path(request).is_file():
        return [request]
    return [part.strip() for part in request.split(SEPARATOR) if part.strip()]


def _load_one(name: str, store_path: Path, locator: SourceLocator, registry: Registry | None, layout: Layout | str | None) -> Source:
    if name in REFERENCES:
        return Source(REFERENCES[name](), empty_questions(), [])
    if name == STORE:
        return store_results(store_path, registry)
    if name.startswith(STUDY_PREFIX):
        return study_results(Path(name.removeprefix(STUDY_PREFIX)), registry or default_registry(), Workspace(store_path.parent))
    if name in LEADERBOARDS:
        imported = load_leaderboard(name, locator)
        return Source(imported.frame, empty_questions(), list(imported.notes))
    path = Path(name)
    if path.suffix.lower() in (".csv", JSON_SUFFIX) or path.exists():
        read = read_results_file(path, layout)
        return Source(read.frame, read.questions, [])
    raise UnknownNameError("results source", name, NAMED_SOURCES)


def _cells(frame: pd.DataFrame) -> pd.MultiIndex:
    return pd.MultiIndex.from_frame(frame[list(CELL)].astype(str))


def _combine(sources: list[Source]) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The sources' rows, a later source's cells replacing the earlier ones' (their per-question outcomes too)."""
    combined, questions = sources[0].frame, sources[0].questions
    notes = []
    for source in sources[1:]:
        frame = source.frame
        cells = _cells(frame)
        existing = _cells(combined)
        replaced = existing.isin(cells)
        if replaced.any():
            pairs = sorted(set(existing[replaced]))
            shown = ", ".join(f"{approach}×{bench}" for approach, bench in pairs[:6]) + (", ..." if len(pairs) > 6 else "")
            notes.append(f"{frame['source'].iloc[0]} replaces {len(pairs)} cell(s) of earlier results: {shown}")
        combined = pd.concat([combined[~replaced], frame], ignore_index=True)
        kept = questions[~_cells(questions).isin(cells)]
        questions = question_frame(pd.concat([kept, source.questions], ignore_index=True))
    return combined, questions, notes
