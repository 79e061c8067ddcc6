"""Where optional instrumentation (tracing, user middleware) wraps the two ends of a job's way:
the enqueue (around the insert) and the execution (around the job function).

The core calls these only when something is registered: with no hook, an enqueue costs one
truth test and an execution one dict lookup (the headers key).

Job headers: a job carries free-form string headers (a W3C `traceparent`, ...) in its stored
keyword arguments under the reserved key `HEADERS_KEY`; the worker takes them out before the
function is called, so no job function ever sees them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from onthedot.domain.jobs import ClaimedJob, NewJob
from onthedot.domain.payload import JsonValue

HEADERS_KEY = "__onthedot_headers__"

Insert = Callable[[Sequence[NewJob]], list[int]]
AsyncInsert = Callable[[Sequence[NewJob]], Awaitable[list[int]]]
JobCallable = Callable[..., Any]


@dataclass(slots=True)
class Insertion:
    """One insert as the enqueue hooks see it, sync or async alike: the jobs to insert (a hook
    may replace them, e.g. with headers added) and, once inserted, their ids."""

    jobs: Sequence[NewJob]
    ids: list[int] = field(default_factory=list)


class EnqueueHook(Protocol):
    """Wraps an insert: a context manager entered before it (it may replace
    `insertion.jobs`) and left after it (`insertion.ids` set, or the insert's error raised)."""

    def __call__(self, insertion: Insertion) -> AbstractContextManager[None]: ...


class ExecuteHook(Protocol):
    """Returns the callable the worker runs instead of `fn` (same arguments; a coroutine
    function when `is_async`)."""

    def __call__(
        self, job: ClaimedJob, headers: Mapping[str, str], fn: JobCallable, is_async: bool
    ) -> JobCallable: ...


@dataclass(slots=True)
class Instrumentation:
    """The hooks of one App. `extensions` holds the instrumentations installed (by name), so
    that installing one twice installs it once and the web admin finds the app's metrics."""

    enqueue: list[EnqueueHook] = field(default_factory=list)
    execute: list[ExecuteHook] = field(default_factory=list)
    extensions: dict[str, object] = field(default_factory=dict)

    def around_insert(self, jobs: Sequence[NewJob], insert: Insert) -> list[int]:
        """`insert(jobs)` through every enqueue hook (the first registered outermost)."""
        with self.inserting(jobs) as insertion:
            insertion.ids = insert(insertion.jobs)
        return insertion.ids

    async def around_ainsert(self, jobs: Sequence[NewJob], insert: AsyncInsert) -> list[int]:
        """`await insert(jobs)` through the same hooks as `around_insert`."""
        with self.inserting(jobs) as insertion:
            insertion.ids = await insert(insertion.jobs)
        return insertion.ids

    @contextmanager
    def inserting(self, jobs: Sequence[NewJob]) -> Iterator[Insertion]:
        """The one implementation of both: every enqueue hook entered around the insert."""
        insertion = Insertion(jobs)
        with ExitStack() as hooks:
            for hook in self.enqueue:
                hooks.enter_context(hook(insertion))
            yield insertion

    def around_execute(
        self, job: ClaimedJob, headers: Mapping[str, str], fn: JobCallable, is_async: bool
    ) -> JobCallable:
        for hook in reversed(self.execute):
            fn = hook(job, headers, fn, is_async)
        return fn


def with_headers(job: NewJob, headers: Mapping[str, str]) -> NewJob:
    """`job` carrying `headers` (merged over any it has)."""
    kwargs = dict(job.kwargs)
    previous = kwargs.get(HEADERS_KEY)
    merged: dict[str, JsonValue] = {**(previous if isinstance(previous, dict) else {}), **headers}
    kwargs[HEADERS_KEY] = merged
    return dataclasses.replace(job, kwargs=kwargs, kwargs_json=json.dumps(kwargs))


def split_headers(job: ClaimedJob) -> tuple[ClaimedJob, Mapping[str, str]]:
    """The job without its headers, and its headers (empty when it has none)."""
    if HEADERS_KEY not in job.kwargs:
        return job, {}
    kwargs = dict(job.kwargs)
    raw = kwargs.pop(HEADERS_KEY)
    headers = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
    return dataclasses.replace(job, kwargs=kwargs), headers
