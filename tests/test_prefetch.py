"""Batches built ahead in a thread: same items, same order, errors in their place, a bounded lead, a clean stop."""

from __future__ import annotations

import threading
import time
from contextlib import closing

import pytest

from concur.approaches.prefetch import CUDA_DEPTH, prefetch_depth, prefetched


class Source:
    """Yields 0..n-1, noting the thread that built each item and how many it has built."""

    def __init__(self, n: int, fail_at: int | None = None) -> None:
        self.n, self.fail_at = n, fail_at
        self.built: list[int] = []
        self.threads: set[str] = set()

    def __iter__(self):
        for item in range(self.n):
            if item == self.fail_at:
                raise ValueError(f"bad batch {item}")
            self.threads.add(threading.current_thread().name)
            self.built.append(item)
            yield item


def wait_for(condition, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the producer never got there"
        time.sleep(0.01)


def test_items_come_in_order_built_in_another_thread():
    source = Source(50)
    assert list(prefetched(source, 2)) == list(range(50))
    assert source.threads == {"concur-prefetch"}


def test_depth_zero_builds_in_the_callers_thread():
    source = Source(5)
    assert list(prefetched(source, 0)) == [0, 1, 2, 3, 4]
    assert source.threads == {threading.current_thread().name}


def test_an_error_is_raised_in_its_place_after_the_items_before_it():
    received = []
    with pytest.raises(ValueError, match="bad batch 3"):
        for item in prefetched(Source(10, fail_at=3), 2):
            received.append(item)
    assert received == [0, 1, 2]


def test_the_lead_is_bounded_and_closing_stops_the_thread():
    source = Source(1000)
    with closing(prefetched(source, 2)) as items:
        assert next(items) == 0
        # two waiting in the queue and one built, waiting for room: items 1, 2 and 3
        wait_for(lambda: len(source.built) == 4)
        time.sleep(0.3)
        assert source.built == [0, 1, 2, 3]
    time.sleep(0.3)
    assert len(source.built) == 4  # nothing more was built after the consumer left
    assert not any(thread.name == "concur-prefetch" for thread in threading.enumerate())


def test_batches_are_built_ahead_on_a_gpu_only():
    assert prefetch_depth("cuda") == prefetch_depth("cuda:1") == CUDA_DEPTH > 0
    assert prefetch_depth("cpu") == 0


def test_training_with_batches_built_ahead_reaches_the_same_weights(tmp_path, monkeypatch):
    """The GPU's path (a thread building batches two steps ahead), run on the CPU: same batches, same steps, same weights."""
    import torch

    import concur.approaches.training as training
    from tests.test_training_loop import Regression, context, network, sgd_plan, weights

    class Noting(Regression):
        threads: set[str] = set()

        def batch(self, indices):
            self.threads.add(threading.current_thread().name)
            return super().batch(indices)

    def trained(depth: int) -> tuple[torch.Tensor, list[float], list, set[str]]:
        monkeypatch.setattr(training, "prefetch_depth", lambda device: depth)
        model, objective = network(), Noting()
        objective.threads = set()
        curve = training.fit(model, objective, sgd_plan(model, steps=12, ema_decay=0.9), context(tmp_path, per_device=5), "run")
        return weights(model), curve, [batch.tolist() for batch in objective.batches], objective.threads

    ahead, inline = trained(CUDA_DEPTH), trained(0)
    assert ahead[3] == {"concur-prefetch"} and inline[3] == {threading.current_thread().name}
    assert torch.equal(ahead[0], inline[0])
    assert ahead[1] == inline[1] and ahead[2] == inline[2]
    assert len(ahead[2]) == 12 * 3  # 12 steps of 12 examples, each in pieces of 5, 5 and 2
