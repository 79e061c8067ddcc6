"""App: the composition root. It builds the database handle, the clock, the events, the job
registry, the in-process wake-ups and the schedule peers, and hands each only what it needs.

Nothing touches the database at import or construction; storage opens on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from onthedot.clock import REAL, Clock, FollowingClock, SystemClock
from onthedot.commandline import CommandLine
from onthedot.config import DatabaseConfig, resolve_database_url
from onthedot.database import Database
from onthedot.domain.definitions import COMMAND_JOB, Declaration
from onthedot.domain.durations import parse_duration
from onthedot.domain.errors import JobNotFound
from onthedot.domain.jobs import Job, JobAction, JobCount, JobFilter, NewJob, QueueStats
from onthedot.domain.retention import Retention
from onthedot.domain.retention import Spec as RetentionSpec
from onthedot.domain.retry import Backoff
from onthedot.domain.serving import UnknownHere, Unserved, UnservedQueue
from onthedot.jobs import Connection, Enqueuer, JobFunction, JobRegistry
from onthedot.limits import Limits
from onthedot.observability.events import EventBus, LoggingSubscriber
from onthedot.observability.hooks import Instrumentation
from onthedot.operations import Operations
from onthedot.pruning import Prunable
from onthedot.schedules.audit import AuditTrail
from onthedot.schedules.command import run_command
from onthedot.schedules.controls import OperatorControls
from onthedot.schedules.expectations import ExpectationControls
from onthedot.schedules.facade import Schedules
from onthedot.schedules.monitoring import HealthServices
from onthedot.schedules.registry import ScheduleRegistry
from onthedot.schedules.runtime import RuntimeSchedules
from onthedot.schedules.scheduler import TICK_BATCH, Scheduler
from onthedot.schedules.views import ScheduleViews
from onthedot.steps import Steps, arun, run
from onthedot.wakeups import WakeupHub

if TYPE_CHECKING:
    from onthedot.storage.interface import Storage
    from onthedot.worker import Worker

P = ParamSpec("P")
R = TypeVar("R")

__all__ = ["App"]


class App:
    """An onthedot application: register jobs and schedules on it, then run workers.

    `database_url` defaults to $ONTHEDOT_DATABASE_URL, then `sqlite:///onthedot.db`.
    """

    def __init__(
        self,
        database_url: str | None = None,
        *,
        clock: Clock | None = None,
        lease: float = 30.0,
        retention: RetentionSpec = "7d",
        audit_retention: str | timedelta | None = "90d",
        keep_removed_jobs: bool = False,
        pool_size: int = 10,
        log_events: bool = True,
        alert_webhook: str | None = None,
        admin_url: str | None = None,
    ) -> None:
        self._clock = FollowingClock(clock or SystemClock())
        # How commands are typed where this app runs, for hints (Django sets its own).
        self.commands = CommandLine()
        self._database = Database(
            resolve_database_url(database_url),
            pool_size=pool_size,
            clock=self._clock,
            migrate_hint=lambda: self.commands.migrate,
        )
        if lease <= 0:
            raise ValueError(f"lease must be > 0 seconds, got {lease}")
        self.lease = float(lease)
        # How long finished jobs are kept, per final state (docs/retention.md); `retention`
        # is the longest of them, for what is kept as long as any job (slot history).
        self.job_retention = Retention.parse(retention)
        self.retention = self.job_retention.longest()
        self.audit_retention = (
            None
            if audit_retention is None
            else parse_duration(audit_retention, what="audit_retention")
        )
        self.pool_size = pool_size
        self.keep_removed_jobs = keep_removed_jobs
        self.events = EventBus()
        if log_events:
            self.events.subscribe(LoggingSubscriber())
        self.wakeups = WakeupHub()
        # Hooks around enqueue and execution (tracing, ...); empty unless instrumented.
        self.instrumentation = Instrumentation()
        storage = self._database.storage  # each call opens (once) and checks the schema
        clock = self._clock
        self._enqueuer = Enqueuer(
            storage, clock, self.events, self.wakeups, self.instrumentation, lambda: self.database
        )
        self.jobs = JobRegistry(self._enqueuer)
        # What the clients (web admin, CLI, integrations) read and do: never the storage.
        self.operations = Operations(
            storage,
            self._database.raw_storage,
            clock,
            self.events,
            lease=lambda: self.lease,
            registered=lambda name: name in self.jobs,
            backoff_of=lambda name: self.resolve(name).backoff,
        )
        registry = ScheduleRegistry(self.jobs)
        audit = AuditTrail(storage, clock, self.events, self.wakeups)
        # Flow control (docs/limits.md): named limits, the jobs' own, the operators' controls.
        self.limits = Limits(storage, self.jobs, audit)
        # Schedule health (docs/health.md): the webhook defaults to $ONTHEDOT_ALERT_WEBHOOK.
        self._health = HealthServices(
            storage,
            registry,
            self.events,
            clock,
            lease=self.lease,
            retention=self.retention,
            alert_webhook=alert_webhook,
            admin_url=admin_url,
            jobs=lambda: any(name != COMMAND_JOB for name in self.jobs),
        )
        self.health = self._health.reader
        views = ScheduleViews(storage, clock, registry, commands=lambda: self.commands)
        controls = OperatorControls(
            storage,
            clock,
            registry,
            audit,
            views,
            self.jobs,
            self._enqueuer.enqueue,
            sync=self._sync_declared,
            retention=self.retention,
        )
        self.schedules = Schedules(
            registry,
            RuntimeSchedules(storage, clock, registry, audit, views),
            controls,
            views,
            ExpectationControls(storage, registry, audit, controls.require_row),
            self.health,
        )

        self.job(name=COMMAND_JOB, queue="default", max_attempts=3)(run_command)

    def __repr__(self) -> str:
        return f"<onthedot.App {self.database.display}>"

    @property
    def clock(self) -> Clock:
        """The app's clock (a ManualClock in tests); assigning it re-points every component."""
        return self._clock.target

    @clock.setter
    def clock(self, clock: Clock) -> None:
        self._clock.target = clock

    @property
    def database_url(self) -> str:
        return self._database.url

    @property
    def database(self) -> DatabaseConfig:
        return self._database.config

    def use_database(self, url: str) -> None:
        """Point the app at another database (before anything touched the current one)."""
        self._database.use(url)

    # -- storage ----------------------------------------------------------------------------
    @property
    def storage(self) -> Storage:
        """The storage, opened on first use. PostgreSQL must be migrated (`onthedot migrate`)."""
        return self._database.storage()

    def raw_storage(self) -> Storage:
        """The storage without the schema check (for `migrate` and `health`)."""
        return self._database.raw_storage()

    def check_schema(self) -> None:
        """Raise SchemaOutOfDate unless the database schema is current."""
        self._database.check_schema()

    def migrate(self) -> list[int]:
        return self._database.migrate()

    def close(self) -> None:
        self._health.close()
        self._database.close()

    # -- jobs -------------------------------------------------------------------------------
    @overload
    def job(self, fn: Callable[P, R]) -> JobFunction[P, R]: ...

    @overload
    def job(
        self,
        fn: None = None,
        *,
        name: str | None = None,
        queue: str = "default",
        priority: int = 0,
        max_attempts: int = 3,
        backoff: Backoff | float | None = None,
        timeout: float | str | timedelta | None = None,
        runtime: bool = False,
        keep: RetentionSpec | None = None,
        schedule: Any = None,
        concurrency: int | None = None,
        rate: str | None = None,
        burst: int | None = None,
        key: Any = None,
        limits: Sequence[str] | None = None,
        **schedule_options: Any,
    ) -> Callable[[Callable[P, R]], JobFunction[P, R]]: ...

    def job(
        self,
        fn: Callable[P, R] | None = None,
        *,
        name: str | None = None,
        queue: str = "default",
        priority: int = 0,
        max_attempts: int = 3,
        backoff: Backoff | float | None = None,
        timeout: float | str | timedelta | None = None,
        runtime: bool = False,
        keep: RetentionSpec | None = None,
        schedule: Any = None,
        concurrency: int | None = None,
        rate: str | None = None,
        burst: int | None = None,
        key: Any = None,
        limits: Sequence[str] | None = None,
        **schedule_options: Any,
    ) -> JobFunction[P, R] | Callable[[Callable[P, R]], JobFunction[P, R]]:
        """Register a function (sync or async) as a job. `name` defaults to module.qualname;
        give one explicitly to keep the job's identity across renames. With `schedule=SPEC`
        the job is also declared as a schedule keyed by the job name. `runtime=True` opens it
        to runtime schedules (the web admin, the CLI, `app.schedules.create`); no other job
        can be their target. `keep="1h"` (or `{"failed": "30d"}`) keeps its finished jobs that
        long instead of the app's retention. `concurrency=`, `rate=` ("10/s", "100/m", "5/h"),
        `burst=` and `key=` (an argument name or a callable over the arguments) put it under
        its own limit, `limits=[...]` under named ones (`app.limit`); see docs/limits.md. With
        `schedule=` and no limit, `key=` is the schedule's key."""
        limited = concurrency is not None or rate is not None or burst is not None
        limit_key = key
        if key is not None and not limited and schedule is not None:
            schedule_options["key"], limit_key = key, None

        def register(f: Callable[P, R]) -> JobFunction[P, R]:
            jf = self.jobs.register(
                f,
                name=name,
                queue=queue,
                priority=priority,
                max_attempts=max_attempts,
                backoff=backoff,
                timeout=timeout,
                runtime=runtime,
                keep=keep,
            )
            if limited or limit_key is not None or limits:
                jf.limit_specs = self.limits.specs_for(
                    jf.name,
                    jf.signature,
                    concurrency=concurrency,
                    rate=rate,
                    burst=burst,
                    key=limit_key,
                    limits=limits,
                )
            if schedule is not None:
                key = schedule_options.pop("key", jf.name)
                self.schedule(key, schedule, jf, **schedule_options)
            return jf

        if fn is not None:
            return register(fn)
        return register

    def limit(
        self,
        name: str,
        *,
        concurrency: int | None = None,
        rate: str | None = None,
        burst: int | None = None,
        key: Any = None,
    ) -> None:
        """Declare a named limit that jobs sit under with `@app.job(limits=[name])`: at most
        `concurrency` running at once and `rate` starts ("100/s") across every worker, per
        value of `key` if given (docs/limits.md)."""
        self.limits.declare(name, concurrency=concurrency, rate=rate, burst=burst, key=key)

    def resolve(self, name: str) -> JobFunction[Any, Any]:
        """The job registered as `name` (JobNotRegistered otherwise)."""
        return self.jobs.resolve(name)

    def enqueue(self, name: str, *args: Any, **kwargs: Any) -> int:
        """Enqueue a registered job by name."""
        return self.resolve(name).enqueue(*args, **kwargs)

    def enqueue_jobs(self, jobs: Sequence[NewJob], *, connection: Connection = None) -> list[int]:
        """Insert built jobs (see `JobFunction.build`); return their ids in order."""
        return self._enqueuer.enqueue(jobs, connection=connection)

    # -- reading and operating on jobs (through app.operations) ----------------------------
    def get_job(self, job_id: int) -> Job | None:
        """The job with this id as it is now (its state, result, error), or None."""
        return self.operations.get_job(job_id)

    def wait_for(self, job_id: int, *, timeout: float | str | timedelta = 30.0) -> Job:
        """Block until job `job_id` is finished (succeeded, failed or cancelled) and return it;
        read `job.result` or `job.error`. Raises TimeoutError after `timeout` (wall time),
        JobNotFound for an unknown id."""

        def do(pause: float | None) -> Job | None:
            if pause is None:
                return self.get_job(job_id)
            REAL.sleep(pause)
            return None

        return run(_finished(job_id, _seconds(timeout)), do)

    async def await_job(self, job_id: int, *, timeout: float | str | timedelta = 30.0) -> Job:
        """`wait_for` for async code: polls off the event loop, never blocking it."""
        import asyncio  # here, not at the top: a running loop has imported it already

        async def do(pause: float | None) -> Job | None:
            if pause is None:
                return await asyncio.to_thread(self.get_job, job_id)
            await REAL.asleep(pause)
            return None

        return await arun(_finished(job_id, _seconds(timeout)), do)

    def list_jobs(self, flt: JobFilter | None = None, **filters: Any) -> list[Job]:
        return self.operations.list_jobs(flt or JobFilter(**filters))

    def count_jobs(self, flt: JobFilter | None = None, **filters: Any) -> JobCount:
        """How many jobs match, read so that it does not grow with history: exact for a
        queue, job name and states; estimated beyond 10,000 for other filters on PostgreSQL
        (`JobCount.exact` False, shown "about N")."""
        return self.operations.tally_jobs(flt or JobFilter(**filters))

    def retry_job(self, job_id: int) -> Job:
        job = self.operations.act(JobAction.RETRY, job_id)
        assert job is not None
        return job

    def cancel_job(self, job_id: int) -> Job:
        job = self.operations.act(JobAction.CANCEL, job_id)
        assert job is not None
        return job

    def delete_job(self, job_id: int) -> bool:
        try:
            self.operations.act(JobAction.DELETE, job_id)
        except JobNotFound:
            return False
        return True

    def retention_policy(self) -> Retention:
        """The app's retention with the `keep=` of its registered jobs."""
        return self.job_retention.with_jobs({n: jf.keep for n, jf in self.jobs.items()})

    def prune(self, *, dry_run: bool = False, step: int = 5000) -> list[Prunable]:
        """Delete the finished jobs past their retention now, `step` rows per transaction (as
        the workers do every 5 minutes); with `dry_run`, only count them. Per (job, state)."""
        return self.operations.prune(self.retention_policy(), dry_run=dry_run, step=step)

    def queue_stats(self) -> list[QueueStats]:
        return self.operations.queue_stats()

    def unserved_jobs(self) -> list[Unserved | UnservedQueue]:
        """Queued jobs of names that no live worker (heartbeat younger than the lease) knows,
        and ready jobs in queues that no live worker serves."""
        return self.operations.unserved_jobs()

    def explain_job(self, job_id: int) -> list[str]:
        """What holds a queued job, one reason a line: not due yet, its queue paused, no live
        worker serving its queue or knowing its name, a limit full (docs/limits.md)."""
        return self.limits.explain(job_id, lease=self.lease)

    def unknown_ready(self, queues: Sequence[str]) -> list[UnknownHere]:
        """Ready jobs in `queues` (unpaused) whose names this app does not register: its
        workers never claim them (a burst names them as it ends)."""
        return self.operations.unknown_ready(queues)

    # -- schedules --------------------------------------------------------------------------
    def schedule(
        self, key: str | None, spec: Any, job: Any = None, /, *args: Any, **kwargs: Any
    ) -> Declaration:
        """Declare a schedule in code (see `ScheduleRegistry.declare`)."""
        return self.schedules.declare(key, spec, job, *args, **kwargs)

    def scheduler(
        self,
        *,
        worker_id: str = "scheduler",
        stopping: threading.Event | None = None,
        batch: int = TICK_BATCH,
    ) -> Scheduler:
        """Build a Scheduler over this app's storage, declarations and jobs (a worker's, or
        `onthedot.testing.tick`'s)."""
        storage = self.raw_storage()
        return Scheduler(
            storage,
            self.schedules.registry,
            self.jobs,
            clock=self._clock,
            events=self.events,
            wakeups=self.wakeups,
            lease=self.lease,
            worker_id=worker_id,
            stopping=stopping,
            batch=batch,
            keep_removed_jobs=self.keep_removed_jobs,
            watcher=self._health.watcher(),
            services=self._health.services(worker_id, storage),
        )

    def _sync_declared(self) -> None:
        """Create the ledger rows of the declared schedules now, as a starting worker would
        (operator controls on a schedule no worker has run yet)."""
        scheduler = self.scheduler(worker_id="operator")
        scheduler.prepare()
        scheduler.sync()

    # -- workers ----------------------------------------------------------------------------
    def worker(self, **options: Any) -> Worker:
        """Build a Worker for this app (see `onthedot.worker.Worker`)."""
        from onthedot.worker import Worker, WorkerDeps

        self._health.start_pings()

        def scheduler(worker_id: str, stopping: threading.Event) -> Scheduler:
            return self.scheduler(worker_id=worker_id, stopping=stopping)

        deps = WorkerDeps(
            storage=self.raw_storage(),
            clock=self._clock,  # follows a clock assigned later (app.clock = ManualClock(...))
            events=self.events,
            jobs=self.jobs,
            resolve=self.resolve,
            check_schema=self.check_schema,
            lease=self.lease,
            retention=self.retention_policy(),
            audit_retention=self.audit_retention,
            wakeups=self.wakeups,
            scheduler=scheduler,
            instrumentation=self.instrumentation,
            sync_limits=self.limits.sync,
        )
        return Worker(deps, **options)


def _finished(job_id: int, limit: float) -> Steps[float | None, Job | None, Job]:
    """The one rule of `wait_for` and `await_job`: read the job (ask None), pause between
    reads (ask the seconds: 5 ms doubling to 250 ms), until it is finished or `limit` seconds
    of wall time passed."""
    deadline = REAL.monotonic() + limit
    pause = 0.005
    while True:
        job = yield None
        if job is None:
            raise JobNotFound(f"no job with id {job_id}")
        if job.state.finished:
            return job
        left = deadline - REAL.monotonic()
        if left <= 0:
            raise TimeoutError(f"job {job_id} is still {job.state} after {limit:g}s")
        yield min(pause, left)
        pause = min(pause * 2, 0.25)


def _seconds(timeout: float | str | timedelta) -> float:
    if isinstance(timeout, int | float) and not isinstance(timeout, bool):
        return float(timeout)
    return parse_duration(timeout, what="timeout").total_seconds()
