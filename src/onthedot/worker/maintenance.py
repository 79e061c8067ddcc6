"""Keeping a worker alive and its database tidy: the keeper thread heartbeats (extends the leases
of held jobs, reads cancel requests), enforces timeouts, rescues jobs of dead workers, prunes,
and re-reads the paused queues, each on its own interval. `DatabaseBackoff` is how every worker
thread waits out database trouble."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

from onthedot.clock import Clock, lease_clock
from onthedot.domain.errors import DatabaseUnavailable, OnthedotError
from onthedot.domain.rescue import LeaseWatch
from onthedot.domain.retention import Retention
from onthedot.observability.events import DatabaseError, EventBus, JobRescued, WorkerHeartbeat
from onthedot.pruning import PrunePass
from onthedot.storage.interface import Storage
from onthedot.worker.state import Flags, Pipeline, RunningJobs

log = logging.getLogger("onthedot.worker")

T = TypeVar("T")

PRUNE_EVERY = 300.0  # seconds between prunes, across all workers (a maintenance lease)
# A prune pass deletes finished jobs one batch per keeper turn, so that a backlog of millions
# of rows never stops the heartbeat (a lease would expire and the held jobs be run twice) nor
# holds one long transaction: PRUNE_STEP rows per batch, PRUNE_PAUSE seconds between batches.
PRUNE_STEP = 5000
PRUNE_PAUSE = 0.05
PAUSED_EVERY = 2.0  # seconds between reads of the paused queues
# A job that started is shown `running` (no longer `claimed`) by the next heartbeat: one comes
# at most this many seconds after a start (one batched write for all the starts meanwhile).
START_REPORT = 1.0
HOLD_LIMIT = 5.0  # seconds a prefetched job may wait in the buffer before it is given back
WATCH_LIMIT = 10000  # leases read per rescue pass (the soonest ending first)


class DatabaseBackoff:
    """Report a database error (a DatabaseError event) and wait before the next try, with
    exponential backoff bounded at 10 s; the wait ends early when the worker stops."""

    def __init__(self, events: EventBus, flags: Flags) -> None:
        self.events = events
        self.flags = flags

    def error(self, where: str, exc: BaseException, errors: int, wait: bool = True) -> None:
        delay = min(0.1 * 2 ** min(errors, 10), 10.0)
        self.events.emit(DatabaseError(where=where, error=str(exc), retry_in=delay))
        if wait:
            # The claimer gives up at a graceful stop; persisting outcomes only at a hard one.
            event = self.flags.stopping if where == "claim" else self.flags.hard_stop
            event.wait(delay)

    def retry(self, where: str, fn: Callable[[], T]) -> T:
        """`fn()`, retried while the database is unavailable (until the worker stops)."""
        errors = 0
        while True:
            try:
                return fn()
            except DatabaseUnavailable as exc:
                errors += 1
                if self.flags.stopping.is_set():
                    raise
                self.error(where, exc, errors, wait=False)
                self.flags.stopping.wait(min(0.1 * 2 ** min(errors, 10), 10.0))


class Keeper:
    """The keeper thread's loop (`run`), until `flags.keeper_stop` is set."""

    def __init__(
        self,
        *,
        worker_id: str,
        storage: Storage,
        clock: Clock,
        events: EventBus,
        lease: float,
        retention: Retention | timedelta,
        pipeline: Pipeline,
        running: RunningJobs,
        flags: Flags,
        backoff: DatabaseBackoff,
        enforce_timeouts: Callable[[float], None],
        refresh_paused: Callable[[float], None],
        audit_retention: timedelta | None = None,
        prune_step: int = PRUNE_STEP,
    ) -> None:
        self.worker_id = worker_id
        self.storage = storage
        self.clock = clock
        self.events = events
        self.lease = lease
        self.retention = (
            Retention.parse(retention) if isinstance(retention, timedelta) else retention
        )
        self.audit_retention = audit_retention
        self.heartbeat_every = min(max(lease / 3, 0.05), 10.0)
        self.pipeline = pipeline
        self.running = running
        self.flags = flags
        self.backoff = backoff
        self.enforce_timeouts = enforce_timeouts
        self.refresh_paused = refresh_paused
        self.prune_step = prune_step
        self._pass: PrunePass | None = None
        self._renewed = 0.0  # when the running pass last renewed the maintenance turn
        self.watch = LeaseWatch(lease)
        self.passes = 0  # rescue turns taken
        self.rescued = 0  # jobs rescued

    def run(self) -> None:
        next_beat = 0.0
        last_beat = 0.0
        next_rescue = 0.0
        next_prune = time.monotonic() + 5.0
        errors = 0
        stop = self.flags.keeper_stop
        while not stop.is_set():
            now = time.monotonic()
            self.enforce_timeouts(now)
            try:
                if now >= next_beat or (
                    self.running.new_since_report and now >= last_beat + START_REPORT
                ):
                    self.heartbeat()
                    last_beat = now
                    next_beat = now + self.heartbeat_every
                    errors = 0
                if now >= next_rescue:
                    next_rescue = now + min(max(self.lease / 2, 0.05), self.rescue())
                if now >= next_prune:
                    more = self.prune()
                    next_prune = now + (PRUNE_PAUSE if more else 60.0)
                self.refresh_paused(now)
                self.give_back_unproven()
                self.give_back_stale(now)
            except (OnthedotError, OSError) as exc:
                errors += 1
                self.backoff.error("heartbeat", exc, errors, wait=False)
                next_beat, next_rescue = self._after_error(now, errors, next_rescue)
            stop.wait(0.05)

    def _after_error(self, now: float, errors: int, next_rescue: float) -> tuple[float, float]:
        """When to try the heartbeat and the rescue again after a database error (an outage,
        a full disk). The heartbeat: after a growing pause, never longer than its own
        interval, so that once the database is back every live worker renews its leases
        within that interval. The rescue: not before a lease after that, since the leases
        that ran out meanwhile are those of live workers too, which renew them by then."""
        pause = min(0.1 * 2.0 ** min(errors, 6), 5.0, self.heartbeat_every)
        return now + pause, max(next_rescue, now + pause + self.lease)

    def heartbeat(self) -> None:
        held = self.pipeline.held_ids()
        started = self.running.started_ids()
        # When the statement was sent, not when its answer came: the leases it extends run
        # from a database instant no earlier than this (worker/leases.py).
        sent = lease_clock()
        renewal = self.storage.heartbeat(self.worker_id, self.lease, held=held, started=started)
        self.pipeline.renewed(renewal.renewed, sent)
        if self.events.wants(WorkerHeartbeat):
            self.events.emit(WorkerHeartbeat(self.worker_id, len(held)))
        if renewal.cancel:
            for future in self.running.request_cancel(renewal.cancel):
                future.cancel()
        self.running.forget_finished_cancels()

    def give_back_unproven(self) -> None:
        """Jobs an executor did not start because their claim could no longer be proven (the
        process was frozen or starved past their lease): given back, which does nothing to
        those already rescued and queues the others again, their attempt not counted."""
        unproven = self.pipeline.unproven_ids()
        if unproven:
            given = self.storage.release_jobs(self.worker_id, unproven)
            self.pipeline.given_back(unproven)
            log.warning(
                "did not start %d claimed job(s): their claim was no longer proven (this "
                "process was paused or starved for about a lease, %ss); %d given back, the "
                "others were rescued meanwhile",
                len(unproven),
                self.lease,
                given,
            )

    def give_back_stale(self, now: float) -> None:
        """A prefetched job that waited `HOLD_LIMIT` s in the buffer (every executor busy, for
        instance with a job that hangs) goes back to the queue, its attempt not counted, for
        an idle worker to take; this worker then claims only for idle executors."""
        stale = self.pipeline.take_stale(now - HOLD_LIMIT)
        if stale:
            try:
                self.storage.release_jobs(self.worker_id, stale)
            finally:
                self.pipeline.released(len(stale))
            log.info("gave back %d prefetched jobs that waited %ss", len(stale), HOLD_LIMIT)

    def rescue(self) -> float:
        """Watch the leases ending within half a lease; rescue those this worker has seen
        unrenewed for a whole lease of its clock's `monotonic()` (`domain.rescue.LeaseWatch`).
        Returns the seconds until the next watched lease becomes due (infinity: none)."""
        limit = WATCH_LIMIT
        leases = self.storage.ending_leases(self.lease / 2, limit=limit)
        now = self.clock.monotonic()  # after the read: the leases were seen by then
        due = self.watch.due(leases, now, complete=len(leases) < limit)
        rescued = self.storage.rescue_jobs(only=due) if due else []
        self.watch.forget(r.id for r in rescued)
        for r in rescued:
            self.events.emit(JobRescued(r.id, r.name, r.attempt, r.requeued, r.queue))
        self.rescued += len(rescued)
        self.passes += 1
        due_at = self.watch.next_due(now)
        return math.inf if due_at is None else due_at - now

    def watching(self) -> bool:
        """Whether leases this keeper watches are still to be decided (renewed or rescued)."""
        return self.watch.watching()

    def prune(self) -> bool:
        """One step of a prune pass (at most `prune_step` jobs deleted, of one job name and
        final state, by its retention); True while the pass has more to delete. A pass starts
        when this worker wins the maintenance turn and keeps the turn while it lasts; its last
        step prunes the other tables."""
        if self._pass is None:
            if not self.storage.acquire_maintenance("prune", PRUNE_EVERY, self.worker_id):
                return False
            now = self.clock.fixed_now() or self.storage.db_now()
            self._pass = PrunePass(self.storage, self.retention, now)
            self._renewed = time.monotonic()
        p = self._pass
        if p.step(self.prune_step):
            if time.monotonic() - self._renewed > PRUNE_EVERY / 5:
                # Still at it: keep the turn, so no other worker starts a pass beside this one.
                self.storage.acquire_maintenance("prune", 0, self.worker_id)
                self._renewed = time.monotonic()
            return True
        self._pass = None
        # Slot history and removed ledger rows are kept as long as the longest-kept job (every
        # job older than that is gone by now, so the jobs pass inside deletes nothing more).
        counts = self.storage.prune(
            older_than=p.now - self.retention.longest(),
            workers_older_than=p.now - timedelta(seconds=max(self.lease * 10, 3600)),
            audit_older_than=None if self.audit_retention is None else p.now - self.audit_retention,
        )
        counts["jobs"] += p.jobs
        if any(counts.values()):
            log.info("pruned %s", " ".join(f"{k}={v}" for k, v in counts.items()))
        return False
