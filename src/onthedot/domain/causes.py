"""Why a slot did not run as expected, from what the database knows: the schedule's ledger row,
the slot's history row and job, and the fleet (live workers, their code generation, queues
and job names; paused queues; ready jobs per queue). Pure: the caller reads the fleet.

"Held by a limit" (Cause.HELD_BY_LIMIT) is asked of `Fleet.held`, a job id -> reason map the
caller fills from whatever holds jobs back (empty until concurrency and rate limits exist).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from onthedot.domain.durations import format_duration
from onthedot.domain.expected import Entry, Finding, Subject
from onthedot.domain.jobs import iso
from onthedot.domain.ledger import LedgerRow
from onthedot.domain.payload import JsonObject
from onthedot.domain.serving import serving_workers
from onthedot.domain.watch import Cause, Explanation, ProblemKind, SlotFact


@dataclass(frozen=True, slots=True)
class FleetWorker:
    """A registered worker as health reads it."""

    id: str
    scheduler: bool
    generation: int
    queues: tuple[str, ...]
    jobs: tuple[str, ...]
    heartbeat_age: float
    stopping: bool = False
    running: int = 0
    concurrency: int = 1


@dataclass(frozen=True, slots=True)
class Fleet:
    """The workers and queues as the database shows them at one instant."""

    workers: tuple[FleetWorker, ...] = ()
    lease: float = 30.0
    paused_queues: frozenset[str] = frozenset()
    ready: Mapping[str, tuple[int, float | None]] = field(default_factory=dict)
    held: Mapping[int, str] = field(default_factory=dict)  # job id -> what holds it

    @property
    def alive(self) -> list[FleetWorker]:
        return serving_workers(self.workers, self.lease)

    def no_live_worker(self) -> str | None:
        """The sentence when no worker is alive (None while one is)."""
        if self.alive:
            return None
        if not self.workers:
            return "no live worker: no worker is registered"
        newest = min(w.heartbeat_age for w in self.workers)
        return f"no live worker: the newest heartbeat is {_age(newest)} old"


def explain(
    finding: Finding, subject: Subject, row: LedgerRow, fleet: Fleet, now: datetime
) -> Explanation:
    """The cause of a problem (or of an open one as things stand now)."""
    entry, kind = finding.entry, finding.kind
    if kind == ProblemKind.OVERRAN and entry.fact is not None:
        return _overran(entry.fact, finding.limit, fleet, now)
    if kind == ProblemKind.FAILED and entry.fact is not None:
        return _failed(entry.fact)
    prefix = ""
    if kind == ProblemKind.DEADLINE_MISSED and finding.deadline is not None:
        prefix = f"not succeeded by its deadline {iso(finding.deadline)}: "
        fact = entry.fact
        if fact is not None and fact.has_job and (fact.started_at or fact.attempts):
            return _prefixed(prefix, _after_start(fact, finding.deadline, now))
    return _prefixed(prefix, _not_started(entry, subject, row, fleet, now))


def _prefixed(prefix: str, why: Explanation) -> Explanation:
    return Explanation(why.cause, prefix + why.detail, why.facts) if prefix else why


def _not_started(
    entry: Entry, subject: Subject, row: LedgerRow, fleet: Fleet, now: datetime
) -> Explanation:
    if entry.gap:
        return _gap(entry, subject, row)
    fact = entry.fact
    if fact is None:
        return _unhandled(entry, subject, row, fleet)
    if fact.outcome == "skipped_operator":
        who = fact.actor or "an operator"
        note = f": {fact.note}" if fact.note else ""
        return Explanation(
            Cause.SKIPPED_BY_OPERATOR, f"skipped by {who}{note}", {"actor": fact.actor}
        )
    if fact.outcome == "skipped_overlap":
        return Explanation(
            Cause.OVERLAP_SKIPPED,
            "overlap='skip': a previous run of the schedule was still queued or running",
        )
    if fact.recorded_at is not None and fact.recorded_at > fact.slot + subject.grace:
        late = fact.recorded_at - fact.slot
        return Explanation(
            Cause.NO_LIVE_WORKER,
            f"no live worker ran the scheduler: the slot was fired at {iso(fact.recorded_at)}, "
            f"{_age(late.total_seconds())} after it was due",
            {"fired_at": iso(fact.recorded_at)},
        )
    if fact.state in ("cancelled", None):
        what = "cancelled" if fact.state else "deleted"
        return Explanation(
            Cause.CANCELLED, f"its job {fact.job_id} was {what} before it ran", {"job": fact.job_id}
        )
    if fact.started_at is not None or fact.attempts:
        waited = (fact.started_at or now) - fact.slot
        return Explanation(
            Cause.BACKLOG,
            f"its job {fact.job_id} waited {_age(waited.total_seconds())} in queue "
            f"'{fact.queue}' before a worker started it",
            {"job": fact.job_id, "queue": fact.queue},
        )
    return _waiting(fact, subject, fleet, now)


def _unhandled(entry: Entry, subject: Subject, row: LedgerRow, fleet: Fleet) -> Explanation:
    """A due slot no tick has handled."""
    if row.paused:
        who = row.paused_by or "an operator"
        until = f" until {iso(row.paused_until)}" if row.paused_until else " (no end set)"
        since = f" since {iso(row.paused_at)}" if row.paused_at else ""
        note = f": {row.pause_note}" if row.pause_note else ""
        return Explanation(
            Cause.PAUSED,
            f"paused by {who}{since}{until}{note}",
            {"by": row.paused_by, "until": iso(row.paused_until)},
        )
    gone = fleet.no_live_worker()
    if gone is not None:
        return Explanation(Cause.NO_LIVE_WORKER, gone, {"workers": len(fleet.workers)})
    schedulers = [w for w in fleet.alive if w.scheduler]
    if not schedulers:
        return Explanation(
            Cause.NO_LIVE_WORKER,
            f"no live worker runs the scheduler ({len(fleet.alive)} live worker(s) run with "
            "--no-scheduler)",
            {"workers": len(fleet.alive)},
        )
    newest = max(w.generation for w in schedulers)
    job = subject.job
    knows = [w for w in schedulers if w.generation == newest and _knows(w, job)]
    if not knows or not subject.runnable:
        older = [w for w in schedulers if w.generation < newest and _knows(w, job)]
        why = "; ".join(subject.problems) or f"no worker of it knows job '{job}'"
        if older:
            return Explanation(
                Cause.FENCED,
                f"fenced by a deploy: the newest code (generation {newest}) cannot fire it "
                f"({why}), and the {len(older)} older worker(s) that could are fenced",
                {"generation": newest, "fenced_workers": len(older)},
            )
        return Explanation(
            Cause.INVALID if subject.problems else Cause.JOB_UNKNOWN,
            f"the running code cannot fire it: {why}",
            {"generation": newest},
        )
    return Explanation(
        Cause.NOT_FIRED,
        f"due at {iso(entry.slot)}, not fired yet by the {len(schedulers)} live scheduler(s)",
    )


def _gap(entry: Entry, subject: Subject, row: LedgerRow) -> Explanation:
    """Slots handled without a history row: coalesced into a later one, or missed."""
    missed = (
        row.last_missed_from is not None
        and row.last_missed_to is not None
        and row.last_missed_from <= entry.slot <= row.last_missed_to
    )
    then = (
        f"counted as missed ({row.missed_total} in all)"
        if missed
        else f"coalesced by catch-up '{subject.catchup}' into the slot of {iso(entry.until)}"
        if entry.until is not None
        else "not enqueued"
    )
    handled = entry.handled_at
    if handled is not None and handled > entry.slot + subject.grace:
        return Explanation(
            Cause.NO_LIVE_WORKER,
            f"no live worker ran the scheduler from {iso(entry.slot)} until "
            f"{iso(handled)}; the slot was then {then}",
            {"until": iso(handled)},
        )
    if missed:
        return Explanation(Cause.MISSED, f"missed: {then} (a pause, or the catch-up window)")
    return Explanation(Cause.COALESCED, then[0].upper() + then[1:] if then else then)


def _waiting(fact: SlotFact, subject: Subject, fleet: Fleet, now: datetime) -> Explanation:
    """A queued job that never started: what holds it."""
    queue, name, job_id = fact.queue or "default", fact.name or "", fact.job_id
    facts: JsonObject = {"job": job_id, "queue": queue}
    held = fleet.held.get(job_id or 0)
    if held is not None:
        return Explanation(Cause.HELD_BY_LIMIT, f"held by a limit: {held}", facts)
    if queue in fleet.paused_queues:
        return Explanation(Cause.QUEUE_PAUSED, f"queue '{queue}' is paused", facts)
    gone = fleet.no_live_worker()
    if gone is not None:
        return Explanation(Cause.NO_LIVE_WORKER, gone, facts)
    serving = [w for w in fleet.alive if queue in w.queues]
    if not serving:
        return Explanation(Cause.QUEUE_UNSERVED, f"no live worker serves queue '{queue}'", facts)
    if not [w for w in serving if _knows(w, name)]:
        return Explanation(
            Cause.JOB_UNKNOWN,
            f"no live worker serving queue '{queue}' knows job '{name}'",
            facts,
        )
    if fact.run_at is not None and fact.run_at > now:
        return Explanation(Cause.UNKNOWN, f"its job {job_id} is not due before {iso(fact.run_at)}")
    if fact.lock_key and subject.overlap == "serialize":
        return Explanation(
            Cause.SERIALIZED,
            "overlap='serialize': it waits for the previous run of the schedule to finish",
            facts,
        )
    ready, oldest = fleet.ready.get(queue, (0, None))
    busy = [w for w in serving if w.running >= w.concurrency]
    if ready > 1 or len(busy) == len(serving):
        age = f", the oldest ready for {_age(oldest)}" if oldest else ""
        full = f"; {len(busy)} of {len(serving)} worker(s) serving it are busy" if busy else ""
        return Explanation(
            Cause.BACKLOG,
            f"waiting behind a backlog: {ready} ready job(s) in queue '{queue}'{age}{full}",
            {**facts, "ready": ready, "oldest_ready_age": oldest},
        )
    return Explanation(
        Cause.UNKNOWN,
        f"its job {job_id} is ready in queue '{queue}' and not started; nothing the database "
        "shows holds it (a worker stuck?)",
        facts,
    )


def _overran(fact: SlotFact, limit: timedelta | None, fleet: Fleet, now: datetime) -> Explanation:
    ran = (now - fact.started_at).total_seconds() if fact.started_at else 0.0
    over = f", past max_runtime {format_duration(limit)}" if limit is not None else ""
    detail = f"its job {fact.job_id} has been running for {_age(ran)}{over}"
    worker = next((w for w in fleet.workers if w.id == fact.worker_id), None)
    if worker is not None and worker not in fleet.alive:
        detail += f"; its worker {worker.id} is gone: the job is rescued once its lease expires"
    return Explanation(Cause.RUNNING, detail, {"job": fact.job_id, "worker": fact.worker_id})


def _failed(fact: SlotFact) -> Explanation:
    return Explanation(
        Cause.FAILED,
        f"its job {fact.job_id} failed at attempt {fact.attempts} of {fact.max_attempts}: "
        f"{_first_line(fact.error)}",
        {"job": fact.job_id, "attempt": fact.attempts, "error": _first_line(fact.error)},
    )


def _after_start(fact: SlotFact, deadline: datetime, now: datetime) -> Explanation:
    """A job that started but had not succeeded by the deadline."""
    if fact.state == "failed":
        return _failed(fact)
    if fact.state == "queued" and fact.attempts:
        return Explanation(
            Cause.FAILED,
            f"attempt {fact.attempts} of {fact.max_attempts} failed: "
            f"{_first_line(fact.error)}; the next attempt is at {iso(fact.run_at)}",
            {"job": fact.job_id, "attempt": fact.attempts, "error": _first_line(fact.error)},
        )
    if fact.state == "succeeded" and fact.finished_at is not None:
        late = (fact.finished_at - deadline).total_seconds()
        return Explanation(
            Cause.RUNNING,
            f"its job {fact.job_id} succeeded at {iso(fact.finished_at)}, {_age(late)} late",
            {"job": fact.job_id},
        )
    if fact.state in ("cancelled", None):
        return Explanation(Cause.CANCELLED, f"its job {fact.job_id} was cancelled or deleted")
    since = iso(fact.started_at) if fact.started_at else "?"
    return Explanation(
        Cause.RUNNING,
        f"its job {fact.job_id} is still running (since {since})",
        {"job": fact.job_id},
    )


def _knows(worker: FleetWorker, job: str | None) -> bool:
    """Whether a worker can run `job` (one that did not say which jobs it knows: any)."""
    return job is None or not worker.jobs or job in worker.jobs


def _first_line(text: str | None) -> str:
    return (text or "unknown error").strip().splitlines()[0][:300] if text else "unknown error"


def _age(seconds: float | None) -> str:
    """`42s`, `3m12s`, `2h5m`: a short duration, whole seconds."""
    whole = max(0, int(seconds or 0))
    return format_duration(timedelta(seconds=whole if whole < 3600 else whole - whole % 60))
