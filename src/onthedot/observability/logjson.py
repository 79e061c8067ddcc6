"""JSON log lines for log shippers (`onthedot --log-format json`): one object per line.

Every line has `ts`, `level`, `logger` and `message`. An event's line (from the
`LoggingSubscriber`) adds `event` and the event's fields (`job_id`, `job`, `queue`, `attempt`,
`schedule_key`, `slot`, ...); a line logged from inside a running job (the job's own logging)
adds that job's `job_id`, `job`, `queue`, `attempt`, `schedule_key`, `slot` and `worker_id`.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime
from typing import Any

from onthedot.context import current_job
from onthedot.domain.fields import UNSAFE
from onthedot.domain.jobs import iso
from onthedot.observability.events import Event


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object (no newline inside)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": iso(datetime.fromtimestamp(record.created, UTC)),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        event = getattr(record, "onthedot_event", None)
        if isinstance(event, Event):
            out["message"] = event.name
            out["event"] = event.name
            out.update(_fields(event.fields()))
        else:
            out.update(_job_fields())
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        # json escapes C0 controls itself; the rest of UNSAFE (DEL, C1 controls, line
        # separators, bidi overrides) as \uXXXX too: the same text, one line on any viewer.
        return UNSAFE.sub(_json_escape, json.dumps(out, default=str, ensure_ascii=False))


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def _fields(values: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            continue
        out[key] = iso(value) if isinstance(value, datetime) else value
    return out


def _job_fields() -> dict[str, Any]:
    try:
        ctx = current_job()
    except RuntimeError:
        return {}
    return _fields(
        {
            "job_id": ctx.job_id,
            "job": ctx.name,
            "queue": ctx.queue,
            "attempt": ctx.attempt,
            "schedule_key": ctx.schedule_key,
            "slot": ctx.slot,
            "worker_id": ctx.worker_id,
        }
    )


def json_handler(stream: Any = None) -> logging.Handler:
    """A stream handler (stderr by default) writing JSON lines."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    return handler
