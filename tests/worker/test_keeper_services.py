"""The keeper's services (issue 26 item 4), on both databases: each task keeps its own schedule
and its own error handling, so a rescue or a prune that fails at every try never pushes the
heartbeat back. The keeper's turns are taken by the test, on a ManualClock it moves in steps of
one keeper turn; the storage is the real one, with one verb made to fail."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

import pytest

from onthedot import ManualClock
from onthedot.domain.errors import DatabaseUnavailable
from onthedot.observability.events import DatabaseError, Event, EventBus, WorkerHeartbeat
from onthedot.storage.interface import Storage
from onthedot.worker.maintenance import TURN
from tests.worker.keepers import keeper

LEASE = 3.0  # a heartbeat every second of the keeper's clock


def _failing(what: str) -> Callable[..., Any]:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise DatabaseUnavailable(f"{what}: the statement timed out")

    return fail


@pytest.mark.parametrize("failing", ["ending_leases", "acquire_maintenance"])
def test_a_failing_rescue_or_prune_never_delays_the_heartbeat(
    storage: Storage, failing: str
) -> None:
    clock = ManualClock()
    events = EventBus()
    beats: list[float] = []
    errors: list[str] = []

    def seen(event: Event) -> None:
        if isinstance(event, WorkerHeartbeat):
            beats.append(clock.monotonic())
        elif isinstance(event, DatabaseError):
            errors.append(event.where)

    events.subscribe(seen, WorkerHeartbeat, DatabaseError)
    setattr(storage, failing, _failing(failing))  # this verb fails at every call
    k = keeper(storage, worker_id="w1", lease=LEASE, events=events, clock=clock)
    assert k.heartbeat_every == 1.0
    for _ in range(int(20 / TURN)):  # 20 s of the keeper's clock, one turn at a time
        k.turn()
        clock.advance(TURN)

    failed = "rescue" if failing == "ending_leases" else "prune"
    assert failed in errors and "heartbeat" not in errors, errors
    gaps = [round(b - a, 6) for a, b in pairwise(beats)]
    # One heartbeat a second, on time, from the first turn to the last.
    assert beats[0] == 0.0 and len(beats) == 20, beats
    assert max(gaps) <= k.heartbeat_every + 1e-6, gaps


def test_a_failed_heartbeat_holds_the_rescue_back_a_lease(storage: Storage) -> None:
    """The leases that run out while the database does not answer this worker are those of
    live workers too, which renew them once it answers again: after a failed heartbeat, no
    rescue before a lease more."""
    clock = ManualClock()
    events = EventBus()
    errors: list[str] = []
    events.subscribe(lambda e: errors.append(getattr(e, "where", "")), DatabaseError)
    rescues: list[float] = []
    ending_leases, heartbeat = storage.ending_leases, storage.heartbeat

    def watched(*args: Any, **kwargs: Any) -> Any:
        rescues.append(clock.monotonic())
        return ending_leases(*args, **kwargs)

    storage.ending_leases = watched  # type: ignore[method-assign]
    storage.heartbeat = _failing("heartbeat")  # type: ignore[method-assign]
    k = keeper(storage, worker_id="w1", lease=LEASE, events=events, clock=clock)
    k.turn()  # the heartbeat fails; the rescue's turn, next in this pass, is put off
    assert errors == ["heartbeat"] and rescues == []
    storage.heartbeat = heartbeat  # type: ignore[method-assign]
    for _ in range(int((LEASE + 1) / TURN)):
        clock.advance(TURN)
        k.turn()
    assert errors == ["heartbeat"]
    assert rescues and rescues[0] >= LEASE, rescues
