"""Batches built ahead in a background thread, so the host collates the next batch while the model runs this one."""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator, Iterable
from typing import Final, TypeVar

T = TypeVar("T")

# Batches built ahead of the running step on a GPU: one hides the collation behind the step; a second absorbs a
# slow batch (a long passage) without holding the device up.
CUDA_DEPTH = 2

_POLL_SECONDS = 0.1  # how often a producer blocked on a full queue checks whether the consumer has gone


def prefetch_depth(device: str) -> int:
    """How far ahead batches are built on `device`. On a GPU the host would otherwise leave it idle while it collates;
    on the CPU the step already runs on every core, and a thread collating beside it only competes with it."""
    return CUDA_DEPTH if device.startswith("cuda") else 0


class _End:
    """The producer's last entry: the source is exhausted, or failed with `error`."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException | None) -> None:
        self.error: Final = error


def prefetched(items: Iterable[T], depth: int) -> Generator[T, None, None]:
    """`items` in their order, each computed up to `depth` items ahead of the consumer in a daemon thread.

    Collating a batch (padding, a reader's exact-match features) is NumPy and Python, up to a few ms; PyTorch
    releases the GIL while it runs an operator, so the collation overlaps the step's dispatch instead of adding to it.
    An exception raised while computing an item is raised here in its place, with its traceback. Closing the
    iterator early (an error in the consumer's step) stops the thread before it computes more.
    """
    if depth < 1:
        yield from items
        return
    ready: queue.Queue[T | _End] = queue.Queue(maxsize=depth)
    gone = threading.Event()

    def offer(entry: T | _End) -> bool:
        while not gone.is_set():
            try:
                ready.put(entry, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not offer(item):
                    return
            offer(_End(None))
        except BaseException as error:  # noqa: BLE001 (handed to the consumer, which raises it)
            offer(_End(error))

    producer = threading.Thread(target=produce, name="concur-prefetch", daemon=True)
    producer.start()
    try:
        while True:
            entry = ready.get()
            if isinstance(entry, _End):
                if entry.error is not None:
                    raise entry.error
                return
            yield entry
    finally:
        gone.set()
        producer.join()
