"""A span exporter writing each finished span as one JSON line (for spans made in a worker
process and read by the test)."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


def span_record(span: ReadableSpan) -> dict[str, Any]:
    ctx = span.get_span_context()
    assert ctx is not None
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": f"{ctx.trace_id:032x}",
        "span_id": f"{ctx.span_id:016x}",
        "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
        "links": [f"{link.context.span_id:016x}" for link in span.links],
        "attributes": dict(span.attributes or {}),
        "status": span.status.status_code.name,
    }


class JsonLinesExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self.lock, open(self.path, "a") as out:
            for span in spans:
                out.write(json.dumps(span_record(span)) + "\n")
        return SpanExportResult.SUCCESS


def read_spans(path: str) -> list[dict[str, Any]]:
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []
