"""The app the observability tests run in real worker processes.

$ONTHEDOT_DATABASE_URL names the database; with $ONTHEDOT_TEST_SPANS set, the worker traces
its jobs with the OpenTelemetry SDK and writes each finished span as a JSON line to that file.
"""

from __future__ import annotations

import logging
import os

from onthedot import App, current_job

app = App(lease=float(os.environ.get("ONTHEDOT_TEST_LEASE", "2")))
log = logging.getLogger("obsapp")


@app.job(name="echo")
def echo(value: object = None) -> object:
    log.info("echo says %s", value)
    return value


@app.job(name="explode", max_attempts=2, backoff=0.0)
def explode() -> None:
    raise RuntimeError(f"boom on attempt {current_job().attempt}")


@app.job(name="nested")
def nested() -> None:
    from opentelemetry import trace

    with trace.get_tracer("obsapp").start_as_current_span("inside the job"):
        pass


if os.environ.get("ONTHEDOT_TEST_SPANS"):
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from onthedot.observability import tracing
    from tests.observability.spanfile import JsonLinesExporter

    provider = TracerProvider()
    provider.add_span_processor(
        SimpleSpanProcessor(JsonLinesExporter(os.environ["ONTHEDOT_TEST_SPANS"]))
    )
    trace.set_tracer_provider(provider)  # the job's own spans go there too
    tracing.instrument(app, tracer_provider=provider)
