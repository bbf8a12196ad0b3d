"""Job estimates from measured throughputs: a fixed part, training examples and test questions, hand-computed."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from concur.data.prepare import PreparedBenchmark
from concur.runner.planning.estimate import (
    Speeds,
    Throughput,
    job_estimate,
    makespan,
    run_start_seconds,
    throughputs,
    training_examples,
)
from concur.runner.planning.jobs import Job


def row(approach="a", *, benchmark="b", device=100.0, wall=50.0, fit=30.0, evaluated=10.0, tested=200, trained=300, status="ok", **hparams):
    return {
        "approach": approach,
        "benchmark": benchmark,
        "implementation": "hf-span" if approach == "a" else "rasor",
        "status": status,
        "device_seconds": device,
        "wall_seconds": wall,
        "fit_seconds": fit,
        "eval_seconds": evaluated,
        "n_questions": tested,
        "train_questions": trained,
        "hparams": {"epochs": 1.0, **hparams},
    }


def test_a_throughput_splits_a_job_into_its_fixed_part_training_and_prediction():
    # 2 devices (100 device-s over 50 s): training 30 s x 2 over 300 examples, prediction 10 s x 2 over 200 questions
    (speed,) = throughputs([row()]).approaches.values()
    assert speed == Throughput(fixed_seconds=20.0, seconds_per_example=0.2, seconds_per_test_question=0.1, devices=2.0, jobs=1)
    assert speed.estimate(examples=2000, test_questions=500) == pytest.approx(20 + 0.2 * 2000 + 0.1 * 500)


def test_the_fixed_part_includes_the_workers_start_before_the_jobs_clock():
    # 2 devices: 20 device-s inside the job's clock, plus 4 s before it (a new process importing torch) x 2 devices
    speed = throughputs([{**row(), "startup_seconds": 4.0}]).approaches["a"]
    assert speed.fixed_seconds == pytest.approx(28.0) and speed.seconds_per_example == pytest.approx(0.2)
    unmeasured = throughputs([{**row(), "startup_seconds": None}]).approaches["a"]
    assert unmeasured.fixed_seconds == pytest.approx(20.0)  # not measured: nothing added


def test_a_run_waits_once_for_the_median_zygote_start_its_forked_jobs_recorded():
    rows = [
        {**row(), "pool_start_seconds": 9.0},
        {**row(), "pool_start_seconds": 8.0},
        {**row(), "pool_start_seconds": 12.5},
        {**row(status="failed"), "pool_start_seconds": 100.0},  # failures do not count
        {**row(), "pool_start_seconds": None},  # a worker started as a new process: nothing waited once
    ]
    assert run_start_seconds(rows) == 9.0
    assert run_start_seconds([row()]) == 0.0


def test_each_part_is_the_median_over_finished_jobs_and_failures_do_not_count():
    rows = [row(), row(device=160.0, wall=80.0, fit=60.0, trained=300), row(device=10_000.0, status="failed")]
    rows.append(row(device=40.0, wall=40.0, fit=20.0, evaluated=10.0, tested=100, trained=100, epochs=2.0))  # 1 device, 200 examples
    speed = throughputs(rows).approaches["a"]
    assert speed.jobs == 3
    # fixed: 20, 160 - 70 x 2 = 20, 40 - 30 = 10; per example: 0.2, 0.4, 0.1; per test question: 0.1, 0.1, 0.1
    assert (speed.fixed_seconds, speed.seconds_per_example, speed.seconds_per_test_question) == pytest.approx((20.0, 0.2, 0.1))


def _sized_row(trained: int, tested: int, *, constant: float = 2.0) -> dict:
    # 1 device; training `constant` s + 0.03 s per example, prediction 1 s + 0.02 s per test question, 0.5 s besides
    fit, evaluated = constant + 0.03 * trained, 1.0 + 0.02 * tested
    seconds = fit + evaluated + 0.5
    return row(device=seconds, wall=seconds, fit=fit, evaluated=evaluated, tested=tested, trained=trained)


def test_a_cell_whose_jobs_ran_at_several_sizes_tells_their_constant_from_their_rate():
    speed = throughputs([_sized_row(100, 100), _sized_row(300, 200), _sized_row(300, 200)]).cells["a", "b"]
    # the lines through the sizes: 2 + 0.03 per example and 1 + 0.02 per test question; both constants join the 0.5 s
    assert (speed.fixed_seconds, speed.seconds_per_example, speed.seconds_per_test_question) == pytest.approx((3.5, 0.03, 0.02))
    assert speed.estimate(1000, 400) == pytest.approx(2.0 + 0.03 * 1000 + 1.0 + 0.02 * 400 + 0.5)
    # one size only: seconds over examples, as before (0.5 s fixed, (2 + 9) / 300 per example, (1 + 4) / 200 per test question)
    alone = throughputs([_sized_row(300, 200)]).cells["a", "b"]
    assert (alone.fixed_seconds, alone.seconds_per_example, alone.seconds_per_test_question) == pytest.approx((0.5, 11 / 300, 5 / 200))
    # a larger job that ran faster (another node, say) gives no line: the medians of seconds over examples stand
    rows = [_sized_row(100, 200, constant=20.0), _sized_row(300, 200)]
    assert throughputs(rows).cells["a", "b"].seconds_per_example == pytest.approx(statistics.median([23 / 100, 11 / 300]))


def test_examples_are_epochs_times_questions_or_fixed_steps_times_the_batch():
    assert training_examples("hf-span", {"epochs": 2.0, "train_batch_size": 16}, 300) == 600.0
    assert training_examples("rasor", {"epochs": 1.0, "steps": 50, "batch_size": 8}, 300) == 400.0
    assert training_examples("hf-span", {"epochs": 3.0, "train_batch_size": 16}, 300) == 900.0
    assert training_examples(None, {"steps": 50, "batch_size": 8}, 300) is None  # an old row: its kind's batch is unknown


def test_a_result_from_before_fit_seconds_counts_all_its_time_as_training():
    old = {**row(), "fit_seconds": None, "wall_seconds": None}
    assert throughputs([old]).approaches["a"] == Throughput(0.0, 100.0 / 300, 0.0, 1.0, 1)


def bench(train: int, test: int) -> PreparedBenchmark:
    splits = {"train": {"questions": train}, "test": {"questions": test}}
    return PreparedBenchmark(Path("/nonexistent"), {"benchmark": "b", "data_hash": "0" * 64, "splits": splits})


def test_a_planned_job_is_estimated_for_the_questions_its_budget_leaves_it():
    speeds = throughputs([row()])
    job = Job("a", "b", 0, 0, {"epochs": 2.0, "train_batch_size": 16}, "hf-span", {}, "0" * 64)
    estimate = job_estimate(job, bench(1000, 400), speeds)
    assert estimate.device_seconds == pytest.approx(20 + 0.2 * 2000 + 0.1 * 400) and estimate.basis == "cell"
    assert estimate.wall_seconds == pytest.approx(estimate.device_seconds / 2)  # its approach's jobs ran on 2 devices
    budgeted = Job(**{**job.__dict__, "subset": {"train": {"questions": 300, "seed": 0}, "test": {"questions": 200, "seed": 0}}})
    assert job_estimate(budgeted, bench(1000, 400), speeds).device_seconds == pytest.approx(20 + 0.2 * 600 + 0.1 * 200)
    assert job_estimate(Job(**{**job.__dict__, "approach": "never-run"}), bench(1000, 400), speeds) is None


def test_a_job_is_estimated_from_its_own_benchmark_where_that_cell_was_measured():
    # on "long" the approach took 4x the seconds per example of "b": 120 s x 2 devices over 300 examples
    speeds = throughputs([row(), row(benchmark="long", device=280.0, wall=140.0, fit=120.0)])
    assert speeds.cells["a", "b"].seconds_per_example == pytest.approx(0.2)
    assert speeds.cells["a", "long"].seconds_per_example == pytest.approx(0.8)
    assert speeds.approaches["a"].seconds_per_example == pytest.approx(0.5) and speeds.approaches["a"].jobs == 2  # median of both
    job = Job("a", "long", 0, 0, {"epochs": 1.0, "train_batch_size": 16}, "hf-span", {}, "0" * 64)
    assert job_estimate(job, bench(300, 200), speeds).device_seconds == pytest.approx(20 + 0.8 * 300 + 0.1 * 200)
    unseen = Job(**{**job.__dict__, "benchmark": "never-run-on"})  # a cell never measured: the approach's medians
    assert job_estimate(unseen, bench(300, 200), speeds).device_seconds == pytest.approx(20 + 0.5 * 300 + 0.1 * 200)
    assert Speeds().of("a", "b") is None


def test_the_makespan_packs_the_longest_jobs_first_onto_the_slot_free_first():
    assert makespan([3, 5, 3, 4, 3], 2) == 10  # 5 | 4, then 3 -> 7, 3 -> 8, 3 -> 10
    assert makespan([3, 5, 3, 4, 3], 1) == 18
    assert makespan([3, 5], 4) == 5 and makespan([], 2) == 0
    with pytest.raises(ValueError, match="slots must be at least 1"):
        makespan([1.0], 0)


def test_the_makespan_starts_after_what_the_running_jobs_have_left():
    assert makespan([3, 3], 2, busy=[4, 1]) == 7  # 3 -> the slot free at 1 (now free at 4), 3 -> either slot, free at 4: 7
    assert makespan([2], 2, busy=[4, 1]) == 4  # 2 -> the slot free at 1 (3); the other runs until 4
    assert makespan([], 2, busy=[4, 1]) == 4
    with pytest.raises(ValueError, match="2 running jobs cannot fit 1 slots"):
        makespan([1.0], 1, busy=[1, 2])


def test_the_progress_eta_packs_pending_jobs_onto_the_running_slots(monkeypatch):
    from types import SimpleNamespace

    from concur.runner.scheduling import progress_view

    clock = [100.0]
    monkeypatch.setattr(progress_view.time, "monotonic", lambda: clock[0])
    task = lambda key, seconds: SimpleNamespace(job=SimpleNamespace(key=key), estimate_seconds=seconds)  # noqa: E731
    view = progress_view.GridProgress(6, lambda line: None)
    view.started_at = {"r1": 90.0, "r2": 99.0}  # 10 s and 1 s into their runs
    view.update([task("r1", 30.0), task("r2", 5.0)], [task("p1", 8.0), task("p2", 8.0), task("p3", 0.0)], [])
    # slots free at 20 and 4; 8 -> the slot free at 4 (12), 8 -> at 12 (20): both slots end at 20
    assert view.eta_seconds() == (20.0, 1)


def test_a_cell_never_measured_scales_its_approach_by_the_benchmark_as_other_approaches_measured_it():
    # approach a: 0.2 s per example on b, 0.8 on long (4x); approach r (1 device) ran only on b: 0.1 s per example,
    # 0.05 per test question, fixed 100 - 40 = 60 s; so r on long is estimated at 0.4 per example, 0.05 per test question
    rows = [row(), row(benchmark="long", device=280.0, wall=140.0, fit=120.0), row("r", device=100.0, wall=100.0)]
    speeds = throughputs(rows)
    assert ("r", "long") not in speeds.cells
    modeled = speeds.of("r", "long")
    assert (modeled.fixed_seconds, modeled.seconds_per_example, modeled.seconds_per_test_question) == pytest.approx((60.0, 0.4, 0.05))
    assert modeled.devices == 1.0
    job = Job("r", "long", 0, 0, {"epochs": 1.0, "batch_size": 16}, "rasor", {}, "0" * 64)
    estimate = job_estimate(job, bench(300, 200), speeds)
    assert (estimate.device_seconds, estimate.wall_seconds) == pytest.approx((60 + 0.4 * 300 + 0.05 * 200,) * 2)
    assert estimate.basis == "model"
    # a benchmark no approach ran on: nothing links it, so the approach's own medians
    assert speeds.of("r", "never-run-on") == speeds.approaches["r"]
    bases = [speeds.lookup("a", "b")[1], speeds.lookup("r", "long")[1], speeds.lookup("r", "never-run-on")[1]]
    assert bases == ["cell", "model", "approach"]
    assert speeds.lookup("never-run", "b") == (None, None)


def test_a_job_settled_by_another_driver_is_neither_failed_nor_counted_as_run_here():
    from types import SimpleNamespace

    from concur.runner.records.jobdir import JobState
    from concur.runner.records.result import Accounting, JobResult, Scores
    from concur.runner.scheduling import progress_view

    lines: list[str] = []
    view = progress_view.GridProgress(2, lines.append)
    job = SimpleNamespace(key="k1", describe=lambda: "rasor on babi-1 (hparams 0, seed 0)")
    view.settled_elsewhere(SimpleNamespace(job=job, state=JobState.RUNNING, result=None, owner="process 7 on vm"))
    assert lines == [] and view.ran == {} and view.counts == {"running": 1}  # the pool already said where it runs
    result = JobResult(job={"key": "k1"}, status="ok", scores=Scores(50.0, 60.0), accounting=Accounting(wall_seconds=12.0))
    view.settled_elsewhere(SimpleNamespace(job=job, state=JobState.DONE, result=result))
    assert lines == ["[1/2] done rasor on babi-1 (hparams 0, seed 0): EM 50.00  F1 60.00  (12 s) (by another driver)"]
    assert view.ran == {} and view.wall_line().startswith("0 jobs ran in ")
