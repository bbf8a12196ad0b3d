"""A study file (`analysis/studies/*.toml`): a whole grid as data, and what has become of its jobs.

```toml
name = "liu2023"
approaches = ["rasor", "bidaf", "family:pretrained"]   # ids, globs, families (a string or a list)
benches = "family:human,squad-*"
hparams = 6          # setting 0 = each approach's published one, 1..5 drawn from its [space]
hparam_seed = 0      # the study's sampling seed
seeds = [0]
```

`plan` turns the grid into jobs and reads their state from the job directories: done,
failed, running, interrupted, pending, or not yet plannable because the benchmark's data is
not prepared (a job's key includes its data hash).
"""

from __future__ import annotations

import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from concur.data.prepare import PreparedBenchmark, prepared
from concur.errors import SpecError
from concur.registry.registry import Registry
from concur.registry.tables import DESCRIPTIVE_KEYS, Table
from concur.runner.estimate import estimate_seconds
from concur.runner.grid import GridPoint, GridRequest, expand_grid
from concur.runner.jobdir import JobDir
from concur.runner.jobs import Job, make_job
from concur.workspace import Workspace

NOT_PREPARED = "not prepared"  # a job state: its benchmark has no materialised data yet, so no key
_KEYS = DESCRIPTIVE_KEYS | {"approaches", "benches", "hparams", "hparam_seed", "seeds"}


@dataclass(frozen=True)
class Study:
    name: str
    file: Path
    grid: GridRequest
    description: str = ""


@dataclass
class PlannedJob:
    point: GridPoint
    job: Job | None  # None while the benchmark is not prepared
    state: str
    estimate_seconds: float | None
    measured_seconds: float | None = None  # device-seconds of a finished job


@dataclass
class Plan:
    jobs: list[PlannedJob] = field(default_factory=list)

    def counts(self) -> Counter[str]:
        return Counter(planned.state for planned in self.jobs)


def load_study(path: Path) -> Study:
    """Read and check a study file; errors name the file and the field."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise SpecError(path, None, f"is not a readable TOML file ({error})") from error
    table = Table(data, path)
    table.reject_unknown(_KEYS)
    hparams = table.get("hparams", int, 1)
    if hparams < 1:
        raise table.error("hparams", f"must be at least 1 (setting 0 is each approach's published one), got {hparams}")
    seeds = table.get("seeds", list, [0])
    if not seeds or not all(isinstance(seed, int) and not isinstance(seed, bool) for seed in seeds):
        raise table.error("seeds", f"must be a non-empty list of integers, got {seeds!r}")
    grid = GridRequest(
        approaches=_names(table, "approaches"),
        benches=_names(table, "benches"),
        hparams=hparams,
        seeds=tuple(seeds),
        hparam_seed=table.get("hparam_seed", int, 0),
    )
    return Study(table.get("name", str, path.stem), path, grid, table.get("description", str, ""))


def plan_study(
    registry: Registry,
    study: Study,
    workspace: Workspace,
    rates_by_approach: dict[str, float],
) -> Plan:
    """Every job of the study with its state and, where the approach was measured, its estimated device-seconds."""
    benches: dict[str, PreparedBenchmark | None] = {}
    plan = Plan()
    for point in expand_grid(registry, study.grid):
        if point.bench.id not in benches:
            benches[point.bench.id] = prepared(workspace.data_dir, point.bench)
        bench = benches[point.bench.id]
        if bench is None:
            plan.jobs.append(PlannedJob(point, None, NOT_PREPARED, None))
            continue
        job = make_job(point.approach, bench, seed=point.seed, setting=point.setting)
        job_dir = JobDir(workspace.jobs_dir / job.key)
        result = job_dir.result() or {}
        measured = (result.get("accounting") or {}).get("device_seconds")
        questions = bench.manifest["splits"]["train"]["questions"]
        estimate = estimate_seconds(point.approach.id, questions, rates_by_approach)
        plan.jobs.append(PlannedJob(point, job, job_dir.state().value, estimate, measured))
    return plan


def _names(table: Table, key: str) -> str:
    value: Any = table.data.get(key)
    if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        return ",".join(value)
    if isinstance(value, str) and value.strip():
        return value
    raise table.error(key, f"must be a comma-separated string or a list of ids, globs and families, got {value!r}")
