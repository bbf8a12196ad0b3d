"""A job's precision: what it computes in, part of its key unless "auto", recorded in its result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from concur.approaches.precision import autocast, autocast_dtype, device_precision_problem, numerics
from concur.errors import ConcurError, SpecError
from concur.registry import default_registry
from concur.runner.planning.grid import GridRequest, expand_grid
from concur.runner.planning.jobs import Job
from concur.runner.planning.study import load_study
from concur.runner.records.store import Store
from tests.conftest import native_cpu_bf16


@pytest.mark.parametrize(
    ("device", "precision", "dtype"),
    [
        ("cpu", "auto", None),
        ("cuda", "auto", "bfloat16"),
        ("cuda:1", "auto", "bfloat16"),
        ("cpu", "bf16", "bfloat16"),
        ("cuda", "fp32", None),
    ],
)
def test_auto_is_bf16_on_cuda_and_fp32_on_the_cpu(device, precision, dtype):
    assert autocast_dtype(device, precision) == dtype
    assert numerics(device, precision) == ("fp32" if dtype is None else "bf16")


def test_bf16_on_the_cpu_runs_matrix_products_in_bf16():
    import torch

    with autocast("cpu", "bf16"):
        assert (torch.ones(2, 3) @ torch.ones(3, 2)).dtype == torch.bfloat16
    with autocast("cpu", "auto"):
        assert (torch.ones(2, 3) @ torch.ones(3, 2)).dtype == torch.float32
    with pytest.raises(ValueError, match="unknown precision 'fp16'; use one of auto, fp32, bf16"):
        autocast_dtype("cpu", "fp16")


def test_a_precision_other_than_auto_is_part_of_the_key_and_auto_keeps_the_old_one():
    auto = Job("tiny-rasor", "babi-1", 1, 0, {"epochs": 2.0, "learning_rate": 0.001}, "reader", {"kind": "rasor"}, "0" * 64)
    assert auto.key == "f7f10b794debd128"  # the key this job had before precisions existed
    assert "precision" not in auto.definition()
    bf16 = Job(**{**auto.__dict__, "precision": "bf16"})
    fp32 = Job(**{**auto.__dict__, "precision": "fp32"})
    assert len({auto.key, bf16.key, fp32.key}) == 3
    assert bf16.definition()["precision"] == "bf16" and Job.from_definition(bf16.definition()) == bf16
    assert bf16.describe() == "tiny-rasor on babi-1 (hparams 1, seed 0, bf16)"


def test_a_study_file_sets_the_precision_and_a_wrong_one_is_named(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text('approaches = "rasor"\nbenches = "babi-1"\nprecision = "bf16"\n')
    assert load_study(good).grid.precision == "bf16"
    plain = tmp_path / "plain.toml"
    plain.write_text('approaches = "rasor"\nbenches = "babi-1"\n')
    assert load_study(plain).grid.precision == "auto"
    bad = tmp_path / "bad.toml"
    bad.write_text('approaches = "rasor"\nbenches = "babi-1"\nprecision = "half"\n')
    with pytest.raises(SpecError) as raised:
        load_study(bad)
    assert str(bad) in str(raised.value) and "precision" in str(raised.value)
    assert "unknown precision 'half'; use one of auto, fp32, bf16" in str(raised.value)
    with pytest.raises(ConcurError, match="--precision: unknown precision 'half'"):
        expand_grid(default_registry(), GridRequest("rasor", "babi-1", precision="half"))


@pytest.mark.slow
def test_a_bf16_run_on_the_cpu_is_its_own_job_and_records_its_precision(concur, tmp_path, tiny_registry):
    native_cpu_bf16()
    common = ["--registry", str(tiny_registry), "--runs-dir", str(tmp_path / "runs")]
    run = [*common, "run", "-a", "tiny-reader", "-b", "tiny-babi", "--device", "cpu", "--source-dir", str(tmp_path / "data-root")]
    bf16 = concur(*run, "--precision", "bf16")
    assert bf16.returncode == 0, bf16.stderr
    assert bf16.stdout.startswith("done: tiny-reader on tiny-babi (hparams 0, seed 0, bf16)"), bf16.stdout
    again = concur(*run, "--precision", "bf16")
    assert again.stdout.startswith("already done, nothing to run: tiny-reader on tiny-babi"), again.stdout
    (row,) = Store(tmp_path / "runs" / "concur.sqlite").rows()
    result = json.loads(Path(row["job_dir"], "result.json").read_text())
    assert row["precision"] == "bf16" and result["precision"] == "bf16" and result["status"] == "ok"
    job = Job.from_definition(result["job"])
    assert job.precision == "bf16" and job.key == row["key"] != Job(**{**job.__dict__, "precision": "auto"}).key
    wrong = concur(*run, "--precision", "fp16")
    assert wrong.returncode != 0 and "--precision: unknown precision 'fp16'; use one of auto, fp32, bf16" in wrong.stderr


def test_bf16_on_a_cpu_without_native_bf16_is_refused_before_any_data_is_prepared(concur, tmp_path, tiny_registry):
    problem = device_precision_problem("cpu", "bf16")
    if problem is None:
        pytest.skip("this CPU has native bf16 (AVX-512 BF16 or AMX), so bf16 jobs run here")
    import torch

    common = ["--registry", str(tiny_registry), "--runs-dir", str(tmp_path / "runs")]
    refused = concur(*common, "run", "-a", "tiny-reader", "-b", "tiny-babi", "--device", "cpu", "--precision", "bf16")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.strip() == f"error: precision bf16: {problem}"
    assert f"this one has {torch.backends.cpu.get_cpu_capability()}" in problem and "use precision fp32 or auto" in problem
    assert not (tmp_path / "runs" / "data").exists()  # refused before preparing anything
