"""Rows as domain values: the same columns on every backend, decoded through the dialect."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from onthedot.domain.jobs import MANUAL_PREFIX, ClaimedJob, Job, JobState
from onthedot.domain.ledger import AuditEntry, LedgerRow, SlotRecord
from onthedot.domain.nesting import Undecodable, load_stored
from onthedot.domain.payload import JsonObject, JsonValue
from onthedot.storage.interface import WorkerRow
from onthedot.storage.sql.dialect import Dialect, Row


def _utc_z(entry: JsonObject) -> JsonObject:
    """Error-history instants read `...Z` on every backend."""
    at = entry.get("at")
    if isinstance(at, str) and at.endswith("+00:00"):
        return {**entry, "at": at[:-6] + "Z"}
    return entry


def _errors(value: object) -> list[JsonObject]:
    if isinstance(value, list):
        return [_utc_z(e) for e in value if isinstance(e, dict)]
    return [] if value is None else [{"error": str(value)}]


def claimed(d: Dialect, rows: list[Row]) -> list[ClaimedJob]:
    # RETURNING order is unspecified: restore claim order (priority, run_at, id).
    rows.sort(key=lambda r: (-r[10], r[11], r[0]))
    fromtimestamp = datetime.fromtimestamp
    jobs = []
    for r in rows:
        args, kwargs = load_stored(r[2]), load_stored(r[3])
        unreadable = _unreadable(args, kwargs)
        jobs.append(
            ClaimedJob(
                r[0],
                r[1],
                [] if unreadable else args,
                {} if unreadable else kwargs,
                r[4],
                r[5],
                r[6],
                r[7],
                r[8],
                d.opt_dt(r[9]),
                fromtimestamp(r[11], UTC),  # both claims return run_at as epoch seconds
                bool(r[12]) and str(r[12]).startswith(MANUAL_PREFIX),
                unreadable,
            )
        )
    return jobs


def _unreadable(args: object, kwargs: object) -> str | None:
    """Why a claimed job's stored arguments cannot be handed to its function, or None."""
    for what, value, kind in (("arguments", args, list), ("keyword arguments", kwargs, dict)):
        if isinstance(value, Undecodable):
            return f"its stored {what} are {value.reason}"
        if not isinstance(value, kind):
            return f"its stored {what} are not a JSON {'array' if kind is list else 'object'}"
    return None


def _args(value: object) -> list[JsonValue]:
    """Stored positional arguments as shown: what could not be decoded is shown as a note."""
    return value if isinstance(value, list) else [str(value)]


def _object(value: object) -> JsonObject:
    return value if isinstance(value, dict) else {"(not decoded)": str(value)}


def _shown(value: object) -> JsonValue:
    return str(value) if isinstance(value, Undecodable) else value  # type: ignore[return-value]


def job(d: Dialect, r: Row) -> Job:
    return Job(
        id=r[0],
        name=r[1],
        queue=r[2],
        state=JobState(r[3]),
        priority=r[4],
        args=_args(d.json_in(r[5])),
        kwargs=_object(d.json_in(r[6])),
        attempts=r[7],
        max_attempts=r[8],
        run_at=d.dt(r[9]),
        created_at=d.dt(r[10]),
        started_at=d.opt_dt(r[11]),
        finished_at=d.opt_dt(r[12]),
        timeout=r[13],
        unique_key=r[14],
        schedule_key=r[15],
        slot=d.opt_dt(r[16]),
        worker_id=r[17],
        result=_shown(d.json_in(r[18])),
        error=r[19],
        traceback=r[20],
        cancel_requested=bool(r[21]),
        errors=_errors(d.json_in(r[22])),
        began=bool(r[23]),
    )


def worker(d: Dialect, r: Row) -> WorkerRow:
    return WorkerRow(
        id=r[0],
        hostname=r[1],
        pid=r[2],
        queues=tuple(q for q in r[3].split(",") if q),
        concurrency=r[4],
        scheduler=bool(r[5]),
        generation=r[6],
        started_at=d.dt(r[7]),
        heartbeat_at=d.dt(r[8]),
        stopping=bool(r[9]),
        heartbeat_age=float(r[10]),
        running_jobs=int(r[11]),
        jobs=tuple(json.loads(r[12] or "[]")),
    )


def ledger_row(d: Dialect, r: Row) -> LedgerRow:
    return LedgerRow(
        key=r[0],
        source=r[1],
        fingerprint=r[2],
        spec=r[3],
        timezone=r[4],
        cursor=d.dt(r[5]),
        next_due_at=d.opt_dt(r[6]),
        generation=r[7],
        definition=None if r[8] is None else _object(d.json_in(r[8])),
        removed_at=d.opt_dt(r[9]),
        paused=bool(r[10]),
        paused_until=d.opt_dt(r[11]),
        paused_at=d.opt_dt(r[12]),
        paused_by=r[13],
        pause_note=r[14],
        missed_total=r[15],
        coalesced_total=r[16],
        last_missed_from=d.opt_dt(r[17]),
        last_missed_to=d.opt_dt(r[18]),
        last_slot=d.opt_dt(r[19]),
        last_outcome=r[20],
        last_job_id=r[21],
        repaired_reason=r[22],
        created_at=d.opt_dt(r[23]),
        updated_at=d.opt_dt(r[24]),
    )


def slot_record(d: Dialect, r: Row) -> SlotRecord:
    return SlotRecord(r[0], d.dt(r[1]), r[2], r[3], d.opt_dt(r[4]), r[5], r[6], r[7])


def audit(d: Dialect, r: Row) -> AuditEntry:
    return AuditEntry(
        actor=r[2],
        action=r[3],
        key=r[4],
        note=r[5],
        details=None if r[6] is None else _object(d.json_in(r[6])),
        at=d.dt(r[1]),
        id=r[0],
    )
