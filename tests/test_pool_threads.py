"""What the local executor's workers get: CPU threads (packed GPU jobs share the cores instead of oversubscribing them),
and the modules their zygote imports for them."""

from __future__ import annotations

import pytest

from concur.devices import Gpu
from concur.registry import default_registry
from concur.runner.execution.one_job import RunOptions
from concur.runner.scheduling.worker_pool import PoolSettings, worker_modules, worker_threads

ONE_H100 = (Gpu("0", 80.0),)


@pytest.mark.parametrize(
    ("approach", "gpus", "jobs_per_gpu", "cores", "threads"),
    [
        ("minilm-l6", ONE_H100, 4, 16, 4),  # small, cpus = 8: four at once on one GPU get 16 / 4 cores each
        ("minilm-l6", ONE_H100, 1, 16, 8),  # alone on its GPU: the spec's 8
        ("minilm-l6", ONE_H100, 4, 64, 8),  # cores to spare: never more than the spec's
        ("bidaf", ONE_H100 * 2, 4, 16, 2),  # small, cpus = 4: eight at once on two GPUs
        ("bert-large", ONE_H100, 4, 16, 8),  # not small: a GPU to itself, the spec's 8
        ("bert-base", ONE_H100, 4, 16, 4),  # small since 2026-11-27: four at once share the 16 cores
        ("bert-large", ONE_H100 * 4, 4, 16, 4),  # one per GPU on four GPUs
        ("bert-large", ONE_H100 * 32, 4, 16, 1),  # never below one
    ],
)
def test_a_gpu_worker_gets_the_specs_cpus_within_its_share_of_the_cores(approach, gpus, jobs_per_gpu, cores, threads):
    settings = PoolSettings(RunOptions(device="cuda"), gpus=gpus, jobs_per_gpu=jobs_per_gpu)
    assert worker_threads(settings, default_registry().approach(approach), True, cores) == threads


def test_cpu_workers_share_the_cores_and_given_threads_win():
    spec = default_registry().approach("bidaf")
    assert worker_threads(PoolSettings(RunOptions(device="cpu"), cpu_workers=3), spec, False, 16) == 5
    assert worker_threads(PoolSettings(RunOptions(device="cpu"), cpu_workers=4), spec, False, 2) == 1
    assert worker_threads(PoolSettings(RunOptions(device="cuda", threads=6), gpus=ONE_H100), spec, True, 16) == 6
    assert worker_threads(PoolSettings(RunOptions(device="cpu", threads=6), cpu_workers=4), spec, False, 16) == 6


def test_a_zygote_imports_what_its_grids_approaches_import_each_module_once():
    registry = default_registry()
    specs = [registry.approach(name) for name in ("bidaf", "minilm-l6", "bert-base", "rasor")]
    assert worker_modules(specs) == (
        "concur.approaches.reader.models.bidaf",
        "transformers.models.auto.tokenization_auto",  # the MiniLM stand-in's tokenizer
        "concur.approaches.hf_span.approach",
        "transformers.modeling_utils",  # pretrained models' code: only for a grid that has them
        "concur.approaches.reader.models.rasor",
    )
