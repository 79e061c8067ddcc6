"""The completer: persists outcomes in batches (whatever accumulated during the previous write,
in one statement), then emits their events. It runs until it reads STOP from the queue."""

from __future__ import annotations

import logging
import queue as queue_mod

from onthedot.clock import Clock
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


class Completer:
    def __init__(
        self,
        *,
        worker_id: str,
        storage: Storage,
        clock: Clock,
        events: EventBus,
        outcomes: OutcomeQueue,
        pipeline: Pipeline,
        flags: Flags,
        backoff: DatabaseBackoff,
        burst: bool,
    ) -> None:
        self.worker_id = worker_id
        self.storage = storage
        self.clock = clock
        self.events = events
        self.outcomes = outcomes
        self.pipeline = pipeline
        self.flags = flags
        self.backoff = backoff
        self.burst = burst
        self.processed = 0  # outcomes persisted

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

    def emit(self, items: list[Done]) -> None:
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
