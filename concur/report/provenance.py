"""What was run: the sources behind a report, their settings and seeds, the code, devices and jobs.

A reader must know whether a number was measured here or copied from a paper: a published
table is named as such, while results from the store carry what each job recorded in its
`result.json` (device, library versions, hyperparameters, failure). A study's plan adds the
jobs of its grid that are done, failed or still to run.
"""

from __future__ import annotations

import subprocess
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

import concur
from concur.analysis.leaderboards import LEADERBOARDS
from concur.analysis.reference import reference_spec
from concur.analysis.results import REFERENCES, STORE, STUDY_PREFIX, Results
from concur.analysis.view import EMTable
from concur.registry import Registry
from concur.runner.planning.estimate import throughputs
from concur.runner.planning.grid import GridRequest
from concur.runner.planning.study import Plan, Study, load_study, plan_study
from concur.runner.records.jobdir import JobState
from concur.runner.records.result import FAILED_STATUS, OK_STATUS, JobResult
from concur.runner.records.store import ActiveJob, active_jobs, finished_jobs
from concur.workspace import Workspace

SECONDS_PER_HOUR = 3600.0
GIT_TIMEOUT_SECONDS = 10.0
PUBLISHED_TABLE = "published table"
PUBLISHED = "liu2023"  # the reference study's EM table
REFERENCE_CONTENTS = {
    PUBLISHED: "the EM table published by",
    "liu2023-published": "the SQuAD v1.1 dev EM each approach's own paper reported, as collected by",
}
LEADERBOARD = "leaderboard"
RESULTS_STORE = "results store"
RESULTS_FILE = "results file"
STUDY_RESULTS = "study results"
MEASURED = (RESULTS_STORE, STUDY_RESULTS)  # kinds of source whose jobs concur ran
STORE_STATES = {OK_STATUS: JobState.DONE.value, FAILED_STATUS: JobState.FAILED.value}
NOT_RECORDED = "not recorded"
VERSION_ORDER = ("concur", "python", "torch", "transformers", "cuda", "cudnn", "platform")


@dataclass(frozen=True)
class Source:
    """One results source, and how many cells of the report come from it."""

    name: str
    kind: str
    description: str
    cells: int


@dataclass(frozen=True)
class ApproachRuns:
    """One approach's hyperparameter settings and seeds as the results hold them (None: already reduced)."""

    approach: str
    settings: tuple[int, ...] | None
    seeds: tuple[int, ...] | None
    runs: int
    benchmarks: int


@dataclass(frozen=True)
class Hyperparameters:
    approach: str
    hparam_id: int
    values: dict[str, Any]
    benchmarks: int
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class Tally:
    """Jobs sharing one label (a device, a set of library versions) and the device-hours they took."""

    label: str
    jobs: int
    device_hours: float


@dataclass(frozen=True)
class Failure:
    approach: str
    benchmark: str
    hparam_id: int
    seed: int
    error: str


@dataclass(frozen=True)
class StudyStatus:
    """A study's grid and the state of its jobs, overall and per approach."""

    name: str
    file: Path
    description: str
    grid: GridRequest
    states: dict[str, int]
    by_approach: dict[str, dict[str, int]]


@dataclass(frozen=True)
class Provenance:
    sources: list[Source]
    concur_version: str
    revision: str | None  # `git describe` of the checkout concur runs from
    runs: list[ApproachRuns]
    missing_cells: int
    hyperparameters: list[Hyperparameters] = field(default_factory=list)
    versions: list[Tally] = field(default_factory=list)
    devices: list[Tally] = field(default_factory=list)
    jobs: dict[str, int] = field(default_factory=dict)  # job state -> jobs of the store and job directories
    failures: list[Failure] = field(default_factory=list)
    study: StudyStatus | None = None

    @property
    def measured(self) -> bool:
        """Whether any result was run with concur (rather than copied from a table)."""
        return any(source.kind in MEASURED for source in self.sources)


def collect_provenance(results: Results, table: EMTable, *, workspace: Workspace, registry: Registry, study: Study | None) -> Provenance:
    """Everything the report's "what was run" section says, for the cells `table` selected.

    Job details (devices, versions, hyperparameters, failures) come from the store for
    `store` results and from the study's plan for `study:FILE` results; `study` (else the
    first `study:` source) adds its grid and the state of its jobs.
    """
    selected = selected_rows(results.frame, table)
    provenance = Provenance(
        sources=[_source(name, selected, workspace) for name in results.sources],
        concur_version=concur.__version__,
        revision=source_revision(),
        runs=_approach_runs(selected, list(table.wide.index)),
        missing_cells=len(table.missing()),
    )
    finished = finished_jobs(workspace.db_path, workspace.jobs_dir)  # a damaged file is a note of the store's results already
    store_rows = finished.rows
    study_sources = [name.removeprefix(STUDY_PREFIX) for name in results.sources if name.startswith(STUDY_PREFIX)]
    if study is None and study_sources:
        study = load_study(Path(study_sources[0]))
    plan = plan_study(registry, study, workspace, throughputs(store_rows)) if study is not None else None
    jobs: dict[str, dict[str, Any]] = {}
    if STORE in results.sources:
        jobs.update((row["key"], row) for row in store_rows)
    if plan is not None and study_sources:
        jobs.update(
            (planned.job.key, _job_row(planned.result, workspace.jobs_dir / planned.job.key))
            for planned in plan.jobs
            if planned.job is not None and planned.result is not None
        )
    if provenance.measured:
        chosen = [row for row in jobs.values() if row["approach"] in table.wide.index and row["benchmark"] in table.wide.columns]
        provenance = _with_jobs(provenance, chosen, active_jobs(workspace.jobs_dir, finished.with_result)[0], table)
    if study is not None and plan is not None:
        provenance = replace(provenance, study=_study_status(study, plan))
    return provenance


def _job_row(result: JobResult, job_dir: Path) -> dict[str, Any]:
    """A finished job of a plan as the index would hold it, its hyperparameters and versions as read (not JSON-encoded)."""
    row = result.index_row(job_dir)
    return {**row, "hparams": result.job["hparams"], "versions": dict(result.versions or {})}


def selected_rows(frame: pd.DataFrame, table: EMTable) -> pd.DataFrame:
    """The runs behind the cells of `table` (its approaches on its benchmarks)."""
    return frame[frame["approach"].isin(table.wide.index) & frame["benchmark"].isin(table.wide.columns)]


def source_revision() -> str | None:
    """`git describe` of the checkout the running concur comes from; None for an installed package."""
    package = Path(concur.__file__).resolve().parent
    try:
        top = _git(package, "rev-parse", "--show-toplevel")
        if Path(top).resolve() != package.parent:  # e.g. a virtual environment inside some other repository
            return None
        return _git(package, "describe", "--always", "--dirty", "--tags") or None
    except (OSError, subprocess.SubprocessError):
        return None


def _git(directory: Path, *args: str) -> str:
    completed = subprocess.run(
        ["git", "-C", str(directory), *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_SECONDS, check=True
    )
    return completed.stdout.strip()


def _source(name: str, selected: pd.DataFrame, workspace: Workspace) -> Source:
    cells = int(selected.loc[selected["source"] == name, ["approach", "benchmark"]].drop_duplicates().shape[0])
    citation = reference_spec()["citation"]
    if name in REFERENCES:
        what = REFERENCE_CONTENTS.get(name, "a table published by")
        return Source(name, PUBLISHED_TABLE, f"{what} {citation}; bundled with concur, nothing was run here", cells)
    if name == STORE:
        return Source(name, RESULTS_STORE, f"jobs run with concur, indexed in {workspace.db_path}", cells)
    if name.startswith(STUDY_PREFIX):
        description = f"the finished jobs of the study {name.removeprefix(STUDY_PREFIX)}, run with concur, in {workspace.jobs_dir}"
        return Source(name, STUDY_RESULTS, description, cells)
    if name in LEADERBOARDS:
        return Source(name, LEADERBOARD, f"the public {name} leaderboard, imported; nothing was run here", cells)
    return Source(name, RESULTS_FILE, f"a tidy results table, {Path(name).resolve()}", cells)


def _approach_runs(selected: pd.DataFrame, order: list[str]) -> list[ApproachRuns]:
    """Per approach, in the EM table's order: its settings, seeds, runs and benchmarks."""
    groups = dict(tuple(selected.groupby("approach", sort=False)))
    return [
        ApproachRuns(
            approach=approach,
            settings=_ids(groups[approach]["hparam_id"]),
            seeds=_ids(groups[approach]["seed"]),
            runs=len(groups[approach]),
            benchmarks=int(groups[approach]["benchmark"].nunique()),
        )
        for approach in order
        if approach in groups
    ]


def _ids(column: pd.Series) -> tuple[int, ...] | None:
    present = column.dropna()
    return tuple(sorted(int(value) for value in present.unique())) if len(present) else None


def _with_jobs(provenance: Provenance, rows: list[dict[str, Any]], active: list[ActiveJob], table: EMTable) -> Provenance:
    """The job details of `rows` (finished jobs of the report's cells), with the running and interrupted jobs of those cells."""
    jobs: Counter[str] = Counter(STORE_STATES.get(row["status"], row["status"]) for row in rows)
    for job in active:
        if job.started.get("approach") in table.wide.index and job.started.get("benchmark") in table.wide.columns:
            jobs[job.state.value] += 1
    failures = [
        Failure(row["approach"], row["benchmark"], row["hparam_id"], row["seed"], row.get("error") or "")
        for row in rows
        if row["status"] != OK_STATUS
    ]
    return replace(
        provenance,
        hyperparameters=_hyperparameters(rows),
        versions=_tallies(rows, lambda row: _versions_label(row.get("versions") or {})),
        devices=_tallies(rows, lambda row: row.get("device") or NOT_RECORDED),
        jobs=dict(jobs),
        failures=failures,
    )


def _hyperparameters(rows: list[dict[str, Any]]) -> list[Hyperparameters]:
    grouped: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        grouped[(row["approach"], row["hparam_id"])].append(row)
    return [
        Hyperparameters(
            approach,
            hparam_id,
            dict(group[0].get("hparams") or {}),
            len({row["benchmark"] for row in group}),
            tuple(sorted({row["seed"] for row in group})),
        )
        for (approach, hparam_id), group in sorted(grouped.items())
    ]


def _versions_label(versions: dict[str, Any]) -> str:
    keys = [key for key in VERSION_ORDER if key in versions] + sorted(set(versions) - set(VERSION_ORDER))
    return ", ".join(f"{key} {versions[key]}" for key in keys) or NOT_RECORDED


def _tallies(rows: list[dict[str, Any]], label_of: Callable[[dict[str, Any]], str]) -> list[Tally]:
    jobs: Counter[str] = Counter()
    seconds: dict[str, float] = defaultdict(float)
    for row in rows:
        label = label_of(row)
        jobs[label] += 1
        seconds[label] += row.get("device_seconds") or 0.0
    return [Tally(label, count, seconds[label] / SECONDS_PER_HOUR) for label, count in jobs.most_common()]


def _study_status(study: Study, plan: Plan) -> StudyStatus:
    by_approach: dict[str, Counter[str]] = defaultdict(Counter)
    for planned in plan.jobs:
        by_approach[planned.point.approach.id][planned.state] += 1
    return StudyStatus(
        name=study.name,
        file=study.file,
        description=study.description,
        grid=study.grid,
        states=dict(plan.counts()),
        by_approach={approach: dict(counts) for approach, counts in by_approach.items()},
    )
