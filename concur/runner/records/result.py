"""A job's result as one typed value: what `result.json` holds, what the index's row is made of, what readers see.

The worker builds a `JobResult` and writes `to_json()`; the driver, the index, status, the
report and the analysis read it back with `JobResult.from_json`, which checks its shape first
(a damaged file is one line naming what is wrong, never a KeyError far away). The index's
columns (`COLUMNS`) are defined here too, each with the field of the result it holds, so the
file, the row and the readers share one schema. Results written by older concur read alike:
a field they lack reads as None (or empty), and a field this concur does not know is ignored.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

OK_STATUS = "ok"
FAILED_STATUS = "failed"
RESULT_STATUSES = (OK_STATUS, FAILED_STATUS)  # what a result.json's "status" may be
RESULT_JOB_FIELDS = ("key", "approach", "benchmark", "hparam_id", "seed", "hparams", "data_hash", "result_version")  # the index needs them
RESULT_JOB_TYPES = {"key": str, "approach": str, "benchmark": str, "hparam_id": int, "seed": int}  # what the index sorts and keys by
SCORE_FIELDS = ("exact_match", "f1")  # what an "ok" result must score
SCORE_RANGE = (0.0, 100.0)  # percentages, as the official SQuAD script reports them
STAMP_COLUMN = "result_stamp"  # `mtime_ns:size` of the result.json a row was read from
JSON_COLUMNS = ("hparams", "versions", "subset")  # columns holding JSON text (sorted keys)


@dataclass(frozen=True)
class Scores:
    """EM and F1 over the test questions (percentages), and how the predictions matched the questions."""

    exact_match: float
    f1: float
    n_questions: int | None = None
    n_predicted: int | None = None
    n_missing: int | None = None
    n_extra: int | None = None
    missing_sample: tuple[str, ...] = ()  # a few qids without a prediction

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "missing_sample": list(self.missing_sample)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Scores:
        known = {name: data[name] for name in _field_names(cls) if name in data}
        return cls(**{**known, "missing_sample": tuple(data.get("missing_sample") or ())})


@dataclass(frozen=True)
class Accounting:
    """What a job cost: its device, wall and device-seconds, peak memory, and the seconds spent before its clock."""

    device_kind: str | None = None  # "gpu" or "cpu"
    devices: int | None = None  # GPUs, or CPU threads
    wall_seconds: float | None = None  # the whole job, start to result
    startup_seconds: float | None = None  # its worker process's life before the job's clock started
    pool_start_seconds: float | None = None  # a forked worker's zygote: its start to the end of its imports
    device_seconds: float | None = None
    peak_memory_bytes: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Accounting:
        return cls(**{name: data.get(name) for name in _field_names(cls)})


@dataclass(frozen=True)
class JobResult:
    """One finished job: status "ok" with its scores, or "failed" with its error; what ran, where, and its cost.

    `job` is the job's definition as `job.json` records it (`concur.runner.planning.jobs.Job.definition`).
    Fields a result lacks are None: a failed one has no scores, one written by a driver for a worker that
    died has only its job, status, error, previous attempts and finish time.
    """

    job: Mapping[str, Any]
    status: str
    benchmark: Mapping[str, Any] | None = None  # the prepared benchmark's spec hash, data hash and split sizes
    device: str | None = None  # what it ran on, described
    versions: Mapping[str, str] | None = None  # the libraries it ran with
    started_at: str | None = None
    precision: str | None = None  # what the forward passes computed in: "fp32" or "bf16"
    subset: Mapping[str, Any] | None = None  # a budget's subset of the splits, {split: {"questions", "of_questions", ...}}
    oom_retries: tuple[Mapping[str, Any], ...] | None = None  # CUDA out-of-memory retries, each with the batch it failed at
    train_seconds: float | None = None
    train: Mapping[str, Any] | None = None  # what training did (`concur.approaches.base.TrainReport`, as a mapping)
    eval_seconds: float | None = None
    per_device_batch_size: int | None = None
    scores: Scores | None = None
    error: str | None = None
    traceback: str | None = None
    accounting: Accounting | None = None
    finished_at: str | None = None
    previous_attempts: tuple[Mapping[str, Any], ...] | None = None  # attempts that died without a result
    scheduler: Mapping[str, Any] | None = None  # what the batch system says of this run (its Slurm job, restarts)

    @property
    def key(self) -> str:
        return str(self.job["key"])

    @property
    def ok(self) -> bool:
        return self.status == OK_STATUS

    @property
    def exact_match(self) -> float | None:
        return self.scores.exact_match if self.scores else None

    @property
    def f1(self) -> float | None:
        return self.scores.f1 if self.scores else None

    @property
    def wall_seconds(self) -> float | None:
        return self.accounting.wall_seconds if self.accounting else None

    @property
    def final_loss(self) -> float | None:
        losses = (self.train or {}).get("losses") or []
        return float(losses[-1]) if losses else None

    def to_json(self) -> dict[str, Any]:
        """The result.json object: every field that is set, in the order a job produces them."""
        values: dict[str, Any] = {
            "job": dict(self.job),
            "benchmark": _plain(self.benchmark),
            "device": self.device,
            "versions": _plain(self.versions),
            "started_at": self.started_at,
            "precision": self.precision,
            "subset": _plain(self.subset),
            "oom_retries": _plain_list(self.oom_retries),
            "train_seconds": self.train_seconds,
            "train": _plain(self.train),
            "eval_seconds": self.eval_seconds,
            "per_device_batch_size": self.per_device_batch_size,
            "scores": self.scores.to_json() if self.scores else None,
            "status": self.status,
            "error": self.error,
            "traceback": self.traceback,
            "accounting": self.accounting.to_json() if self.accounting else None,
            "finished_at": self.finished_at,
            "previous_attempts": _plain_list(self.previous_attempts),
            "scheduler": _plain(self.scheduler),
        }
        return {name: value for name, value in values.items() if value is not None}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JobResult:
        """The result a result.json object holds; raises ValueError naming what keeps it from being one."""
        problem = result_shape_problem(data)
        if problem is not None:
            raise ValueError(problem)
        scores, accounting = data.get("scores"), data.get("accounting")
        return cls(
            job=data["job"],
            status=data["status"],
            benchmark=data.get("benchmark"),
            device=data.get("device"),
            versions=data.get("versions"),
            started_at=data.get("started_at"),
            precision=data.get("precision"),
            subset=data.get("subset"),
            oom_retries=_tuple_or_none(data.get("oom_retries")),
            train_seconds=data.get("train_seconds"),
            train=data.get("train"),
            eval_seconds=data.get("eval_seconds"),
            per_device_batch_size=data.get("per_device_batch_size"),
            scores=Scores.from_json(scores) if isinstance(scores, Mapping) and data["status"] == OK_STATUS else None,
            error=data.get("error"),
            traceback=data.get("traceback"),
            accounting=Accounting.from_json(accounting) if isinstance(accounting, Mapping) else None,
            finished_at=data.get("finished_at"),
            previous_attempts=_tuple_or_none(data.get("previous_attempts")),
            scheduler=data.get("scheduler"),
        )

    def index_row(self, job_dir: Path, stamp: str | None = None) -> dict[str, Any]:
        """The index's row for this result (JSON columns encoded); `stamp` is its file's `mtime_ns:size` (None: not
        known)."""
        row = {name: column.read(self) if column.read else None for name, column in COLUMNS.items()}
        row["job_dir"], row[STAMP_COLUMN] = str(job_dir), stamp
        return row


@dataclass(frozen=True)
class Column:
    """One column of the index: its SQL type and the field of a result it holds (None: set by the index itself)."""

    kind: type
    read: Callable[[JobResult], Any] | None = None


def _json_text(value: Any) -> str | None:
    return json.dumps(value, sort_keys=True) if value else None


def _accounting(name: str) -> Callable[[JobResult], Any]:
    return lambda result: getattr(result.accounting, name) if result.accounting else None


def _scores(name: str) -> Callable[[JobResult], Any]:
    return lambda result: getattr(result.scores, name) if result.scores else None


def _train(name: str) -> Callable[[JobResult], Any]:
    return lambda result: (result.train or {}).get(name)


# The index's columns, in order; `concur.runner.records.store` creates and fills its table from them.
COLUMNS: dict[str, Column] = {
    "key": Column(str, lambda result: result.key),
    "approach": Column(str, lambda result: result.job["approach"]),
    "implementation": Column(str, lambda result: result.job.get("implementation")),  # the approach's kind: how its hparams read
    "benchmark": Column(str, lambda result: result.job["benchmark"]),
    "hparam_id": Column(int, lambda result: result.job["hparam_id"]),
    "seed": Column(int, lambda result: result.job["seed"]),
    "status": Column(str, lambda result: result.status),
    "em": Column(float, _scores("exact_match")),
    "f1": Column(float, _scores("f1")),
    "n_questions": Column(int, _scores("n_questions")),
    "n_predicted": Column(int, _scores("n_predicted")),
    "n_missing": Column(int, _scores("n_missing")),
    "n_extra": Column(int, _scores("n_extra")),
    "train_questions": Column(int, _train("train_questions")),
    "skipped_train_questions": Column(int, _train("skipped_questions")),
    "optimizer_steps": Column(int, _train("optimizer_steps")),
    "final_loss": Column(float, lambda result: result.final_loss),
    "train_seconds": Column(float, lambda result: result.train_seconds),
    "fit_seconds": Column(float, lambda result: ((result.train or {}).get("details") or {}).get("fit_seconds")),  # the loop alone
    "eval_seconds": Column(float, lambda result: result.eval_seconds),
    "wall_seconds": Column(float, _accounting("wall_seconds")),
    "startup_seconds": Column(float, _accounting("startup_seconds")),
    "pool_start_seconds": Column(float, _accounting("pool_start_seconds")),
    "device": Column(str, lambda result: result.device),
    "device_kind": Column(str, _accounting("device_kind")),
    "device_seconds": Column(float, _accounting("device_seconds")),
    "peak_memory_bytes": Column(int, _accounting("peak_memory_bytes")),
    "oom_retries": Column(int, lambda result: len(result.oom_retries or ())),
    "attempts": Column(int, lambda result: 1 + len(result.previous_attempts or ())),
    "versions": Column(str, lambda result: json.dumps(dict(result.versions or {}), sort_keys=True)),
    "hparams": Column(str, lambda result: json.dumps(result.job["hparams"], sort_keys=True)),
    "subset": Column(str, lambda result: _json_text(result.job.get("subset"))),  # NULL for whole splits
    "precision": Column(str, lambda result: result.precision),  # NULL in results older than it
    "error": Column(str, lambda result: result.error),
    "traceback": Column(str, lambda result: result.traceback),
    "started_at": Column(str, lambda result: result.started_at),
    "finished_at": Column(str, lambda result: result.finished_at),
    "job_dir": Column(str),
    "data_hash": Column(str, lambda result: result.job["data_hash"]),
    "result_version": Column(int, lambda result: result.job["result_version"]),
    STAMP_COLUMN: Column(str),
}


def result_shape_problem(result: Mapping[str, Any]) -> str | None:
    """What keeps a result.json object from being a result the index and the analysis can use; None when nothing."""
    job = result.get("job")
    if not isinstance(job, dict):
        return "no 'job' object"
    missing = [name for name in RESULT_JOB_FIELDS if name not in job]
    if missing:
        return f"its 'job' lacks {', '.join(map(repr, missing))}"
    mistyped = [name for name, kind in RESULT_JOB_TYPES.items() if not isinstance(job[name], kind) or isinstance(job[name], bool)]
    if mistyped:
        return "its 'job' has " + ", ".join(f"{name} {job[name]!r} (not {RESULT_JOB_TYPES[name].__name__})" for name in mistyped)
    status = result.get("status")
    if status not in RESULT_STATUSES:
        return "no 'status'" if status is None else f"status {status!r} is neither {' nor '.join(map(repr, RESULT_STATUSES))}"
    scores = result.get("scores")
    if status != OK_STATUS:
        return None
    if not (isinstance(scores, dict) and all(isinstance(scores.get(name), int | float) for name in SCORE_FIELDS)):
        return f"status 'ok' without numeric scores {' and '.join(SCORE_FIELDS)}"
    for name in SCORE_FIELDS:
        problem = score_problem(scores[name])
        if problem is not None:
            return f"{name} {problem}, for {job['approach']} on {job['benchmark']}, hparams {job['hparam_id']}, seed {job['seed']}"
    return None


def score_problem(score: Any) -> str | None:
    """What makes a stored EM or F1 impossible (a percentage outside 0-100, or not a number); None when nothing."""
    if not isinstance(score, int | float) or not SCORE_RANGE[0] <= score <= SCORE_RANGE[1]:  # NaN fails both comparisons
        return f"{score!r} is not a percentage within {SCORE_RANGE[0]:g}-{SCORE_RANGE[1]:g}"
    return None


def _plain(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return dict(value) if value is not None else None


def _plain_list(values: tuple[Mapping[str, Any], ...] | None) -> list[dict[str, Any]] | None:
    return [dict(value) for value in values] if values is not None else None


def _tuple_or_none(values: Any) -> tuple[Mapping[str, Any], ...] | None:
    return tuple(values) if isinstance(values, list) else None


def _field_names(kind: type[Scores] | type[Accounting]) -> list[str]:
    return [field.name for field in fields(kind)]
