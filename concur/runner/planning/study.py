"""A study file (`analysis/studies/*.toml`): a whole grid as data, and what has become of its jobs.

```toml
name = "liu2023"
approaches = ["rasor", "bidaf", "family:pretrained"]   # ids, globs, families (a string or a list)
benches = "family:human,squad-*"
hparams = 6          # setting 0 = each approach's published one, 1..5 drawn from its [space]
hparam_seed = 0      # the study's sampling seed
seeds = [0]
reference = "squad"  # optional: the benchmark its report's figures compare the others with
precision = "auto"   # optional: "auto" (bf16 autocast on CUDA, fp32 on the CPU), "fp32" or "bf16"
```

A study may also set a budget and overrides (TOML cannot have both `hparams = 6` and a table
`[hparams.x]`, so with overrides the number of settings is `count` in `[hparams]`):

```toml
[budget]             # seeded subsets every job of the study sees (concur.runner.planning.budget)
train_questions = 1500
test_questions = 1000   # optional; EM is then on this subset of the test split
seed = 0                # default 0

[hparams]
count = 1            # settings per approach (default 1)
[hparams.minilm-l6]  # hyperparameters set in every setting of one approach, checked like its spec's
epochs = 1.0
max_seq_length = 256
```

A budget, overrides and a precision other than `auto` keep every id (results stay comparable with a published table by
approach and benchmark) and change what jobs compute, so they are part of the job keys: a
budgeted job and a full one are different jobs. A study without them has the keys it always had.
(`precision = "bf16"` trains faster on CPUs with AVX-512 BF16 or AMX; docs/performance.md.)

`plan` turns the grid into jobs and reads their state from the job directories: done,
failed, running, interrupted, pending, or not yet plannable because the benchmark's data is
not prepared (a job's key includes its data hash). `survey_study` adds what a plan is read
for before a long run: the device-hours spent and still to spend, and the missing files.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from concur.approaches.precision import AUTO, precision_problem
from concur.data.prepare import PreparedBenchmark, prepared
from concur.data.sources import SourceLocator
from concur.errors import SpecError
from concur.registry.registry import Registry
from concur.registry.tables import DESCRIPTIVE_KEYS, Table
from concur.runner.planning.availability import MissingSource, missing_sources
from concur.runner.planning.budget import Budget
from concur.runner.planning.estimate import Speeds, job_estimate, makespan, run_start_seconds, throughputs
from concur.runner.planning.grid import GridPoint, GridRequest, expand_grid
from concur.runner.planning.jobs import Job, make_job
from concur.runner.records.jobdir import JobDir, JobState
from concur.runner.records.result import JobResult
from concur.runner.records.store import finished_jobs
from concur.userfiles import load_toml
from concur.workspace import Workspace

NOT_PREPARED = "not prepared"  # a job state: its benchmark has no materialised data yet, so no key
FINISHED = (JobState.DONE.value, JobState.FAILED.value)  # states of jobs that will not run again (without --retry-failed)
ALL_APPROACHES = "all"  # the label of the tally over every job
_KEYS = DESCRIPTIVE_KEYS | {"approaches", "benches", "hparams", "hparam_seed", "seeds", "budget", "precision", "reference"}
_BUDGET_KEYS = frozenset({"train_questions", "test_questions", "seed"})
HPARAMS_COUNT = "count"  # in an [hparams] table of overrides: the number of settings per approach
_COUNT_LINE = re.compile(r"^\s*hparams\s*=", re.MULTILINE)
_OVERRIDE_TABLE = re.compile(r"^\s*\[\s*hparams\s*\.", re.MULTILINE)


@dataclass(frozen=True)
class Study:
    name: str
    file: Path
    grid: GridRequest
    description: str = ""
    reference: str | None = None  # the benchmark its figures compare the others with (the paper's is squad)


@dataclass
class PlannedJob:
    point: GridPoint
    job: Job | None  # None while the benchmark is not prepared
    state: str
    estimate_seconds: float | None
    measured_seconds: float | None = None  # device-seconds of a finished job
    result: JobResult | None = None  # its result, once finished
    estimate_wall_seconds: float | None = None  # the wall time of estimate_seconds on its approach's devices
    estimate_basis: str | None = None  # what the estimate comes from (`Speeds.basis`)


@dataclass(frozen=True)
class Tally:
    """Some of a plan's jobs summed up: what is done, what is left, and its device-seconds spent and to go."""

    label: str
    jobs: int
    done: int
    failed: int
    to_run: int
    spent_seconds: float  # measured device-seconds of the finished jobs
    estimate_seconds: float | None  # estimated device-seconds of the jobs to run that have an estimate (None: none has)
    unmeasured: int  # jobs to run without an estimate
    unprepared: int  # of those, jobs whose benchmark is not prepared yet


@dataclass(frozen=True)
class Shape:
    """How many approaches, benchmarks, settings and seeds a plan's grid spans."""

    approaches: int
    benches: int
    settings: int
    seeds: int


@dataclass
class Plan:
    jobs: list[PlannedJob] = field(default_factory=list)
    run_start_seconds: float = 0.0  # what a run waits once before its first job (`estimate.run_start_seconds`)

    def counts(self) -> Counter[str]:
        return Counter(planned.state for planned in self.jobs)

    def wall_estimate(self, slots: int) -> tuple[float, int]:
        """Wall seconds of the jobs still to run that have an estimate, `slots` at a time, after the run's own
        start, and how many have none."""
        to_run = [planned for planned in self.jobs if planned.state not in FINISHED]
        known = [planned.estimate_wall_seconds for planned in to_run if planned.estimate_wall_seconds is not None]
        return (self.run_start_seconds if known else 0.0) + makespan(known, slots), len(to_run) - len(known)

    def estimate_bases(self) -> Counter[str]:
        """How many of the jobs still to run are estimated from each basis (`Speeds.basis`)."""
        return Counter(planned.estimate_basis for planned in self.jobs if planned.state not in FINISHED and planned.estimate_basis)

    def shape(self) -> Shape:
        points = [planned.point for planned in self.jobs]
        return Shape(
            len({point.approach.id for point in points}),
            len({point.bench.id for point in points}),
            len({point.setting.id for point in points}),
            len({point.seed for point in points}),
        )

    def tallies(self) -> list[Tally]:
        """One tally per approach (in grid order), then one over every job."""
        by_approach: dict[str, list[PlannedJob]] = {}
        for planned in self.jobs:
            by_approach.setdefault(planned.point.approach.id, []).append(planned)
        return [tally(approach, jobs) for approach, jobs in by_approach.items()] + [tally(ALL_APPROACHES, self.jobs)]


def load_study(path: Path) -> Study:
    """Read and check a study file; errors name the file and the field.

    Names, budgets and overrides are checked against the registry when the grid is expanded.
    """
    try:
        data = load_toml(path)
    except SpecError as error:
        if error.line is None or not _count_beside_overrides(path):
            raise
        hint = "; `hparams = N` and [hparams.<approach>] tables cannot both be given: write the number as `count = N` under [hparams]"
        raise SpecError(path, None, error.problem + hint, line=error.line, column=error.column) from None
    table = Table(data, path)
    table.reject_unknown(_KEYS)
    hparams, overrides = _hparams(table)
    seeds = table.get("seeds", list, [0])
    if not seeds or not all(isinstance(seed, int) and not isinstance(seed, bool) for seed in seeds):
        raise table.error("seeds", f"must be a non-empty list of integers, got {seeds!r}")
    grid = GridRequest(
        approaches=_names(table, "approaches"),
        benches=_names(table, "benches"),
        hparams=hparams,
        seeds=tuple(seeds),
        hparam_seed=table.get("hparam_seed", int, 0),
        budget=_budget(table),
        precision=_precision(table),
        overrides=overrides,
        origin=path,
    )
    return Study(table.get("name", str, path.stem), path, grid, table.get("description", str, ""), table.get("reference", str))


def plan_study(
    registry: Registry,
    study: Study,
    workspace: Workspace,
    speeds: Speeds | None = None,
    run_start: float = 0.0,
) -> Plan:
    """Every job of the study with its state, its result once finished and, where the approach was
    measured, its estimated device-seconds; `run_start` is what a run waits before its first job."""
    benches: dict[str, PreparedBenchmark | None] = {}
    plan = Plan(run_start_seconds=run_start)
    speeds = speeds or Speeds()
    for point in expand_grid(registry, study.grid):
        if point.bench.id not in benches:
            benches[point.bench.id] = prepared(workspace.data_dir, point.bench)
        bench = benches[point.bench.id]
        if bench is None:
            plan.jobs.append(PlannedJob(point, None, NOT_PREPARED, None))
            continue
        grid = study.grid
        job = make_job(point.approach, bench, seed=point.seed, setting=point.setting, budget=grid.budget, precision=grid.precision)
        job_dir = JobDir(workspace.jobs_dir / job.key)
        result = job_dir.result()
        measured = result.accounting.device_seconds if result is not None and result.accounting else None
        state = job_dir.state().value
        estimate = job_estimate(job, bench, speeds)
        if estimate is None:
            plan.jobs.append(PlannedJob(point, job, state, None, measured, result))
        else:
            plan.jobs.append(
                PlannedJob(point, job, state, estimate.device_seconds, measured, result, estimate.wall_seconds, estimate.basis)
            )
    return plan


def survey_study(
    registry: Registry, study: Study, workspace: Workspace, locator: SourceLocator, warn: Callable[[str], None]
) -> tuple[Plan, list[MissingSource]]:
    """The plan, with estimates from every job measured so far (any study's), and the source files this
    machine lacks, which would stop `concur study run`; `warn` is told of each damaged result met."""
    finished = finished_jobs(workspace.db_path, workspace.jobs_dir)  # indexes what the workers wrote
    for line in finished.warnings():
        warn(line)
    plan = plan_study(registry, study, workspace, throughputs(finished.rows), run_start_seconds(finished.rows))
    return plan, missing_sources((planned.point.bench for planned in plan.jobs), locator, workspace.data_dir)


def tally(label: str, jobs: list[PlannedJob]) -> Tally:
    """Sum up `jobs`: states, measured device-seconds, and the estimates of those still to run."""
    to_run = [planned for planned in jobs if planned.state not in FINISHED]
    known = [planned.estimate_seconds for planned in to_run if planned.estimate_seconds is not None]
    return Tally(
        label,
        jobs=len(jobs),
        done=sum(1 for planned in jobs if planned.state == JobState.DONE.value),
        failed=sum(1 for planned in jobs if planned.state == JobState.FAILED.value),
        to_run=len(to_run),
        spent_seconds=sum(planned.measured_seconds or 0.0 for planned in jobs),
        estimate_seconds=sum(known) if known else None,
        unmeasured=len(to_run) - len(known),
        unprepared=sum(1 for planned in to_run if planned.state == NOT_PREPARED),
    )


def _hparams(table: Table) -> tuple[int, dict[str, dict[str, Any]]]:
    """`hparams = N`, or an [hparams] table of per-approach overrides with an optional `count = N` (default 1)."""
    if isinstance(table.data.get("hparams"), dict):
        section = Table(table.data["hparams"], table.path, "hparams.")
        count = section.get(HPARAMS_COUNT, int, 1)
        overrides = {}
        for approach in section.data:
            if approach == HPARAMS_COUNT:
                continue
            values = section.get(approach, dict)
            if not values:
                raise section.error(approach, "is an empty table; give the hyperparameters to set, e.g. epochs = 1.0")
            overrides[approach] = dict(values)
        where = "hparams.count"
    else:
        count, overrides, where = table.get("hparams", int, 1), {}, "hparams"
    if count < 1:
        raise SpecError(table.path, where, f"must be at least 1 (setting 0 is each approach's published one), got {count}")
    return count, overrides


def _precision(table: Table) -> str:
    """`precision`: "auto" (the default), "fp32" or "bf16"."""
    precision: str = table.get("precision", str, AUTO)
    problem = precision_problem(precision)
    if problem is not None:
        raise table.error("precision", problem)
    return precision


def _budget(table: Table) -> Budget | None:
    """The [budget] table: positive question counts and a seed, at least one count; [budget.<benchmark>] tables each
    give one benchmark its own counts."""
    section = table.table("budget")
    if section is None:
        return None
    benches = {key: section.table(key, required=True) for key, value in section.data.items() if isinstance(value, dict)}
    Table({key: value for key, value in section.data.items() if key not in benches}, table.path, "budget.").reject_unknown(_BUDGET_KEYS)
    limits = _question_counts(section)
    if not any(value is not None for value in limits.values()):
        raise section.error(None, "sets neither train_questions nor test_questions; give one, or remove [budget]")
    own = {}
    for bench_id, bench_section in benches.items():
        if "seed" in bench_section.data:
            raise bench_section.error("seed", "one seed takes every benchmark's subsets: set it under [budget]")
        bench_section.reject_unknown(_BUDGET_KEYS)
        counts = {key: value for key, value in _question_counts(bench_section).items() if value is not None}
        if not counts:
            raise bench_section.error(None, "sets neither train_questions nor test_questions; give one, or remove the table")
        own[bench_id] = counts
    return Budget(seed=section.get("seed", int, 0), benches=own, **limits)


def _question_counts(section: Table) -> dict[str, int | None]:
    """A budget table's train_questions and test_questions, each positive where given."""
    limits = {}
    for key in ("train_questions", "test_questions"):
        value = section.get(key, int)
        if value is not None and value < 1:
            raise section.error(key, f"must be a positive number of questions, got {value}")
        limits[key] = value
    return limits


def _count_beside_overrides(path: Path) -> bool:
    """Whether a study file that is not valid TOML has both `hparams = N` and [hparams.<approach>] tables (a likely slip)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    return bool(_COUNT_LINE.search(text) and _OVERRIDE_TABLE.search(text))


def _names(table: Table, key: str) -> str:
    """The selection as one comma-separated string; one that names nothing is an error here, where its field is known."""
    value: Any = table.data.get(key)
    joined = ",".join(value) if isinstance(value, list) and all(isinstance(item, str) for item in value) else value
    if isinstance(joined, str) and joined.replace(",", "").strip():
        return joined
    raise table.error(key, f"must be a comma-separated string or a list of ids, globs and families (naming at least one), got {value!r}")
