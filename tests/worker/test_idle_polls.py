"""What an idle worker asks the database, on both backends: once per poll interval it looks for
the next ready job, and it claims only when that look (or a wake-up) says there is one.

The storage is the real one; its claim and look-up verbs are wrapped to count their calls.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from onthedot import App, JobState, ManualClock
from onthedot.worker import Worker
from tests.waiting import wait_for
from tests.worker.test_worker import running, wait_state

POLL = 0.05
# A queue of these tests' own: tests running beside them (pytest-xdist) in other schemas of the
# same PostgreSQL database notify `default` on the one channel, which would wake this worker.
QUEUE = "idle-polls"


def _count(app: App, calls: Counter[str], *names: str, order: list[str] | None = None) -> None:
    """Count each verb's calls in `calls`; with `order`, also append their names in order."""
    storage = app.storage
    for name in names:
        real: Callable[..., Any] = getattr(storage, name)

        def wrapper(
            *args: Any, _real: Callable[..., Any] = real, _name: str = name, **kwargs: Any
        ) -> Any:
            calls[_name] += 1
            if order is not None:
                order.append(_name)
            return _real(*args, **kwargs)

        setattr(storage, name, wrapper)


def test_an_idle_worker_looks_once_per_poll_and_claims_nothing(app: App) -> None:
    # The worker's seconds (its once-a-second solo look, its heartbeats) pass on the app's
    # clock, which stands still here: only the poll interval's real waits go by, so the count
    # of claims does not grow with how slowly a loaded machine runs the 40 looks.
    app.clock = ManualClock()

    @app.job(name="idle.echo", queue=QUEUE)
    def echo(x: int) -> int:
        return x

    calls: Counter[str] = Counter()
    _count(app, calls, "claim_jobs", "claim_alone", "seconds_until_ready")
    with running(app, poll_interval=POLL, queues=[QUEUE]):
        wait_for(lambda: calls["seconds_until_ready"] >= 40, "40 idle looks", 30)
        looks, claims = calls["seconds_until_ready"], calls["claim_jobs"] + calls["claim_alone"]
        # The first claim at the start (a job claim and a solo-job claim), and one for a
        # wake-up now and then (the LISTEN connection's start; on SQLite, another connection's
        # write such as the heartbeat). Before, every poll interval also claimed: 43-44 claims
        # for these 40 looks.
        assert claims <= 8, (looks, dict(calls))
        job_id = echo.enqueue(7)  # a wake-up still claims at once
        assert wait_state(app, job_id, JobState.SUCCEEDED).result == 7


def test_an_announced_job_is_claimed_without_a_solo_look_first(app: App) -> None:
    """The look for solo jobs (once a second at most) belongs to the idle worker's quiet
    moments: a job announced after a second of idleness is claimed at once. Before, that claim
    first made the solo look, one more statement on the path of every job of a quiet queue.

    The worker's seconds pass on the app's clock: a ManualClock the test moves. Before each
    announcement the test waits for the claimer to sit in its idle wait, every wake-up of the
    start (the LISTEN connection's) behind it; the lease is long enough that no heartbeat (a
    write, which wakes a SQLite worker) comes between the clock's moves."""
    clock = ManualClock()
    app.clock = clock  # reaches the worker built below (and its storage verbs)
    app.lease = 30.0

    @app.job(name="idle.announced", queue=QUEUE)
    def announced(x: int) -> int:
        return x

    calls: list[str] = []
    counter: Counter[str] = Counter()
    _count(app, counter, "claim_jobs", "claim_alone", order=calls)
    with running(app, poll_interval=5.0, queues=[QUEUE]) as worker:
        waiting = _idle_waits(worker)
        wait_for(lambda: counter["claim_alone"] >= 1, "the first solo look", 30)
        if app.database_url.startswith("postgresql"):
            wait_for(lambda: counter["claim_jobs"] >= 2, "the claim the LISTEN start wakes", 30)
        clock.advance(1.5)  # more than a second since that look: the old claim path looked again
        for round_ in range(2):
            wait_for(waiting.is_set, "the claimer in its idle wait", 30)
            calls.clear()
            job_id = announced.enqueue(round_)
            assert wait_state(app, job_id, JobState.SUCCEEDED).result == round_
            assert "claim_jobs" in calls
            assert calls[: calls.index("claim_jobs")].count("claim_alone") == 0, calls
            clock.advance(1.2)


def _idle_waits(worker: Worker) -> threading.Event:
    """Set while the claimer sits in a wait of more than a second (its idle wait)."""
    waiting = threading.Event()
    wait = worker.wakeup.wait

    def watched(timeout: float) -> bool:
        if timeout > 1.0:
            waiting.set()
        try:
            return wait(timeout)
        finally:
            waiting.clear()

    worker.wakeup.wait = watched  # type: ignore[method-assign]
    return waiting
