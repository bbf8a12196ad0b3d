"""No change moves what an approach computes silently: fp32 training losses against tests/data/numerics_lock.json.

See tests/numerics_lock.py for what is recorded and how a change that means to move it rewrites the record.
"""

from __future__ import annotations

import json

import pytest

from concur.registry.registry import default_registry
from tests import numerics_lock
from tests.conftest import SHARED_DATA, shared_file

RECORDED = json.loads(numerics_lock.LOCK_FILE.read_text())["approaches"]


def test_every_approach_that_trains_offline_is_locked():
    assert sorted(RECORDED) == sorted(spec.id for spec in numerics_lock.locked_approaches())
    readers = [spec.id for spec in numerics_lock.locked_approaches() if "batch_size" in spec.hparams]
    assert len(readers) == 7 and all(len(RECORDED[reader]["losses"]) == numerics_lock.STEPS for reader in readers)
    assert all(len(series["gradient_norms"]) == len(series["losses"]) for series in RECORDED.values())


@pytest.fixture(scope="module")
def training_questions():
    shared_file(numerics_lock.SQUAD_DEV)
    return numerics_lock.training_questions(SHARED_DATA)


@pytest.mark.slow
@pytest.mark.parametrize("approach", sorted(RECORDED))
def test_fp32_training_is_the_recorded_one(approach, training_questions, tmp_path):
    spec = default_registry().approach(approach)
    measured = numerics_lock.fingerprint(spec, training_questions, tmp_path)
    for series, recorded in RECORDED[approach].items():
        now = measured[series]
        assert len(now) == len(recorded), f"{approach} trained {len(now)} steps; {len(recorded)} are recorded"
        moved = [
            f"step {step}: {old:.6f} -> {new:.6f}"
            for step, (old, new) in enumerate(zip(recorded, now, strict=True), start=1)
            if new != pytest.approx(old, rel=numerics_lock.RELATIVE_TOLERANCE)
        ]
        assert not moved, (
            f"{approach}'s fp32 {series.replace('_', ' ')} moved ({'; '.join(moved)}). If that is meant, record them with "
            "`python -m tests.numerics_lock --write` and give an EM parity run as evidence (docs/performance.md)"
        )


@pytest.mark.slow
def test_another_seed_moves_the_losses_far_beyond_the_tolerance(training_questions, monkeypatch, tmp_path):
    """What the lock is for: other weights and dropout masks (here from seed 1) move every step's loss past it a little
    (a model this close to its initialisation scores near log(spans) whatever its weights) and its gradient norm by far."""
    rasor = default_registry().approach("rasor")
    real_context = numerics_lock.RunContext
    monkeypatch.setattr(numerics_lock, "RunContext", lambda **fields: real_context(**{**fields, "seed": 1}))
    measured = numerics_lock.fingerprint(rasor, training_questions, tmp_path)

    def moved(series: str) -> list[float]:
        return [abs(new - old) / abs(old) for old, new in zip(RECORDED["rasor"][series], measured[series], strict=True)]

    assert min(moved("losses")) > numerics_lock.RELATIVE_TOLERANCE
    assert min(moved("gradient_norms")) > 100 * numerics_lock.RELATIVE_TOLERANCE
