"""The typed job result: result.json's one schema, read back whole, from older files too, and flattened into the index's row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from concur.runner.records.result import COLUMNS, STAMP_COLUMN, Accounting, JobResult, Scores

JOB = {
    "key": "abc123",
    "approach": "bidaf",
    "benchmark": "squad-dev-carved",
    "hparam_id": 2,
    "seed": 1,
    "hparams": {"learning_rate": 0.5, "epochs": 3},
    "implementation": "bidaf",
    "model": None,
    "data_hash": "d" * 16,
    "result_version": 4,
    "subset": {"train": {"questions": 300, "seed": 0}},
}

# A result.json as a finished job writes it now: every field set.
CURRENT = {
    "job": JOB,
    "benchmark": {"spec_hash": "s", "data_hash": "d" * 16, "splits": {"train": 300, "test": 200}},
    "device": "cpu (2 threads)",
    "versions": {"concur": "0.9", "torch": "2.13.0"},
    "started_at": "2026-01-01T00:00:00+00:00",
    "precision": "fp32",
    "subset": {"train": {"questions": 300, "of_questions": 1000, "seed": 0}},
    "oom_retries": [{"per_device_batch_size": 16, "error": "CUDA out of memory"}],
    "train_seconds": 12.5,
    "train": {
        "optimizer_steps": 57,
        "train_questions": 290,
        "skipped_questions": 10,
        "losses": [3.0, 2.5, 2.25],
        "details": {"fit_seconds": 11.0},
    },
    "eval_seconds": 1.5,
    "per_device_batch_size": 8,
    "scores": {
        "exact_match": 41.5,
        "f1": 52.25,
        "n_questions": 200,
        "n_predicted": 198,
        "n_missing": 2,
        "n_extra": 0,
        "missing_sample": ["q1", "q2"],
    },
    "status": "ok",
    "accounting": {
        "device_kind": "cpu",
        "devices": 2,
        "wall_seconds": 15.0,
        "startup_seconds": 0.5,
        "pool_start_seconds": None,
        "device_seconds": 30.0,
        "peak_memory_bytes": 123456,
    },
    "finished_at": "2026-01-01T00:00:15+00:00",
    "previous_attempts": [{"error": "killed by SIGKILL", "gpu": None}],
    "scheduler": {"system": "slurm", "job_id": "7", "restarts": 0},
}


def test_a_current_result_reads_whole_and_writes_back_the_same_object():
    result = JobResult.from_json(CURRENT)
    assert result.key == "abc123" and result.ok and result.exact_match == 41.5 and result.f1 == 52.25
    assert result.scores == Scores(41.5, 52.25, 200, 198, 2, 0, ("q1", "q2"))
    assert result.accounting == Accounting("cpu", 2, 15.0, 0.5, None, 30.0, 123456)
    assert result.final_loss == 2.25 and result.wall_seconds == 15.0
    assert result.to_json() == CURRENT
    assert list(result.to_json()) == list(CURRENT)  # in the order a job writes them
    assert JobResult.from_json(json.loads(json.dumps(result.to_json()))) == result


def test_the_index_row_holds_each_column_from_its_field():
    row = JobResult.from_json(CURRENT).index_row(Path("/runs/jobs/abc123"), "17:900")
    assert list(row) == list(COLUMNS)
    assert row == {
        "key": "abc123",
        "approach": "bidaf",
        "implementation": "bidaf",
        "benchmark": "squad-dev-carved",
        "hparam_id": 2,
        "seed": 1,
        "status": "ok",
        "em": 41.5,
        "f1": 52.25,
        "n_questions": 200,
        "n_predicted": 198,
        "n_missing": 2,
        "n_extra": 0,
        "train_questions": 290,
        "skipped_train_questions": 10,
        "optimizer_steps": 57,
        "final_loss": 2.25,
        "train_seconds": 12.5,
        "fit_seconds": 11.0,
        "eval_seconds": 1.5,
        "wall_seconds": 15.0,
        "startup_seconds": 0.5,
        "pool_start_seconds": None,
        "device": "cpu (2 threads)",
        "device_kind": "cpu",
        "device_seconds": 30.0,
        "peak_memory_bytes": 123456,
        "oom_retries": 1,
        "attempts": 2,
        "versions": '{"concur": "0.9", "torch": "2.13.0"}',
        "hparams": '{"epochs": 3, "learning_rate": 0.5}',
        "subset": '{"train": {"questions": 300, "seed": 0}}',
        "precision": "fp32",
        "error": None,
        "traceback": None,
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:00:15+00:00",
        "job_dir": "/runs/jobs/abc123",
        "data_hash": "d" * 16,
        "result_version": 4,
        STAMP_COLUMN: "17:900",
    }


def test_a_failure_a_driver_wrote_for_a_dead_worker_reads_with_only_its_fields():
    job = {key: value for key, value in JOB.items() if key != "subset"}
    data = {"job": job, "status": "failed", "error": "WorkerDied: killed by SIGKILL", "previous_attempts": [], "finished_at": "t"}
    result = JobResult.from_json(data)
    assert not result.ok and result.scores is None and result.accounting is None and result.error.startswith("WorkerDied")
    assert result.to_json() == data
    row = result.index_row(Path("d"))
    read = (row["status"], row["em"], row["attempts"], row["oom_retries"], row["subset"], row["versions"])
    assert read == ("failed", None, 1, 0, None, "{}")


def test_a_result_older_than_precision_and_pool_start_reads_them_as_none():
    old = {key: value for key, value in CURRENT.items() if key not in ("precision", "subset", "scheduler", "oom_retries")}
    old["accounting"] = {key: value for key, value in CURRENT["accounting"].items() if key != "pool_start_seconds"}
    old["scores"] = {"exact_match": 41.5, "f1": 52.25}
    result = JobResult.from_json({**old, "a_field_from_a_newer_concur": 1})
    assert result.precision is None and result.oom_retries is None and result.scores.n_questions is None
    assert result.accounting.pool_start_seconds is None and result.accounting.wall_seconds == 15.0
    row = result.index_row(Path("d"))
    assert (row["precision"], row["oom_retries"], row["n_questions"], row["em"]) == (None, 0, None, 41.5)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"job": None}, "no 'job' object"),
        ({"status": "done"}, "status 'done' is neither 'ok' nor 'failed'"),
        ({"scores": {"f1": 3.0}}, "status 'ok' without numeric scores exact_match and f1"),
        ({"scores": {"exact_match": 101.0, "f1": 3.0}}, "exact_match 101.0 is not a percentage within 0-100, for bidaf on squad-dev"),
    ],
)
def test_a_result_of_the_wrong_shape_is_refused_with_what_is_wrong(change, problem):
    with pytest.raises(ValueError, match="^" + problem.replace("(", r"\(")):
        JobResult.from_json({**CURRENT, **change})
