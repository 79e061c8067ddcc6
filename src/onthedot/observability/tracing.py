"""OpenTelemetry tracing (the `onthedot[otel]` extra), following the messaging semantic
conventions. `instrument(app)` turns it on; until then nothing imports opentelemetry and the
enqueue and execution paths pay one truth test each.

- Enqueue: a PRODUCER span `publish <queue>` (`messaging.operation.type` = "send") around the
  insert. Its context travels with each job as W3C trace-context headers (`traceparent`, and
  `tracestate` / `baggage` when set), stored in the job's reserved headers key (see
  `hooks.HEADERS_KEY`), never passed to the function.
- Execution: a CONSUMER span `process <queue>` (`messaging.operation.type` = "process") around
  each attempt, the child of the producer span and linked to it; spans the job opens nest under
  it. A scheduled job (inserted by the scheduler's tick) starts a trace of its own.

Attributes: `messaging.system` ("onthedot"), `messaging.destination.name` (the queue),
`messaging.message.id` (the job id), `messaging.batch.message_count` (a batch enqueue), and
`onthedot.job.name`, `onthedot.job.attempt`, `onthedot.job.max_attempts`,
`onthedot.schedule.key`, `onthedot.schedule.slot`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final, Protocol

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, SpanKind, Tracer, TracerProvider
from opentelemetry.util.types import AttributeValue

from onthedot.domain.jobs import ClaimedJob, iso
from onthedot.observability.hooks import Insertion, Instrumentation, JobCallable, with_headers

__all__ = ["SYSTEM", "Tracing", "instrument"]

SYSTEM: Final = "onthedot"
EXTENSION: Final = "otel"


class TracedApp(Protocol):
    @property
    def instrumentation(self) -> Instrumentation: ...


class Tracing:
    """The enqueue and execute hooks of one App, over `tracer`."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    # -- producer -------------------------------------------------------------------------
    @contextmanager
    def enqueue(self, insertion: Insertion) -> Iterator[None]:
        """A PRODUCER span around one insert (sync or async), its context in the jobs."""
        jobs = insertion.jobs
        if not jobs:
            yield
            return
        queues = {job.queue for job in jobs}
        queue = next(iter(queues)) if len(queues) == 1 else None
        attributes: dict[str, AttributeValue] = {
            "messaging.system": SYSTEM,
            "messaging.operation.type": "send",
            "messaging.operation.name": "publish",
        }
        if queue is not None:
            attributes["messaging.destination.name"] = queue
        names = {job.name for job in jobs}
        if len(names) == 1:
            attributes["onthedot.job.name"] = next(iter(names))
        if len(jobs) > 1:
            attributes["messaging.batch.message_count"] = len(jobs)
        else:
            attributes.update(_schedule_attributes(jobs[0].schedule_key, jobs[0].slot))
        name = f"publish {queue}" if queue is not None else "publish"
        with self.tracer.start_as_current_span(
            name, kind=SpanKind.PRODUCER, attributes=attributes
        ) as span:
            carrier: dict[str, str] = {}
            propagate.inject(carrier)
            if carrier:
                insertion.jobs = [with_headers(job, carrier) for job in jobs]
            yield
            if len(insertion.ids) == 1:
                span.set_attribute("messaging.message.id", str(insertion.ids[0]))

    # -- consumer -------------------------------------------------------------------------
    def execute(
        self, job: ClaimedJob, headers: Mapping[str, str], fn: JobCallable, is_async: bool
    ) -> JobCallable:
        parent = propagate.extract(dict(headers)) if headers else None
        links = _links(parent)
        attributes: dict[str, AttributeValue] = {
            "messaging.system": SYSTEM,
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "messaging.destination.name": job.queue,
            "messaging.message.id": str(job.id),
            "onthedot.job.name": job.name,
            "onthedot.job.attempt": job.attempt,
            "onthedot.job.max_attempts": job.max_attempts,
            **_schedule_attributes(job.schedule_key, job.slot),
        }
        name = f"process {job.queue}"
        tracer = self.tracer

        if is_async:

            async def traced_async(*args: Any, **kwargs: Any) -> Any:
                with tracer.start_as_current_span(
                    name, parent, SpanKind.CONSUMER, attributes, links
                ):
                    return await fn(*args, **kwargs)

            return traced_async

        def traced(*args: Any, **kwargs: Any) -> Any:
            with tracer.start_as_current_span(name, parent, SpanKind.CONSUMER, attributes, links):
                return fn(*args, **kwargs)

        return traced


def _links(parent: Context | None) -> list[Link]:
    if parent is None:
        return []
    span_context = trace.get_current_span(parent).get_span_context()
    return [Link(span_context)] if span_context.is_valid else []


def _schedule_attributes(key: str | None, slot: Any) -> dict[str, AttributeValue]:
    out: dict[str, AttributeValue] = {}
    if key is not None:
        out["onthedot.schedule.key"] = key
    text = iso(slot)
    if text is not None:
        out["onthedot.schedule.slot"] = text
    return out


def instrument(app: TracedApp, *, tracer_provider: TracerProvider | None = None) -> Tracing:
    """Trace `app`'s enqueues and executions with `tracer_provider` (the global one when not
    given). Idempotent: a second call returns the first's hooks."""
    found = app.instrumentation.extensions.get(EXTENSION)
    if isinstance(found, Tracing):
        return found
    provider = tracer_provider or trace.get_tracer_provider()
    tracing = Tracing(provider.get_tracer("onthedot"))
    app.instrumentation.enqueue.append(tracing.enqueue)
    app.instrumentation.execute.append(tracing.execute)
    app.instrumentation.extensions[EXTENSION] = tracing
    return tracing
