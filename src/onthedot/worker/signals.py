"""SIGTERM/SIGINT while a worker runs: the first stops it gracefully (running jobs get the grace
period), a second stops it at once. Installed only on the main thread, restored afterwards."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Protocol

log = logging.getLogger("onthedot.worker")

SignalHandler = Callable[[int, FrameType | None], object] | int | None


class Stoppable(Protocol):
    @property
    def stop_requested(self) -> threading.Event: ...

    def stop(self, graceful: bool = True, reason: str = "stop requested") -> None: ...


@contextmanager
def stop_on_signals(worker: Stoppable, enabled: bool = True) -> Iterator[None]:
    """While inside, SIGTERM/SIGINT stop `worker` (when `enabled` and on the main thread)."""
    previous = _install(worker) if enabled else {}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _install(worker: Stoppable) -> dict[int, SignalHandler]:
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handler(signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if worker.stop_requested.is_set():
            log.warning("second signal: stopping at once")
            worker.stop(graceful=False)
        else:
            log.info("signal %s: finishing running jobs (send again to stop at once)", name)
            worker.stop(reason=f"signal {name}")

    return {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
