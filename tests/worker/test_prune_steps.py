"""Pruning a big backlog of finished jobs never holds up the worker's keeper thread (issue 16,
item 4): each keeper turn deletes one bounded batch, oldest first, and hands control back to
the heartbeat, lease rescue and timeouts; the pass keeps its maintenance turn until it is done,
and only its last step prunes the other tables. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from onthedot import JobFilter, JobState, ManualClock
from onthedot.domain.jobs import NewJob, Outcome, OutcomeKind
from onthedot.observability.events import EventBus
from onthedot.storage.interface import Storage, WorkerInfo
from onthedot.worker.maintenance import DatabaseBackoff, Keeper
from onthedot.worker.state import Flags, Pipeline, RunningJobs

T0 = ManualClock().now()
NOW = T0 + timedelta(days=10)  # the retention is 7 days: jobs finished at T0 are due
STEP = 20


def _finished(storage: Storage, n: int, when_days: float) -> list[int]:
    then = storage.at(T0 + timedelta(days=when_days))
    ids = then.enqueue([NewJob(name="j", args=[], kwargs={}) for _ in range(n)])
    claimed = then.claim_jobs("w-old", "default", n, 30)
    outcomes = [Outcome(c.id, OutcomeKind.SUCCEEDED, attempt=1) for c in claimed]
    assert then.finish_jobs("w-old", outcomes) == n
    return ids


def _keeper(storage: Storage, worker_id: str) -> Keeper:
    flags = Flags()
    events = EventBus()
    return Keeper(
        worker_id=worker_id,
        storage=storage,
        clock=ManualClock(NOW),
        events=events,
        lease=30.0,
        retention=timedelta(days=7),
        pipeline=Pipeline(max_inflight=1),
        running=RunningJobs(),
        flags=flags,
        backoff=DatabaseBackoff(events, flags),
        enforce_timeouts=lambda now: None,
        refresh_paused=lambda now: None,
        prune_step=STEP,
    )


def _left(storage: Storage) -> int:
    return storage.count_jobs(JobFilter(state=JobState.SUCCEEDED))


def test_a_prune_pass_deletes_one_batch_per_keeper_turn(storage: Storage) -> None:
    old = _finished(storage, 3 * STEP + 7, 0)
    young = _finished(storage, 5, 9)
    now = storage.at(NOW)
    storage.at(T0).register_worker(
        WorkerInfo(id="gone", hostname="h", pid=1, queues=("default",), concurrency=1)
    )
    keeper, other = _keeper(now, "w1"), _keeper(now, "w2")
    steps = 0
    while True:
        before = _left(storage)
        more = keeper.prune()
        steps += 1
        # One turn deletes at most one batch, then returns to the heartbeat.
        assert before - _left(storage) == (STEP if more else 7)
        if not more:
            break
        # Meanwhile the turn is this worker's: no second pass starts beside it.
        assert other.prune() is False
        assert before - _left(storage) == STEP
        assert [w.id for w in now.list_workers()] == ["gone"]  # the other tables: at the end
    assert steps == 4
    assert all(storage.get_job(i) is None for i in old)
    assert all(storage.get_job(i) is not None for i in young)
    assert now.list_workers() == []  # its heartbeat is years old: pruned by the last step
    assert keeper.prune() is False  # the next pass waits for the next maintenance turn
