"""The torture checker: reads the database after a run and lists every broken promise.

It reads the tables with its own SQL (not onthedot's storage verbs), so a bug in a verb cannot
hide a bug in the data. Instants are compared as epoch seconds on both backends.

What it checks:
- slots (`check_schedule`): no (key, slot) enqueued twice; every slot of the spec in
  (first sight, end] enqueued (catch-up "all" with a long window: even slots due while every
  worker was dead are owed); no job created before its slot by the database clock; the slot
  history agrees with the jobs;
- jobs (`check_jobs`): every job final; every produced job exists and is final;
- executions (`check_executions`): no (job, attempt) ran twice; every execution that never ended
  (its worker was SIGKILLed mid-run, or its database went away) was rescued and ran again, with
  a WorkerLost error for the killed attempt; every succeeded job's last attempt ran to its end.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import psycopg

from onthedot.config import parse_database_url
from onthedot.domain.specs import parse_spec

UTC_ZONE = ZoneInfo("UTC")
FINAL = ("succeeded", "failed", "cancelled")


class Db:
    """A read connection to either backend, with `{ep(col)}` for epoch seconds."""

    def __init__(self, url: str) -> None:
        self.cfg = parse_database_url(url)
        self.backend = self.cfg.backend
        self._conn: Any = self._connect()

    def _connect(self) -> Any:
        if self.backend == "sqlite":
            assert self.cfg.path is not None
            return sqlite3.connect(self.cfg.path, timeout=30, isolation_level=None)
        # the server itself, past any PgBouncer: the checker reads what was committed
        url = self.cfg.direct_url or self.cfg.url
        return psycopg.connect(url, autocommit=True, connect_timeout=10)

    def ep(self, column: str) -> str:
        return column if self.backend == "sqlite" else f"extract(epoch from {column})::float8"

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Run a query; on PostgreSQL, reconnect once if the server restarted under us."""
        if self.backend == "sqlite":
            return list(self._conn.execute(sql.replace("%s", "?"), params).fetchall())
        try:
            return list(self._conn.execute(sql, params).fetchall())
        except psycopg.OperationalError:
            self._conn.close()
            self._conn = self._connect()
            return list(self._conn.execute(sql, params).fetchall())

    def close(self) -> None:
        self._conn.close()


@dataclass
class Report:
    numbers: dict[str, Any] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        self.violations.append(message)

    def assert_ok(self) -> None:
        assert not self.violations, "\n".join(self.violations[:50])


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def _spans_contain(spans: list[tuple[float, float]], t: float) -> bool:
    return any(start <= t <= end for start, end in spans)


def check_schedule(
    db: Db,
    report: Report,
    key: str,
    spec: str,
    end: float,
    *,
    alive: list[tuple[float, float]] | None = None,
    names: tuple[str, str] = ("due_while_a_worker_was_alive", "due_while_none_was"),
    since: tuple[float, float] | None = None,
) -> None:
    """Every slot of `spec` in (first sight, end] enqueued exactly once, never early.
    `alive`: spans when at least one worker was up (from the chaos log), to report how many
    slots were due while one was and how late each class was enqueued (`names` name the two
    classes and their lags). `since`: for a runtime schedule, bounds (earliest, latest) of the
    cursor it was created with (its first slot is the first after it; the ledger row is written
    a moment later): no slot at or before the earliest, every slot after the latest. Default:
    both the ledger row's creation."""
    ledger = db.rows(f"SELECT {db.ep('created_at')} FROM onthedot_schedules WHERE key = %s", key)
    if not ledger:
        report.fail(f"{key}: no ledger row")
        return
    earliest, first_sight = (float(ledger[0][0]),) * 2 if since is None else since
    jobs = db.rows(
        f"SELECT id, {db.ep('slot')}, {db.ep('created_at')} FROM onthedot_jobs"
        " WHERE schedule_key = %s",
        key,
    )
    per_slot = Counter(round(slot) for _, slot, _ in jobs)
    for slot, n in sorted(per_slot.items()):
        if n > 1:
            report.fail(f"{key}: slot {_iso(slot)} enqueued {n} times")
    parsed = parse_spec(spec)
    expected = {
        int(s.timestamp())
        for s in parsed.slots_between(
            datetime.fromtimestamp(first_sight, UTC), datetime.fromtimestamp(end, UTC), UTC_ZONE
        )
    }
    got = set(per_slot)
    for slot in sorted(expected - got):
        report.fail(f"{key}: slot {_iso(slot)} was never enqueued")
    grid = {int(s.timestamp()) for s in parsed.slots_between(
        datetime.fromtimestamp(min(got | {int(first_sight)}) - 1, UTC),
        datetime.fromtimestamp(max(got | {int(end)}), UTC),
        UTC_ZONE,
    )}  # fmt: skip
    for slot in sorted(got - grid):
        report.fail(f"{key}: slot {_iso(slot)} is not a slot of {spec!r}")
    for slot in sorted(s for s in got if s <= earliest):
        report.fail(f"{key}: slot {_iso(slot)} is not after the schedule's first sight")
    lags_alive: list[float] = []
    lags_dead: list[float] = []
    for job_id, slot, created in jobs:
        if created < slot:
            report.fail(
                f"{key}: job {job_id} for slot {_iso(slot)} was created at {_iso(created)}, "
                "before its slot was due by the database clock"
            )
        if first_sight < slot <= end:
            alive_then = alive is None or _spans_contain(alive, slot)
            (lags_alive if alive_then else lags_dead).append(created - slot)
    history = db.rows(
        f"SELECT {db.ep('slot')}, outcome, job_id FROM onthedot_slots WHERE schedule_key = %s",
        key,
    )
    by_job = {job_id: round(slot) for job_id, slot, _ in jobs}
    for slot, outcome, job_id in history:
        if outcome != "enqueued" or by_job.get(job_id) != round(slot):
            report.fail(f"{key}: slot history {_iso(slot)} {outcome} job {job_id} has no such job")
    if len(history) != len(jobs):
        report.fail(f"{key}: {len(history)} slot history rows for {len(jobs)} jobs")
    report.numbers[key] = {
        "slots_checked": len(expected),
        "slots_enqueued": len(got),
        names[0]: len(lags_alive),
        names[1]: len(lags_dead),
        f"max_lag_{names[0]}_s": round(max(lags_alive, default=0.0), 3),
        f"max_lag_{names[1]}_s": round(max(lags_dead, default=0.0), 3),
    }


def unfinished(db: Db) -> int:
    """Jobs still queued or running, counted in one statement: two counts, one per state, can
    both miss a job that moves between them (a lost job rescued from running to queued)."""
    rows = db.rows("SELECT count(*) FROM onthedot_jobs WHERE state IN ('queued', 'running')")
    return int(rows[0][0])


def check_jobs(
    db: Db,
    report: Report,
    produced: dict[int, int],
    *,
    ambiguous: set[int] | None = None,
    name: str = "chaos.work",
) -> None:
    """Every job final; every produced job (n -> id) exists, is final and carries its n; no n
    was enqueued twice unless its enqueue failed ambiguously (the database went away)."""
    ambiguous = ambiguous or set()
    states = dict(db.rows("SELECT state, count(*) FROM onthedot_jobs GROUP BY state"))
    for state, n in states.items():
        if state not in FINAL:
            report.fail(f"{n} job(s) still {state} after the final drain")
    rows = db.rows("SELECT id, state, args FROM onthedot_jobs WHERE name = %s", name)
    by_id = {}
    per_n: Counter[int] = Counter()
    for job_id, state, args in rows:
        value = json.loads(args) if isinstance(args, str) else args
        by_id[job_id] = (state, value[0])
        per_n[value[0]] += 1
    for n, job_id in sorted(produced.items()):
        if job_id not in by_id:
            report.fail(f"produced job n={n} (id {job_id}) is lost")
        elif by_id[job_id][1] != n:
            report.fail(f"job {job_id} carries n={by_id[job_id][1]}, produced as n={n}")
        elif by_id[job_id][0] not in FINAL:
            report.fail(f"produced job n={n} (id {job_id}) is {by_id[job_id][0]}")
    for n, count in per_n.items():
        if n not in produced:
            report.fail(f"a job n={n} exists that the producer never got an id for")
        elif count > 1 and n not in ambiguous:
            report.fail(f"produced job n={n} exists {count} times")
    report.numbers["jobs"] = {
        "produced": len(produced),
        "total_in_database": sum(states.values()),
        "by_state": states,
    }


def check_executions(db: Db, report: Report, killed_pids: set[int]) -> None:
    """No attempt ran twice; every unfinished execution was rescued and ran again."""
    jobs = {
        job_id: (state, attempts, max_attempts, errors)
        for job_id, state, attempts, max_attempts, errors in db.rows(
            "SELECT id, state, attempts, max_attempts, errors FROM onthedot_jobs"
        )
    }
    executions = db.rows("SELECT job_id, attempt, pid, ended, failed, runs FROM torture_executions")
    attempts_of: dict[int, set[int]] = {}
    for job_id, attempt, _pid, _ended, _failed, runs in executions:
        attempts_of.setdefault(job_id, set()).add(attempt)
        if runs != 1:
            report.fail(f"job {job_id} attempt {attempt} ran {runs} times")
    killed = unended_other = 0
    for job_id, attempt, pid, ended, _failed, _runs in executions:
        if ended is not None:
            continue
        if job_id not in jobs:
            report.fail(f"execution of job {job_id} attempt {attempt}: the job is gone")
            continue
        state, attempts, max_attempts, errors = jobs[job_id]
        later = any(a > attempt for a in attempts_of[job_id])
        last_try_failed = state == "failed" and attempt >= max_attempts
        if not (later or last_try_failed):
            report.fail(
                f"job {job_id} attempt {attempt} (pid {pid}) never ended and never ran again "
                f"(state {state}, attempts {attempts}/{max_attempts})"
            )
        history = json.loads(errors) if isinstance(errors, str) else (errors or [])
        said = [str(e.get("error", "")) for e in history if e.get("attempt") == attempt]
        if any(text.startswith("WorkerLost") for text in said):
            killed += pid in killed_pids
            unended_other += pid not in killed_pids
        elif any(text.startswith("RecordingError") for text in said):
            unended_other += 1  # the job could not record its end: the database went away
        else:
            report.fail(
                f"job {job_id} attempt {attempt} (pid {pid}) never ended, yet its errors record "
                f"neither a lost worker nor a database error for that attempt: {said}"
            )
    ended_ok = {(j, a) for j, a, _p, ended, failed, _r in executions if ended and not failed}
    for job_id, (state, attempts, _m, _e) in jobs.items():
        if state == "succeeded" and (job_id, attempts) not in ended_ok:
            report.fail(f"job {job_id} succeeded but its attempt {attempts} never ran to its end")
    report.numbers["executions"] = {
        "recorded": len(executions),
        "killed_mid_run_then_rescued": killed,
        "unended_without_kill": unended_other,
        "jobs_with_more_than_one_attempt": sum(1 for v in attempts_of.values() if len(v) > 1),
    }
