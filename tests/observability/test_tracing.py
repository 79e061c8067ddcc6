"""OpenTelemetry: a producer span at enqueue whose context travels in the job, a consumer span
per attempt parented to it, in-process and across a real worker process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from onthedot import App
from onthedot.observability import tracing
from onthedot.observability.hooks import HEADERS_KEY
from onthedot.testing import drain
from tests.observability.helpers import ROOT, start_worker
from tests.observability.spanfile import read_spans


def traced(app: App) -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    assert tracing.instrument(app, tracer_provider=provider) is tracing.instrument(app)
    return exporter


def test_producer_and_consumer_spans(app: App) -> None:
    seen: list[dict[str, Any]] = []

    @app.job(name="keywords", max_attempts=2, backoff=0.0)
    def keywords(**kwargs: Any) -> None:
        seen.append(kwargs)
        if len(seen) == 1:
            raise RuntimeError("first attempt fails")

    exporter = traced(app)
    job_id = keywords.enqueue(a=1)
    stored = app.get_job(job_id)
    assert stored is not None and "traceparent" in stored.kwargs[HEADERS_KEY]
    drain(app)
    drain(app)
    assert seen == [{"a": 1}, {"a": 1}]  # the headers never reach the function
    spans = exporter.get_finished_spans()
    producer = next(s for s in spans if s.kind is SpanKind.PRODUCER)
    assert producer.name == "publish default"
    attrs = producer.attributes or {}
    assert attrs["messaging.system"] == "onthedot"
    assert attrs["messaging.operation.type"] == "send"
    assert attrs["messaging.destination.name"] == "default"
    assert attrs["messaging.message.id"] == str(job_id)
    consumers = [s for s in spans if s.kind is SpanKind.CONSUMER]
    assert [s.name for s in consumers] == ["process default", "process default"]
    for attempt, span in enumerate(consumers, 1):
        assert span.parent is not None and span.parent.span_id == producer.context.span_id
        assert span.context.trace_id == producer.context.trace_id
        assert [link.context.span_id for link in span.links] == [producer.context.span_id]
        attrs = span.attributes or {}
        assert attrs["messaging.operation.type"] == "process"
        assert attrs["onthedot.job.name"] == "keywords"
        assert attrs["onthedot.job.attempt"] == attempt
        assert attrs["messaging.message.id"] == str(job_id)
    assert consumers[0].status.status_code is StatusCode.ERROR
    assert consumers[1].status.status_code is StatusCode.UNSET


def test_batch_enqueue_is_one_publish_span(app: App) -> None:
    @app.job(name="echo")
    def echo(value: object = None) -> object:
        return value

    exporter = traced(app)
    echo.enqueue_many([[1], [2], [3]])
    (producer,) = exporter.get_finished_spans()
    assert (producer.attributes or {})["messaging.batch.message_count"] == 3


def test_across_a_worker_process(db_url: str, tmp_path: Path) -> None:
    app = App(db_url, log_events=False)
    app.migrate()

    @app.job(name="nested")
    def nested() -> None: ...

    exporter = traced(app)
    nested.enqueue()
    spans_file = tmp_path / "spans.jsonl"
    proc = start_worker(db_url, tmp_path, "--burst", env={"ONTHEDOT_TEST_SPANS": str(spans_file)})
    assert proc.stop(signal_it=False) == 0, proc.output()[-3000:]
    app.close()
    (producer,) = exporter.get_finished_spans()
    spans = {s["name"]: s for s in read_spans(str(spans_file))}
    consumer, inner = spans["process default"], spans["inside the job"]
    assert consumer["kind"] == "CONSUMER"
    assert consumer["trace_id"] == f"{producer.context.trace_id:032x}"
    assert consumer["parent_id"] == f"{producer.context.span_id:016x}"
    assert consumer["attributes"]["onthedot.job.attempt"] == 1
    assert inner["parent_id"] == consumer["span_id"]  # the job's own spans nest under it


def test_nothing_imports_opentelemetry_unless_asked(sqlite_url: str) -> None:
    code = (
        "import sys, onthedot\n"
        f"app = onthedot.App({sqlite_url!r}, log_events=False); app.migrate()\n"
        "job = app.job(name='echo')(lambda: None)\n"
        "job.enqueue(); app.worker(burst=True, install_signals=False).run()\n"
        "assert not [m for m in sys.modules if m.startswith(('opentelemetry', 'prometheus'))]\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_an_async_enqueue_inside_a_transaction_is_traced(pg_app: App, pg_url: str) -> None:
    """`await job.aenqueue(..., connection=aconn)` goes through the same enqueue hooks as the
    sync path: one PRODUCER span, its context stored in the job. Before, it was not traced."""
    import asyncio

    import psycopg

    @pg_app.job(name="atx")
    def atx(value: int) -> int:
        return value

    exporter = traced(pg_app)

    async def enqueue() -> int:
        async with await psycopg.AsyncConnection.connect(pg_url) as aconn:
            job_id = await atx.aenqueue(1, connection=aconn)
            await aconn.commit()
        return job_id

    job_id = asyncio.run(enqueue())
    (producer,) = exporter.get_finished_spans()
    assert producer.kind is SpanKind.PRODUCER and producer.name == "publish default"
    assert (producer.attributes or {})["messaging.message.id"] == str(job_id)
    stored = pg_app.get_job(job_id)
    assert stored is not None and "traceparent" in stored.kwargs[HEADERS_KEY]
    drain(pg_app)
    consumer = next(s for s in exporter.get_finished_spans() if s.kind is SpanKind.CONSUMER)
    assert consumer.parent is not None and consumer.parent.span_id == producer.context.span_id
