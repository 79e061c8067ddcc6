"""Operations: what the clients (the web admin, the CLI, the framework integrations) read and
do to jobs, queues and workers, through `app.operations`. The clients never hold the storage:
every read and every operator action they need is a verb here, and the rules they share
(which jobs nobody serves, which ready jobs this app cannot run) are written here once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from onthedot.clock import Clock
from onthedot.domain.jobs import Job, JobAction, JobCount, JobFilter, JobState, QueueStats
from onthedot.domain.ledger import LedgerRow, SlotRecord
from onthedot.domain.retention import Retention
from onthedot.domain.retry import Backoff
from onthedot.domain.serving import (
    UnknownHere,
    Unserved,
    UnservedQueue,
    serving_workers,
    unserved,
    unserved_queues,
)
from onthedot.domain.workers import WorkerRow
from onthedot.observability.events import EventBus
from onthedot.pruning import Prunable, PrunePass, preview

if TYPE_CHECKING:
    from onthedot.storage.interface import Storage
    from onthedot.worker.watchdog import Overran

__all__ = ["Operations"]


class Operations:
    """Reads and operator actions over the app's storage (opened on first use)."""

    def __init__(
        self,
        storage: Callable[[], Storage],
        raw_storage: Callable[[], Storage],
        clock: Clock,
        events: EventBus,
        *,
        lease: Callable[[], float],
        registered: Callable[[str], bool],
        backoff_of: Callable[[str], Backoff | None],
    ) -> None:
        self._storage = storage
        self._raw = raw_storage
        self._clock = clock
        self._events = events
        self._lease = lease
        self._registered = registered
        self._backoff_of = backoff_of

    # -- the database -----------------------------------------------------------------------
    def ping(self, *, check_schema: bool = True) -> None:
        """Raise DatabaseUnavailable unless the database answers (and, with `check_schema`,
        SchemaOutOfDate unless its schema is current)."""
        (self._storage if check_schema else self._raw)().ping()

    def schema_version(self) -> tuple[int, int]:
        """(version in the database, latest version this code knows); no schema check."""
        return self._raw().schema_version()

    def now(self) -> datetime:
        """Now: the app clock's fixed instant (a test's manual clock), else the database's
        (`storage.db_now`)."""
        return self._storage().db_now()

    # -- jobs -------------------------------------------------------------------------------
    def get_job(self, job_id: int) -> Job | None:
        return self._storage().get_job(job_id)

    def list_jobs(self, flt: JobFilter) -> list[Job]:
        return self._storage().list_jobs(flt)

    def count_jobs(self, flt: JobFilter) -> int:
        """How many jobs match the filter (ignoring before_id and limit)."""
        return self._storage().count_jobs(flt)

    def tally_jobs(self, flt: JobFilter) -> JobCount:
        """How many jobs match, for an operator, read so that it does not grow with history:
        exact for a queue, job name and states; a text search on a big PostgreSQL table is
        estimated (`JobCount.exact` False, shown "about N")."""
        return self._storage().tally_jobs(flt)

    def prune(
        self, policy: Retention, *, dry_run: bool = False, step: int = 5000
    ) -> list[Prunable]:
        """Delete the finished jobs past their retention now, `step` rows per transaction (as
        the workers do); with `dry_run`, only count them. Per (job name, final state)."""
        storage = self._raw()
        now = storage.db_now()
        if dry_run:
            return preview(storage, policy, now)
        run = PrunePass(storage, policy, now)
        while run.step(step):
            pass
        return run.done()

    def act(self, action: JobAction, job_id: int) -> Job | None:
        """Apply an operator's action to one job; the job afterwards (None once deleted)."""
        return self._storage().job_action(action, job_id)

    def act_on_all(self, action: JobAction, flt: JobFilter) -> int:
        """Apply an operator's action to every job matching the filter; how many changed."""
        return self._storage().bulk_job_action(action, flt)

    def finished_counts(
        self, *, since: datetime, bucket_seconds: int = 3600
    ) -> list[tuple[datetime, str, int]]:
        """(bucket start, final state, count) of jobs finished since `since`."""
        return self._storage().finished_counts(since=since, bucket_seconds=bucket_seconds)

    def charge_timeouts(self, worker_id: str, jobs: Sequence[Overran]) -> None:
        """Jobs of a worker process killed past their timeout: a JobTimeout each, as the
        process would have written it, and their events."""
        from onthedot.worker.completer import emit_outcomes
        from onthedot.worker.watchdog import charge_timeouts

        done = charge_timeouts(self._storage(), self._backoff_of, worker_id, jobs)
        emit_outcomes(self._events, [(job, outcome, None) for job, outcome in done])

    # -- queues and workers -----------------------------------------------------------------
    def queue_stats(self) -> list[QueueStats]:
        return self._storage().queue_stats()

    def set_queue_paused(self, queue: str, paused: bool, actor: str) -> None:
        """Pause or resume claiming from a queue."""
        self._storage().set_queue_paused(queue, paused, actor)

    def ready_now(self, queues: Sequence[str]) -> bool:
        """Whether a job of these queues (those not paused) is ready now."""
        storage = self._storage()
        paused = storage.paused_queues()
        names = [q for q in queues if q not in paused]
        if not names:
            return False
        ready_in = storage.seconds_until_ready(names)
        return ready_in is not None and ready_in <= 0

    def workers(self) -> list[WorkerRow]:
        """Every registered worker, newest first, with its heartbeat age."""
        return self._storage().list_workers()

    def unserved_jobs(self) -> list[Unserved | UnservedQueue]:
        """Queued jobs of names that no serving worker (`domain.serving.serving`: heartbeat
        within the lease, not stopping) knows, and ready jobs in queues that none serves."""
        storage = self._storage()
        live = serving_workers(storage.list_workers(), self._lease())
        stats = storage.queue_stats()
        by_queue = unserved_queues(
            {s.queue: s.ready for s in stats},
            {s.queue for s in stats if s.paused},
            [w.queues for w in live],
        )
        return [*unserved(storage.queued_by_name(), [w.jobs for w in live]), *by_queue]

    def unknown_ready(self, queues: Sequence[str]) -> list[UnknownHere]:
        """Ready jobs in `queues` (unpaused) whose names this app does not register: its
        workers never claim them."""
        storage = self._storage()
        queued = storage.queued_by_name().items()
        strangers = [n for n, c in queued if c and not self._registered(n)]
        found = []
        for s in storage.queue_stats() if strangers else ():
            if s.queue in queues and s.ready and not s.paused:
                counts = (
                    (n, JobFilter(state=JobState.QUEUED, queue=s.queue, name=n)) for n in strangers
                )
                names = tuple((n, c) for n, flt in counts if (c := storage.count_jobs(flt)))
                if names:
                    found.append(UnknownHere(s.queue, names))
        return found

    # -- schedules --------------------------------------------------------------------------
    def slot_history(self, key: str, *, limit: int | None = 50) -> list[SlotRecord]:
        """Slot history of a schedule, newest slot first, with each job's state."""
        return self._storage().slot_history(key, limit=limit)

    def schedule_rows(self) -> list[LedgerRow]:
        """Every ledger row, by key."""
        return self._storage().list_schedule_rows()
