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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from onthedot.domain.jobs import ClaimedJob, NewJob
from onthedot.domain.payload import JsonValue

HEADERS_KEY = "__onthedot_headers__"

Insert = Callable[[Sequence[NewJob]], list[int]]
JobCallable = Callable[..., Any]


class EnqueueHook(Protocol):
    """Wraps an insert: call `insert(jobs)` (possibly with changed jobs) and return its ids."""

    def __call__(self, jobs: Sequence[NewJob], insert: Insert) -> list[int]: ...


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
        call = insert
        for hook in reversed(self.enqueue):
            call = _bind_enqueue(hook, call)
        return call(jobs)

    def around_execute(
        self, job: ClaimedJob, headers: Mapping[str, str], fn: JobCallable, is_async: bool
    ) -> JobCallable:
        for hook in reversed(self.execute):
            fn = hook(job, headers, fn, is_async)
        return fn


def _bind_enqueue(hook: EnqueueHook, inner: Insert) -> Insert:
    return lambda jobs: hook(jobs, inner)


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
