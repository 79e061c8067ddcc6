"""Metrics, tracing and JSON logs on one app.

pip install "onthedot[prometheus,otel]" opentelemetry-sdk
python examples/observability.py          # runs a burst worker, prints the metrics
onthedot --app examples.observability:app --log-format json worker --metrics-port 9464
"""

from __future__ import annotations

import logging

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from onthedot import App
from onthedot.observability import logjson, metrics, tracing

app = App("sqlite:///observability-example.db")

provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
trace.set_tracer_provider(provider)
tracing.instrument(app)  # producers and workers of this app both trace


@app.job(name="greet", queue="default")  # a fixed name: the same run as a script or with --app
def greet(name: str) -> str:
    logging.getLogger("example").info("greeting %s", name)  # a JSON line with the job's fields
    return f"hello {name}"


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, handlers=[logjson.json_handler()])
    app.migrate()
    metrics.instrument(app)
    greet.enqueue("world")
    app.worker(burst=True).run()
    print(metrics.render(app).decode())
