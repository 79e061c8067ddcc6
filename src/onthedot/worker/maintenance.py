"""Keeping a worker alive and its database tidy: the keeper thread heartbeats (extends the leases
of held jobs, reads cancel requests), enforces timeouts, rescues jobs of dead workers, prunes,
and re-reads the paused queues, each a service with its own interval and error handling
(`worker/services.py`). `DatabaseBackoff` is how every worker
thread waits out database trouble."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

from onthedot.clock import REAL, Clock, backoff_delay, lease_clock
from onthedot.domain.errors import DatabaseUnavailable
from onthedot.domain.rescue import LeaseWatch
from onthedot.domain.retention import Retention
from onthedot.observability.events import DatabaseError, EventBus, JobRescued, WorkerHeartbeat
from onthedot.pruning import PrunePass
from onthedot.storage.interface import Storage
from onthedot.worker.services import Service
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
TURN = 0.05  # seconds between the keeper's passes over its services
WATCH_LIMIT = 10000  # leases read per rescue pass (the soonest ending first)


class DatabaseBackoff:
    """Report a database error (a DatabaseError event) and wait before the next try
    (`clock.backoff_delay`: exponential, bounded at 10 s); the wait ends early when the worker
    stops."""

    def __init__(self, events: EventBus, flags: Flags) -> None:
        self.events = events
        self.flags = flags

    def error(self, where: str, exc: BaseException, errors: int, wait: bool = True) -> None:
        delay = backoff_delay(errors)
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
                self.flags.stopping.wait(backoff_delay(errors))


class Keeper:
    """The keeper thread's loop (`run`), until `flags.keeper_stop` is set: small services
    (`worker/services.py`), each on its own schedule with its own error handling:

    - timeouts: every turn (0.05 s); no database;
    - heartbeat: every lease / 3, or 1 s after a job started; after a database error, a
      growing pause (at most its interval), and the rescue waits a lease more;
    - rescue: when the next watched lease is due, at most every lease / 2; after an error, a
      growing pause and a lease;
    - prune: every 60 s (a step every 0.05 s while a pass lasts); after an error, backoff;
    - paused queues: every 2 s, retried 2 s after an error;
    - give back (unproven and stale prefetched jobs): every turn; after an error, backoff.

    Their schedules run on `clock.monotonic()` (a test's ManualClock moves them); a job's
    timeout and a prefetched job's wait are real seconds (`clock.REAL`)."""

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
        self._last_beat = float("-inf")
        self.services = self._services()

    def _services(self) -> list[Service]:
        rescue = Service("rescue", self._rescue_turn, self._rescue_after_error)

        def heartbeat_failed(errors: int) -> float:
            # The leases that run out while the database is away are those of live workers
            # too, which renew them within a heartbeat interval once it is back: no rescue
            # before a lease after that.
            pause = self._beat_after_error(errors)
            rescue.defer(self.clock.monotonic() + pause + self.lease)
            return pause

        def timeouts(now: float) -> float:
            self.enforce_timeouts(REAL.monotonic())
            return 0.0

        def paused(now: float) -> float:
            self.refresh_paused(now)
            return 0.0

        def give_back(now: float) -> float:
            self.give_back_unproven()
            self.give_back_stale(REAL.monotonic())
            return 0.0

        return [
            Service("timeouts", timeouts),
            Service(
                "heartbeat",
                self._heartbeat_turn,
                heartbeat_failed,
                ready=lambda now: (
                    bool(self.running.new_since_report) and now >= self._last_beat + START_REPORT
                ),
            ),
            rescue,
            Service("prune", self._prune_turn, due=self.clock.monotonic() + 5.0),
            Service("paused queues", paused, lambda errors: PAUSED_EVERY),
            Service("give back", give_back),
        ]

    def run(self) -> None:
        stop = self.flags.keeper_stop
        while not stop.is_set():
            self.turn()
            stop.wait(TURN)

    def turn(self) -> None:
        """One pass: every service whose turn is due takes it."""
        now = self.clock.monotonic()
        for service in self.services:
            service.step(now, self._report)

    def _report(self, where: str, exc: BaseException, errors: int) -> None:
        self.backoff.error(where, exc, errors, wait=False)

    def _heartbeat_turn(self, now: float) -> float:
        self.heartbeat()
        self._last_beat = now
        return self.heartbeat_every

    def _beat_after_error(self, errors: int) -> float:
        """The heartbeat's pause after a database error (an outage, a full disk): growing,
        never longer than its own interval, so that once the database is back every live
        worker renews its leases within that interval."""
        return min(backoff_delay(errors, cap=5.0), self.heartbeat_every)

    def _rescue_turn(self, now: float) -> float:
        return min(max(self.lease / 2, 0.05), self.rescue())

    def _rescue_after_error(self, errors: int) -> float:
        return self._beat_after_error(errors) + self.lease

    def _prune_turn(self, now: float) -> float:
        return PRUNE_PAUSE if self.prune() else 60.0

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
            # The keeper's clock decides (a test may give it another than its storage's).
            now = self.clock.fixed_now() or self.storage.db_now()
            self._pass = PrunePass(self.storage, self.retention, now)
            self._renewed = self.clock.monotonic()
        p = self._pass
        if p.step(self.prune_step):
            if self.clock.monotonic() - self._renewed > PRUNE_EVERY / 5:
                # Still at it: keep the turn, so no other worker starts a pass beside this one.
                self.storage.acquire_maintenance("prune", 0, self.worker_id)
                self._renewed = self.clock.monotonic()
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
