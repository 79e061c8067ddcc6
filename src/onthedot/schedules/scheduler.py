"""The scheduler tick. Every worker runs it (no leader); contention is settled in the database.

While nothing is due a tick is one read (clock, fence, earliest due instant), which also tells
the loop how long to sleep: until the next due instant by the database clock (bounded, woken
early when schedules change). When rows are due, a tick locks them (index on next_due_at, SKIP
LOCKED), checks the fence in that transaction, decides with `domain.slots` (the pure rules,
memoized per definition and per cursor) and commits cursor + slot history + jobs together.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from onthedot.clock import Clock, backoff_delay
from onthedot.domain.errors import OnthedotError
from onthedot.domain.ledger import AuditEntry, DueRow, SlotOutcome, SyncReport, TickPlan
from onthedot.domain.payload import JsonObject
from onthedot.domain.slots import Decider, plan_sync
from onthedot.domain.watch import WatchResult
from onthedot.observability.events import (
    DatabaseError,
    EventBus,
    LedgerRepaired,
    SchedulerFenced,
    SlotEnqueued,
    SlotsCoalesced,
    SlotSkipped,
    SlotsMissed,
)
from onthedot.storage.interface import Storage, TickResult
from onthedot.wakeups import WakeupHub

if TYPE_CHECKING:
    from onthedot.domain.definitions import ScheduleDef
    from onthedot.domain.ledger import LedgerRow
    from onthedot.jobs import JobFunction

log = logging.getLogger("onthedot.scheduler")

TICK_BATCH = 1000  # ledger rows per tick transaction
MAX_SLEEP = 1.0  # seconds: the bound on sleeping, so changes made elsewhere are seen quickly
NAP = 0.02  # seconds: due rows are held by another scheduler (or by newer code): look again soon
CHECK_EVERY = 60.0  # seconds between checks that every declared schedule has its ledger row


class Definitions(Protocol):
    """What the scheduler reads of the schedule registry."""

    def declared(self) -> dict[str, ScheduleDef]: ...

    def code_hash(self) -> str: ...

    def definition_for(self, row: LedgerRow) -> ScheduleDef | None: ...


class Watcher(Protocol):
    """The health check run at the tick (schedules/watcher.py)."""

    def watch(self, storage: Storage) -> WatchResult: ...


class Service(Protocol):
    """A background service that runs while the scheduler does (the alert notifier)."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


class Scheduler:
    """One process's scheduler: `prepare`, `sync`, then `run` (or `tick` from tests)."""

    def __init__(
        self,
        storage: Storage,
        definitions: Definitions,
        jobs: Mapping[str, JobFunction[Any, Any]],
        *,
        clock: Clock,
        events: EventBus,
        wakeups: WakeupHub,
        lease: float,
        worker_id: str = "scheduler",
        stopping: threading.Event | None = None,
        batch: int = TICK_BATCH,
        keep_removed_jobs: bool = False,
        watcher: Watcher | None = None,
        services: Sequence[Service] = (),
    ) -> None:
        self.storage = storage
        self.definitions = definitions
        self.jobs = jobs
        self.clock = clock
        self.events = events
        self.wakeups = wakeups
        self.lease = lease
        self.worker_id = worker_id
        self.batch = batch
        self.keep_removed_jobs = keep_removed_jobs
        self.watcher = watcher
        self.services = tuple(services)
        self.generation = 0
        self.fenced = False
        self.wake = threading.Event()
        self._stop = threading.Event()
        self._stopping = stopping or self._stop
        self._skip_for: dict[str, ScheduleDef] | None = None
        self._skip_list: list[str] = []
        self._decider = Decider()
        self._decider_lock = threading.Lock()

    # -- start ------------------------------------------------------------------------------
    def prepare(self) -> int:
        """Validate the declarations (raise ScheduleError with every problem) and find this
        code's generation. What deciding derives from each declaration (fingerprint, job
        template) is computed here, once, rather than by the first tick that meets it."""
        declared = self.definitions.declared()
        self.generation = self.storage.code_generation(self.definitions.code_hash())
        jobs = self.jobs
        with self._decider_lock:
            for sched in declared.values():
                self._decider.learn(sched, jobs.get(sched.job))
        return self.generation

    def sync(self, *, now: datetime | None = None) -> SyncReport:
        """Reconcile the ledger with the declarations (first sight, timing changes, removals).
        `now` replaces the clock's time (a test hook; None: the app's clock decides)."""
        declared = self.definitions.declared()
        storage = self.storage if now is None else self.storage.at(now)
        with storage.sync_declared(
            generation=self.generation, fence_ttl=self.lease, keys=list(declared)
        ) as sync:
            owned: list[str] = []
            cancelled: dict[str, int] = {}
            if sync.fenced:
                report = SyncReport(fenced=True)
            else:
                report = plan_sync(sync.now, sync.rows, declared, self.generation)
                # Only a removal of a row this generation (or an older one) wrote retires its
                # jobs: after a rollback, older code never cancels a newer schedule's jobs.
                generations = {r.key: r.generation for r in sync.rows}
                owned = [k for k in report.removals if generations[k] <= self.generation]
                cancel = () if self.keep_removed_jobs else owned
                cancelled = sync.apply(report, cancel_jobs_of=cancel)
        self._set_fenced(report.fenced)
        keep = self.keep_removed_jobs
        for key in owned:
            details: JsonObject = {"cancelled_jobs": cancelled.get(key, 0), "kept_jobs": keep}
            storage.add_audit(AuditEntry("onthedot", "removed", key=key, details=details))
        events = self.events
        for row in report.restarts:
            events.emit(LedgerRepaired(row.key, row.repaired_reason or "restarted"))
        if report.restarts:  # a new timing: its health is judged from the restart on
            storage.recheck_health([row.key for row in report.restarts])
        for key in report.removals:
            events.emit(LedgerRepaired(key, "no longer declared in code: stopped"))
        for key in report.conflicts:
            log.error(
                "declared schedule %r collides with a runtime schedule of the same key; "
                "the runtime schedule is kept, the declaration is ignored",
                key,
            )
        return report

    # -- ticking ----------------------------------------------------------------------------
    def tick(self, *, now: datetime | None = None) -> list[TickResult]:
        """Tick until nothing more is due (each batch its own transaction). `now` replaces the
        clock's time (a test hook; None: the app's clock decides).

        Returns each transaction's result, without its `plans`: they are acted upon (events
        emitted) batch by batch, and a burst of 100k slots need not keep 100k plans alive."""
        results = []
        skip_keys = self._skip_keys(self.definitions.declared())
        storage = self.storage if now is None else self.storage.at(now)
        full = False
        while True:
            with storage.tick(
                generation=self.generation,
                fence_ttl=self.lease,
                limit=self.batch,
                skip_keys=skip_keys,
                expect_due=full,
            ) as tick:
                result = tick.done or tick.apply(self._decide(tick.now, tick.due_rows()))
            if result.fenced != self.fenced:
                was = self.fenced
                self._set_fenced(result.fenced)
                if was and not result.fenced:
                    self.sync(now=now)  # the newer code is gone (rollback): ours decides again
            self._emit(result)
            results.append(replace(result, plans=[]) if result.plans else result)
            if result.rows < self.batch or result.fenced:
                return results
            full = True  # more rows are probably due: the next batch skips the idle read

    def _skip_keys(self, declared: dict[str, ScheduleDef]) -> list[str]:
        """Keys with overlap "skip", computed once per set of declarations (the registry
        returns the same dict until they change): an idle tick must not cost O(schedules)."""
        if declared is not self._skip_for:
            self._skip_list = [k for k, s in declared.items() if s.overlap == "skip"]
            self._skip_for = declared
        return self._skip_list

    def _decide(self, now: datetime, rows: Iterable[DueRow]) -> list[TickPlan]:
        schedules = self.definitions
        declared = schedules.declared()
        jobs = self.jobs
        decide = self._decider
        plans = []
        with self._decider_lock:  # the decider's caches are not thread-safe
            for row in rows:
                try:
                    if row.source == "code":
                        sched = declared.get(row.key)
                    else:
                        sched = schedules.definition_for(row.ledger_row())
                        if sched is None:
                            # An invalid runtime schedule (e.g. its job is not registered in
                            # this code): leave it alone; it is shown with its error. Retry in
                            # a minute.
                            plans.append(_postpone(row, now))
                            continue
                    defaults = jobs.get(sched.job) if sched else None
                    plans.append(decide(row, sched, now, job_defaults=defaults))
                except Exception:  # one bad schedule must never stop the others
                    log.exception(
                        "schedule %r could not be evaluated; retrying in a minute", row.key
                    )
                    plans.append(_postpone(row, now))
        return plans

    def _emit(self, result: TickResult) -> None:
        events = self.events
        enqueued = events.wants(SlotEnqueued)
        for rec in result.recorded:
            if rec.outcome == SlotOutcome.SKIPPED_OVERLAP:
                events.emit(SlotSkipped(rec.key, rec.slot, "overlap"))
            elif enqueued:
                events.emit(SlotEnqueued(rec.key, rec.slot, rec.job_id, rec.outcome))
        for key, slot in result.conflicts:
            events.emit(SlotSkipped(key, slot, "already in the slot history (skipped by operator)"))
        for plan in result.plans:
            if plan.missed:
                events.emit(SlotsMissed(plan.key, plan.missed, plan.missed_from, plan.missed_to))
            if plan.coalesced:
                events.emit(SlotsCoalesced(plan.key, plan.coalesced))
            if plan.repair is not None:
                events.emit(LedgerRepaired(plan.key, plan.repair.repaired_reason or "repaired"))
                self.storage.recheck_health([plan.key])
            if plan.remove:
                events.emit(LedgerRepaired(plan.key, "no longer declared in code: stopped"))
        if result.recorded:
            self.wakeups.jobs_added(self._queues_of(result))  # read only when someone listens

    @staticmethod
    def _queues_of(result: TickResult) -> Iterator[str]:
        for p in result.plans:
            for s in p.slots:
                if s.template is not None:  # the job's queue without building the job
                    yield s.template.queue
                elif s.job is not None:
                    yield s.job.queue

    def _set_fenced(self, fenced: bool) -> None:
        if fenced != self.fenced:
            self.fenced = fenced
            self.events.emit(SchedulerFenced(self.worker_id, self.generation, fenced))

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> None:
        unlisten = self.wakeups.on_schedules_changed(self.wake.set)
        for service in self.services:
            service.start()
        try:
            self._loop()
        finally:
            unlisten()
            for service in self.services:
                service.stop()

    def check_health(self, *, now: datetime | None = None) -> WatchResult:
        """Evaluate the schedules whose health check is due (one batch; nothing while fenced:
        the newest code judges). `now` replaces the clock's time (a test hook)."""
        if self.watcher is None or self.fenced:
            return WatchResult()
        return self.watcher.watch(self.storage if now is None else self.storage.at(now))

    def step(self) -> float:
        """One iteration of the loop: tick, check health when due, then return how long to
        sleep (seconds), from the tick's own answer: no separate query for the next due
        instant or the next health check."""
        last = self.tick()[-1]
        if last.idle:
            watch_at = last.watch_at if self.watcher is not None else None
            if watch_at is not None and watch_at <= last.now and not last.fenced:
                return 0.0 if self.check_health().evaluated else NAP
            wakes = [t for t in (last.next_due_at, watch_at) if t is not None]
            if not wakes:
                return MAX_SLEEP
            delay = (min(wakes) - last.now).total_seconds()
            return delay if delay > 0 else NAP  # due, but fenced: the newer code handles it
        if last.rows == 0:
            return NAP  # due rows were held by another scheduler, or fenced in the transaction
        return 0.0  # it worked: tick again at once; an idle tick then says how long to sleep

    def _loop(self) -> None:
        errors = 0
        next_check = self.clock.monotonic() + CHECK_EVERY
        while not (self._stopping.is_set() or self._stop.is_set()):
            try:
                if self.clock.monotonic() >= next_check:
                    next_check = self.clock.monotonic() + CHECK_EVERY
                    self.check_ledger()
                delay = self.step()
                errors = 0
            except OnthedotError as exc:
                errors += 1
                delay = backoff_delay(errors)
                self.events.emit(DatabaseError("scheduler", str(exc), delay))
            except Exception:
                errors += 1
                delay = backoff_delay(errors)
                log.exception("scheduler tick failed; retrying in %.1fs", delay)
            sleep = min(max(delay, 0.0), MAX_SLEEP)
            if sleep > 0:
                self.clock.sleep(sleep, self.wake)
                self.wake.clear()

    def check_ledger(self) -> None:
        """Read-repair: recreate ledger rows of declared schedules that went missing (deleted by
        hand, restored from an old backup). One count query while all is well."""
        if self.fenced:
            return
        declared = self.definitions.declared()
        if declared and self.storage.count_live_code_rows(list(declared)) != len(declared):
            report = self.sync()
            for row in report.inserts:
                self.events.emit(LedgerRepaired(row.key, "ledger row was missing: recreated"))

    def stop(self) -> None:
        self._stop.set()
        self.wake.set()


def _postpone(row: DueRow, now: datetime) -> TickPlan:
    return TickPlan(row.key, row.cursor, row.cursor, now + timedelta(minutes=1))
