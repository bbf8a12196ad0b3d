"""The SQLite index of results (`runs/concur.sqlite`, WAL mode, via sqlite-utils).

Results are files first: the index holds one row per finished job (`result.json` with
status "ok" or "failed") and is written by one process, the driver. It never holds a
partial result, and `sync` rebuilds it from the job directories at any time.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import sqlite_utils

from concur.runner.jobdir import job_dirs

TABLE = "jobs"
_JSON_COLUMNS = ("hparams", "versions", "subset")
COLUMNS: dict[str, type] = {
    "key": str,
    "approach": str,
    "benchmark": str,
    "hparam_id": int,
    "seed": int,
    "status": str,
    "em": float,
    "f1": float,
    "n_questions": int,
    "n_predicted": int,
    "n_missing": int,
    "n_extra": int,
    "train_questions": int,
    "skipped_train_questions": int,
    "optimizer_steps": int,
    "final_loss": float,
    "train_seconds": float,
    "eval_seconds": float,
    "device": str,
    "device_kind": str,
    "device_seconds": float,
    "peak_memory_bytes": int,
    "oom_retries": int,
    "attempts": int,
    "versions": str,
    "hparams": str,
    "subset": str,  # a budget's subset of the splits, {split: {"questions", "seed"}}; NULL for whole splits
    "error": str,
    "traceback": str,
    "started_at": str,
    "finished_at": str,
    "job_dir": str,
    "data_hash": str,
    "result_version": int,
}


class Store:
    """Read and write the index; one writer (the driver) at a time."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = sqlite_utils.Database(path)
        self.db.enable_wal()
        self.db[TABLE].create(COLUMNS, pk="key", if_not_exists=True)
        self.db[TABLE].create_index(["approach", "benchmark", "hparam_id", "seed"], if_not_exists=True)

    def record(self, result: dict[str, Any], job_dir: Path) -> None:
        """Index one finished job from its result.json content."""
        self.db[TABLE].upsert(row_from_result(result, job_dir), pk="key", alter=True)  # alter: an index from older code gains new columns

    def sync(self, jobs_dir: Path) -> int:
        """Index every finished job directory and drop rows whose result is gone; returns rows."""
        rows = []
        for job in job_dirs(jobs_dir):
            result = job.result()
            if result is not None:
                rows.append(row_from_result(result, job.path))
        with self.db.conn:
            self.db.execute(f"DELETE FROM {TABLE}")
            if rows:
                self.db[TABLE].insert_all(rows, pk="key", alter=True)
        return len(rows)

    def get(self, key: str) -> dict[str, Any] | None:
        rows = list(self.db[TABLE].rows_where("key = ?", [key]))
        return _decoded(rows[0]) if rows else None

    def rows(self, where: str | None = None, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        order = "approach, benchmark, hparam_id, seed"
        return [_decoded(row) for row in self.db[TABLE].rows_where(where, list(params), order_by=order)]


def row_from_result(result: dict[str, Any], job_dir: Path) -> dict[str, Any]:
    """Flatten a result.json into an index row."""
    job = result["job"]
    scores = result.get("scores") or {}
    train = result.get("train") or {}
    losses = train.get("losses") or []
    accounting = result.get("accounting") or {}
    return {
        "key": job["key"],
        "approach": job["approach"],
        "benchmark": job["benchmark"],
        "hparam_id": job["hparam_id"],
        "seed": job["seed"],
        "status": result["status"],
        "em": scores.get("exact_match"),
        "f1": scores.get("f1"),
        "n_questions": scores.get("n_questions"),
        "n_predicted": scores.get("n_predicted"),
        "n_missing": scores.get("n_missing"),
        "n_extra": scores.get("n_extra"),
        "train_questions": train.get("train_questions"),
        "skipped_train_questions": train.get("skipped_questions"),
        "optimizer_steps": train.get("optimizer_steps"),
        "final_loss": losses[-1] if losses else None,
        "train_seconds": result.get("train_seconds"),
        "eval_seconds": result.get("eval_seconds"),
        "device": result.get("device"),
        "device_kind": accounting.get("device_kind"),
        "device_seconds": accounting.get("device_seconds"),
        "peak_memory_bytes": accounting.get("peak_memory_bytes"),
        "oom_retries": len(result.get("oom_retries") or []),
        "attempts": 1 + len(result.get("previous_attempts") or []),
        "versions": json.dumps(result.get("versions") or {}, sort_keys=True),
        "hparams": json.dumps(job["hparams"], sort_keys=True),
        "subset": json.dumps(job["subset"], sort_keys=True) if job.get("subset") else None,
        "error": result.get("error"),
        "traceback": result.get("traceback"),
        "started_at": result.get("started_at"),
        "finished_at": result.get("finished_at"),
        "job_dir": str(job_dir),
        "data_hash": job["data_hash"],
        "result_version": job["result_version"],
    }


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    return {key: json.loads(value) if key in _JSON_COLUMNS and isinstance(value, str) else value for key, value in row.items()}
