"""The health check every live scheduler runs at its tick (docs/health.md): lock the schedules
whose check is due, evaluate them (`domain.assess`), explain each problem
(`domain.causes`), and write problems, resolutions and health rows in one transaction; a
(schedule, slot, kind) already there is never raised again, so each problem has one raiser,
which emits its event (and queues its webhook alert)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from onthedot.domain.assess import Assessment, assess
from onthedot.domain.causes import Fleet, FleetWorker, explain
from onthedot.domain.expectations import stored_expectations
from onthedot.domain.expected import Finding, Subject
from onthedot.domain.ledger import LedgerRow
from onthedot.domain.specs import SpecError, load_timezone, parse_spec
from onthedot.domain.watch import (
    HealthState,
    NewProblem,
    ProblemKind,
    ProblemRecord,
    Resolution,
    WatchDecision,
    WatchFacts,
    WatchResult,
)
from onthedot.limits_held import read_holds
from onthedot.observability.events import (
    Event,
    EventBus,
    ScheduleDeadlineMissed,
    ScheduleFailed,
    ScheduleLate,
    ScheduleOverran,
    ScheduleRecovered,
)

if TYPE_CHECKING:
    from onthedot.schedules.registry import ScheduleRegistry
    from onthedot.storage.interface import Storage

log = logging.getLogger("onthedot.health")

WATCH_BATCH = 500  # health rows per evaluation transaction

_EVENTS: dict[ProblemKind, type[ScheduleLate | ScheduleOverran | ScheduleDeadlineMissed]] = {
    ProblemKind.LATE: ScheduleLate,
    ProblemKind.OVERRAN: ScheduleOverran,
    ProblemKind.DEADLINE_MISSED: ScheduleDeadlineMissed,
}


def subject_for(
    row: LedgerRow, state: HealthState, registry: ScheduleRegistry | None
) -> Subject | None:
    """The schedule as the evaluating code knows it (None: not watched). Without a registry
    (a read-only check with no app) the timing is the ledger's and the expectations those the
    last evaluation applied."""
    if row.removed_at is not None:
        return None
    sched = None
    if registry is not None:
        code = row.source == "code"
        sched = registry.declared().get(row.key) if code else registry.definition_for(row)
        if sched is None and code:
            return None  # not declared by this code: it is being removed
    if sched is not None:
        return Subject(
            key=row.key,
            spec=sched.spec,
            tz=sched.tz,
            expect=sched.expectations.with_overrides(state.overrides),
            job=sched.job,
            queue=sched.queue,
            jitter=sched.jitter,
            catchup=sched.catchup,
            overlap=sched.overlap,
        )
    try:
        spec, tz = parse_spec(row.spec), load_timezone(row.timezone)
    except SpecError:
        return None
    definition = row.definition or {}
    if registry is None:
        expect = stored_expectations(state.expect)
        problems: tuple[str, ...] = ()
    else:  # a runtime schedule this code cannot run
        expect = stored_expectations(definition).with_overrides(state.overrides)
        found = registry.dynamic_problems(row)
        problems = tuple(p.message for p in found if p.level == "error")
    job = definition.get("job")
    return Subject(
        key=row.key,
        spec=spec,
        tz=tz,
        expect=expect,
        job=job if isinstance(job, str) else None,
        catchup=str(definition.get("catchup", "latest")),
        overlap=str(definition.get("overlap", "allow")),
        runnable=registry is None,
        problems=problems,
    )


def read_fleet(storage: Storage, lease: float) -> Fleet:
    """The workers and queues as the database shows them now (three reads)."""
    workers = tuple(
        FleetWorker(
            id=w.id,
            scheduler=w.scheduler,
            generation=w.generation,
            queues=w.queues,
            jobs=w.jobs,
            heartbeat_age=w.heartbeat_age,
            stopping=w.stopping,
            running=w.running_jobs,
            concurrency=w.concurrency,
        )
        for w in storage.list_workers()
    )
    stats = storage.queue_stats()
    return Fleet(
        workers=workers,
        lease=lease,
        paused_queues=frozenset(q.queue for q in stats if q.paused),
        ready={q.queue: (q.ready, q.oldest_ready_age) for q in stats},
        held=HeldByLimits(storage),
    )


class HeldByLimits(Mapping[int, str]):
    """`Fleet.held` read on demand: what limits hold a queued job, asked only of the jobs
    health explains (a saturated key may have a million waiting: they are never listed).
    The rule is the one `onthedot jobs explain` tells (`read_holds`)."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self._seen: dict[int, str | None] = {}

    def __getitem__(self, job_id: int) -> str:
        if job_id not in self._seen:
            found = self._storage.job_limits(job_id)
            queued = found is not None and found[0] == "queued"
            lines = read_holds(self._storage, found[4]) if found is not None and queued else []
            self._seen[job_id] = "; ".join(lines) or None
        held = self._seen[job_id]
        if held is None:
            raise KeyError(job_id)
        return held

    def __iter__(self) -> Iterator[int]:
        return (job_id for job_id, held in self._seen.items() if held is not None)

    def __len__(self) -> int:
        return sum(held is not None for held in self._seen.values())


class HealthWatcher:
    """Evaluates due health checks for one scheduler. `alerts`: queue a webhook alert for
    each problem raised and resolved (when this process delivers them)."""

    def __init__(
        self,
        registry: ScheduleRegistry,
        events: EventBus,
        *,
        lease: float,
        alerts: bool = False,
        batch: int = WATCH_BATCH,
    ) -> None:
        self.registry = registry
        self.events = events
        self.lease = lease
        self.alerts = alerts
        self.batch = batch

    def watch(self, storage: Storage) -> WatchResult:
        """Evaluate the schedules whose check is due (one batch): how many, and the problems
        this call raised and resolved."""
        with storage.watch(limit=self.batch) as tx:
            if not tx.facts:
                return WatchResult()
            fleet: Fleet | None = None

            def fleet_now() -> Fleet:
                nonlocal fleet
                if fleet is None:
                    fleet = read_fleet(storage, self.lease)
                return fleet

            decisions = [self._decide(f, tx.now, fleet_now) for f in tx.facts]
            done = tx.apply(decisions, alerts=self.alerts)
        self._emit(done)
        return WatchResult(len(decisions), tuple(done))

    def _decide(
        self, facts: WatchFacts, now: datetime, fleet: Callable[[], Fleet]
    ) -> WatchDecision:
        try:
            subject = subject_for(facts.row, facts.state, self.registry)
            result = assess(facts, subject, now)
            return decision(facts, subject, result, now, fleet)
        except Exception:  # one bad schedule never stops the others: look again in a minute
            log.exception("health of schedule %r could not be evaluated", facts.state.key)
            later = replace(facts.state, check_at=now + timedelta(minutes=1))
            return WatchDecision(facts.state.key, later)

    def _emit(self, done: Iterable[ProblemRecord]) -> None:
        events = self.events
        for p in done:
            if p.open or p.opened_at == p.resolved_at:
                kind = _EVENTS.get(p.kind)
                event: Event = (
                    kind(p.key, p.slot, p.cause, p.detail, p.id)
                    if kind is not None
                    else ScheduleFailed(p.key, p.slot, p.cause, p.detail, p.id)
                )
                events.emit(event)
            if not p.open:
                events.emit(ScheduleRecovered(p.key, p.slot, str(p.kind), p.resolution or "", p.id))


def decision(
    facts: WatchFacts,
    subject: Subject | None,
    result: Assessment,
    now: datetime,
    fleet: Callable[[], Fleet],
) -> WatchDecision:
    """The writes an assessment asks for, each problem with its cause."""

    def why(finding: Finding) -> NewProblem:
        assert subject is not None
        return NewProblem(
            finding.entry.slot,
            finding.kind,
            explain(finding, subject, facts.row, fleet(), now),
            finding.resolution,
        )

    opened = tuple(why(f) for f in result.opened)
    refreshed = []
    for problem, finding in result.ongoing:
        fresh = why(finding).why
        if str(fresh.cause) != problem.cause:
            refreshed.append((problem, fresh))
    resolved = tuple(Resolution(p, text) for p, text in result.resolved)
    return WatchDecision(facts.state.key, result.state, opened, resolved, tuple(refreshed))
