"""What has become of the jobs of a runs dir, and what the finished ones cost (`concur status`).

The view is read from the files, never from memory of a driver: finished jobs from the
index brought up to date with the job directories, running and interrupted ones from the
job directories without a result. Slurm jobs submitted from here are collected first, where
the index may be written, so a status after `--no-wait` shows what has ended since.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from concur.errors import ConcurError, DamagedFileError
from concur.runner.records.jobdir import JobState
from concur.runner.records.result import OK_STATUS
from concur.runner.records.store import Store, active_jobs, finished_jobs, writable
from concur.runner.scheduling.slurm import collect_submitted
from concur.workspace import Workspace

SECONDS_PER_HOUR = 3600.0
STARTED_FIELDS = ("approach", "benchmark", "hparam_id", "seed")  # what is shown of a running job's job.json
FINISHED_FIELDS = (
    "key",
    "approach",
    "benchmark",
    "hparam_id",
    "seed",
    "em",
    "f1",
    "train_seconds",
    "eval_seconds",
    "device",
    "error",
    "finished_at",
)  # what is shown of a finished job's index row
SUMMARY_STATES = (JobState.DONE, JobState.FAILED, JobState.RUNNING, JobState.INTERRUPTED, JobState.PENDING)


@dataclass(frozen=True)
class Survey:
    """The jobs of a runs dir, restricted to some approaches and benchmarks (none given: all)."""

    finished: list[dict[str, Any]]  # index rows of the finished jobs
    records: list[dict[str, Any]]  # one per job: finished, running, interrupted, then pending combinations
    problems: list[str]  # one line per damaged file met on the way

    def summary(self) -> dict[str, int]:
        """How many jobs are in each state, every state named."""
        counts = Counter(record["state"] for record in self.records)
        return {state.value: counts.get(state.value, 0) for state in SUMMARY_STATES}


@dataclass
class Cost:
    """Jobs and the hours they ran, by kind of device: "gpu", "cpu" (core-hours), "unknown" (not recorded)."""

    jobs: int = 0
    hours: dict[str, float] = field(default_factory=dict)

    def add(self, jobs: int, hours: dict[str, float]) -> None:
        self.jobs += jobs
        for kind, value in hours.items():
            self.hours[kind] = self.hours.get(kind, 0.0) + value

    def of(self, kind: str) -> float:
        return self.hours.get(kind, 0.0)

    def as_dict(self) -> dict[str, float]:
        """`{"jobs": n, "gpu_hours": h, ...}` with the kinds it has, as `concur status --cost --format json` gives it."""
        return {"jobs": self.jobs, **{f"{kind}_hours": value for kind, value in self.hours.items()}}


@dataclass
class DeviceHours:
    """Jobs and device-hours (GPU and CPU core apart) per (approach, benchmark), per approach and in all."""

    cells: dict[tuple[str, str], Cost] = field(default_factory=dict)
    approaches: dict[str, Cost] = field(default_factory=dict)
    total: Cost = field(default_factory=Cost)


def collect_slurm_results(workspace: Workspace, echo: Callable[[str], None]) -> str | None:
    """Index what Slurm jobs submitted from here wrote, where the index can be written; a warning when Slurm
    did not answer (the local view stays available). A damaged index is left to `finished_jobs`, which says
    so once and reads the job directories instead."""
    if not writable(workspace.db_path):
        return None
    try:
        with Store(workspace.db_path) as store:
            collect_submitted(workspace, store, echo)
    except DamagedFileError:
        return None
    except ConcurError as error:
        return f"Slurm jobs not collected: {error}"
    return None


def survey(workspace: Workspace, approaches: Sequence[str] = (), benches: Sequence[str] = ()) -> Survey:
    """Every job of these approaches and benchmarks; given both, also the combinations never started (pending)."""

    def chosen(approach: Any, bench: Any) -> bool:
        return (not approaches or approach in approaches) and (not benches or bench in benches)

    finished = finished_jobs(workspace.db_path, workspace.jobs_dir)
    active, damaged = active_jobs(workspace.jobs_dir, finished.with_result)
    rows = [row for row in finished.rows if chosen(row["approach"], row["benchmark"])]
    records = [{**{name: row[name] for name in FINISHED_FIELDS}, "state": _finished_state(row).value} for row in rows]
    records += [
        {"key": job.key, **{name: job.started.get(name) for name in STARTED_FIELDS}, "state": job.state.value}
        for job in active
        if chosen(job.started.get("approach"), job.started.get("benchmark"))
    ]
    if approaches and benches:
        present = {(record["approach"], record["benchmark"]) for record in records}
        records += [
            {"key": None, "approach": a, "benchmark": b, "hparam_id": 0, "seed": None, "state": JobState.PENDING.value}
            for a in approaches
            for b in benches
            if (a, b) not in present
        ]
    return Survey(rows, records, finished.warnings() + [str(error) for error in damaged])


def device_hours(rows: Sequence[dict[str, Any]]) -> DeviceHours:
    """Sum the device-seconds the finished jobs (index rows) recorded, as hours of their kind of device."""
    hours = DeviceHours()
    for row in rows:
        cell = hours.cells.setdefault((row["approach"], row["benchmark"]), Cost())
        cell.add(1, {row.get("device_kind") or "unknown": (row.get("device_seconds") or 0.0) / SECONDS_PER_HOUR})
    for (approach, _), cell in hours.cells.items():
        hours.approaches.setdefault(approach, Cost()).add(cell.jobs, cell.hours)
        hours.total.add(cell.jobs, cell.hours)
    return hours


def _finished_state(row: dict[str, Any]) -> JobState:
    return JobState.DONE if row["status"] == OK_STATUS else JobState.FAILED
