"""Jobs: the registry of job functions, the enqueue path, and JobFunction (the one builder of
a new job)."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar

from onthedot.clock import Clock
from onthedot.domain.durations import parse_duration
from onthedot.domain.errors import JobNotRegistered
from onthedot.domain.fields import check_text
from onthedot.domain.jobs import NewJob
from onthedot.domain.limits import LimitSpec, encode, limit_key, unique
from onthedot.domain.payload import JsonValue, encode_arguments
from onthedot.domain.retention import Spec as RetentionSpec
from onthedot.domain.retention import parse_states
from onthedot.domain.retry import Backoff, coerce_backoff
from onthedot.observability.events import DatabaseCreated, EventBus, JobEnqueued
from onthedot.observability.hooks import Instrumentation
from onthedot.wakeups import WakeupHub

if TYPE_CHECKING:
    from onthedot.config import DatabaseConfig
    from onthedot.storage.interface import Storage

P = ParamSpec("P")
R = TypeVar("R")

# A PostgreSQL connection of the caller's transaction (psycopg), or None: the storage's own.
Connection = Any

ENQUEUE_OPTIONS = frozenset(
    {"delay", "run_at", "priority", "queue", "unique_key", "connection", "max_attempts", "timeout"}
)


class Enqueuer:
    """The enqueue path: insert the jobs, wake this process's idle workers of their queues, emit
    `JobEnqueued`. The storage is read through `storage()` at each call (opened on first use)."""

    def __init__(
        self,
        storage: Callable[[], Storage],
        clock: Clock,
        events: EventBus,
        wakeups: WakeupHub,
        instrumentation: Instrumentation | None = None,
        database: Callable[[], DatabaseConfig] | None = None,
    ) -> None:
        self._storage = storage
        self.clock = clock
        self._events = events
        self._wakeups = wakeups
        self.instrumentation = instrumentation or Instrumentation()
        # The first enqueue of the process looks whether it is the one creating a SQLite file.
        self._database = database

    def enqueue(self, jobs: Sequence[NewJob], *, connection: Connection = None) -> list[int]:
        """Insert `jobs`; return their ids in order (an existing job's id for a taken
        unique_key). Inside the caller's `connection` the workers are not woken: its
        transaction may still roll back."""
        if self.instrumentation.enqueue:
            ids = self.instrumentation.around_insert(jobs, lambda js: self._insert(js, connection))
        else:
            ids = self._insert(jobs, connection)
        return self._enqueued(jobs, ids, wake=connection is None)

    def _enqueued(self, jobs: Sequence[NewJob], ids: list[int], *, wake: bool) -> list[int]:
        """What follows an insert, sync or async: wake this process's idle workers of the
        jobs' queues (unless inside the caller's transaction) and emit `JobEnqueued`."""
        if wake:
            self._wakeups.jobs_added(job.queue for job in jobs)
        if self._events.wants(JobEnqueued):
            for job_id, job in zip(ids, jobs, strict=True):
                self._events.emit(
                    JobEnqueued(job_id, job.name, job.queue, job.schedule_key, job.slot)
                )
        return ids

    def _insert(self, jobs: Sequence[NewJob], connection: Connection) -> list[int]:
        if self._database is None:
            return self._storage().enqueue(jobs, connection=connection)
        config, self._database = self._database(), None  # once per process
        created = config.new_file()
        ids = self._storage().enqueue(jobs, connection=connection)
        if created is not None and created.exists():
            where = os.getcwd() if config.relative else None
            self._events.emit(DatabaseCreated.of(str(created), where))
        return ids

    async def aenqueue(self, jobs: Sequence[NewJob], *, connection: Connection) -> list[int]:
        """`enqueue` inside the caller's async transaction (a psycopg AsyncConnection), through
        the same enqueue hooks (tracing). The workers are not woken: the transaction may still
        roll back."""
        storage = self._storage()

        def insert(js: Sequence[NewJob]) -> Awaitable[list[int]]:
            return storage.aenqueue(js, connection=connection)

        if self.instrumentation.enqueue:
            ids = await self.instrumentation.around_ainsert(jobs, insert)
        else:
            ids = await insert(jobs)
        return self._enqueued(jobs, ids, wake=False)


class JobFunction(Generic[P, R]):
    """A registered job. Call it to run the function in-process; `.enqueue()` to run it in a
    worker. Enqueue options (`delay`, `run_at`, `priority`, `queue`, `unique_key`,
    `max_attempts`, `timeout`, `connection`) are keyword arguments of `enqueue`; a job whose own
    parameters use one of those names passes its arguments with `enqueue_with(args, kwargs)`."""

    # Queues other than `queue` its calls are enqueued on (a worker without -q serves them
    # too), and how listings name one of its jobs from its arguments (None, or a label that
    # returns None: by the job's name). Integrations set them (the Django task job does).
    extra_queues: frozenset[str] = frozenset()
    label: Callable[[list[JsonValue]], str | None] | None = None
    # The limits its jobs sit under (its own first, then named ones): see domain/limits.py.
    limit_specs: tuple[LimitSpec, ...] = ()

    def __init__(
        self,
        enqueuer: Enqueuer,
        fn: Callable[P, R],
        *,
        name: str,
        queue: str,
        priority: int,
        max_attempts: int,
        backoff: Backoff,
        timeout: float | None,
        runtime: bool = False,
        keep: Mapping[str, timedelta] | None = None,
    ) -> None:
        self.enqueuer = enqueuer
        # How long its finished jobs are kept, per final state, where it differs from the
        # app's retention (`@app.job(keep=...)`).
        self.keep: Mapping[str, timedelta] = dict(keep or {})
        self.fn = fn
        self.name = name
        self.queue = queue
        self.priority = priority
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.timeout = timeout
        self.runtime = runtime  # runtime schedules may fire it (domain.definitions.runtime_refusal)
        self.is_async = inspect.iscoroutinefunction(fn)
        self.signature = inspect.signature(fn)
        self._arity = _plain_arity(self.signature)
        self._where = f"job {name!r}"  # how errors about its arguments begin
        self._defaults: tuple[tuple[Any, ...], dict[str, Any]] | None = None
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
        encode_arguments(list(args), kwargs, self._where)

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
        return self._build(args, kwargs, self.job_options(**options) if options else self._plain())

    def _plain(self) -> dict[str, Any]:
        """`job_options()` with no option given, validated once for the job's current queue,
        priority, attempts and timeout (read-only: shared by the jobs built from it)."""
        key = (self.queue, self.priority, self.max_attempts, self.timeout)
        cached = self._defaults
        if cached is None or cached[0] != key:
            cached = self._defaults = (key, self.job_options())
        return cached[1]

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
        if unique_key is not None:
            check_text(unique_key, f"job {self.name!r}: unique_key", name=True)
        return {
            "queue": _check_queue(self.queue if queue is None else queue),
            "priority": _check_priority(self.priority if priority is None else priority),
            "run_at": _run_at(self.enqueuer.clock, delay, run_at),
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
        args_json, kwargs_json = encode_arguments(args, kwargs, self._where)
        job = NewJob(
            self.name, args, kwargs, **options, args_json=args_json, kwargs_json=kwargs_json
        )
        if self.limit_specs:
            keys = self.limit_keys(args, kwargs)
            job.limit_key, job.limits = keys[0], encode(keys)
        return job

    def slot_limits(
        self, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> tuple[str | None, str | None]:
        """(home key, all keys as JSON) of a schedule's job with these arguments; (None, None)
        for a job under no limit or arguments that do not bind (the slot's job fails then)."""
        if not self.limit_specs:
            return None, None
        try:
            keys = self.limit_keys(list(args), dict(kwargs))
        except (TypeError, ValueError):
            return None, None
        return keys[0], encode(keys)

    def limit_keys(self, args: Sequence[Any], kwargs: dict[str, Any]) -> list[str]:
        """The limit keys of a call with these arguments (computed at enqueue, stored)."""
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        try:
            return unique(limit_key(spec, arguments) for spec in self.limit_specs)
        except Exception as exc:
            raise ValueError(f"job {self.name!r}: its limit key failed: {exc!r}") from None

    # -- enqueueing -------------------------------------------------------------------------
    def enqueue(self, *args: Any, **kwargs: Any) -> int:
        """Validate and enqueue; return the job id (an existing job's id for a taken unique_key)."""
        if not kwargs:  # the common call: positional arguments, no option
            job = self._build(args, None, self._plain())
            return self.enqueuer.enqueue([job])[0]
        options = {k: kwargs.pop(k) for k in list(kwargs) if k in ENQUEUE_OPTIONS}
        return self.enqueue_with(args, kwargs, **options)

    def enqueue_with(
        self,
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        connection: Connection = None,
        **options: Any,
    ) -> int:
        """Enqueue with arguments given explicitly (for jobs whose parameters shadow options)."""
        job = self.build(args, kwargs, **options)
        return self.enqueuer.enqueue([job], connection=connection)[0]

    async def aenqueue(self, *args: Any, **kwargs: Any) -> int:
        """`enqueue` for async callers: the same storage verb, run off the event loop. With
        `connection=` (a psycopg AsyncConnection), inside the caller's open transaction."""
        connection = kwargs.pop("connection", None)
        if connection is None:
            import asyncio  # a caller awaiting this has it loaded already

            return await asyncio.to_thread(self.enqueue, *args, **kwargs)
        options = {k: kwargs.pop(k) for k in list(kwargs) if k in ENQUEUE_OPTIONS}
        job = self.build(args, kwargs, **options)
        return (await self.enqueuer.aenqueue([job], connection=connection))[0]

    def enqueue_many(
        self,
        calls: Iterable[Sequence[Any] | dict[str, Any] | tuple[Sequence[Any], dict[str, Any]]],
        *,
        connection: Connection = None,
        **options: Any,
    ) -> list[int]:
        """Enqueue many jobs in one round trip. Each item is a list/tuple of positional
        arguments, a dict of keyword arguments, or an `(args, kwargs)` pair."""
        fields = self.job_options(**options)
        jobs: list[NewJob] = []
        a: Sequence[Any]
        k: dict[str, Any]
        for call in calls:
            if type(call) is list:  # the common item, checked first
                a, k = call, {}
            elif isinstance(call, dict):
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
        return self.enqueuer.enqueue(jobs, connection=connection)

    async def aenqueue_many(self, calls: Iterable[Any], **options: Any) -> list[int]:
        import asyncio

        return await asyncio.to_thread(self.enqueue_many, list(calls), **options)


class JobRegistry(Mapping[str, JobFunction[Any, Any]]):
    """The registered jobs by name (a read-only mapping); `register` adds one."""

    def __init__(self, enqueuer: Enqueuer) -> None:
        self._enqueuer = enqueuer
        self._jobs: dict[str, JobFunction[Any, Any]] = {}

    def __getitem__(self, name: str) -> JobFunction[Any, Any]:
        return self._jobs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._jobs)

    def __len__(self) -> int:
        return len(self._jobs)

    def shown_name(self, name: str, args: list[JsonValue]) -> str:
        """How the CLI and the web admin name a job: `label (name)` when its job function
        labels it from its arguments (a Django task by its path), else its name."""
        jf = self._jobs.get(name)
        try:
            label = jf.label(args) if jf is not None and jf.label is not None else None
        except Exception:  # a label never breaks a listing: the name is shown instead
            label = None
        return f"{label} ({name})" if label else name

    def register(
        self,
        fn: Callable[P, R],
        *,
        name: str | None = None,
        queue: str = "default",
        priority: int = 0,
        max_attempts: int = 3,
        backoff: Backoff | float | None = None,
        timeout: float | str | timedelta | None = None,
        runtime: bool = False,
        keep: RetentionSpec | None = None,
    ) -> JobFunction[P, R]:
        """Register `fn` (sync or async) as a job; `name` defaults to module.qualname. The same
        function registered again under its name is registered once. `runtime=True` lets
        runtime schedules (web admin, CLI, `app.schedules.create`) fire it. `keep`: how long
        its finished jobs are kept ("1h", or per final state), instead of the app's
        retention."""
        job_name = name or f"{fn.__module__}.{fn.__qualname__}"
        if not job_name or not isinstance(job_name, str):
            raise ValueError("job name must be a non-empty string")
        check_text(job_name, "job name", name=True)  # printed one per line by the CLI
        if job_name in self._jobs and self._jobs[job_name].fn is not fn:
            raise ValueError(
                f"job name {job_name!r} is already registered to another function: "
                "give one of them an explicit name="
            )
        if max_attempts < 1:
            raise ValueError(f"job {job_name!r}: max_attempts must be >= 1")
        jf: JobFunction[P, R] = JobFunction(
            self._enqueuer,
            fn,
            name=job_name,
            queue=_check_queue(queue),
            priority=_check_priority(priority),
            max_attempts=max_attempts,
            backoff=coerce_backoff(backoff),
            timeout=_timeout(timeout),
            runtime=bool(runtime),
            keep=None if keep is None else parse_states(keep, what=f"job {job_name!r}: keep"),
        )
        self._jobs[job_name] = jf
        return jf

    def resolve(self, name: str) -> JobFunction[Any, Any]:
        """The job registered as `name`; raise JobNotRegistered naming the registered ones."""
        try:
            return self._jobs[name]
        except KeyError:
            raise JobNotRegistered(
                f"no job named {name!r} is registered in this app (registered: "
                f"{', '.join(sorted(self._jobs)) or 'none'})"
            ) from None


def _run_at(
    clock: Clock, delay: float | timedelta | str | None, run_at: datetime | None
) -> datetime | None:
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
    return check_text(queue, "queue name", name=True)


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
