"""App: the registry of jobs and schedules, configuration, storage and events.

Nothing touches the database at import or construction; storage opens on first use.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar, overload

from onthedot.clock import Clock, ClockOf, SystemClock
from onthedot.config import parse_database_url, resolve_database_url
from onthedot.domain.durations import parse_duration
from onthedot.domain.errors import JobNotRegistered, SchemaOutOfDate
from onthedot.domain.jobs import Job, JobFilter, NewJob, QueueStats
from onthedot.domain.payload import encode_arguments
from onthedot.domain.retry import Backoff, coerce_backoff
from onthedot.domain.schedule import COMMAND_JOB
from onthedot.observability.events import EventBus, JobEnqueued, LoggingSubscriber
from onthedot.schedules import ScheduleRegistry

if TYPE_CHECKING:
    from onthedot.storage.interface import Storage

P = ParamSpec("P")
R = TypeVar("R")

ENQUEUE_OPTIONS = frozenset(
    {"delay", "run_at", "priority", "queue", "unique_key", "connection", "max_attempts", "timeout"}
)


class JobFunction(Generic[P, R]):
    """A registered job. Call it to run the function in-process; `.enqueue()` to run it in a
    worker. Enqueue options (`delay`, `run_at`, `priority`, `queue`, `unique_key`,
    `max_attempts`, `timeout`, `connection`) are keyword arguments of `enqueue`; a job whose own
    parameters use one of those names passes its arguments with `enqueue_with(args, kwargs)`."""

    def __init__(
        self,
        app: App,
        fn: Callable[P, R],
        *,
        name: str,
        queue: str,
        priority: int,
        max_attempts: int,
        backoff: Backoff,
        timeout: float | None,
    ) -> None:
        self.app = app
        self.fn = fn
        self.name = name
        self.queue = queue
        self.priority = priority
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.timeout = timeout
        self.is_async = inspect.iscoroutinefunction(fn)
        self.signature = inspect.signature(fn)
        self._arity = _plain_arity(self.signature)
        functools.update_wrapper(self, fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<onthedot job {self.name!r}>"

    # -- building jobs ----------------------------------------------------------------------
    def check_arguments(self, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
        """Raise TypeError/ValueError unless the arguments bind to the signature and are JSON
        (within the size limit)."""
        self._bind(args, kwargs)
        encode_arguments(list(args), kwargs, f"job {self.name!r}")

    def _bind(self, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
        arity = self._arity
        if arity is not None and not kwargs and arity[0] <= len(args) <= arity[1]:
            return  # plain positional parameters: counting is binding
        try:
            self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"job {self.name!r}: {exc}") from None

    def build(
        self,
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> NewJob:
        """Validate arguments and options (`delay`, `run_at`, `priority`, `queue`,
        `unique_key`, `max_attempts`, `timeout`) and return the job to insert."""
        return self._build(args, kwargs, self.job_options(**options))

    def job_options(
        self,
        *,
        delay: float | timedelta | str | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
        queue: str | None = None,
        unique_key: str | None = None,
        max_attempts: int | None = None,
        timeout: float | str | timedelta | None = None,
    ) -> dict[str, Any]:
        """The validated enqueue options, as NewJob fields (checked once per batch)."""
        attempts = self.max_attempts if max_attempts is None else max_attempts
        if attempts < 1:
            raise ValueError(f"job {self.name!r}: max_attempts must be >= 1, got {attempts}")
        if unique_key is not None and (not isinstance(unique_key, str) or not unique_key):
            raise ValueError(f"job {self.name!r}: unique_key must be a non-empty string")
        return {
            "queue": _check_queue(self.queue if queue is None else queue),
            "priority": _check_priority(self.priority if priority is None else priority),
            "run_at": _run_at(self.app.clock, delay, run_at),
            "max_attempts": attempts,
            "timeout": self.timeout if timeout is None else _timeout(timeout),
            "unique_key": unique_key,
        }

    def _build(
        self, args: Sequence[Any], kwargs: dict[str, Any] | None, options: dict[str, Any]
    ) -> NewJob:
        kwargs = dict(kwargs) if kwargs else {}
        args = list(args)
        self._bind(args, kwargs)
        args_json, kwargs_json = encode_arguments(args, kwargs, f"job {self.name!r}")
        return NewJob(
            self.name, args, kwargs, **options, args_json=args_json, kwargs_json=kwargs_json
        )

    # -- enqueueing -------------------------------------------------------------------------
    def enqueue(self, *args: Any, **kwargs: Any) -> int:
        """Validate and enqueue; return the job id (an existing job's id for a taken unique_key)."""
        options = {k: kwargs.pop(k) for k in list(kwargs) if k in ENQUEUE_OPTIONS}
        return self.enqueue_with(args, kwargs, **options)

    def enqueue_with(
        self,
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        connection: Any = None,
        **options: Any,
    ) -> int:
        """Enqueue with arguments given explicitly (for jobs whose parameters shadow options)."""
        job = self.build(args, kwargs, **options)
        return self.app.enqueue_jobs([job], connection=connection)[0]

    async def aenqueue(self, *args: Any, **kwargs: Any) -> int:
        """`enqueue` for async callers: the same storage verb, run off the event loop."""
        return await asyncio.to_thread(self.enqueue, *args, **kwargs)

    def enqueue_many(
        self,
        calls: Iterable[Sequence[Any] | dict[str, Any] | tuple[Sequence[Any], dict[str, Any]]],
        *,
        connection: Any = None,
        **options: Any,
    ) -> list[int]:
        """Enqueue many jobs in one round trip. Each item is a list/tuple of positional
        arguments, a dict of keyword arguments, or an `(args, kwargs)` pair."""
        fields = self.job_options(**options)
        jobs: list[NewJob] = []
        a: Sequence[Any]
        k: dict[str, Any]
        for call in calls:
            if isinstance(call, dict):
                a, k = (), call
            elif (
                isinstance(call, tuple)
                and len(call) == 2
                and isinstance(call[0], list | tuple)
                and isinstance(call[1], dict)
            ):
                a, k = call[0], call[1]
            elif isinstance(call, list | tuple):
                a, k = call, {}
            else:
                raise TypeError(
                    f"job {self.name!r}: enqueue_many items must be an args list, a kwargs dict "
                    f"or an (args, kwargs) pair, got {type(call).__name__}"
                )
            jobs.append(self._build(a, k, fields))
        return self.app.enqueue_jobs(jobs, connection=connection)

    async def aenqueue_many(self, calls: Iterable[Any], **options: Any) -> list[int]:
        return await asyncio.to_thread(self.enqueue_many, list(calls), **options)


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
        retention: str | timedelta = "7d",
        pool_size: int = 10,
        log_events: bool = True,
    ) -> None:
        self.database_url = resolve_database_url(database_url)
        self.database = parse_database_url(self.database_url)
        self.clock: Clock = clock or SystemClock()
        self._clocked = ClockOf(lambda: self.clock)  # the storage's: follows a replaced clock
        if lease <= 0:
            raise ValueError(f"lease must be > 0 seconds, got {lease}")
        self.lease = float(lease)
        self.retention = parse_duration(retention, what="retention")
        self.pool_size = pool_size
        self.jobs: dict[str, JobFunction[Any, Any]] = {}
        self.events = EventBus()
        if log_events:
            self.events.subscribe(LoggingSubscriber())
        self.schedules = ScheduleRegistry(self)
        from onthedot.commands import run_command

        self.job(name=COMMAND_JOB, queue="default", max_attempts=3)(run_command)
        self._local_wakeups: list[Callable[[set[str]], None]] = []
        self._schedule_wakeups: list[Callable[[], None]] = []
        self._storage: Storage | None = None
        self._storage_lock = threading.Lock()
        self._schema_checked = False

    def __repr__(self) -> str:
        return f"<onthedot.App {self.database.display}>"

    def use_database(self, url: str) -> None:
        """Point the app at another database (before anything touched the current one)."""
        if self._storage is not None:
            raise RuntimeError("use_database() must be called before the database is used")
        self.database_url = url
        self.database = parse_database_url(url)

    # -- storage ----------------------------------------------------------------------------
    @property
    def storage(self) -> Storage:
        """The storage, opened on first use. PostgreSQL must be migrated (`onthedot migrate`)."""
        if self._storage is None:
            with self._storage_lock:
                if self._storage is None:
                    from onthedot.storage import open_storage

                    self._storage = open_storage(
                        self.database_url, pool_size=self.pool_size, clock=self._clocked
                    )
        if not self._schema_checked:
            self.check_schema()
        return self._storage

    def raw_storage(self) -> Storage:
        """The storage without the schema check (for `migrate` and `health`)."""
        if self._storage is None:
            from onthedot.storage import open_storage

            with self._storage_lock:
                if self._storage is None:
                    self._storage = open_storage(
                        self.database_url, pool_size=self.pool_size, clock=self._clocked
                    )
        return self._storage

    def check_schema(self) -> None:
        """Raise SchemaOutOfDate unless the database schema is current."""
        storage = self.raw_storage()
        storage.ensure_schema()  # the zero-setup default (SQLite) migrates itself on first use
        current, latest = storage.schema_version()
        if current < latest:
            raise SchemaOutOfDate(
                f"database schema of {self.database.display} is at version {current}, this "
                f"onthedot needs {latest}: run `onthedot migrate`"
            )
        if current > latest:
            raise SchemaOutOfDate(
                f"database schema of {self.database.display} is at version {current}, newer than "
                f"this onthedot knows ({latest}): upgrade onthedot"
            )
        self._schema_checked = True

    def migrate(self) -> list[int]:
        applied = self.raw_storage().migrate()
        self._schema_checked = True
        return applied

    def close(self) -> None:
        if self._storage is not None:
            self._storage.close()
            self._storage = None
            self._schema_checked = False

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
        schedule: Any = None,
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
        schedule: Any = None,
        **schedule_options: Any,
    ) -> JobFunction[P, R] | Callable[[Callable[P, R]], JobFunction[P, R]]:
        """Register a function (sync or async) as a job. `name` defaults to module.qualname;
        give one explicitly to keep the job's identity across renames. With `schedule=SPEC`
        the job is also declared as a schedule keyed by the job name."""

        def register(f: Callable[P, R]) -> JobFunction[P, R]:
            job_name = name or f"{f.__module__}.{f.__qualname__}"
            if not job_name or not isinstance(job_name, str):
                raise ValueError("job name must be a non-empty string")
            if job_name in self.jobs and self.jobs[job_name].fn is not f:
                raise ValueError(
                    f"job name {job_name!r} is already registered to another function: "
                    "give one of them an explicit name="
                )
            if max_attempts < 1:
                raise ValueError(f"job {job_name!r}: max_attempts must be >= 1")
            jf: JobFunction[P, R] = JobFunction(
                self,
                f,
                name=job_name,
                queue=_check_queue(queue),
                priority=_check_priority(priority),
                max_attempts=max_attempts,
                backoff=coerce_backoff(backoff),
                timeout=_timeout(timeout),
            )
            self.jobs[job_name] = jf
            if schedule is not None:
                key = schedule_options.pop("key", job_name)
                self.schedule(key, schedule, jf, **schedule_options)
            return jf

        if fn is not None:
            return register(fn)
        return register

    def resolve(self, name: str) -> JobFunction[Any, Any]:
        try:
            return self.jobs[name]
        except KeyError:
            raise JobNotRegistered(
                f"no job named {name!r} is registered in this app (registered: "
                f"{', '.join(sorted(self.jobs)) or 'none'})"
            ) from None

    def enqueue(self, name: str, *args: Any, **kwargs: Any) -> int:
        """Enqueue a registered job by name."""
        return self.resolve(name).enqueue(*args, **kwargs)

    def enqueue_jobs(self, jobs: Sequence[NewJob], *, connection: Any = None) -> list[int]:
        ids = self.storage.enqueue(jobs, connection=connection)
        if self._local_wakeups and connection is None:
            queues = {job.queue for job in jobs}
            for wake in list(self._local_wakeups):
                wake(queues)
        if self.events.wants(JobEnqueued):
            for job_id, job in zip(ids, jobs, strict=True):
                self.events.emit(JobEnqueued(job_id=job_id, job=job.name, queue=job.queue))
        return ids

    # -- reading and operating on jobs --------------------------------------------------------
    def get_job(self, job_id: int) -> Job | None:
        return self.storage.get_job(job_id)

    def list_jobs(self, flt: JobFilter | None = None, **filters: Any) -> list[Job]:
        return self.storage.list_jobs(flt or JobFilter(**filters))

    def retry_job(self, job_id: int) -> Job:
        return self.storage.retry_job(job_id)

    def cancel_job(self, job_id: int) -> Job:
        return self.storage.cancel_job(job_id)

    def delete_job(self, job_id: int) -> bool:
        return self.storage.delete_job(job_id)

    def queue_stats(self) -> list[QueueStats]:
        return self.storage.queue_stats()

    # -- schedules --------------------------------------------------------------------------
    def schedule(
        self, key: str | None, spec: Any, job: Any = None, /, *args: Any, **kwargs: Any
    ) -> Any:
        """Declare a schedule in code (see `ScheduleRegistry.declare`)."""
        return self.schedules.declare(key, spec, job, *args, **kwargs)

    # -- workers ----------------------------------------------------------------------------
    def worker(self, **options: Any) -> Any:
        """Build a Worker for this app (see `onthedot.worker.Worker`)."""
        from onthedot.worker.loop import Worker

        return Worker(self, **options)


def _run_at(clock: Clock, delay: Any, run_at: datetime | None) -> datetime | None:
    if delay is not None and run_at is not None:
        raise ValueError("give either delay or run_at, not both")
    if run_at is not None:
        if not isinstance(run_at, datetime) or run_at.tzinfo is None:
            raise ValueError(f"run_at must be an aware datetime (with tzinfo), got {run_at!r}")
        return run_at.astimezone(UTC)
    if delay is None:
        return None
    seconds = parse_duration(delay, what="delay", allow_zero=True).total_seconds()
    return clock.now() + timedelta(seconds=seconds) if seconds > 0 else None


def _plain_arity(signature: inspect.Signature) -> tuple[int, int] | None:
    """(required, total) when every parameter is positional-or-keyword, else None."""
    params = list(signature.parameters.values())
    if any(p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params):
        return None
    required = sum(1 for p in params if p.default is inspect.Parameter.empty)
    return required, len(params)


def _check_queue(queue: str) -> str:
    if not isinstance(queue, str) or not queue or len(queue) > 100 or "," in queue:
        raise ValueError(f"invalid queue name {queue!r}: use 1-100 characters without commas")
    return queue


def _check_priority(priority: int) -> int:
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise TypeError(f"priority must be an int, got {priority!r}")
    if not -1_000_000 <= priority <= 1_000_000:
        raise ValueError(f"priority {priority} is out of range -1000000..1000000")
    return priority


def _timeout(value: float | str | timedelta | None) -> float | None:
    if value is None:
        return None
    return parse_duration(value, what="timeout").total_seconds()
