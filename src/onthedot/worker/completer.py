"""The completer: persists outcomes in batches (whatever accumulated during the previous write,
in one statement), then emits their events. It runs until it reads STOP from the queue."""

from __future__ import annotations

import logging
import queue as queue_mod
from collections import Counter
from dataclasses import dataclass

from onthedot.domain.errors import OnthedotError
from onthedot.domain.jobs import OutcomeKind
from onthedot.observability.events import (
    EventBus,
    JobCancelled,
    JobFailed,
    JobRetried,
    JobSucceeded,
)
from onthedot.storage.interface import Storage
from onthedot.worker.maintenance import DatabaseBackoff
from onthedot.worker.state import STOP, Done, Flags, OutcomeQueue, Pipeline

log = logging.getLogger("onthedot.worker")

MAX_BATCH = 5000  # outcomes per finish statement


@dataclass(frozen=True, slots=True)
class Tally:
    """The attempts a worker ran, by how each ended (as persisted): a job that failed twice and
    then succeeded is three attempts, one job."""

    succeeded: int = 0
    retried: int = 0  # failed, and queued again for a later attempt
    failed: int = 0  # failed for good
    cancelled: int = 0

    @property
    def attempts(self) -> int:
        return self.succeeded + self.retried + self.failed + self.cancelled

    def describe(self) -> str:
        """`3 attempt(s) ran: 1 succeeded, 2 failed and will be retried`, or `no job ran`."""
        if not self.attempts:
            return "no job ran"
        parts = [
            f"{count} {what}"
            for count, what in (
                (self.succeeded, "succeeded"),
                (self.retried, "failed and will be retried"),
                (self.failed, "failed for good"),
                (self.cancelled, "cancelled"),
            )
            if count
        ]
        return f"{self.attempts} attempt(s) ran: {', '.join(parts)}"


class Completer:
    def __init__(
        self,
        *,
        worker_id: str,
        storage: Storage,
        events: EventBus,
        outcomes: OutcomeQueue,
        pipeline: Pipeline,
        flags: Flags,
        backoff: DatabaseBackoff,
        burst: bool,
    ) -> None:
        self.worker_id = worker_id
        self.storage = storage
        self.events = events
        self.outcomes = outcomes
        self.pipeline = pipeline
        self.flags = flags
        self.backoff = backoff
        self.burst = burst
        self.processed = 0  # outcomes persisted
        # the same, by kind, but for successes (processed less the rest): counted as emitted
        self._ended: Counter[OutcomeKind] = Counter()

    def run(self) -> None:
        get = self.outcomes.get
        get_nowait = self.outcomes.get_nowait
        stopping = False
        while not stopping:
            items = [get()]
            try:
                while len(items) < MAX_BATCH:
                    items.append(get_nowait())
            except queue_mod.Empty:
                pass
            done = [i for i in items if i is not STOP]
            stopping = len(done) < len(items)
            if done:
                self.persist(done)

    def persist(self, items: list[Done]) -> None:
        outcomes = [o for _, o, _ in items]
        errors = 0
        while True:
            try:
                self.storage.finish_jobs(self.worker_id, outcomes)
                break
            except (OnthedotError, OSError) as exc:
                errors += 1
                if self.flags.hard_stop.is_set() and errors > 3:
                    log.error(
                        "dropping %d outcomes at hard stop; the jobs will be rescued", len(outcomes)
                    )
                    return
                self.backoff.error("finish", exc, errors)
        self.processed += len(items)
        self.pipeline.persisted((job.id for job, _, _ in items), len(items), self.burst)
        self.emit(items)

    def tally(self) -> Tally:
        """The outcomes persisted so far, by kind."""
        ended = self._ended.copy()
        return Tally(
            succeeded=self.processed - sum(ended.values()),
            retried=ended[OutcomeKind.RETRY],
            failed=ended[OutcomeKind.FAILED],
            cancelled=ended[OutcomeKind.CANCELLED],
        )

    def emit(self, items: list[Done]) -> None:
        for _, o, _ in items:
            if o.kind is not OutcomeKind.SUCCEEDED:
                self._ended[o.kind] += 1
        emit_outcomes(self.events, items)


def emit_outcomes(events: EventBus, items: list[Done]) -> None:
    """The events of persisted outcomes (JobSucceeded, JobRetried, JobFailed, JobCancelled)."""
    want_success = events.wants(JobSucceeded)
    for job, o, duration in items:
        kind = o.kind
        where = (job.queue, job.schedule_key, job.slot)
        if kind is OutcomeKind.SUCCEEDED:
            if want_success:
                events.emit(JobSucceeded(job.id, job.name, job.attempt, duration or 0.0, *where))
        elif kind is OutcomeKind.RETRY:
            events.emit(
                JobRetried(
                    job.id,
                    job.name,
                    job.attempt,
                    o.error or "",
                    o.retry_in or 0.0,
                    *where,
                    duration,
                )
            )
        elif kind is OutcomeKind.FAILED:
            events.emit(JobFailed(job.id, job.name, job.attempt, o.error or "", *where, duration))
        else:
            events.emit(JobCancelled(job.id, job.name, job.queue, job.attempt, *where[1:]))
